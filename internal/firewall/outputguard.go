package firewall

import (
	"strings"
	"unicode/utf8"
)

// Output guards on the model's own replies. They are pure checks; the
// supervised loop warns and injects a correcting message when one fires.
const (
	// ThinkingWindow is how many trailing bytes of a thinking block are
	// examined; shorter blocks are not checked.
	ThinkingWindow = 1024
	// ThinkingLoopRatio is the unique-rune ratio under which the window is
	// taken for a loop. Healthy reasoning stays well above 5%; a model
	// repeating a short token run sits under 1%.
	ThinkingLoopRatio = 0.02
	// DefaultMaxTokens is the output budget assumed when none is set.
	DefaultMaxTokens = 8192
	// MaxTokensCap is the most NextMaxTokens raises a budget to.
	MaxTokensCap = 64 * 1024
)

// DuplicateTextBlocks returns, in order, the indexes of the text blocks of
// one reply whose content, with surrounding white space removed, repeats an
// earlier block. Blank blocks are not counted.
func DuplicateTextBlocks(blocks []string) []int {
	var dups []int
	seen := make(map[string]struct{}, len(blocks))
	for i, b := range blocks {
		t := strings.TrimSpace(b)
		if t == "" {
			continue
		}
		if _, ok := seen[t]; ok {
			dups = append(dups, i)
			continue
		}
		seen[t] = struct{}{}
	}
	return dups
}

// ThinkingLoop reports whether a thinking block is stuck repeating itself:
// the unique-rune ratio of its last ThinkingWindow bytes is under
// ThinkingLoopRatio. Blocks shorter than ThinkingWindow bytes are skipped
// (false). The window starts at the first rune boundary, and each invalid
// byte counts as one rune.
func ThinkingLoop(thinking string) bool {
	if len(thinking) < ThinkingWindow {
		return false
	}
	w := thinking[len(thinking)-ThinkingWindow:]
	for i := 0; i < utf8.UTFMax-1 && len(w) > 0 && !utf8.RuneStart(w[0]); i++ {
		w = w[1:]
	}
	total := 0
	unique := make(map[rune]struct{}, 64)
	for i := 0; i < len(w); {
		r, size := utf8.DecodeRuneInString(w[i:])
		if r == utf8.RuneError && size == 1 {
			r = -1 - rune(w[i]) // distinct key per invalid byte value
		}
		unique[r] = struct{}{}
		total++
		i += size
	}
	if total == 0 {
		return false
	}
	return float64(len(unique))/float64(total) < ThinkingLoopRatio
}

// NextMaxTokens returns the output budget for the next attempt and whether
// the single raise has now been spent. When a reply was cut off at the
// budget (truncated) and no raise has happened yet, the budget doubles, up
// to MaxTokensCap (a non-positive current counts as DefaultMaxTokens);
// otherwise current and raised come back unchanged. A raise that cannot
// grow the budget (already at the cap) still spends it, so the caller
// retries only when the returned budget is larger than current.
func NextMaxTokens(current int, truncated bool, raised bool) (int, bool) {
	if !truncated || raised {
		return current, raised
	}
	base := current
	if base <= 0 {
		base = DefaultMaxTokens
	}
	next := MaxTokensCap
	if base < MaxTokensCap/2 {
		next = base * 2
	}
	if next < current {
		next = current // never lower a budget above the cap
	}
	return next, true
}
