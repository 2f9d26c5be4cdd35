package tui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"
)

// listView is what the TUI's list views (grants, agents) share: the rows
// read from the daemon, the selected one, moving with j/k, rendering with
// the selection marked, and the fetch that fills it.
type listView[T any] struct {
	items []T
	sel   int
}

// set replaces the rows, keeping the selection in range.
func (l *listView[T]) set(items []T) {
	l.items = items
	l.sel = max(0, min(l.sel, len(items)-1))
}

// current returns the selected row.
func (l listView[T]) current() (T, bool) {
	if l.sel < 0 || l.sel >= len(l.items) {
		var zero T
		return zero, false
	}
	return l.items[l.sel], true
}

// nav moves the selection on j/k (and the arrows); it reports whether s
// was such a key.
func (l *listView[T]) nav(s string) bool {
	switch s {
	case "j", "down":
		l.sel = max(0, min(len(l.items)-1, l.sel+1))
	case "k", "up":
		l.sel = max(0, l.sel-1)
	default:
		return false
	}
	return true
}

// render adds the rows (row gives a row's line and an optional detail
// line below it), or empty when there are none.
func (l listView[T]) render(add func(string), empty string, row func(T) (string, string)) {
	if len(l.items) == 0 {
		add(stFaint.Render("  " + empty))
	}
	for i, it := range l.items {
		line, detail := row(it)
		if i == l.sel {
			add(stSel.Render("▶ " + line))
		} else {
			add("  " + line)
		}
		if detail != "" {
			add(stFaint.Render("    " + detail))
		}
	}
}

// fetchCmd runs get against the daemon (bounded by 30 seconds within ctx)
// and wraps its outcome as the view's message.
func fetchCmd[T any](ctx context.Context, get func(context.Context) (T, error), wrap func(T, error) tea.Msg) tea.Cmd {
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		v, err := get(cctx)
		return wrap(v, err)
	}
}

// page is a view that takes the screen below the header: what it renders
// and its key line (the status replaces the key line while there is one).
func (m Model) page(render func(add func(string), rule func(string)), foot string, add func(string), rule func(string)) {
	render(add, rule)
	if m.status != "" {
		foot = stOK.Render(m.status)
		if m.statusBad {
			foot = stBad.Render(m.status)
		}
	}
	add(foot)
}
