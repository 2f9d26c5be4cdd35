package hookcore

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// The hook runs once per tool call, and encoding/json's first use of each
// struct type (its reflection over the fields) was a tenth of the lean
// hook's CPU. The few documents on its hot path — the hook event, the
// action it submits, the daemon's answer, the address file — are read and
// written here by hand instead, with encoding/json as the reference: each
// fast decoder either gives what encoding/json gives for its input or
// declines (ok false), and the caller then decodes with encoding/json, so
// that every input, unusual or invalid, is read exactly as before; each
// fast encoder either writes the bytes json.Marshal writes or declines.
// The fuzz targets in fastjson_test.go hold both to that.
//
// A decoder declines whatever it does not model: a syntax error anywhere,
// a value of another type than the field's, a duplicate key where
// encoding/json would merge, a key that matches a field only
// case-insensitively (encoding/json accepts those), a key that is not
// ASCII, nesting deeper than maxFastDepth, trailing data.

// maxFastDepth bounds the nesting the fast decoders follow (encoding/json
// allows 10000; deeper input is handed to it).
const maxFastDepth = 500

// scan reads one JSON document.
type scan struct {
	b     []byte
	i     int
	depth int
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (s *scan) ws() {
	for s.i < len(s.b) && isWS(s.b[s.i]) {
		s.i++
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (s *scan) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// end reports whether only white space is left.
func (s *scan) end() bool {
	s.ws()
	return s.i == len(s.b)
}

// lit consumes the literal word (true, false, null).
func (s *scan) lit(word string) bool {
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// num consumes a number and returns its text.
func (s *scan) num() (string, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	default:
		return "", false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.i >= len(s.b) || !isDigit(s.b[s.i]) {
			return "", false
		}
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.i >= len(s.b) || !isDigit(s.b[s.i]) {
			return "", false
		}
		for s.i < len(s.b) && isDigit(s.b[s.i]) {
			s.i++
		}
	}
	return string(s.b[start:s.i]), true
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	case c >= 'A' && c <= 'F':
		return rune(c - 'A' + 10)
	}
	return -1
}

// u4 reads the four hex digits of a \u escape at b[0:4], or -1.
func u4(b []byte) rune {
	if len(b) < 4 {
		return -1
	}
	var r rune
	for _, c := range b[:4] {
		h := hexVal(c)
		if h < 0 {
			return -1
		}
		r = r<<4 | h
	}
	return r
}

// str consumes a string at s.i (a '"') and returns its value, decoded as
// encoding/json decodes it: escapes resolved, a \u escape of half a
// surrogate pair and each byte that is not UTF-8 replaced by U+FFFD.
func (s *scan) str() (string, bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return "", false
	}
	s.i++
	start := s.i
	// The common case: nothing to decode.
	for s.i < len(s.b) {
		c := s.b[s.i]
		if c == '"' {
			v := string(s.b[start:s.i])
			s.i++
			return v, true
		}
		if c == '\\' || c < ' ' {
			break
		}
		if c < utf8.RuneSelf {
			s.i++
			continue
		}
		r, size := utf8.DecodeRune(s.b[s.i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		s.i += size
	}
	out := make([]byte, 0, s.i-start+16)
	out = append(out, s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return string(out), true
		case c < ' ':
			return "", false
		case c == '\\':
			if s.i+1 >= len(s.b) {
				return "", false
			}
			e := s.b[s.i+1]
			s.i += 2
			switch e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r := u4(s.b[s.i:])
				if r < 0 {
					return "", false
				}
				s.i += 4
				if utf16.IsSurrogate(r) {
					r2 := rune(-1)
					if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
						r2 = u4(s.b[s.i+2:])
					}
					if d := utf16.DecodeRune(r, r2); d != unicode.ReplacementChar {
						s.i += 6
						out = utf8.AppendRune(out, d)
						break
					}
					r = unicode.ReplacementChar
				}
				out = utf8.AppendRune(out, r)
			default:
				return "", false
			}
		case c < utf8.RuneSelf:
			out = append(out, c)
			s.i++
		default:
			r, size := utf8.DecodeRune(s.b[s.i:])
			s.i += size
			out = utf8.AppendRune(out, r)
		}
	}
	return "", false
}

// skip consumes any value, checking its syntax.
func (s *scan) skip() bool {
	switch s.peek() {
	case '{':
		return s.object(func(string) bool { return s.skip() })
	case '[':
		return s.array(func() bool { return s.skip() })
	case '"':
		_, ok := s.str()
		return ok
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		_, ok := s.num()
		return ok
	}
}

