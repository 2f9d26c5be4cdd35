package secrets

import (
	"runtime"
	"sync"

	"encoding/base32"
	"encoding/base64"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// maxDepth is how many decoders may be stacked (base64 inside URL encoding
// inside base64 …).
const maxDepth = 4

// minEncoded is the shortest encoded run that is decoded.
const minEncoded = 16

// parallelMin is the size from which a text is scanned in two halves at
// once (on a machine with more than one CPU).
const parallelMin = 256 << 10

// overlap is how far the first half reaches into the second: a secret
// (or a keyword before its value) near the cut is whole in the first.
const overlap = 16 << 10

// scanDecoded scans t and every text the decoders reveal in it; a large
// text is cut in two at a byte that no token spans, and the halves
// (overlapping by 16 KB) are scanned concurrently.
func (a *Analyzer) scanDecoded(rs *ruleSet, t string, c *collector) {
	if len(t) >= parallelMin && runtime.GOMAXPROCS(0) > 1 {
		cut := boundary(t, len(t)/2)
		end := -1
		if cut > 0 {
			end = boundary(t, cut+overlap)
		}
		if end > 0 {
			ca, cb := c.sub(), c.sub()
			cb.base = c.base + cut
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				a.scanSerial(rs, t[cut:], cb)
			}()
			a.scanSerial(rs, t[:end], ca)
			wg.Wait()
			c.merge(ca)
			c.merge(cb)
			return
		}
	}
	a.scanSerial(rs, t, c)
}

// boundary returns the first index at or after i (within 64 KB) of a byte
// that is not part of a token, or -1.
func boundary(t string, i int) int {
	for j := i; j < len(t) && j < i+64<<10; j++ {
		if !tokenChar[t[j]] {
			return j
		}
	}
	return -1
}

// scanSerial scans t and every text the decoders reveal in it.
func (a *Analyzer) scanSerial(rs *ruleSet, t string, c *collector) {
	type item struct {
		text, where string
		depth       int
	}
	work := []item{{t, "", 0}}
	seen := map[string]bool{}
	budget := 2*len(t) + 64<<10 // decoded bytes scanned at most
	push := func(text, where string, depth int) {
		if len(text) == 0 || len(text) > budget || seen[text] {
			return
		}
		budget -= len(text)
		seen[text] = true
		work = append(work, item{text, where, depth})
	}
	for len(work) > 0 {
		it := work[len(work)-1]
		work = work[:len(work)-1]
		sv := surveyText(it.text)
		orig, text := c.original, c.text
		c.original, c.text = orig && it.depth == 0, it.text
		a.scanText(rs, it.text, &sv, it.where, c)
		c.original, c.text = orig, text
		if it.depth >= maxDepth {
			sv.release()
			continue
		}
		d := it.depth + 1
		if sv.percent {
			if u, ok := URLDecode(it.text); ok {
				push(u, joinWhere(it.where, "url"), d)
			}
		}
		if sv.escape {
			if u, ok := Unescape(it.text); ok {
				push(u, joinWhere(it.where, "escapes"), d)
			}
		}
		if sv.nonASCII {
			if u, ok := Fold(it.text); ok {
				push(u, joinWhere(it.where, "look-alikes"), d)
			}
		}
		for _, r := range sv.runs {
			if r.cls&runHash != 0 && r.cls&runHex == 0 {
				continue // hex digits and dashes: a UUID or an id, not an encoding
			}
			for _, dec := range decodeRun(it.text[r.start:r.end]) {
				push(dec.text, joinWhere(it.where, dec.kind), d)
			}
		}
		sv.release()
	}
}

type decoded struct{ text, kind string }

// decodeRun tries base64, base32 and hex on the encoded segments of a run
// of token characters and returns the decodings that are text.
func decodeRun(r string) []decoded {
	var out []decoded
	// Encoded segments: a run may hold several, separated by . or ~ (a
	// JWT) or = (key=value, or padding).
	for start := 0; start < len(r); {
		end := start
		for end < len(r) && r[end] != '.' && r[end] != '~' && r[end] != '=' {
			end++
		}
		if seg := r[start:end]; len(seg) >= minEncoded && !isUUID(seg) {
			if d, ok := decodeSegment(seg); ok {
				out = append(out, d)
			}
		}
		start = end + 1
	}
	return out
}

