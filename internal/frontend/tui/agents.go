package tui

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// The agents view, on the shared list view (listview.go): earned trust,
// as on the console's Agents page. Each agent with its mode; the selected
// one's record (live and ingested actions, verdicts, refusals, violations,
// trust history) and what a promotion would give it — the proposed grant
// for delegated mode, the tools to auto-approve for supervised mode (those
// a violation or a refusal touched cannot be picked). P promotes one step,
// D demotes one. Agent names, tools and summaries may come from
// transcripts an agent wrote itself: they are shown without control
// characters.

// AgentsAPI is what the agents view needs. An API that does not
// implement it has no agents view.
type AgentsAPI interface {
	Agents(ctx context.Context) ([]*kernel.AgentTrust, error)
	AgentRecord(ctx context.Context, agent string) (*kernel.AgentRecord, error)
	PromoteAgent(ctx context.Context, agent string, req httpapi.PromoteRequest) (*kernel.TrustChange, error)
	DemoteAgent(ctx context.Context, agent string, req httpapi.DemoteRequest) (*kernel.TrustChange, error)
}

var _ AgentsAPI = ClientAPI{}

// Agents implements AgentsAPI.
func (a ClientAPI) Agents(ctx context.Context) ([]*kernel.AgentTrust, error) { return a.C.Agents(ctx) }

// AgentRecord implements AgentsAPI.
func (a ClientAPI) AgentRecord(ctx context.Context, agent string) (*kernel.AgentRecord, error) {
	return a.C.AgentRecord(ctx, agent)
}

// PromoteAgent implements AgentsAPI.
func (a ClientAPI) PromoteAgent(ctx context.Context, agent string, req httpapi.PromoteRequest) (*kernel.TrustChange, error) {
	return a.C.PromoteAgent(ctx, agent, req)
}

// DemoteAgent implements AgentsAPI.
func (a ClientAPI) DemoteAgent(ctx context.Context, agent string, req httpapi.DemoteRequest) (*kernel.TrustChange, error) {
	return a.C.DemoteAgent(ctx, agent, req)
}

type (
	agentsMsg struct {
		list []*kernel.AgentTrust
		err  error
	}
	agentRecMsg struct {
		rec *kernel.AgentRecord
		err error
	}
	agentChangedMsg struct {
		agent, op string
		change    *kernel.TrustChange
		err       error
	}
)

// agentsFoot is the agents view's key line.
const agentsFoot = "P promote · D demote · 1-9 pick tools · v accept violations · j/k move · g reload · T/Esc back · q quit"

// nextMode is the mode a promotion leads to ("" at the top).
func nextMode(m kernel.TrustMode) kernel.TrustMode {
	switch m {
	case kernel.ModeAudited:
		return kernel.ModeDelegated
	case kernel.ModeDelegated:
		return kernel.ModeSupervised
	}
	return ""
}

func (m Model) agentsAPI() (AgentsAPI, bool) {
	a, ok := m.api.(AgentsAPI)
	return a, ok
}

func (m Model) fetchAgents() tea.Cmd {
	a, ok := m.agentsAPI()
	if !ok {
		return nil
	}
	return m.call(func(cctx context.Context) tea.Msg {
		list, err := a.Agents(cctx)
		return agentsMsg{list: list, err: err}
	})
}

// selectedAgent is the agent the selection is on.
func (m Model) selectedAgent() (*kernel.AgentTrust, bool) {
	i, ok := m.agentList.at()
	if !ok || i >= len(m.agents) {
		return nil, false
	}
	return m.agents[i], true
}

// fetchRecord reads the selected agent's record.
func (m Model) fetchRecord() tea.Cmd {
	a, ok := m.agentsAPI()
	cur, sel := m.selectedAgent()
	if !ok || !sel {
		return nil
	}
	name := cur.Agent
	return m.call(func(cctx context.Context) tea.Msg {
		rec, err := a.AgentRecord(cctx, name)
		return agentRecMsg{rec: rec, err: err}
	})
}

// record is the selected agent's record, when it was read.
func (m Model) record() *kernel.AgentRecord {
	cur, ok := m.selectedAgent()
	if !ok || m.agentRec == nil || m.agentRec.Agent != cur.Agent {
		return nil
	}
	return m.agentRec
}

