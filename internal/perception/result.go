package perception

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"unicode"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// ResultClass is what a tool's result looks like, heuristically. The zero
// value is "unknown", never a success; Classify always returns one of the
// four named classes.
type ResultClass uint8

const (
	// ResultSuccess: the output looks like the tool did what was meant.
	ResultSuccess ResultClass = iota + 1
	// ResultFailure: the tool reported an error.
	ResultFailure
	// ResultPartial: the output is truncated, carries warnings or says it is
	// incomplete.
	ResultPartial
	// ResultIrrelevant: the output is empty, or has nothing to do with the
	// stated intent.
	ResultIrrelevant
)

var resultNames = [...]string{"unknown", "success", "failure", "partial", "irrelevant"}

// String returns the class's name.
func (c ResultClass) String() string {
	if int(c) < len(resultNames) {
		return resultNames[c]
	}
	return fmt.Sprintf("result(%d)", uint8(c))
}

// MarshalText encodes the class as its name.
func (c ResultClass) MarshalText() ([]byte, error) { return []byte(c.String()), nil }

// UnmarshalText decodes a class name.
func (c *ResultClass) UnmarshalText(b []byte) error {
	for i, n := range resultNames {
		if n == string(b) {
			*c = ResultClass(i)
			return nil
		}
	}
	return fmt.Errorf("perception: unknown result class %q", b)
}

// failureMarkers are substrings (of the lower-cased output) that tools print
// when they fail.
var failureMarkers = []string{
	"error:", "fatal:", "panic:", "exception:",
	"permission denied", "access denied", "operation not permitted",
	"no such file", "command not found", "not recognized as an internal or external command",
	"traceback (most recent call last)", "segmentation fault", "core dumped",
	"non-zero exit status", "timed out",
}

var (
	// failureLineWords start a line that reports an error: "error[E0425]",
	// "ERROR something", "FAIL", "--- FAIL:", "fatal ...".
	failureLineWords = []string{"error", "fatal", "fail", "failed", "--- fail", "npm err!"}
	// partialLineWords start a warning line: "warning: ...", "WARN ...".
	partialLineWords = []string{"warning", "warn"}
	// exitCode finds "exit status 2", "exit code: 1", "exited with code 127".
	exitCode = lazyre.New(`exit(?:ed with)? (?:status|code)[\s:=]*(-?\d+)`)
)

// isWordByte reports whether c is an ASCII word character.
func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// lineStartsWith reports whether a line of text, leading blanks skipped,
// starts with one of words as a whole word.
func lineStartsWith(text string, words []string) bool {
	for line := range strings.Lines(text) {
		line = strings.TrimLeft(line, " \t")
		for _, w := range words {
			if strings.HasPrefix(line, w) && (len(line) == len(w) || !isWordByte(line[len(w)]) || !isWordByte(w[len(w)-1])) {
				return true
			}
		}
	}
	return false
}

// hasMoreItems finds "and 42 more".
func hasMoreItems(lower string) bool {
	for rest := lower; ; {
		i := strings.Index(rest, "and ")
		if i < 0 {
			return false
		}
		if i > 0 && isWordByte(rest[i-1]) {
			rest = rest[i+4:]
			continue
		}
		rest = rest[i+4:]
		n := 0
		for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
			n++
		}
		if n > 0 && strings.HasPrefix(rest[n:], " more") && (len(rest) == n+5 || !isWordByte(rest[n+5])) {
			return true
		}
	}
}

// partialMarkers are substrings that say the output is not the whole result.
var partialMarkers = []string{
	"truncated", "partial", "incomplete", "skipped", "warning:", "[...]", "output limit",
}

