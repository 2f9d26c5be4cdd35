package action

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// Cut says that a record was stored shortened: its JSON encoding was over
// the bound Max, so its longest strings were cut to a prefix (each ending in
// a marker with its length and SHA-256) and, where that was not enough,
// elements of its lists (and entries of an action's argument maps) were left
// out. The record as judged is not changed: it is hashed (Verdict.ArgsHash)
// and judged whole; only what is kept is shorter.
type Cut struct {
	// Bytes and SHA256 are the size and hash of the whole record's JSON.
	Bytes  int    `json:"bytes"`
	SHA256 string `json:"sha256"`
	// Max is the bound the record was cut to.
	Max int `json:"max"`
	// Strings counts the strings (and map keys) cut to a prefix; Dropped
	// the list elements and map entries left out.
	Strings int `json:"strings,omitempty"`
	Dropped int `json:"dropped,omitempty"`
}

// MinStoredBytes is the smallest bound Bounded cuts to: below it a record
// could not keep its ids and hashes.
const MinStoredBytes = 4096

// keepBytes is the length up to which a string is never cut (ids, hashes,
// names and paths of ordinary length survive any bound).
const keepBytes = 128

// Bounded returns a copy of a to store: a itself when its JSON encoding is
// at most max bytes (or max is 0 or less: no bound), else a copy whose
// longest strings are cut and, if need be, whose argument maps and lists are
// shortened until it fits, with Cut saying what the whole was. a is not
// changed. A caller-supplied Cut is never kept.
func (a *Action) Bounded(max int) Action {
	out, _ := a.BoundedJSON(max)
	return out
}

// BoundedJSON is Bounded, and also returns the copy's JSON encoding (as
// json.Marshal makes it; nil when it cannot be encoded), which the cut
// has made already: the caller need not encode it again.
func (a *Action) BoundedJSON(max int) (Action, []byte) {
	out := *a
	out.Cut = nil
	b, err := json.Marshal(&out)
	if err != nil {
		return out, nil
	}
	if max <= 0 || len(b) <= max {
		return out, b
	}
	shrunk, cut, err := shrink(b, max, map[string]bool{"args": true})
	if err != nil {
		return out, b
	}
	var short Action
	if err := json.Unmarshal(shrunk, &short); err != nil {
		return out, b
	}
	short.Cut = cut
	return short, marshalOrNil(&short)
}

func marshalOrNil(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// Bounded returns a copy of v to store, cut like Action.Bounded. The
// verdict's level, ids and ArgsHash (the hash of the whole arguments) are
// kept as they are.
func (v *Verdict) Bounded(max int) Verdict {
	out, _ := v.BoundedJSON(max)
	return out
}

// BoundedJSON is Bounded, and also returns the copy's JSON encoding (see
// Action.BoundedJSON).
func (v *Verdict) BoundedJSON(max int) (Verdict, []byte) {
	out := *v
	out.Cut = nil
	b, err := json.Marshal(&out)
	if err != nil {
		return out, nil
	}
	if max <= 0 || len(b) <= max {
		return out, b
	}
	shrunk, cut, err := shrink(b, max, nil)
	if err != nil {
		return out, b
	}
	var short Verdict
	if err := json.Unmarshal(shrunk, &short); err != nil {
		return out, b
	}
	short.Level, short.ArgsHash, short.ActionID = v.Level, v.ArgsHash, v.ActionID
	short.Cut = cut
	return short, marshalOrNil(&short)
}

// shrink cuts the JSON document b (an object) to at most max bytes (never
// less than MinStoredBytes). Strings longer than a cap are cut, the cap
// being the largest that fits; when even the smallest cap is too much, lists
// at any depth and the objects under the top-level keys named in free are
// shortened to their first n elements (keys in order), n being the largest
// that fits. Other objects keep their keys, so the result decodes into the
// same Go type.
func shrink(b []byte, max int, free map[string]bool) ([]byte, *Cut, error) {
	max = maxInt(max, MinStoredBytes)
	sum := sha256.Sum256(b)
	cut := &Cut{Bytes: len(b), SHA256: hex.EncodeToString(sum[:]), Max: max}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, err
	}
	top, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, fmt.Errorf("action: only objects are bounded")
	}
	// Room for the Cut the caller adds.
	room := max - 200
	longest := longestString(doc)
	sums := map[string]string{} // the hashes of cut strings, computed once
	try := func(strCap, elemCap int) ([]byte, shrinkStats, error) {
		s := shrinker{strCap: strCap, elemCap: elemCap, sums: sums}
		out := make(map[string]any, len(top))
		for k, v := range top {
			out[k] = s.walk(v, free[k])
		}
		enc, err := marshal(out)
		return enc, s.stats, err
	}
	// The largest string cap that fits, by bisection.
	if enc, st, err := try(keepBytes, -1); err != nil {
		return nil, nil, err
	} else if len(enc) <= room {
		lo, hi := keepBytes, longest // lo fits
		best, bestSt := enc, st
		for lo < hi {
			mid := lo + (hi-lo+1)/2
			e, s, err := try(mid, -1)
			if err != nil {
				return nil, nil, err
			}
			if len(e) <= room {
				lo, best, bestSt = mid, e, s
			} else {
				hi = mid - 1
			}
		}
		cut.Strings = bestSt.strings
		return best, cut, nil
	}
	// Strings at their smallest are not enough: shorten lists and free maps.
	lo, hi := 0, longestContainer(doc)
	best, bestSt, err := try(keepBytes, 0)
	if err != nil {
		return nil, nil, err
	}
	for lo < hi {
		mid := lo + (hi-lo+1)/2
		e, s, err := try(keepBytes, mid)
		if err != nil {
			return nil, nil, err
		}
		if len(e) <= room {
			lo, best, bestSt = mid, e, s
		} else {
			hi = mid - 1
		}
	}
	cut.Strings, cut.Dropped = bestSt.strings, bestSt.dropped
	return best, cut, nil
}