// pickable are the tools a promotion to supervised may auto-approve, in
// the order shown: what the agent used, less what a violation or a
// refusal touched.
func pickable(rec *kernel.AgentRecord) []string {
	var excluded []string
	if rec.Proposal != nil {
		excluded = rec.Proposal.Excluded
	}
	var out []string
	for t := range rec.Tools {
		if !slices.Contains(excluded, t) {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}

func (m Model) updateAgents(msg tea.Msg) (Model, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case agentsMsg:
		if msg.err != nil {
			m.setStatus("agents: "+msg.err.Error(), true)
			return m, nil, true
		}
		m.agents = msg.list
		m.agentList.resize(len(m.agents))
		return m, m.fetchRecord(), true
	case agentRecMsg:
		if msg.err != nil {
			m.setStatus("agent record: "+msg.err.Error(), true)
			return m, nil, true
		}
		if cur, ok := m.selectedAgent(); ok && msg.rec != nil && msg.rec.Agent == cur.Agent {
			if m.agentRec == nil || m.agentRec.Agent != msg.rec.Agent {
				m.agentTools, m.agentAccept = map[string]bool{}, false
			}
			m.agentRec = msg.rec
		}
		return m, nil, true
	case agentChangedMsg:
		delete(m.busy, "agent:"+msg.agent)
		if msg.err != nil {
			m.setStatus(fmt.Sprintf("%s %s failed: %v", msg.op, plain(msg.agent), msg.err), true)
		} else {
			m.setStatus(fmt.Sprintf("%s %sd: %s → %s", plain(msg.agent), msg.op, msg.change.From, msg.change.To), false)
			m.agentTools, m.agentAccept = map[string]bool{}, false
		}
		return m, m.fetchAgents(), true
	}
	return m, nil, false
}

func (m Model) agentsKey(s string) (tea.Model, tea.Cmd) {
	before := m.agentList.sel
	if cmd, ok := m.listKey(s, "T", &m.agentList, m.fetchAgents); ok {
		if m.mode == modeAgents && m.agentList.sel != before {
			cmd = m.fetchRecord() // the selection moved: read its record
		}
		return m, cmd
	}
	switch s {
	case "v":
		m.agentAccept = !m.agentAccept
		return m, nil
	case "P", "D":
		return m.changeTrust(s == "P")
	}
	if len(s) == 1 && s[0] >= '1' && s[0] <= '9' {
		rec := m.record()
		if rec == nil || nextMode(rec.Trust.Mode) != kernel.ModeSupervised {
			return m, nil
		}
		tools := pickable(rec)
		if i := int(s[0] - '1'); i < len(tools) {
			if m.agentTools == nil {
				m.agentTools = map[string]bool{}
			}
			m.agentTools[tools[i]] = !m.agentTools[tools[i]]
		}
		return m, nil
	}
	return m, nil
}

// changeTrust promotes (or demotes) the selected agent one step, with
// what the view shows: the proposed grant, the picked tools.
func (m Model) changeTrust(promote bool) (tea.Model, tea.Cmd) {
	api, ok := m.agentsAPI()
	rec := m.record()
	if !ok || rec == nil || m.busy["agent:"+rec.Agent] {
		return m, nil
	}
	name, who := rec.Agent, m.opts.Who
	const reason = "decided in the terminal UI"
	var run func(context.Context) (*kernel.TrustChange, error)
	op := "demote"
	if promote {
		op = "promote"
		to := nextMode(rec.Trust.Mode)
		if to == "" {
			m.setStatus(plain(name)+" is already supervised: nothing to promote it to", true)
			return m, nil
		}
		req := httpapi.PromoteRequest{To: string(to), Reason: reason, AcceptViolations: m.agentAccept, Who: who}
		if to == kernel.ModeSupervised {
			for _, t := range pickable(rec) {
				if m.agentTools[t] {
					req.Tools = append(req.Tools, t)
				}
			}
			if len(req.Tools) == 0 {
				m.setStatus("pick the tools to auto-approve first (1-9)", true)
				return m, nil
			}
		}
		run = func(ctx context.Context) (*kernel.TrustChange, error) { return api.PromoteAgent(ctx, name, req) }
	} else {
		if rec.Trust.Mode == kernel.ModeAudited {
			m.setStatus(plain(name)+" is audited: nothing to demote it to", true)
			return m, nil
		}
		req := httpapi.DemoteRequest{Reason: reason, Who: who}
		run = func(ctx context.Context) (*kernel.TrustChange, error) { return api.DemoteAgent(ctx, name, req) }
	}
	m.busy["agent:"+name] = true
	m.setStatus(op+" "+plain(name)+"…", false)
	return m, m.call(func(cctx context.Context) tea.Msg {
		c, err := run(cctx)
		return agentChangedMsg{agent: name, op: op, change: c, err: err}
	})
}

// renderAgents renders the agents view below the header.
func (m Model) renderAgents(add func(string), rule func(string)) {
	rule("Agents (earned trust: audited → delegated → supervised)")
	if _, ok := m.agentsAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	rows := make([]listRow, 0, len(m.agents))
	for _, t := range m.agents {
		row := fmt.Sprintf("%-24s %s", plain(t.Agent), t.Mode)
		if len(t.AutoTools) > 0 {
			row += " · auto: " + plain(strings.Join(t.AutoTools, ", "))
		}
		if t.GrantID != "" {
			row += " · grant " + t.GrantID
		}
		rows = append(rows, listRow{line: row})
	}
	renderRows(add, rows, m.agentList.sel, "No agent seen yet. `overseer audit ingest` reads what agents did without Overseer in the path.")
	rec := m.record()
	if rec == nil {
		return
	}
	rule("Record of " + plain(rec.Agent))
	var levels []string
	for _, l := range []string{"auto", "notify", "confirm", "approve", "block"} {
		if n := rec.Verdicts[l]; n > 0 {
			levels = append(levels, fmt.Sprintf("%s %d", l, n))
		}
	}
	add(fmt.Sprintf("%d live and %d ingested actions · verdicts: %s · %d refused by a person", rec.Actions, rec.Ingested,
		orDash(strings.Join(levels, ", ")), rec.Refusals))
	add(fmt.Sprintf("Violations: %d", len(rec.Violations)))
	for i, v := range rec.Violations {
		if i == 3 {
			add(stFaint.Render(fmt.Sprintf("  … %d more", len(rec.Violations)-3)))
			break
		}
		add(stFaint.Render("  " + plain(oneLine(fmt.Sprintf("%s %s: %s (%s)", v.ActionID, v.Tool, v.Summary, v.Source)))))
	}
	if n := len(rec.History); n > 0 {
		c := rec.History[n-1]
		add(stFaint.Render(plain(oneLine(fmt.Sprintf("Last change: %s %s → %s by %s: %s", c.Op, c.From, c.To, c.Who, c.Reason)))))
	}
	switch nextMode(rec.Trust.Mode) {
	case kernel.ModeDelegated:
		if p := rec.Proposal; p != nil {
			add("Promote to delegated with the proposed grant: tools " + plain(orDash(strings.Join(p.Tools, ", "))) +
				fmt.Sprintf("; at most %d steps and %s per session; built from %d calls, %d of them read from transcripts the agent could have written itself",
					p.MaxSteps, dur(p.MaxDuration), p.Basis, p.BasisIngested))
			if len(p.Excluded) > 0 {
				add(stFaint.Render("  left out (a violation or refusal): " + plain(strings.Join(p.Excluded, ", "))))
			}
		}
	case kernel.ModeSupervised:
		add("Promote to supervised, auto-approving the tools picked (1-9):")
		for i, t := range pickable(rec) {
			if i == 9 {
				add(stFaint.Render("  … more in the web console"))
				break
			}
			box := "[ ]"
			if m.agentTools[t] {
				box = "[x]"
			}
			add(fmt.Sprintf("  %d %s %s", i+1, box, plain(t)))
		}
		if rec.Proposal != nil && len(rec.Proposal.Excluded) > 0 {
			add(stFaint.Render("  not offered (a violation or refusal): " + plain(strings.Join(rec.Proposal.Excluded, ", "))))
		}
	default:
		add(stFaint.Render("Supervised: the top of the ladder."))
	}
	accept := "off"
	if m.agentAccept {
		accept = "on"
	}
	add(stFaint.Render("Promote although violations were found since your last decision: " + accept + " (v)"))
}
