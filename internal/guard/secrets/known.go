package secrets

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"strings"
	"sync"
	"unsafe"
)

// Known values are held as fingerprints, never in clear.
//
// Each value yields keyed 64-bit hashes:
//
//   - one of every 16-byte window of the value (a value of n bytes has
//     n-15 of them). A text is hashed at every eighth offset, so any
//     occurrence of a value of at least 23 bytes — whole, embedded in a
//     longer string, or a piece of at least 23 bytes of it — contains a
//     hashed window; a hit is a known value. Hashing every eighth offset
//     keeps a 1 MB body at an eighth of a million hashes;
//   - one of the whole value, for values of 8 to 64 bytes, matched against
//     the text's tokens (runs between separators such as spaces, quotes,
//     = & : , ; / and brackets): short values are found when they stand
//     alone.
//
// The hash is a multiply-mix over the window's two 64-bit words with a
// 256-bit secret key (the key file of the egress guard in Overseer's home,
// which agents cannot read). Without the key the stored hashes say nothing
// about the values; they are not a cryptographic MAC, and someone holding
// both the key and the hashes could test guesses of a value.

const (
	window = 16 // bytes hashed per window
	stride = 8  // offsets of a text hashed: 0, 8, 16, …
	// MinWindowed is the shortest value found anywhere in a text.
	MinWindowed = window + stride - 1
	// MinWhole and MaxWhole bound the values also matched as whole tokens.
	MinWhole = 8
	MaxWhole = 64
)

// ValueFP is the stored form of one value's fingerprints.
type ValueFP struct {
	// Source says where the value was seen, for a person (never the value).
	Source string `json:"source"`
	// Length of the value in bytes.
	Length int `json:"length"`
	// Whole is the hash of the whole value (0 when not kept).
	Whole uint64 `json:"whole,omitempty"`
	// Windows are the hashes of the value's windows, packed little-endian
	// and base64-encoded.
	Windows string `json:"windows,omitempty"`
}

// Fingerprints is a set of known secret values, by keyed hash. It is safe
// for concurrent use; adding and scanning may interleave.
type Fingerprints struct {
	k0, k1, k2, k3 uint64

	mu      sync.RWMutex
	windows map[uint64]int32
	whole   map[uint64]int32
	bloom   []uint64           // 1<<16 bits over the windows' hashes
	lens    [MaxWhole + 1]bool // the lengths of the whole values
	short   bool               // some value is shorter than MinWindowed
	srcs    []ValueFP
}

// KeySize is the size of a fingerprint key.
const KeySize = 32

// NewKey returns a fresh random key.
func NewKey() []byte {
	k := make([]byte, KeySize)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return k
}

// ErrKey means a key of the wrong size.
var ErrKey = errors.New("secrets: a fingerprint key is 32 bytes")

// NewFingerprints returns an empty set hashing with key (KeySize bytes).
func NewFingerprints(key []byte) (*Fingerprints, error) {
	if len(key) != KeySize {
		return nil, ErrKey
	}
	return &Fingerprints{
		k0: binary.LittleEndian.Uint64(key), k1: binary.LittleEndian.Uint64(key[8:]),
		k2: binary.LittleEndian.Uint64(key[16:]), k3: binary.LittleEndian.Uint64(key[24:]) | 1,
		windows: map[uint64]int32{}, whole: map[uint64]int32{}, bloom: make([]uint64, 1<<10),
	}, nil
}

func mix(a, b uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	return hi ^ lo
}

// le64 reads the 8 bytes of s at i as a little-endian word.
func le64(s string, i int) uint64 {
	_ = s[i+7]
	return binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(s[i:]), 8))
}

// h16 hashes the 16 bytes of s at i.
func (f *Fingerprints) h16(s string, i int) uint64 {
	x := mix(le64(s, i)^f.k0, le64(s, i+8)^f.k1)
	return mix(x^f.k2, f.k3)
}

// hashAny hashes a whole value of any length.
func (f *Fingerprints) hashAny(s string) uint64 {
	h := f.k2 ^ uint64(len(s))*0x9E3779B97F4A7C15
	i := 0
	for ; i+8 <= len(s); i += 8 {
		h = mix(h^le64(s, i), f.k3) ^ f.k0
	}
	var tail uint64
	for j := len(s) - 1; j >= i; j-- {
		tail = tail<<8 | uint64(s[j])
	}
	return mix(mix(h^tail, f.k3)^f.k1, f.k3|0x5bd1e995)
}

// Add fingerprints value, seen at source (a name for a person: "environment
// variable GITHUB_TOKEN"). It reports whether the value is long enough to
// be kept (MinWhole bytes).
func (f *Fingerprints) Add(source, value string) bool {
	fp, ok := f.fingerprint(source, value)
	if ok {
		f.AddFP(fp)
	}
	return ok
}

// Fingerprint computes a value's fingerprints without adding them.
func (f *Fingerprints) Fingerprint(source, value string) (ValueFP, bool) {
	return f.fingerprint(source, value)
}

