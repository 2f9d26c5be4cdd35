package llmplan

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/overseer-dev/overseer/internal/lazyre"
)

// Limits on what parseReply reads.
const (
	// maxReplyBytes is the longest reply parsed; a planner's answer is a
	// few hundred bytes.
	maxReplyBytes = 256 << 10
	// maxAttempts is how many '{' positions are tried as the start of an
	// object embedded in prose.
	maxAttempts = 64
	// maxTitleRunes and maxNotesRunes cap a subtask's title and the notes.
	maxTitleRunes = 200
	maxNotesRunes = 1000
)

type mode int

const (
	modePlan    mode = iota // {"simple": true} or {"subtasks": [...]}
	modeReflect             // {"keep": true, ...} or {"subtasks": [...], ...}
)

// reply is a parsed answer. flag is "simple" for a plan and "keep" for a
// reflection; when it is false, subtasks holds the titles as the model
// wrote them.
type reply struct {
	flag     bool
	subtasks []string
	notes    string
}

// wire is the JSON object of an answer.
type wire struct {
	Simple   bool            `json:"simple"`
	Keep     bool            `json:"keep"`
	Subtasks json.RawMessage `json:"subtasks"`
	Notes    json.RawMessage `json:"notes"`
}

var fenceRE = lazyre.New("(?s)```[A-Za-z0-9_-]*[ \t]*\r?\n?(.*?)```")

// parseReply finds the first JSON object in text that answers in m's terms:
// in a fenced block, as the whole text, or embedded in prose. Errors wrap
// ErrUnparseable.
func parseReply(text string, m mode) (reply, error) {
	if len(text) > maxReplyBytes {
		return reply{}, fmt.Errorf("%w: reply of %d bytes exceeds %d", ErrUnparseable, len(text), maxReplyBytes)
	}
	if strings.TrimSpace(text) == "" {
		return reply{}, fmt.Errorf("%w: empty reply", ErrUnparseable)
	}
	var regions []string
	for _, f := range fenceRE.FindAllStringSubmatch(text, -1) {
		regions = append(regions, f[1])
	}
	regions = append(regions, text)
	attempts := 0
	for _, reg := range regions {
		if r, ok := answer(strings.TrimSpace(reg), m); ok {
			return r, nil
		}
		// Objects embedded in the region.
		for i := 0; i < len(reg) && attempts < maxAttempts; i++ {
			j := strings.IndexByte(reg[i:], '{')
			if j < 0 {
				break
			}
			i += j
			attempts++
			var raw json.RawMessage
			if err := json.NewDecoder(strings.NewReader(reg[i:])).Decode(&raw); err != nil {
				continue
			}
			if r, ok := answer(string(raw), m); ok {
				return r, nil
			}
		}
	}
	return reply{}, fmt.Errorf("%w: no JSON object with %s", ErrUnparseable, want(m))
}

func want(m mode) string {
	if m == modePlan {
		return `"simple" or "subtasks"`
	}
	return `"keep" or "subtasks"`
}

// answer decodes s as a whole JSON object and reports whether it answers in
// m's terms.
func answer(s string, m mode) (reply, bool) {
	if !strings.HasPrefix(s, "{") {
		return reply{}, false
	}
	var w wire
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return reply{}, false
	}
	r := reply{notes: notes(w.Notes)}
	switch m {
	case modePlan:
		r.flag = w.Simple
	case modeReflect:
		r.flag = w.Keep
	}
	if r.flag {
		return r, true
	}
	subs, ok := titles(w.Subtasks)
	if !ok {
		return reply{}, false
	}
	r.subtasks = subs
	return r, true
}

// titles reads a subtasks array whose items are strings or objects with a
// "title"; other items are skipped. It reports false when raw is not an
// array.
func titles(raw json.RawMessage) ([]string, bool) {
	var items []json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &items) != nil || items == nil {
		return nil, false
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		var s string
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
			continue
		}
		var o struct {
			Title string `json:"title"`
		}
		if json.Unmarshal(it, &o) == nil && o.Title != "" {
			out = append(out, o.Title)
		}
	}
	return out, true
}

func notes(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return capRunes(oneLine(s), maxNotesRunes)
}

// listMarkerRE matches a list marker a model may put before a title: "1.",
// "2)", "-", "*", "•", "[ ]", "[x]".
var listMarkerRE = lazyre.New(`^(?:\d{1,3}[.)]|[-*•]|\[[ xX]?\])\s+`)

// cleanTitles puts each title on one line without list markers, caps its
// length, drops empty titles and repeats (ignoring case) and keeps at most
// limit.
func cleanTitles(in []string, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range in {
		t = oneLine(t)
		for range 3 {
			if loc := listMarkerRE.FindStringIndex(t); loc != nil {
				t = t[loc[1]:]
			}
		}
		t = capRunes(strings.TrimSpace(t), maxTitleRunes)
		key := strings.ToLower(t)
		if t == "" || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, t)
		if len(out) == limit {
			break
		}
	}
	return out
}

func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
