package standard

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The estimate is kept in tenths of a token so that the weights below add up
// exactly; it is rounded up only at the end.
const (
	unitsPerToken = 10
	unitsCJK      = 15 // one Han, kana or Hangul character
	unitsWord     = 13 // one Latin (or other letter/digit) word
	unitsSymbol   = 5  // one punctuation mark or other symbol
	// wordChunk is the longest run of letters and digits counted as one word:
	// a longer run (an identifier, a hash, base64) counts as one word per
	// started chunk, so that a blob without spaces is not estimated as one
	// word.
	wordChunk = 8
)

// EstimateTokens estimates how many tokens a model's tokenizer makes of s,
// without knowing the tokenizer:
//
//   - each Han (Chinese), kana or Hangul character counts 1.5;
//   - each word — a run of letters, digits, marks and underscores — counts
//     1.3, and a run longer than 8 characters counts 1.3 for every started 8;
//   - each other character that is not white space (punctuation, symbols,
//     emoji, invalid UTF-8 bytes) counts 0.5;
//   - white space counts nothing.
//
// The sum is rounded up. The estimate is never negative, and appending text
// to s never lowers it.
func EstimateTokens(s string) int {
	return tokensOf(unitsOf(s))
}

// tokensOf rounds an estimate in units up to whole tokens.
func tokensOf(units int) int {
	return (units + unitsPerToken - 1) / unitsPerToken
}

// unitsOf is the estimate of s in tenths of a token.
func unitsOf(s string) int {
	var c counter
	for _, r := range s {
		c.add(r)
	}
	return c.units
}

// counter accumulates the estimate rune by rune. Counting a string's runes in
// reverse order gives the same total, which shorten relies on.
type counter struct {
	units int
	run   int // length of the current run of word characters
}

func (c *counter) add(r rune) {
	var k runeKind
	if r >= 0 && r < utf8.RuneSelf {
		k = asciiKinds[r]
	} else {
		k = kindOf(r)
	}
	switch k {
	case kindCJK:
		c.units += unitsCJK
		c.run = 0
	case kindWord:
		if c.run%wordChunk == 0 {
			c.units += unitsWord
		}
		c.run++
	case kindSpace:
		c.run = 0
	default:
		c.units += unitsSymbol
		c.run = 0
	}
}

type runeKind uint8

const (
	kindSymbol runeKind = iota
	kindSpace
	kindWord
	kindCJK
)

// asciiKinds holds kindOf for ASCII, which is most text, to spare the
// Unicode table look-ups.
var asciiKinds = func() (t [utf8.RuneSelf]runeKind) {
	for r := range t {
		t[r] = kindOf(rune(r))
	}
	return t
}()

func kindOf(r rune) runeKind {
	switch {
	case unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul):
		return kindCJK
	case r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r):
		return kindWord
	case unicode.IsSpace(r):
		return kindSpace
	}
	return kindSymbol
}

// markerReserve is the room, in units, kept for the marker shorten inserts
// ("[… 123456 tokens left out …]" is about 7.5 tokens).
const markerReserve = 10 * unitsPerToken

// shorten returns s if its estimate is at most maxTokens; otherwise its head
// and tail around a marker that says how many tokens were left out, the
// whole estimated at no more than maxTokens (for maxTokens of at least 10;
// below that only the marker is left). It prefers to cut at line ends.
// Invalid UTF-8 is replaced by U+FFFD first, so that cuts fall between
// characters.
func shorten(s string, maxTokens int) string {
	s = validUTF8(s)
	total := unitsOf(s)
	if total <= maxTokens*unitsPerToken {
		return s
	}
	room := maxTokens*unitsPerToken - markerReserve
	if room < 0 {
		room = 0
	}
	headEnd := prefixWithin(s, room*3/5)
	head := s[:headEnd]
	if i := strings.LastIndexByte(head, '\n'); i >= 0 && i >= len(head)/2 {
		head = head[:i+1]
	}
	headUnits := unitsOf(head)
	tailStart := suffixWithin(s[len(head):], room-headUnits) + len(head)
	tail := s[tailStart:]
	if i := strings.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
		tail = tail[i+1:]
	}
	left := tokensOf(total - headUnits - unitsOf(tail))
	if left < 1 {
		left = 1
	}
	var b strings.Builder
	b.Grow(len(head) + len(tail) + 40)
	b.WriteString(head)
	if head != "" && !strings.HasSuffix(head, "\n") {
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "[… %d tokens left out …]", left)
	if tail != "" {
		b.WriteByte('\n')
		b.WriteString(tail)
	}
	return b.String()
}

// prefixWithin returns the length in bytes of the longest prefix of s whose
// estimate is at most units.
func prefixWithin(s string, units int) int {
	var c counter
	for i, r := range s {
		c.add(r)
		if c.units > units {
			return i
		}
	}
	return len(s)
}

// suffixWithin returns the byte offset where the longest suffix of s whose
// estimate is at most units starts.
func suffixWithin(s string, units int) int {
	var c counter
	end := len(s)
	for end > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:end])
		c.add(r)
		if c.units > units {
			return end
		}
		end -= size
	}
	return 0
}

// validUTF8 replaces each run of invalid UTF-8 bytes by U+FFFD.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