// object consumes an object, calling value for each key with s before the
// key's value, which value must consume.
func (s *scan) object(value func(key string) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.depth++; s.depth > maxFastDepth {
		return false
	}
	if s.peek() == '}' {
		s.i++
		s.depth--
		return true
	}
	for {
		if s.peek() != '"' {
			return false
		}
		k, ok := s.str()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !value(k) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// array consumes an array, calling elem before each element, which elem
// must consume.
func (s *scan) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.depth++; s.depth > maxFastDepth {
		return false
	}
	if s.peek() == ']' {
		s.i++
		s.depth--
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// any consumes a value as encoding/json decodes it into an interface with
// UseNumber: objects as map[string]any (the last of duplicate keys wins),
// arrays as []any, numbers as json.Number.
func (s *scan) any() (any, bool) {
	switch s.peek() {
	case '{':
		m := map[string]any{}
		ok := s.object(func(k string) bool {
			v, ok := s.any()
			m[k] = v
			return ok
		})
		return m, ok
	case '[':
		l := []any{}
		ok := s.array(func() bool {
			v, ok := s.any()
			l = append(l, v)
			return ok
		})
		return l, ok
	case '"':
		return s.str()
	case 't':
		return true, s.lit("true")
	case 'f':
		return false, s.lit("false")
	case 'n':
		return nil, s.lit("null")
	default:
		n, ok := s.num()
		return json.Number(n), ok
	}
}

// isNull consumes a null, if that is what comes next.
func (s *scan) isNull() bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	return false
}

// strField decodes a string field into *dst: a null leaves it as it is,
// as in encoding/json; another type declines.
func (s *scan) strField(dst *string) bool {
	if s.isNull() {
		return true
	}
	if s.peek() != '"' {
		return false
	}
	v, ok := s.str()
	*dst = v
	return ok
}

// boolField decodes a bool field (null leaves it).
func (s *scan) boolField(dst *bool) bool {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case 't':
		*dst = true
		return s.lit("true")
	case 'f':
		*dst = false
		return s.lit("false")
	}
	return false
}

// field finds key among names: its index, -1 for a key encoding/json
// ignores, ok false for one the fast decoders do not take (a key that
// matches a name only case-insensitively, or one that is not ASCII and
// might through Unicode case folding).
func field(key string, names ...string) (idx int, ok bool) {
	for i, n := range names {
		if key == n {
			return i, true
		}
	}
	for i := 0; i < len(key); i++ {
		if key[i] >= utf8.RuneSelf {
			return 0, false
		}
	}
	for _, n := range names {
		if strings.EqualFold(key, n) {
			return 0, false
		}
	}
	return -1, true
}

// fields is the set of keys seen in one object: a duplicate of a struct
// field declines (encoding/json merges into what the first one decoded).
type fields uint64

// fieldsOf decodes an object whose known keys are names (matched as field
// matches them): set decodes the value of names[i], an unknown key's value
// is skipped, and a known key given twice declines (encoding/json would
// merge the two).
func (s *scan) fieldsOf(names []string, set func(i int) bool) bool {
	var seen fields
	return s.object(func(key string) bool {
		i, ok := field(key, names...)
		switch {
		case !ok || i >= 0 && !seen.first(i):
			return false
		case i < 0:
			return s.skip()
		}
		return set(i)
	})
}

func (f *fields) first(i int) bool {
	if *f&(1<<i) != 0 {
		return false
	}
	*f |= 1 << i
	return true
}

// appendJSONString appends s as json.Marshal writes a string: HTML
// characters, U+2028 and U+2029 escaped, each byte that is not UTF-8 as
// \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= ' ' && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// validNumber reports whether n is a JSON number (json.Marshal refuses a
// json.Number that is not).
func validNumber(n string) bool {
	s := scan{b: []byte(n)}
	_, ok := s.num()
	return ok && s.i == len(n)
}

// appendJSONValue appends v as json.Marshal writes it, for the values the
// fast decoder makes (string, json.Number, bool, nil, []any,
// map[string]any with keys sorted); ok is false for any other.
func appendJSONValue(dst []byte, v any, depth int) ([]byte, bool) {
	if depth > maxFastDepth {
		return dst, false
	}
	switch v := v.(type) {
	case nil:
		return append(dst, "null"...), true
	case string:
		return appendJSONString(dst, v), true
	case bool:
		if v {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case json.Number:
		if v == "" {
			return append(dst, '0'), true
		}
		if !validNumber(string(v)) {
			return dst, false
		}
		return append(dst, v...), true
	case []any:
		if v == nil {
			return append(dst, "null"...), true
		}
		dst = append(dst, '[')
		for i, e := range v {
			if i > 0 {
				dst = append(dst, ',')
			}
			var ok bool
			if dst, ok = appendJSONValue(dst, e, depth+1); !ok {
				return dst, false
			}
		}
		return append(dst, ']'), true
	case map[string]any:
		return appendJSONMap(dst, v, depth)
	}
	return dst, false
}

func appendJSONMap(dst []byte, m map[string]any, depth int) ([]byte, bool) {
	if m == nil {
		return append(dst, "null"...), true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	dst = append(dst, '{')
	for i, k := range keys {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendJSONString(dst, k)
		dst = append(dst, ':')
		var ok bool
		if dst, ok = appendJSONValue(dst, m[k], depth+1); !ok {
			return dst, false
		}
	}
	return append(dst, '}'), true
}

// fastValue decodes one value followed by nothing but white space as
// encoding/json decodes it into an interface with UseNumber, or declines.
func fastValue(data []byte) (any, bool) {
	s := &scan{b: data}
	v, ok := s.any()
	if !ok || !s.end() {
		return nil, false
	}
	return v, true
}
