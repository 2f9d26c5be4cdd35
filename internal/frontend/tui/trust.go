package tui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// TrustAPI is what the proposals view needs: the rules Overseer proposes
// from the person's approvals, and the person's accept or dismiss. An API
// that does not implement it has no proposals view.
type TrustAPI interface {
	Proposals(ctx context.Context) ([]kernel.Proposal, error)
	AcceptProposal(ctx context.Context, id, version, who string) error
	DismissProposal(ctx context.Context, id, who string) error
}

var _ TrustAPI = ClientAPI{}

// Proposals implements TrustAPI.
func (a ClientAPI) Proposals(ctx context.Context) ([]kernel.Proposal, error) {
	return a.C.Proposals(ctx)
}

// AcceptProposal implements TrustAPI.
func (a ClientAPI) AcceptProposal(ctx context.Context, id, version, who string) error {
	_, err := a.C.AcceptProposal(ctx, id, client.ProposalAnswer{Who: who, Version: version})
	return err
}

// DismissProposal implements TrustAPI.
func (a ClientAPI) DismissProposal(ctx context.Context, id, who string) error {
	return a.C.DismissProposal(ctx, id, client.ProposalAnswer{Who: who})
}

// proposalsEvery is how often the proposals are re-read (they are computed
// from the audit trail, so not at every tick).
const proposalsEvery = 15 * time.Second

type (
	// proposalsMsg carries a fresh read of the proposals.
	proposalsMsg struct {
		list []kernel.Proposal
		err  error
	}
	// proposalDoneMsg is the outcome of an accept or a dismiss.
	proposalDoneMsg struct {
		id, op string
		err    error
	}
)

// proposalsDue reads the proposals again when they are due (with the
// queue's refresh, at most every proposalsEvery).
func (m Model) proposalsDue() (Model, tea.Cmd) {
	now := m.opts.Now()
	if now.Before(m.propNext) {
		return m, nil
	}
	m.propNext = now.Add(proposalsEvery)
	return m, tea.Batch(m.fetchProposals(), m.fetchPins())
}

func (m Model) trustAPI() (TrustAPI, bool) {
	t, ok := m.api.(TrustAPI)
	return t, ok
}

func (m Model) fetchProposals() tea.Cmd {
	t, ok := m.trustAPI()
	if !ok {
		return nil
	}
	return m.call(func(cctx context.Context) tea.Msg {
		list, err := t.Proposals(cctx)
		return proposalsMsg{list: list, err: err}
	})
}

func (m Model) decideProposal(p kernel.Proposal, op string) tea.Cmd {
	t, ok := m.trustAPI()
	if !ok {
		return nil
	}
	who := m.opts.Who
	return m.call(func(cctx context.Context) tea.Msg {
		var err error
		if op == "accept" {
			err = t.AcceptProposal(cctx, p.ID, p.Version, who)
		} else {
			err = t.DismissProposal(cctx, p.ID, who)
		}
		return proposalDoneMsg{id: p.ID, op: op, err: err}
	})
}

// updateTrust handles the proposals view's messages; ok is false for any
// other message.
func (m Model) updateTrust(msg tea.Msg) (Model, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case proposalsMsg:
		if msg.err != nil {
			if m.mode == modeProposals {
				m.setStatus("proposals: "+msg.err.Error(), true)
			}
		} else {
			m.proposals = msg.list
			m.propList.resize(len(m.proposals))
		}
		return m, nil, true
	case proposalDoneMsg:
		delete(m.busy, msg.id)
		if msg.err != nil {
			m.setStatus(fmt.Sprintf("%s %s failed: %v", msg.op, msg.id, msg.err), true)
		} else if msg.op == "accept" {
			m.setStatus(msg.id+": accepted; the rule is in your policy layer (overseer rules list)", false)
		} else {
			m.setStatus(msg.id+": dismissed; it will not be proposed again", false)
		}
		return m, m.fetchProposals(), true
	}
	return m, nil, false
}

// trustKey handles a key in the proposals view.
func (m Model) trustKey(s string) (tea.Model, tea.Cmd) {
	if cmd, ok := m.listKey(s, "p", &m.propList, m.fetchProposals); ok {
		return m, cmd
	}
	switch s {
	case "A", "D":
		i, sel := m.propList.at()
		if !sel {
			return m, nil
		}
		p := m.proposals[i]
		if m.busy[p.ID] {
			return m, nil
		}
		m.busy[p.ID] = true
		op := "accept"
		if s == "D" {
			op = "dismiss"
		}
		m.setStatus(fmt.Sprintf("%s %s…", op, p.ID), false)
		return m, m.decideProposal(p, op)
	}
	return m, nil
}

// renderProposals renders the proposals view below the header.
func (m Model) renderProposals(add func(string), rule func(string)) {
	rule("Proposed rules (learned from your approvals; nothing changes until you accept)")
	if _, ok := m.trustAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	if len(m.proposals) == 0 {
		add(stFaint.Render("  No rule is proposed. When you approve the same kind of call several times and refuse"))
		add(stFaint.Render("  none like it, Overseer proposes the narrowest rule that covers them here."))
	}
	for i, p := range m.proposals {
		row := fmt.Sprintf("%s  %s → %s", p.ID, p.Title, p.Rule.Level)
		if sel, _ := m.propList.at(); i == sel {
			add(stSel.Render("▶ " + row))
		} else {
			add("  " + row)
		}
		dr := p.DryRun
		lt := stOK.Render("lets through no refused or risky call")
		if len(dr.LetThrough) > 0 {
			lt = stBad.Render(fmt.Sprintf("LETS THROUGH %d refused or risky call(s)", len(dr.LetThrough)))
		}
		add(fmt.Sprintf("    from %d approvals · dry run over %d past actions: would have saved %d prompt(s) · %s",
			p.Approvals, dr.Examined, dr.PromptsSaved, lt))
		if sel, _ := m.propList.at(); i != sel {
			continue
		}
		for _, c := range dr.LetThrough {
			add("    " + stBad.Render("! ") + oneLine(c.Summary) + stFaint.Render(" — "+oneLine(c.Why)))
		}
		for j, c := range dr.Saved {
			if j == 3 {
				add(stFaint.Render(fmt.Sprintf("    … %d more saved", len(dr.Saved)-3)))
				break
			}
			add(stFaint.Render("    saved: ") + oneLine(c.Summary))
		}
		add(stFaint.Render("    when: ") + ansi.Strip(oneLine(p.Rule.When)))
		if p.Refusals > 0 {
			add(stFaint.Render(fmt.Sprintf("    %d refusal(s) kept out as not_match examples", p.Refusals)))
		}
	}
}

// trustFoot is the proposals view's key line.
const trustFoot = "A accept · D dismiss · j/k move · g reload · p/Esc back · q quit  (edit a rule: web console or overseer rules accept --rule)"

// proposalsHint is the header's note of open proposals.
func (m Model) proposalsHint() string {
	if n := len(m.proposals); n > 0 {
		return "  " + stBold.Render(fmt.Sprintf("%d rule%s proposed (p)", n, strings.Repeat("s", min(1, n-1))))
	}
	return ""
}