// Classify sorts a tool's result into a class. It is a heuristic, and a
// conservative one — it calls a result a success only when nothing speaks
// against it. In order:
//
//  1. isError, a typical failure marker ("error:", "permission denied",
//     "no such file", a traceback, "exit status N" with N≠0, a line starting
//     with "error" or "FAIL", ...) → failure;
//  2. empty output → irrelevant;
//  3. a non-empty intent with meaningful words (not stop words; for Chinese,
//     pairs of characters) none of which occurs in the output (nor, with
//     ClassifyCall, in the call's arguments) → irrelevant;
//  4. truncation, warnings, or markers such as "partial", "incomplete",
//     "skipped", "and N more" → partial;
//  5. otherwise success.
//
// Only the first and last 32 KiB of a longer output are examined, where
// tools report what went wrong; the cost stays bounded for huge outputs
// (and for huge arguments, such as the content of a large write).
func Classify(output string, isError bool, intent string) ResultClass {
	return ClassifyCall(output, isError, intent, "")
}

// ClassifyCall is Classify for the result of a call whose argument values,
// as text, are call: an intent word that the call itself names counts as
// relevance too, so reading "the notes" from notes.txt is relevant whatever
// the notes say.
func ClassifyCall(output string, isError bool, intent, call string) ResultClass {
	if isError {
		return ResultFailure
	}
	lower := strings.ToLower(sample(output))
	if failed(lower) {
		return ResultFailure
	}
	if strings.TrimSpace(output) == "" {
		return ResultIrrelevant
	}
	if !relevant(lower, intent) && !relevant(strings.ToLower(sample(call)), intent) {
		return ResultIrrelevant
	}
	if partial(lower) {
		return ResultPartial
	}
	return ResultSuccess
}

// sampleHalf is how much of each end of a long output Classify examines.
const sampleHalf = 32 << 10

// sample returns output, or its first and last sampleHalf bytes joined by a
// newline when it is longer.
func sample(output string) string {
	if len(output) <= 2*sampleHalf {
		return output
	}
	return output[:sampleHalf] + "\n" + output[len(output)-sampleHalf:]
}

func failed(lower string) bool {
	for _, m := range failureMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	if lineStartsWith(lower, failureLineWords) {
		return true
	}
	if !strings.Contains(lower, "exit") {
		return false
	}
	for _, m := range exitCode.FindAllStringSubmatch(lower, -1) {
		if n, err := strconv.Atoi(m[1]); err != nil || n != 0 {
			return true
		}
	}
	return false
}

func partial(lower string) bool {
	for _, m := range partialMarkers {
		if strings.Contains(lower, m) {
			return true
		}
	}
	return lineStartsWith(lower, partialLineWords) || hasMoreItems(lower) ||
		strings.HasSuffix(strings.TrimSpace(lower), "...") || strings.HasSuffix(strings.TrimSpace(lower), "…")
}

