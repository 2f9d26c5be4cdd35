package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/mcppin"
)

// PinsAPI is what the MCP view needs: the gateway's pinned definitions and
// a person's acceptance of a withheld one. An API that does not implement
// it has no MCP view.
type PinsAPI interface {
	MCPPins(ctx context.Context) ([]mcppin.Pin, error)
	AcceptMCPPin(ctx context.Context, server string, kind mcppin.Kind, name, hash, who string) error
}

var _ PinsAPI = ClientAPI{}

// MCPPins implements PinsAPI.
func (a ClientAPI) MCPPins(ctx context.Context) ([]mcppin.Pin, error) { return a.C.MCPPins(ctx) }

// AcceptMCPPin implements PinsAPI.
func (a ClientAPI) AcceptMCPPin(ctx context.Context, server string, kind mcppin.Kind, name, hash, who string) error {
	_, err := a.C.AcceptMCPPin(ctx, server, name, client.PinAccept{Hash: hash, Who: who, Channel: Channel, Kind: kind.String()})
	return err
}

type (
	// pinsMsg carries a fresh read of the pins.
	pinsMsg struct {
		list []mcppin.Pin
		err  error
	}
	// pinDoneMsg is the outcome of an acceptance.
	pinDoneMsg struct {
		key string
		err error
	}
)

func pinKey(p mcppin.Pin) string { return p.Server + " " + p.Kind.String() + " " + p.Tool }

func (m Model) pinsAPI() (PinsAPI, bool) {
	p, ok := m.api.(PinsAPI)
	return p, ok
}

// pinsShown are the pins the MCP view lists: the withheld first, then the
// flagged.
func (m Model) pinsShown() []mcppin.Pin {
	var out, flagged []mcppin.Pin
	for _, p := range m.pins {
		switch {
		case p.Pending != nil:
			out = append(out, p)
		case p.Flagged != nil:
			flagged = append(flagged, p)
		}
	}
	return append(out, flagged...)
}

func (m Model) fetchPins() tea.Cmd {
	p, ok := m.pinsAPI()
	if !ok {
		return nil
	}
	return m.call(func(cctx context.Context) tea.Msg {
		list, err := p.MCPPins(cctx)
		return pinsMsg{list: list, err: err}
	})
}

func (m Model) acceptPin(pin mcppin.Pin) tea.Cmd {
	p, ok := m.pinsAPI()
	if !ok || pin.Pending == nil {
		return nil
	}
	who, hash := m.opts.Who, pin.Pending.Hash
	return m.call(func(cctx context.Context) tea.Msg {
		return pinDoneMsg{key: pinKey(pin), err: p.AcceptMCPPin(cctx, pin.Server, pin.Kind, pin.Tool, hash, who)}
	})
}

// updatePins handles the MCP view's messages; ok is false for any other.
func (m Model) updatePins(msg tea.Msg) (Model, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case pinsMsg:
		if msg.err != nil {
			if m.mode == modePins {
				m.setStatus("MCP pins: "+msg.err.Error(), true)
			}
		} else {
			m.pins = msg.list
			m.pinList.resize(len(m.pinsShown()))
		}
		return m, nil, true
	case pinDoneMsg:
		delete(m.busy, msg.key)
		if msg.err != nil {
			m.setStatus("accept "+msg.key+" failed: "+msg.err.Error(), true)
		} else {
			m.setStatus(msg.key+": accepted; gateways offer it again within seconds", false)
		}
		return m, m.fetchPins(), true
	}
	return m, nil, false
}

// pinsKey handles a key in the MCP view.
func (m Model) pinsKey(s string) (tea.Model, tea.Cmd) {
	if cmd, ok := m.listKey(s, "m", &m.pinList, m.fetchPins); ok {
		return m, cmd
	}
	shown := m.pinsShown()
	i, sel := m.pinList.at()
	if s != "A" || !sel || i >= len(shown) || shown[i].Pending == nil {
		return m, nil
	}
	p := shown[i]
	if m.busy[pinKey(p)] {
		return m, nil
	}
	m.busy[pinKey(p)] = true
	m.setStatus("accepting "+pinKey(p)+"…", false)
	return m, m.acceptPin(p)
}

// renderPins renders the MCP view below the header.
func (m Model) renderPins(add func(string), rule func(string)) {
	rule("MCP definitions withheld or flagged (the gateway offers a changed or suspicious one only once you accept it)")
	if _, ok := m.pinsAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	shown := m.pinsShown()
	if len(shown) == 0 {
		add(stFaint.Render(fmt.Sprintf("  Nothing is withheld or flagged (%d definitions pinned).", len(m.pins))))
	}
	for i, p := range shown {
		state := stBad.Render("WITHHELD")
		why := ""
		switch {
		case p.Pending != nil && p.Pending.Reason == "poisoned":
			state += " (new, suspicious)"
		case p.Pending != nil:
			state += " (changed)"
		default:
			state = stBold.Render("flagged")
		}
		if p.Pending != nil && p.Pending.Findings != nil {
			why = p.Pending.Findings.Summary()
		} else if p.Pending == nil && p.Flagged != nil {
			why = p.Flagged.Summary()
		}
		row := fmt.Sprintf("%s %s %s  %s", p.Server, p.Kind, p.Tool, state)
		if m.busy[pinKey(p)] {
			row += " · sending…"
		}
		if sel, _ := m.pinList.at(); i == sel {
			add(stSel.Render("▶ " + row))
		} else {
			add("  " + row)
		}
		if why != "" {
			add(stFaint.Render("    " + oneLine(why)))
		}
		if sel, _ := m.pinList.at(); i != sel || p.Pending == nil {
			continue
		}
		if p.Pending.Findings != nil {
			for _, f := range p.Pending.Findings.Findings {
				add(fmt.Sprintf("    %s %s: %q", stBold.Render(f.Class), f.Rule, f.Excerpt))
			}
		}
		diff := p.Pending.Diff
		if diff == "" { // nothing accepted yet: the whole definition
			diff = "+ " + strings.ReplaceAll(mcppin.Pretty(p.Pending.Definition), "\n", "\n+ ")
		}
		lines := strings.Split(diff, "\n")
		room := max(6, m.height-14-2*len(shown))
		for j, l := range lines {
			if j == room {
				add(stFaint.Render(fmt.Sprintf("    … %d more lines (overseer mcp pins)", len(lines)-room)))
				break
			}
			switch {
			case strings.HasPrefix(l, "+"):
				add("    " + stOK.Render(l))
			case strings.HasPrefix(l, "-"):
				add("    " + stBad.Render(l))
			default:
				add(stFaint.Render("    " + l))
			}
		}
	}
}

// pinsFoot is the MCP view's key line.
const pinsFoot = "A accept the selected definition · j/k move · g reload · m/Esc back · q quit"

// pinsHint is the header's note of withheld definitions.
func (m Model) pinsHint() string {
	n := 0
	for _, p := range m.pins {
		if p.Pending != nil {
			n++
		}
	}
	if n == 0 {
		return ""
	}
	return "  " + stBad.Render(fmt.Sprintf("%d MCP definition%s withheld (m)", n, strings.Repeat("s", min(1, n-1))))
}