func (f *Fingerprints) fingerprint(source, value string) (ValueFP, bool) {
	if len(value) < MinWhole {
		return ValueFP{}, false
	}
	fp := ValueFP{Source: source, Length: len(value)}
	if len(value) <= MaxWhole {
		fp.Whole = f.hashAny(value)
	}
	if len(value) >= window {
		n := len(value) - window + 1
		buf := make([]byte, 0, 8*n)
		for i := 0; i < n; i++ {
			buf = binary.LittleEndian.AppendUint64(buf, f.h16(value, i))
		}
		fp.Windows = base64.RawStdEncoding.EncodeToString(buf)
	}
	return fp, true
}

// AddFP adds stored fingerprints (made with the same key).
func (f *Fingerprints) AddFP(fp ValueFP) {
	f.mu.Lock()
	defer f.mu.Unlock()
	idx := int32(len(f.srcs))
	f.srcs = append(f.srcs, ValueFP{Source: fp.Source, Length: fp.Length})
	if fp.Whole != 0 {
		f.whole[fp.Whole] = idx
		if fp.Length <= MaxWhole {
			f.lens[fp.Length] = true
			f.short = f.short || fp.Length < MinWindowed
		}
	}
	if b, err := base64.RawStdEncoding.DecodeString(fp.Windows); err == nil {
		for i := 0; i+8 <= len(b); i += 8 {
			h := binary.LittleEndian.Uint64(b[i:])
			f.windows[h] = idx
			top := h >> 48
			f.bloom[top>>6] |= 1 << (top & 63)
		}
	}
}

// Len returns how many values the set holds.
func (f *Fingerprints) Len() int {
	if f == nil {
		return 0
	}
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.srcs)
}

// Clone returns a copy of f that can be added to without changing f.
func (f *Fingerprints) Clone() *Fingerprints {
	f.mu.RLock()
	defer f.mu.RUnlock()
	c := &Fingerprints{k0: f.k0, k1: f.k1, k2: f.k2, k3: f.k3,
		windows: make(map[uint64]int32, len(f.windows)), whole: make(map[uint64]int32, len(f.whole)),
		bloom: append([]uint64(nil), f.bloom...), srcs: append([]ValueFP(nil), f.srcs...)}
	for k, v := range f.windows {
		c.windows[k] = v
	}
	for k, v := range f.whole {
		c.whole[k] = v
	}
	c.lens, c.short = f.lens, f.short
	return c
}

// wholeSep are the bytes that end a token for whole-value matching;
// segSep those that end a segment where values are looked for (a value
// holds no space, quote or bracket).
var wholeSep, segSep [256]bool

func init() {
	for _, c := range " \t\r\n\"'`&?=:,;()[]{}<>|\\/" {
		wholeSep[c] = true
	}
	for _, c := range " \t\r\n\"'`,;()[]{}<>|\\" {
		segSep[c] = true
	}
	initClasses()
}

// scan reports the known values in t.
func (f *Fingerprints) scan(t, where string, c *collector) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if len(f.srcs) == 0 {
		return
	}
	// report adds a known value found in token (the whole token holding
	// the match: what Redact replaces).
	reported := map[int32]bool{}
	report := func(idx int32, at int, token string) {
		if reported[idx] {
			return
		}
		reported[idx] = true
		src := f.srcs[idx]
		end := min(len(t), at+src.Length)
		masked := Mask(t[at:end])
		if head, _, ok := strings.Cut(masked, "…("); ok {
			masked = fmt.Sprintf("%s…(%d chars)", head, src.Length)
		}
		c.addAt(Finding{Rule: "known-value", Description: "the value of " + src.Source,
			Masked: masked, Length: src.Length, Source: src.Source}, where, token)
	}
	// Windows: every eighth offset of the whole text. A window holding a
	// separator cannot be a value's (a value holds no space or quote), so
	// the text need not be cut into segments first; the segment around a
	// hit is found when there is one (rarely).
	n := len(t)
	if len(f.windows) > 0 {
		for j := 0; j+window <= n; j += stride {
			h := f.h16(t, j)
			top := h >> 48
			if f.bloom[top>>6]&(1<<(top&63)) == 0 {
				continue
			}
			if idx, ok := f.windows[h]; ok {
				s, e := j, j
				for s > 0 && !segSep[t[s-1]] {
					s--
				}
				for e < n && !segSep[t[e]] {
					e++
				}
				report(idx, j, t[s:e])
			}
		}
	}
	// Whole tokens between separators, for the values too short to be
	// found by their windows (a longer value always holds a hashed window
	// where it occurs, and was reported above).
	if !f.short {
		return
	}
	var shortLens []int // the lengths of the short values, for their pieces
	for m := MinWhole; m < MinWindowed; m++ {
		if f.lens[m] {
			shortLens = append(shortLens, m)
		}
	}
	// One table lookup a byte: a byte of a token goes on, a separator ends
	// the token, a soft separator (- _ . + …) inside one ends a piece: a
	// short value joined to other text (x-VALUE, VALUE_v2.png, a.b.VALUE)
	// is looked for among the pieces that begin at the token's start or
	// after a soft separator and end at one or at the token's end.
	ts, soft := 0, -1
	for k := 0; k <= n; k++ {
		c := byte(classSep)
		if k < n {
			c = byteClass[t[k]]
		}
		switch c {
		case classToken:
			continue
		case classSoft:
			f.pieces(t, ts, k, shortLens, true, report)
			soft = k
			continue
		}
		if m := k - ts; m >= MinWhole && m < MinWindowed && f.lens[m] {
			if idx, ok := f.whole[f.hashAny(t[ts:k])]; ok {
				report(idx, ts, t[ts:k])
			}
		}
		if soft >= ts {
			f.pieces(t, ts, k, shortLens, false, report)
		}
		ts = k + 1
	}
}