// isUUID reports a UUID (8-4-4-4-12 hex digits): an identifier, not an
// encoding.
func isUUID(s string) bool {
	if len(s) != 36 || s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return false
	}
	for i := 0; i < 36; i++ {
		if i != 8 && i != 13 && i != 18 && i != 23 && charClass[s[i]]&classHex == 0 {
			return false
		}
	}
	return true
}

// decodeSegment decodes one segment as the first encoding whose alphabet
// it fits and whose decoding is text.
func decodeSegment(seg string) (decoded, bool) {
	cls := byte(classHex | classB32 | classURL | classStd)
	for i := 0; i < len(seg); i++ {
		cls &= charClass[seg[i]]
	}
	if cls&classHex != 0 {
		if s, ok := decodeHexDigits(seg); ok {
			return decoded{s, "hex"}, true
		}
	}
	if cls&(classURL|classStd) != 0 && probeBase64(seg) {
		if s, ok := DecodeBase64(seg); ok {
			return decoded{s, "base64"}, true
		}
	}
	if cls&classB32 != 0 {
		if s, ok := DecodeBase32(seg); ok {
			return decoded{s, "base32"}, true
		}
	}
	return decoded{}, false
}

const (
	classHex = 1 << iota
	classB32
	classURL // the base64 URL alphabet
	classStd // the standard base64 alphabet
)

// charClass marks hex digits, base32 characters (either case) and the
// two base64 alphabets.
var charClass [256]byte

func init() {
	for c := 0; c < 256; c++ {
		b := byte(c)
		if isHex(b) {
			charClass[c] |= classHex
		}
		alnum := b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
		if b >= 'A' && b <= 'Z' || b >= 'a' && b <= 'z' || b >= '2' && b <= '7' {
			charClass[c] |= classB32
		}
		if alnum || b == '-' || b == '_' {
			charClass[c] |= classURL
		}
		if alnum || b == '+' || b == '/' {
			charClass[c] |= classStd
		}
	}
}

// b64Value is the value of a base64 character in either alphabet, or
// 0xff.
var b64Value [256]byte

func init() {
	for i := range b64Value {
		b64Value[i] = 0xff
	}
	const std = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	for i := 0; i < len(std); i++ {
		b64Value[std[i]] = byte(i)
	}
	b64Value['-'], b64Value['_'] = 62, 63
}

// textProbe checks, byte by byte, that the start of a decoding reads as
// text: UTF-8 sequences well formed, at most one control character. Random
// bytes fail within a few bytes, before anything is allocated.
type textProbe struct {
	need, bad, n int
	failed       bool
}

// add takes the next byte; it reports whether the probe has seen enough.
func (p *textProbe) add(b byte) bool {
	p.n++
	switch {
	case p.need > 0:
		if b&0xC0 != 0x80 {
			p.failed = true
		}
		p.need--
	case b < 0x20 && b != '\n' && b != '\r' && b != '\t' || b == 0x7f:
		p.bad++
		p.failed = p.bad > 1
	case b < 0x80:
	case b >= 0xC2 && b <= 0xDF:
		p.need = 1
	case b >= 0xE0 && b <= 0xEF:
		p.need = 2
	case b >= 0xF0 && b <= 0xF4:
		p.need = 3
	default:
		p.failed = true
	}
	return p.failed || p.n >= 24
}

// probeBase64 decodes the start of s (either alphabet, no padding) and
// reports whether it reads as text.
func probeBase64(s string) bool {
	var p textProbe
	var acc uint32
	bitsN := 0
	for i := 0; i < len(s); i++ {
		v := b64Value[s[i]]
		if v == 0xff {
			return false
		}
		acc = acc<<6 | uint32(v)
		bitsN += 6
		if bitsN >= 8 {
			bitsN -= 8
			if p.add(byte(acc >> bitsN)) {
				break
			}
		}
	}
	return !p.failed && p.n >= 6
}

// isTextPrefix is isText for the start of a longer text: a multi-byte
// character may be cut at its end.
func isTextPrefix(b []byte) bool {
	for k := 0; k < 3 && len(b) > 0 && !utf8.Valid(b); k++ {
		b = b[:len(b)-1]
	}
	return isText(b)
}

