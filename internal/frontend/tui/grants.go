package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// GrantsAPI is what the grants view needs: the active grants and the
// person's revocation. An API that does not implement it has no grants
// view. (Grants are issued with `overseer grant issue` or the console.)
type GrantsAPI interface {
	Grants(ctx context.Context) ([]kernel.GrantView, error)
	RevokeGrant(ctx context.Context, id, who string) error
}

var _ GrantsAPI = ClientAPI{}

// Grants implements GrantsAPI.
func (a ClientAPI) Grants(ctx context.Context) ([]kernel.GrantView, error) {
	return a.C.Grants(ctx, true)
}

// RevokeGrant implements GrantsAPI.
func (a ClientAPI) RevokeGrant(ctx context.Context, id, who string) error {
	_, err := a.C.RevokeGrant(ctx, id, httpapi.RevokeRequest{Who: who, Channel: "tui", Reason: "revoked in the terminal UI"})
	return err
}

type (
	grantsMsg struct {
		list []kernel.GrantView
		err  error
	}
	grantRevokedMsg struct {
		id  string
		err error
	}
)

func (m Model) grantsAPI() (GrantsAPI, bool) {
	g, ok := m.api.(GrantsAPI)
	return g, ok
}

func (m Model) fetchGrants() tea.Cmd {
	g, ok := m.grantsAPI()
	if !ok {
		return nil
	}
	return m.call(func(cctx context.Context) tea.Msg {
		list, err := g.Grants(cctx)
		return grantsMsg{list: list, err: err}
	})
}

// updateGrants handles the grants view's messages; ok is false for any
// other message.
func (m Model) updateGrants(msg tea.Msg) (Model, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case grantsMsg:
		if msg.err != nil {
			m.setStatus("grants: "+msg.err.Error(), true)
		} else {
			m.grants = msg.list
			m.grantList.resize(len(m.grants))
		}
		return m, nil, true
	case grantRevokedMsg:
		delete(m.busy, msg.id)
		if msg.err != nil {
			m.setStatus(fmt.Sprintf("revoking %s failed: %v", msg.id, msg.err), true)
		} else {
			m.setStatus(msg.id+": revoked; its next call is put to you", false)
		}
		return m, m.fetchGrants(), true
	}
	return m, nil, false
}

// grantsKey handles a key in the grants view.
func (m Model) grantsKey(s string) (tea.Model, tea.Cmd) {
	if cmd, ok := m.listKey(s, "G", &m.grantList, m.fetchGrants); ok {
		return m, cmd
	}
	if s != "R" {
		return m, nil
	}
	api, ok := m.grantsAPI()
	i, sel := m.grantList.at()
	if !ok || !sel {
		return m, nil
	}
	id := m.grants[i].ID
	if m.busy[id] {
		return m, nil
	}
	m.busy[id] = true
	m.setStatus("revoking "+id+"…", false)
	who := m.opts.Who
	return m, m.call(func(cctx context.Context) tea.Msg {
		return grantRevokedMsg{id: id, err: api.RevokeGrant(cctx, id, who)}
	})
}

// renderGrants renders the grants view below the header.
func (m Model) renderGrants(add func(string), rule func(string)) {
	rule("Active grants (delegated mode: inside a grant the agent does not ask)")
	if _, ok := m.grantsAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	rows := make([]listRow, 0, len(m.grants))
	for _, g := range m.grants {
		used := fmt.Sprintf("%d", g.Usage.Steps)
		if g.Budget.Steps > 0 {
			used += fmt.Sprintf("/%d", g.Budget.Steps)
		}
		var ps []string
		for _, p := range g.Allow {
			var parts []string
			parts = append(parts, p.Tools...)
			for _, k := range p.Kinds {
				parts = append(parts, string(k))
			}
			if p.ReadOnly {
				parts = append(parts, "read-only")
			}
			if len(p.Under) > 0 {
				parts = append(parts, "under "+strings.Join(p.Under, ","))
			}
			ps = append(ps, strings.Join(parts, " "))
		}
		rows = append(rows, listRow{line: fmt.Sprintf("%s  %s · %s steps · until %s", g.ID, g.Subject, used, g.Expires.Local().Format("15:04")),
			sub: []string{oneLine(strings.Join(ps, "; ")) + " · issued by " + g.IssuedBy}})
	}
	sel, _ := m.grantList.at()
	renderRows(add, rows, sel, "No active grant. Issue one with `overseer grant issue` or the web console.")
}

// grantsFoot is the grants view's key line.
const grantsFoot = "R revoke · j/k move · g reload · G/Esc back · q quit  (issue: overseer grant issue or the web console)"
