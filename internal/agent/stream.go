package agent

import (
	"sort"
	"strings"
)

// fenceFilter passes a streamed reply's text through to the output, but
// not its decision block: from an opening "```decision" or "```json" fence
// on, nothing more is shown. Text that may be the start of such a fence is
// held back until it is known not to be one.
type fenceFilter struct {
	w       *Loop
	prefix  string // written before the first shown text
	started bool
	hidden  bool
	held    string
	ws      string // trailing white space held back
}

// fenceTags are the fences whose blocks are not shown.
var fenceTags = []string{"decision", "json"}

func (f *fenceFilter) write(s string) {
	if f.hidden {
		return
	}
	buf := f.held + s
	f.held = ""
	for {
		i := strings.Index(buf, "```")
		if i < 0 {
			break
		}
		// A fence is three or more backticks.
		j := i + 3
		for j < len(buf) && buf[j] == '`' {
			j++
		}
		rest := buf[j:]
		tag, complete := fenceTag(rest)
		if !complete {
			f.emit(buf[:i])
			f.held = buf[i:]
			return
		}
		if tag {
			f.emit(buf[:i])
			f.hidden = true
			return
		}
		f.emit(buf[:j])
		buf = rest
	}
	// Hold back trailing backticks: they may open a fence.
	keep := len(buf) - len(strings.TrimRight(buf, "`"))
	f.emit(buf[:len(buf)-keep])
	f.held = buf[len(buf)-keep:]
}

// fenceTag reports whether rest (the text after "```") starts a hidden
// fence, and whether enough of it has arrived to tell.
func fenceTag(rest string) (hidden, complete bool) {
	word := strings.TrimLeft(rest, " ")
	for _, t := range fenceTags {
		if len(word) < len(t) {
			if strings.HasPrefix(t, strings.ToLower(word)) {
				return false, false
			}
			continue
		}
		if strings.EqualFold(word[:len(t)], t) {
			return true, true
		}
	}
	return false, true
}

// emit shows s, holding back its trailing white space until more text
// follows (a reply's blank lines before its decision block are not shown).
func (f *fenceFilter) emit(s string) {
	body := strings.TrimRight(s, " \t\r\n")
	if body == "" {
		f.ws += s
		return
	}
	out := f.ws + body
	f.ws = s[len(body):]
	if !f.started {
		f.started = true
		out = f.prefix + strings.TrimLeft(out, "\r\n")
	}
	f.w.printf("%s", out)
}

// flush writes what was held back, unless the reply ended inside a fence
// that may be hidden; it ends the shown text with a newline.
func (f *fenceFilter) flush() {
	if !f.hidden && f.held != "" && !strings.HasPrefix(f.held, "```") {
		f.emit(f.held)
	}
	f.ws = ""
	f.held = ""
	if f.started {
		f.w.printf("\n")
	}
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