// DecodeBase64 decodes s as base64 in either alphabet, with or without
// padding, and reports whether the result is text. Characters that cannot
// be decoded (a trailing partial quantum) are dropped.
func DecodeBase64(s string) (string, bool) {
	s = strings.TrimRight(s, "=")
	if len(s) < minEncoded {
		return "", false
	}
	enc := base64.RawStdEncoding
	if strings.ContainsAny(s, "-_") {
		if strings.ContainsAny(s, "+/") {
			return "", false
		}
		enc = base64.RawURLEncoding
	}
	if len(s)%4 == 1 {
		s = s[:len(s)-1]
	}
	if !probeBase64(s) {
		return "", false
	}
	b, err := enc.DecodeString(s)
	if err != nil || !isText(b) {
		return "", false
	}
	return string(b), true
}

// DecodeHex decodes s as hex (an odd last digit is dropped) and reports
// whether the result is text.
func DecodeHex(s string) (string, bool) {
	if len(s) < minEncoded {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if !isHex(s[i]) {
			return "", false
		}
	}
	return decodeHexDigits(s)
}

// decodeHexDigits is DecodeHex of s that holds only hex digits: the start
// is probed before anything is allocated.
func decodeHexDigits(s string) (string, bool) {
	if len(s) < minEncoded {
		return "", false
	}
	s = s[:len(s)&^1]
	var p textProbe
	for i := 0; i+1 < len(s); i += 2 {
		if p.add(unhex(s[i])<<4 | unhex(s[i+1])) {
			break
		}
	}
	if p.failed {
		return "", false
	}
	b, err := hex.DecodeString(s)
	if err != nil || !isText(b) {
		return "", false
	}
	return string(b), true
}

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// DecodeBase32 decodes s as base32 (either case, no padding needed) and
// reports whether the result is text.
func DecodeBase32(s string) (string, bool) {
	s = strings.ToUpper(strings.TrimRight(s, "="))
	if len(s) < minEncoded {
		return "", false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '2' && c <= '7') {
			return "", false
		}
	}
	// Drop a trailing partial quantum that cannot decode.
	for len(s) > 0 && (len(s)%8 == 1 || len(s)%8 == 3 || len(s)%8 == 6) {
		s = s[:len(s)-1]
	}
	b, err := b32.DecodeString(s)
	if err != nil || !isText(b) {
		return "", false
	}
	return string(b), true
}

// isText reports whether b reads as text: valid UTF-8, at least 6 bytes,
// and at least 90% printable characters or white space.
func isText(b []byte) bool {
	if len(b) < 6 || !utf8.Valid(b) {
		return false
	}
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			bad++
		}
	}
	return bad*10 <= len(b)
}