// Byte classes of the token pass.
const (
	classToken = iota
	classSep
	classSoft
)

var byteClass [256]byte

// initClasses fills byteClass from wholeSep (called by the init that fills
// wholeSep).
func initClasses() {
	for c := range 256 {
		switch {
		case wholeSep[c]:
			byteClass[c] = classSep
		case strings.IndexByte("-_.+~#!*$@%^", byte(c)) >= 0:
			byteClass[c] = classSoft
		}
	}
}

// pieces looks for short values that end at e (a soft separator, or the
// end of the token starting at ts when atSoft is false) and begin at the
// token's start or after a soft separator; the whole token is matched by
// the caller.
func (f *Fingerprints) pieces(t string, ts, e int, lens []int, atSoft bool, report func(int32, int, string)) {
	for _, m := range lens {
		s := e - m
		if s < ts {
			break
		}
		if s == ts && !atSoft || s > ts && byteClass[t[s-1]] != classSoft {
			continue
		}
		if idx, ok := f.whole[f.hashAny(t[s:e])]; ok {
			report(idx, s, t[s:e])
		}
	}
}

// ValuesOf extracts the secret values of a secret file's content: the
// values of KEY=VALUE, key: value and "key": "value" lines, passwords of
// .netrc and .pgpass lines and of URLs, the body of a private key, and the
// content of a file that is a single token. Values shorter than MinWhole
// bytes or that read as words (no digit, one case) are left out.
func ValuesOf(content string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(v string) {
		v = strings.Trim(strings.TrimSpace(v), `"'`+"`,;")
		if len(v) < MinWhole || len(v) > 4096 || seen[v] || !valueLike(v) {
			return
		}
		seen[v] = true
		out = append(out, v)
	}
	trimmed := strings.TrimSpace(content)
	if !strings.ContainsAny(trimmed, " \t\n=:") {
		add(trimmed) // a token file (~/.vault-token)
	}
	var keyBody strings.Builder
	inKey := false
	for _, line := range strings.Split(content, "\n") {
		l := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(l, "-----BEGIN") && strings.Contains(l, "PRIVATE KEY"):
			inKey = true
			keyBody.Reset()
			continue
		case strings.HasPrefix(l, "-----END"):
			if inKey {
				body := keyBody.String()
				// The key body as one string, and each of its lines: the
				// lines are what an encoded copy keeps intact.
				add(body)
			}
			inKey = false
			continue
		case inKey:
			if !strings.Contains(l, ":") {
				keyBody.WriteString(l)
				add(l)
			}
			continue
		case l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, ";") || strings.HasPrefix(l, "["):
			continue
		}
		// key = value, key: value, "key": "value", export KEY=value
		if i := strings.IndexAny(l, "=:"); i > 0 {
			add(l[i+1:])
		}
		// .netrc: machine h login u password p; .pgpass: h:p:db:user:password
		f := strings.Fields(l)
		for j := 0; j+1 < len(f); j++ {
			if f[j] == "password" || f[j] == "passwd" {
				add(f[j+1])
			}
		}
		if strings.Count(l, ":") == 4 && !strings.Contains(l, " ") {
			add(l[strings.LastIndexByte(l, ':')+1:])
		}
		// URL passwords: scheme://user:pass@host
		if k := strings.Index(l, "://"); k >= 0 {
			rest := l[k+3:]
			if at := strings.IndexByte(rest, '@'); at > 0 {
				if c := strings.IndexByte(rest[:at], ':'); c >= 0 {
					add(rest[c+1 : at])
				}
			}
		}
	}
	return out
}

// ValueLike reports whether v looks like a secret value rather than a
// word, a number or a path: it has two kinds of characters (lower case,
// upper case, digits, symbols), some entropy, and no spaces.
func ValueLike(v string) bool { return valueLike(v) }

func valueLike(v string) bool {
	if strings.ContainsAny(v, " \t") {
		return false
	}
	var lowerC, upperC, digit, other bool
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z':
			lowerC = true
		case c >= 'A' && c <= 'Z':
			upperC = true
		case c >= '0' && c <= '9':
			digit = true
		default:
			other = true
		}
	}
	switch {
	case strings.HasPrefix(v, "/") || strings.HasPrefix(v, "~/") || strings.HasPrefix(v, "./"):
		return false // a path
	case v == "true" || v == "false" || v == "null":
		return false
	}
	kinds := 0
	for _, b := range []bool{lowerC, upperC, digit, other} {
		if b {
			kinds++
		}
	}
	return kinds >= 2 && entropy(v) >= 2.5
}
