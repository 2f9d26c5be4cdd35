package tui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// listView is the state every list view of the UI shares (grants, MCP
// definitions, auto-rules, anomaly rules): how many rows the last read
// gave and which one is selected. A view keeps its rows itself and says
// how many there are with resize.
type listView struct {
	sel, n int
}

// resize sets the number of rows, keeping the selection on a row.
func (l *listView) resize(n int) { l.n, l.sel = n, max(0, min(l.sel, n-1)) }

// move moves the selection by step rows, within the rows.
func (l *listView) move(step int) { l.sel = max(0, min(l.n-1, l.sel+step)) }

// at reports whether the selection is on a row, and which.
func (l listView) at() (int, bool) { return l.sel, l.sel >= 0 && l.sel < l.n }

// listKey handles the keys every list view shares: q quits, Esc and the
// view's own key (back) return to the queue, j/k move (when l is not
// nil), g reads the rows again. ok is false for any other key, which the
// view handles.
func (m *Model) listKey(s, back string, l *listView, reload func() tea.Cmd) (tea.Cmd, bool) {
	switch s {
	case "q":
		m.quitting = true
		return tea.Quit, true
	case "esc", back:
		m.mode = modeQueue
		return nil, true
	case "j", "down":
		if l != nil {
			l.move(1)
		}
		return nil, true
	case "k", "up":
		if l != nil {
			l.move(-1)
		}
		return nil, true
	case "g":
		m.setStatus("reading again…", false)
		return reload(), true
	}
	return nil, false
}

// listRow is one row of a list view: its line, lines below it always
// (sub), and lines below it when it is selected (open).
type listRow struct {
	line      string
	sub, open []string
	faint     bool
}

// renderRows adds the rows of a list view, the selected one marked (sel
// < 0: none), or empty when there are none.
func renderRows(add func(string), rows []listRow, sel int, empty string) {
	if len(rows) == 0 {
		add(stFaint.Render("  " + empty))
		return
	}
	for i, r := range rows {
		switch {
		case i == sel:
			add(stSel.Render("▶ " + r.line))
		case r.faint:
			add(stFaint.Render("  " + r.line))
		default:
			add("  " + r.line)
		}
		for _, s := range r.sub {
			add(stFaint.Render("    " + s))
		}
		if i == sel {
			for _, s := range r.open {
				add("    " + s)
			}
		}
	}
}

// gauge draws use of a limit: a bar of width cells, the share as a
// percentage, marked at 80% and over 100%.
func gauge(share float64, width int) string {
	full := int(share*float64(width) + 0.5)
	full = max(0, min(width, full))
	bar := "[" + strings.Repeat("█", full) + strings.Repeat("░", width-full) + "]"
	pct := fmt.Sprintf(" %3.0f%%", 100*share)
	switch {
	case share >= 1:
		return stBad.Render(bar+pct) + stBad.Render(" OVER")
	case share >= 0.8:
		return stBold.Render(bar+pct) + stBold.Render(" ≥80%")
	}
	return bar + pct
}

// onOff is an enabled flag as the rows show it.
func onOff(enabled bool) string {
	if enabled {
		return "●"
	}
	return "○"
}
