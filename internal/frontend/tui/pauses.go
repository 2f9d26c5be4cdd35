package tui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/overseer-dev/overseer/internal/store"
)

// PauseAPI is what the paused-agents line needs: the paused agents and a
// person's resume. An API that does not implement it shows none.
type PauseAPI interface {
	PausedAgents(ctx context.Context) ([]store.AgentPause, error)
	ResumeAgent(ctx context.Context, agent, who string) error
}

var _ PauseAPI = ClientAPI{}

// PausedAgents implements PauseAPI.
func (a ClientAPI) PausedAgents(ctx context.Context) ([]store.AgentPause, error) {
	return a.C.PausedAgents(ctx)
}

// ResumeAgent implements PauseAPI.
func (a ClientAPI) ResumeAgent(ctx context.Context, agent, who string) error {
	return a.C.ResumeAgent(ctx, agent, who)
}

type (
	// pausedMsg carries a fresh read of the paused agents.
	pausedMsg struct {
		list []store.AgentPause
		err  error
	}
	// resumedMsg is the outcome of a resume.
	resumedMsg struct {
		agent string
		err   error
	}
)

func (m Model) pauseAPI() (PauseAPI, bool) {
	p, ok := m.api.(PauseAPI)
	return p, ok
}

// fetchPaused reads the paused agents (with every refresh of the queue).
func (m Model) fetchPaused() tea.Cmd {
	p, ok := m.pauseAPI()
	if !ok {
		return nil
	}
	ctx := m.ctx
	return func() tea.Msg {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		list, err := p.PausedAgents(cctx)
		return pausedMsg{list: list, err: err}
	}
}

// resumeFirst resumes the first paused agent shown.
func (m Model) resumeFirst() (tea.Model, tea.Cmd) {
	p, ok := m.pauseAPI()
	if !ok || len(m.paused) == 0 {
		m.setStatus("no agent is paused", false)
		return m, nil
	}
	agent, who := m.paused[0].Agent, m.opts.Who
	return m, m.call(func(cctx context.Context) tea.Msg {
		return resumedMsg{agent: agent, err: p.ResumeAgent(cctx, agent, who)}
	})
}

// updatePauses handles the paused agents' messages; ok is false for any
// other message.
func (m Model) updatePauses(msg tea.Msg) (Model, tea.Cmd, bool) {
	switch msg := msg.(type) {
	case pausedMsg:
		if msg.err == nil {
			m.paused = msg.list
		}
		return m, nil, true
	case resumedMsg:
		if msg.err != nil {
			m.setStatus(fmt.Sprintf("resume %s failed: %v", msg.agent, msg.err), true)
		} else {
			m.setStatus(msg.agent+": resumed", false)
		}
		return m, m.fetchPaused(), true
	}
	return m, nil, false
}

// pausedLines are the header lines of the paused agents.
func (m Model) pausedLines() []string {
	var out []string
	for i, p := range m.paused {
		who := p.Agent
		if who == "*" {
			who = "every agent"
		}
		line := stBad.Render("⏸ paused: "+who) + stFaint.Render(fmt.Sprintf(" by %s — %s", p.By, oneLine(p.Reason)))
		if i == 0 {
			line += stFaint.Render("  (U resumes it)")
		}
		out = append(out, line)
	}
	return out
}
