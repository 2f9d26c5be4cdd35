package tui

import (
	"context"
	"fmt"
	"net/url"

	tea "charm.land/bubbletea/v2"

	"github.com/overseer-dev/overseer/internal/frontend/watch"
)

// PanesAPI is what the panes view needs: the panes the running watchers
// (`overseer watch tmux`) watch. An API that does not implement it has no
// panes view.
type PanesAPI interface {
	WatchPanes(ctx context.Context) ([]watch.PaneSet, error)
}

var _ PanesAPI = ClientAPI{}

// WatchPanes implements PanesAPI.
func (a ClientAPI) WatchPanes(ctx context.Context) ([]watch.PaneSet, error) {
	var v struct {
		Watchers []watch.PaneSet `json:"watchers"`
	}
	if err := a.get(ctx, "/api/v1/watch/panes?"+url.Values{}.Encode(), &v); err != nil {
		return nil, err
	}
	return v.Watchers, nil
}

// panesMsg carries a fresh read of the watchers' panes.
type panesMsg struct {
	sets []watch.PaneSet
	err  error
}

func (m Model) panesAPI() (PanesAPI, bool) {
	p, ok := m.api.(PanesAPI)
	return p, ok
}

func (m Model) fetchPanes() tea.Cmd {
	p, ok := m.panesAPI()
	if !ok {
		return nil
	}
	return m.call(func(cctx context.Context) tea.Msg {
		sets, err := p.WatchPanes(cctx)
		return panesMsg{sets: sets, err: err}
	})
}

// updatePanes handles the panes view's messages; ok is false for any other.
func (m Model) updatePanes(msg tea.Msg) (Model, tea.Cmd, bool) {
	if msg, ok := msg.(panesMsg); ok {
		if msg.err != nil {
			if m.mode == modePanes {
				m.setStatus("panes: "+msg.err.Error(), true)
			}
		} else {
			m.panes = msg.sets
		}
		return m, nil, true
	}
	return m, nil, false
}

// panesKey handles a key in the panes view.
func (m Model) panesKey(s string) (tea.Model, tea.Cmd) {
	cmd, _ := m.listKey(s, "w", nil, m.fetchPanes)
	return m, cmd
}

// panesFoot is the panes view's key line.
const panesFoot = "g reload · w/Esc back · q quit (answer a waiting pane's request in the queue)"

// renderPanes renders the panes view below the header.
func (m Model) renderPanes(add func(string), rule func(string)) {
	rule("Panes watched by overseer watch (each pane's agent, last prompt and state)")
	if _, ok := m.panesAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	if len(m.panes) == 0 {
		add(stFaint.Render("  No watcher is running (start one with: overseer watch tmux)."))
		return
	}
	now := m.opts.Now()
	for _, s := range m.panes {
		add(stBold.Render(fmt.Sprintf("watcher pid %d, %d panes", s.PID, len(s.Panes))))
		for _, v := range s.Panes {
			state := string(v.State)
			switch v.State {
			case watch.StateWaiting, watch.StateLeft:
				state = stBold.Render(state)
			case watch.StateAlert:
				state = stBad.Render(state)
			}
			last := v.Prompt
			if v.Args != "" {
				last += " " + v.Args
			}
			if v.Answer != "" {
				last += " → " + v.Answer
			}
			add(fmt.Sprintf("  %-6s %-16s %-12s %s  %s", v.ID, short(v.Target, 16), orDash(v.Agent), state,
				stFaint.Render(dur(now.Sub(v.Since)))))
			if last != "" {
				add(stFaint.Render("      " + short(oneLine(last), max(20, m.width-8))))
			}
			if v.State == watch.StateWaiting && v.ActionID != "" {
				// Its request, found by the call the watcher submitted.
				for _, a := range m.pending {
					if a.ActionID == v.ActionID {
						add(stBold.Render("      waiting on request " + a.ID + " in the queue (Esc, then answer it there)"))
						break
					}
				}
			}
		}
	}
}