type shrinkStats struct{ strings, dropped int }

type shrinker struct {
	strCap  int // strings longer than this are cut
	elemCap int // lists (and free objects) keep this many elements; -1: all
	stats   shrinkStats
	sums    map[string]string
}

func (s *shrinker) walk(v any, free bool) any {
	switch v := v.(type) {
	case string:
		return s.str(v)
	case []any:
		n := len(v)
		if s.elemCap >= 0 && n > s.elemCap {
			s.stats.dropped += n - s.elemCap
			n = s.elemCap
		}
		out := make([]any, n)
		for i := range n {
			out[i] = s.walk(v[i], free)
		}
		return out
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if free && s.elemCap >= 0 && len(keys) > s.elemCap {
			s.stats.dropped += len(keys) - s.elemCap
			keys = keys[:s.elemCap]
		}
		out := make(map[string]any, len(keys))
		for _, k := range keys {
			nk := k
			if free {
				nk = s.str(k)
			}
			out[nk] = s.walk(v[k], free)
		}
		return out
	default:
		return v
	}
}

// str cuts s to strCap bytes (on a rune boundary) followed by a marker with
// its length and hash, when it is longer than strCap plus the marker.
func (s *shrinker) str(v string) string {
	if len(v) <= s.strCap+cutMarkerLen {
		return v
	}
	s.stats.strings++
	sum, ok := s.sums[v]
	if !ok {
		h := sha256.Sum256([]byte(v))
		sum = hex.EncodeToString(h[:])
		s.sums[v] = sum
	}
	return cutString(v, s.strCap, sum)
}

// cutMarkerLen is about the length of CutString's marker.
const cutMarkerLen = 110

// CutString returns the first n bytes of s (on a rune boundary) followed by
// a marker giving the length and SHA-256 of the whole of s.
func CutString(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return cutString(s, n, hex.EncodeToString(sum[:]))
}

func cutString(s string, n int, sum string) string {
	if n > len(s) {
		n = len(s)
	}
	for n > 0 && n < len(s) && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…[cut by Overseer: " + strconv.Itoa(len(s)) + " bytes, sha256 " + sum + "]"
}

func longestString(v any) int {
	switch v := v.(type) {
	case string:
		return len(v)
	case []any:
		m := 0
		for _, e := range v {
			m = maxInt(m, longestString(e))
		}
		return m
	case map[string]any:
		m := 0
		for k, e := range v {
			m = maxInt(m, maxInt(len(k), longestString(e)))
		}
		return m
	}
	return 0
}

func longestContainer(v any) int {
	switch v := v.(type) {
	case []any:
		m := len(v)
		for _, e := range v {
			m = maxInt(m, longestContainer(e))
		}
		return m
	case map[string]any:
		m := len(v)
		for _, e := range v {
			m = maxInt(m, longestContainer(e))
		}
		return m
	}
	return 0
}

func marshal(v any) ([]byte, error) { return json.Marshal(v) }

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}
