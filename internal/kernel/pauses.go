package kernel

// Paused agents.
//
// A paused agent's calls are refused, whatever they are, until a person
// resumes it: the engine reads the pauses (firewall.PauseSignals) and
// blocks with a message that says why and how to resume, and asks the
// agent to stop its task (the hooks tell Claude Code and Gemini CLI to
// stop; the own loop pauses its task with a checkpoint). A person pauses
// an agent (`overseer pause-agent`, the console), and so do the rate
// limits and budget caps whose action is pause or stop.
//
// The pauses are a table beside the audit log, changed only together with
// the audit record that says so (store.PauseAgentEffect,
// store.ResumeAgentEffect). The kernel keeps a copy in memory, so that
// asking costs a map look-up, and reads the store again when its version
// changed (another process paused or resumed), checking at most every
// pauseRecheck. A pause the audit log records but the table lacks (a row
// removed behind Overseer's back) still holds: the log is the evidence.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/store"
)

// Audit record types of pauses.
const (
	TypeAgentPaused  = "agent_paused"
	TypeAgentResumed = "agent_resumed"
)

// AllAgents is the agent name of a pause that holds every agent.
const AllAgents = "*"

// ErrNotPaused is returned by ResumeAgent for an agent that is not paused.
var ErrNotPaused = errors.New("the agent is not paused")

// pauseRecheck is how often the kernel asks the store whether another
// process changed the pauses.
var pauseRecheck = time.Second

// PauseRecord is the data of agent_paused and agent_resumed records.
type PauseRecord struct {
	Agent  string    `json:"agent"`
	Reason string    `json:"reason,omitempty"`
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	// Replaced is the pause a new one replaced; Lifted the pause a resume
	// lifted.
	Replaced *store.AgentPause `json:"replaced,omitempty"`
	Lifted   *store.AgentPause `json:"lifted,omitempty"`
}

// pauses is the kernel's copy of the paused agents.
type pauses struct {
	mu      sync.RWMutex
	byAgent map[string]store.AgentPause
	version int64
	err     error // the last read failed: calls go to a person until one succeeds
	// checked is when the version was last read (unix nanoseconds);
	// reloading is set while one caller reads it.
	checked   atomic.Int64
	reloading atomic.Bool
}

// PauseAgent pauses agent ("*": every agent) with reason, recording who
// (a person, or what paused it) in the audit log. Pausing a paused agent
// replaces its pause.
func (k *Kernel) PauseAgent(ctx context.Context, agent, reason, by string) error {
	agent = strings.TrimSpace(agent)
	if agent == "" {
		return errors.New("pause: name the agent")
	}
	if strings.TrimSpace(by) == "" {
		return errors.New("pause: say who pauses it")
	}
	if strings.TrimSpace(reason) == "" {
		reason = "paused by " + by
	}
	p := &store.AgentPause{Agent: agent, Reason: reason, By: by, At: k.Clock.Now().UTC()}
	rec := PauseRecord{Agent: agent, Reason: reason, By: by, At: p.At}
	e := audit.Entry{Type: TypeAgentPaused, Agent: recordAgent(agent), Seal: true,
		Effect: &store.PauseAgentEffect{Pause: p, Describe: func(old *store.AgentPause) (json.RawMessage, error) {
			r := rec
			r.Replaced = old
			return k.signedData(TypeAgentPaused, r)
		}}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		return fmt.Errorf("pausing %s: %w", agent, err)
	}
	k.pauses.set(*p)
	k.reloadPauses(ctx)
	return nil
}

// ResumeAgent lifts agent's pause, recording who in the audit log. An
// agent that is not paused is ErrNotPaused.
func (k *Kernel) ResumeAgent(ctx context.Context, agent, by string) error {
	agent = strings.TrimSpace(agent)
	if agent == "" {
		return errors.New("resume: name the agent")
	}
	if strings.TrimSpace(by) == "" {
		return errors.New("resume: say who resumes it")
	}
	rec := PauseRecord{Agent: agent, By: by, At: k.Clock.Now().UTC()}
	e := audit.Entry{Type: TypeAgentResumed, Agent: recordAgent(agent), Seal: true,
		Effect: &store.ResumeAgentEffect{Agent: agent, Describe: func(old *store.AgentPause) (json.RawMessage, error) {
			r := rec
			r.Lifted = old
			return k.signedData(TypeAgentResumed, r)
		}}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s", ErrNotPaused, agent)
		}
		return fmt.Errorf("resuming %s: %w", agent, err)
	}
	k.pauses.remove(agent)
	k.reloadPauses(ctx)
	return nil
}

// recordAgent is the agent column of a pause's record ("" for every agent).
func recordAgent(agent string) string {
	if agent == AllAgents {
		return ""
	}
	return agent
}

// AgentPaused reports whether agent is paused (by its own pause or by one
// of every agent), and why. It reads the kernel's copy: a map look-up.
func (k *Kernel) AgentPaused(agent string) (paused bool, reason string) {
	p, ok := k.pauses.get(agent)
	return ok, p.Reason
}

// AgentPause returns the pause that holds agent, if any.
func (k *Kernel) AgentPause(agent string) (store.AgentPause, bool) {
	return k.pauses.get(agent)
}