// stopWords say what to do, not what about; they are not evidence that an
// output is relevant.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the and for with from into onto this that these those then than
		are was were been being has have had not but all any some each every its our your their his her
		them they you can could should would will shall may might must please let lets want need try
		run running make get got use using show see look check find list print give take put set
		what which who how why when where there here about also just only very more most other
		file files command commands output result results tool agent`) {
		stopWords[w] = true
	}
	for _, w := range strings.Fields(`一下 看看 查看 检查 运行 执行 帮我 我们 这个 那个 一个 然后 需要 请帮 文件 命令 结果 输出 所有`) {
		stopWords[w] = true
	}
}

// intentWords returns the meaningful words of an intent: Latin words of
// three or more letters (digits: two or more) that are not stop words, and
// pairs of adjacent Han characters.
func intentWords(intent string) []string {
	var words []string
	var word, han []rune
	flushWord := func() {
		w := string(word)
		word = word[:0]
		if stopWords[w] {
			return
		}
		digits := strings.IndexFunc(w, func(r rune) bool { return !unicode.IsDigit(r) }) < 0
		if len([]rune(w)) >= 3 || (digits && len(w) >= 2) {
			words = append(words, w)
		}
	}
	flushHan := func() {
		for i := 0; i+1 < len(han); i++ {
			if p := string(han[i : i+2]); !stopWords[p] {
				words = append(words, p)
			}
		}
		han = han[:0]
	}
	for _, r := range strings.ToLower(intent) {
		switch {
		case unicode.Is(unicode.Han, r):
			flushWord()
			han = append(han, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushHan()
			word = append(word, r)
		default:
			flushWord()
			flushHan()
		}
	}
	flushWord()
	flushHan()
	return words
}

// stem strips a common English suffix, so "files" finds "file".
func stem(w string) string {
	for _, suf := range []string{"ing", "ed", "es", "s"} {
		if s, ok := strings.CutSuffix(w, suf); ok && len(s) >= 3 {
			return s
		}
	}
	return w
}

// relevant reports whether the output shares a meaningful word with the
// intent. An intent with no meaningful words cannot be judged, so the
// output counts as relevant.
func relevant(lower, intent string) bool {
	words := intentWords(intent)
	if len(words) == 0 {
		return true
	}
	for _, w := range words {
		if strings.Contains(lower, w) || strings.Contains(lower, stem(w)) {
			return true
		}
	}
	return false
}

// ResultInfo is what RecordResult noted about one result.
type ResultInfo struct {
	Class ResultClass `json:"class"`
	// Repeated is true when the output is byte-identical to the previous
	// result of the same tool in the same session.
	Repeated bool `json:"repeated"`
	// RepeatCount is how many identical results in a row preceded this one
	// (0 when not repeated, 1 for the first repeat, ...).
	RepeatCount int `json:"repeat_count"`
}

// RecordResult classifies a tool's result (see ClassifyCall), counts it for the
// session and reports whether it repeats the tool's previous output.
func (b *Bus) RecordResult(session, tool, output string, isError bool, intent, call string) ResultInfo {
	info := ResultInfo{Class: ClassifyCall(output, isError, intent, call)}
	sum := sha256.Sum256([]byte(output))
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.touch(session)
	s.results[info.Class]++
	lr, ok := s.last[tool]
	if !ok {
		if len(s.lastOrder) >= b.lim.Tools {
			delete(s.last, s.lastOrder[0])
			s.lastOrder = append(s.lastOrder[:0], s.lastOrder[1:]...)
		}
		s.lastOrder = append(s.lastOrder, tool)
		s.last[tool] = &lastResult{hash: sum}
		return info
	}
	if lr.hash == sum {
		lr.repeats++
	} else {
		lr.hash, lr.repeats = sum, 0
	}
	info.Repeated = lr.repeats > 0
	info.RepeatCount = lr.repeats
	return info
}

// maxCallResults bounds the calls whose last result a session keeps.
const maxCallResults = 256

// RecordCallResult notes the output of the call with argsHash (the
// firewall's hash of its tool, kind, working directory and arguments) in
// session: L2 reads how many of its latest results were identical in a
// row (SameResults). Only a hash of the output is kept.
func (b *Bus) RecordCallResult(session, argsHash, output string) {
	if argsHash == "" {
		return
	}
	sum := sha256.Sum256([]byte(output))
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.touch(session)
	if s.calls == nil {
		s.calls = map[string]*lastResult{}
	}
	lr, ok := s.calls[argsHash]
	if !ok {
		if len(s.callOrder) >= maxCallResults {
			delete(s.calls, s.callOrder[0])
			s.callOrder = append(s.callOrder[:0], s.callOrder[1:]...)
		}
		s.callOrder = append(s.callOrder, argsHash)
		s.calls[argsHash] = &lastResult{hash: sum}
		return
	}
	if lr.hash == sum {
		lr.repeats++
	} else {
		lr.hash, lr.repeats = sum, 0
	}
}

// SameResults returns how many of the latest results of the call with
// argsHash in session were identical in a row (1 when the last differed
// from the one before it, or there was one), and whether any was
// recorded.
func (b *Bus) SameResults(session, argsHash string) (same int, known bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.lookup(session)
	if s == nil {
		return 0, false
	}
	lr, ok := s.calls[argsHash]
	if !ok {
		return 0, false
	}
	return lr.repeats + 1, true
}
