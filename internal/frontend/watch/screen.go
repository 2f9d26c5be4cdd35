package watch

import (
	"strings"
	"unicode"
)

// Screen is one capture of a pane: its visible lines as plain text (what
// tmux drew, escape sequences already interpreted), its size and where the
// cursor is.
type Screen struct {
	Lines         []string
	Width, Height int
	// CursorX, CursorY are the cursor's column and row (0-based).
	CursorX, CursorY int
}

// NewScreen splits a capture's text into lines. Characters that are not
// printable (what escape sequences tmux did not interpret left behind) are
// replaced by U+FFFD, so no recogniser ever matches text that was not drawn
// as such; trailing spaces are dropped.
func NewScreen(text string, width, height int) *Screen {
	text = strings.TrimSuffix(text, "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRightFunc(clean(l), unicode.IsSpace)
	}
	return &Screen{Lines: lines, Width: width, Height: height}
}

// clean replaces control characters (other than tab, turned into a space)
// with U+FFFD.
func clean(s string) string {
	ok := true
	for _, r := range s {
		if r == '\t' || !unicode.IsPrint(r) && r != ' ' {
			ok = false
			break
		}
	}
	if ok {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\t':
			b.WriteByte(' ')
		case r == ' ' || unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			b.WriteRune('\uFFFD')
		}
	}
	return b.String()
}

// lastLine is the index of the last line that is not blank, or -1.
func (s *Screen) lastLine() int {
	for i := len(s.Lines) - 1; i >= 0; i-- {
		if strings.TrimSpace(s.Lines[i]) != "" {
			return i
		}
	}
	return -1
}

// Excerpt is the screen's lines from..to (inclusive), joined.
func (s *Screen) Excerpt(from, to int) string {
	from = max(from, 0)
	to = min(to, len(s.Lines)-1)
	if from > to {
		return ""
	}
	return strings.Join(s.Lines[from:to+1], "\n")
}