// PausedAgents returns the paused agents, by name, as the store has them now.
func (k *Kernel) PausedAgents(ctx context.Context) ([]store.AgentPause, error) {
	if err := k.reloadPausesNow(ctx); err != nil {
		return nil, err
	}
	k.pauses.mu.RLock()
	defer k.pauses.mu.RUnlock()
	out := make([]store.AgentPause, 0, len(k.pauses.byAgent))
	for _, p := range k.pauses.byAgent {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out, nil
}

// ResumeHow is what a paused agent's refusals tell: how a person resumes it.
func ResumeHow(agent string) string {
	return fmt.Sprintf("a person resumes it with `overseer resume-agent %s` or the Resume button on the console's Agents page", agent)
}

// PauseMessage is the refusal of a call of agent held by pause p.
func PauseMessage(agent string, p store.AgentPause) string {
	who := "agent " + agent + " is paused"
	if p.Agent == AllAgents {
		who = "every agent is paused"
	}
	return fmt.Sprintf("%s (by %s at %s: %s); none of its calls runs until %s",
		who, p.By, p.At.UTC().Format(time.RFC3339), p.Reason, ResumeHow(p.Agent))
}

// maybeReloadPauses reads the pauses again when another process changed
// them, at most every pauseRecheck; one caller reads, the others go on
// with the copy they have.
func (k *Kernel) maybeReloadPauses(ctx context.Context) {
	now := time.Now().UnixNano()
	if now-k.pauses.checked.Load() < int64(pauseRecheck) || !k.pauses.reloading.CompareAndSwap(false, true) {
		return
	}
	defer k.pauses.reloading.Store(false)
	k.reloadPauses(ctx)
	k.maybeReloadControls(ctx)
}

// reloadPauses reads the store's version and, when it changed, the pauses.
// A failure is kept: the engine then puts every call to a person.
func (k *Kernel) reloadPauses(ctx context.Context) {
	_ = k.reloadPausesNow(ctx)
}

func (k *Kernel) reloadPausesNow(ctx context.Context) error {
	k.pauses.checked.Store(time.Now().UnixNano())
	ver, err := k.raw.PausesVersion(ctx)
	if err == nil {
		k.pauses.mu.RLock()
		same := k.pauses.byAgent != nil && k.pauses.err == nil && ver == k.pauses.version
		k.pauses.mu.RUnlock()
		if same {
			return nil
		}
	}
	var (
		m      map[string]store.AgentPause
		lifted map[string]bool
	)
	if err == nil {
		m, lifted, err = k.readPauses(ctx)
	}
	k.pauses.mu.Lock()
	defer k.pauses.mu.Unlock()
	if err != nil {
		k.pauses.err = fmt.Errorf("reading the paused agents: %w", err)
		return k.pauses.err
	}
	// A pause this process knew holds until a resumption an instance
	// signed is in the log: one whose row and record were both deleted
	// from the database (which only audit verify shows) is not lifted.
	for agent, p := range k.pauses.byAgent {
		if _, ok := m[agent]; !ok && !lifted[agent] {
			if !strings.Contains(p.Reason, pauseVanished) {
				p.Reason += pauseVanished
			}
			m[agent] = p
		}
	}
	k.pauses.byAgent, k.pauses.version, k.pauses.err = m, ver, nil
	return nil
}

// pauseVanished is added to the reason of a pause kept after its row and
// record were removed from the database.
const pauseVanished = " (its pause was removed from the database with its audit record, so it holds until a person resumes it)"

// readPauses reads the table and the audit log's pause records: an agent
// is paused when the table says so, or when the log's last record about
// it is a pause (the row was removed without a resume record). lifted
// holds the agents whose last record is a resumption an instance signed.
func (k *Kernel) readPauses(ctx context.Context) (map[string]store.AgentPause, map[string]bool, error) {
	list, err := k.raw.ListAgentPauses(ctx)
	if err != nil {
		return nil, nil, err
	}
	m := make(map[string]store.AgentPause, len(list))
	for _, p := range list {
		m[p.Agent] = p
	}
	recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{Types: []string{TypeAgentPaused, TypeAgentResumed}})
	if err != nil {
		return nil, nil, err
	}
	lifted := map[string]bool{}
	logged := map[string]*store.AgentPause{}
	signed := map[string]bool{} // the agent's last pause record was signed (signing.go)
	for _, r := range recs {
		var pr PauseRecord
		if json.Unmarshal(r.Data, &pr) != nil || pr.Agent == "" {
			continue
		}
		ok := k.signedRecord(r)
		if r.Type == TypeAgentPaused {
			logged[pr.Agent] = &store.AgentPause{Agent: pr.Agent, Reason: pr.Reason, By: pr.By, At: pr.At}
			signed[pr.Agent], lifted[pr.Agent] = ok, false
		} else if ok || !signed[pr.Agent] {
			// A resumption no instance signed does not lift a pause one
			// did: it is someone else's.
			logged[pr.Agent], lifted[pr.Agent] = nil, ok
		}
	}
	for agent, p := range logged {
		if _, ok := m[agent]; p != nil && !ok {
			p.Reason += " (its pause was removed from the database without a resume record Overseer signed, so it holds)"
			m[agent] = *p
		}
	}
	return m, lifted, nil
}

func (p *pauses) get(agent string) (store.AgentPause, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if ap, ok := p.byAgent[agent]; ok {
		return ap, true
	}
	ap, ok := p.byAgent[AllAgents]
	return ap, ok
}

func (p *pauses) set(ap store.AgentPause) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byAgent == nil {
		p.byAgent = map[string]store.AgentPause{}
	}
	p.byAgent[ap.Agent] = ap
}

func (p *pauses) remove(agent string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byAgent, agent)
}

// Paused implements firewall.PauseSignals.
func (p *pauses) Paused(agent string) (bool, string, error) {
	p.mu.RLock()
	err := p.err
	p.mu.RUnlock()
	ap, ok := p.get(agent)
	if ok {
		return true, PauseMessage(agent, ap), nil
	}
	return false, "", err
}

var _ firewall.PauseSignals = (*pauses)(nil)