// URLDecode undoes percent-encoding (and + for a space in a query value
// is left alone: base64 uses it). It reports whether anything changed.
func URLDecode(s string) (string, bool) {
	if !strings.Contains(s, "%") {
		return s, false
	}
	var b strings.Builder
	b.Grow(len(s))
	changed := false
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			changed = true
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String(), changed
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// Unescape undoes the escapes of string literals and markup: \uXXXX,
// \u{X…}, \UXXXXXXXX, \xXX, \NNN (octal), \n \t \r, and HTML character
// references (&#NNN; &#xHH; &amp; &lt; &gt; &quot; &apos;). It reports
// whether anything changed.
func Unescape(s string) (string, bool) {
	var b strings.Builder
	b.Grow(len(s))
	changed := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			if r, n, ok := backslashEscape(s[i+1:]); ok {
				b.WriteRune(r)
				i += n
				changed = true
				continue
			}
		}
		if c == '&' && i+2 < len(s) {
			if r, n, ok := htmlEscape(s[i+1:]); ok {
				b.WriteRune(r)
				i += n
				changed = true
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String(), changed
}

// backslashEscape decodes the escape after a backslash: the rune and how
// many bytes it took.
func backslashEscape(s string) (rune, int, bool) {
	switch s[0] {
	case 'u':
		if len(s) > 2 && s[1] == '{' {
			end := strings.IndexByte(s, '}')
			if end > 2 && end <= 9 {
				if v, err := strconv.ParseUint(s[2:end], 16, 32); err == nil && v <= utf8.MaxRune {
					return rune(v), end + 1, true
				}
			}
			return 0, 0, false
		}
		return hexRune(s, 1, 4)
	case 'U':
		return hexRune(s, 1, 8)
	case 'x':
		return hexRune(s, 1, 2)
	case 'n':
		return '\n', 1, true
	case 't':
		return '\t', 1, true
	case 'r':
		return '\r', 1, true
	case '/', '"', '\'', '\\':
		return rune(s[0]), 1, true
	}
	if s[0] >= '0' && s[0] <= '3' && len(s) >= 3 && s[1] >= '0' && s[1] <= '7' && s[2] >= '0' && s[2] <= '7' {
		return rune((s[0]-'0')<<6 | (s[1]-'0')<<3 | (s[2] - '0')), 3, true
	}
	return 0, 0, false
}

func hexRune(s string, from, n int) (rune, int, bool) {
	if len(s) < from+n {
		return 0, 0, false
	}
	v, err := strconv.ParseUint(s[from:from+n], 16, 32)
	if err != nil || v > utf8.MaxRune {
		return 0, 0, false
	}
	return rune(v), from + n, true
}

var htmlNamed = map[string]rune{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'', "sol": '/', "colon": ':', "equals": '='}

// htmlEscape decodes a character reference after "&".
func htmlEscape(s string) (rune, int, bool) {
	end := strings.IndexByte(s[:min(len(s), 12)], ';')
	if end < 1 {
		return 0, 0, false
	}
	ref := s[:end]
	if ref[0] == '#' {
		base := 10
		num := ref[1:]
		if len(num) > 0 && (num[0] == 'x' || num[0] == 'X') {
			base, num = 16, num[1:]
		}
		v, err := strconv.ParseUint(num, base, 32)
		if err != nil || v > utf8.MaxRune {
			return 0, 0, false
		}
		return rune(v), end + 1, true
	}
	if r, ok := htmlNamed[strings.ToLower(ref)]; ok {
		return r, end + 1, true
	}
	return 0, 0, false
}

// Fold removes invisible characters (zero-width spaces and joiners, the
// soft hyphen, bidirectional marks, the byte order mark) and maps
// look-alike characters to ASCII: compatibility forms (full-width letters,
// mathematical alphanumerics) by NFKC, and Cyrillic and Greek letters that
// look like Latin ones by a table. It reports whether anything changed.
func Fold(s string) (string, bool) {
	n := norm.NFKC.String(s)
	var b strings.Builder
	b.Grow(len(n))
	for _, r := range n {
		if invisible(r) {
			continue
		}
		if m, ok := confusables[r]; ok {
			r = m
		}
		b.WriteRune(r)
	}
	out := b.String()
	return out, out != s
}

func invisible(r rune) bool {
	switch {
	case r >= 0x200B && r <= 0x200F, r >= 0x202A && r <= 0x202E, r >= 0x2060 && r <= 0x2064,
		r >= 0x2066 && r <= 0x2069, r == 0xFEFF, r == 0x00AD, r == 0x180E, r == 0x034F,
		r >= 0xFE00 && r <= 0xFE0F, r >= 0xE0000 && r <= 0xE007F:
		return true
	}
	return false
}

// confusables maps Cyrillic, Greek and other letters that render like
// ASCII letters or digits to them.
var confusables = map[rune]rune{
	// Cyrillic capitals
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T',
	'Х': 'X', 'У': 'Y', 'Ѕ': 'S', 'І': 'I', 'Ј': 'J', 'Ԛ': 'Q', 'Ԝ': 'W', 'Ү': 'Y', 'Һ': 'h', 'Ӏ': 'I',
	// Cyrillic small
	'а': 'a', 'в': 'b', 'е': 'e', 'к': 'k', 'м': 'm', 'н': 'h', 'о': 'o', 'р': 'p', 'с': 'c', 'т': 't',
	'у': 'y', 'х': 'x', 'ѕ': 's', 'і': 'i', 'ј': 'j', 'һ': 'h', 'ԛ': 'q', 'ԝ': 'w', 'ү': 'y', 'ɡ': 'g',
	// Greek capitals
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O',
	'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	// Greek small
	'α': 'a', 'ο': 'o', 'ν': 'v', 'ι': 'i', 'κ': 'k', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'χ': 'x',
	// Others
	'ı': 'i', 'ℓ': 'l', '∕': '/', '⁄': '/', '‐': '-', '‑': '-', '‒': '-', '–': '-', '—': '-', '−': '-',
}
