package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// Trust modes of an agent (seed 000): trust is earned, not preset. An agent
// starts audited (what it did is read after the fact), may be promoted to
// delegated (it acts within a grant built from what it actually did), and
// finally to supervised with auto-approval on specific tools. A violation
// found by ingest moves it one step back; a person may demote it any time.
type TrustMode string

const (
	ModeAudited    TrustMode = "audited"
	ModeDelegated  TrustMode = "delegated"
	ModeSupervised TrustMode = "supervised" // with AutoTools auto-approved
)

// ladder is the order of the modes, least trusted first.
var ladder = []TrustMode{ModeAudited, ModeDelegated, ModeSupervised}

func (m TrustMode) rank() int { return slices.Index(ladder, m) }

// ParseTrustMode parses a mode name.
func ParseTrustMode(s string) (TrustMode, error) {
	m := TrustMode(strings.ToLower(strings.TrimSpace(s)))
	if m.rank() < 0 {
		return "", fmt.Errorf("unknown mode %q (want audited, delegated or supervised)", s)
	}
	return m, nil
}

// nsTrust holds each agent's AgentTrust, written only as the effect of its
// trust audit record.
const nsTrust = "trust.agents"

// ErrPromotion is a promotion that is not allowed (skipping a step, no
// tools named, an agent with unresolved violations).
var ErrPromotion = errors.New("promotion refused")

// GrantProposal is the grant a promotion to delegated proposes, built from
// the calls the agent actually made (live and ingested): the tools it used
// without a violation, and budgets above what it needed.
type GrantProposal struct {
	Tools []string `json:"tools"`
	// Excluded are tools it used that a violation or a refusal touched.
	Excluded []string `json:"excluded,omitempty"`
	// MaxSteps and MaxDuration are twice the largest session seen.
	MaxSteps    int           `json:"max_steps"`
	MaxDuration time.Duration `json:"max_duration"`
	// Basis says how many calls it was built from, and how many of them were
	// read from transcripts (which the agent could have written itself).
	Basis         int `json:"basis"`
	BasisIngested int `json:"basis_ingested"`
}

// AgentTrust is an agent's current trust.
type AgentTrust struct {
	Agent string    `json:"agent"`
	Mode  TrustMode `json:"mode"`
	// AutoTools are the tools auto-approved in supervised mode (each a user
	// rule named AutoRuleName(agent, tool)).
	AutoTools []string `json:"auto_tools,omitempty"`
	// Grant is the proposal delegated mode was entered with; GrantID the
	// grant issued from it (revoked on demotion).
	Grant   *GrantProposal `json:"grant,omitempty"`
	GrantID string         `json:"grant_id,omitempty"`
	Since   time.Time      `json:"since"`
	By      string         `json:"by"`
	Reason  string         `json:"reason,omitempty"`
}

// TrustChange is the data of a trust audit record.
type TrustChange struct {
	Agent  string    `json:"agent"`
	Op     string    `json:"op"` // promote, demote
	From   TrustMode `json:"from"`
	To     TrustMode `json:"to"`
	Who    string    `json:"who"`
	Reason string    `json:"reason"`
	Cause  string    `json:"cause,omitempty"` // the action id of a violation
	// Accepted are the violations a person accepted with a promotion.
	Accepted []string    `json:"accepted,omitempty"`
	Trust    *AgentTrust `json:"trust"`
}

// AutoRuleName is the name of the user rule that auto-approves tool for
// agent in supervised mode.
func AutoRuleName(agent, tool string) string {
	return "trust:" + agent + ":" + tool
}

// AgentTrustOf returns the agent's trust; an agent never promoted is
// audited.
func (k *Kernel) AgentTrustOf(ctx context.Context, agent string) (*AgentTrust, error) {
	b, err := k.Store.GetState(ctx, nsTrust, agent)
	if errors.Is(err, store.ErrNotFound) {
		return &AgentTrust{Agent: agent, Mode: ModeAudited}, nil
	}
	if err != nil {
		return nil, err
	}
	var t AgentTrust
	if err := json.Unmarshal(b, &t); err != nil || t.Mode.rank() < 0 || !k.trustBacked(ctx, &t) {
		// Unreadable trust, or trust no audited record backs, is no trust.
		return &AgentTrust{Agent: agent, Mode: ModeAudited}, nil
	}
	return &t, nil
}

// trustBacked reports whether t is what the agent's last trust record
// says: the stored trust is an effect of that record, so a difference means
// it was changed outside Overseer.
func (k *Kernel) trustBacked(ctx context.Context, t *AgentTrust) bool {
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeTrust}, Agent: t.Agent, Desc: true, Limit: 1})
	if err != nil || len(recs) != 1 {
		return false
	}
	var c TrustChange
	if json.Unmarshal(recs[0].Data, &c) != nil || c.Trust == nil {
		return false
	}
	want, err1 := json.Marshal(c.Trust)
	got, err2 := json.Marshal(t)
	return err1 == nil && err2 == nil && string(want) == string(got)
}

// AgentRecord is what an agent did, as the audit log says.
type AgentRecord struct {
	Agent string      `json:"agent"`
	Trust *AgentTrust `json:"trust"`
	// Actions are its live calls, Ingested those read from its transcripts.
	Actions  int `json:"actions"`
	Ingested int `json:"ingested"`
	// Verdicts counts the levels of both.
	Verdicts map[string]int `json:"verdicts"`
	// Refusals are people's denials of its calls.
	Refusals int `json:"refusals"`
	// Violations are ingested calls judged block.
	Violations []Violation `json:"violations,omitempty"`
	// Tools counts its calls per tool.
	Tools    map[string]int `json:"tools"`
	LastSeen time.Time      `json:"last_seen,omitzero"`
	// History is its trust changes, oldest first.
	History []TrustChange `json:"history,omitempty"`
	// Proposal is the grant a promotion to delegated would propose now.
	Proposal *GrantProposal `json:"proposal,omitempty"`
}

// Violation is an ingested call judged block.
type Violation struct {
	ActionID string    `json:"action_id"`
	Tool     string    `json:"tool"`
	Summary  string    `json:"summary"`
	Source   string    `json:"source"` // file:line
	At       time.Time `json:"at"`
}

// recordLimit bounds the audit records an agent record reads.
const recordLimit = 20000

// AgentRecord reads the agent's record from the audit log.
func (k *Kernel) AgentRecord(ctx context.Context, agent string) (*AgentRecord, error) {
	if strings.TrimSpace(agent) == "" {
		return nil, errors.New("no agent named")
	}
	t, err := k.AgentTrustOf(ctx, agent)
	if err != nil {
		return nil, err
	}
	r := &AgentRecord{Agent: agent, Trust: t, Verdicts: map[string]int{}, Tools: map[string]int{}}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Agent: agent,
		Types: []string{audit.TypeVerdict, audit.TypeIngested, audit.TypeTrust}, Desc: true, Limit: recordLimit})
	if err != nil {
		return nil, err
	}
	type sess struct {
		steps       int
		first, last time.Time
	}
	sessions := map[string]*sess{}
	tainted := map[string]bool{}
	note := func(tool, session string, at time.Time, level action.Level) {
		r.Tools[tool]++
		r.Verdicts[level.String()]++
		if at.After(r.LastSeen) {
			r.LastSeen = at
		}
		s := sessions[session]
		if s == nil {
			s = &sess{first: at, last: at}
			sessions[session] = s
		}
		s.steps++
		s.first, s.last = minTime(s.first, at), maxTime(s.last, at)
		if level == action.Block {
			tainted[tool] = true
		}
	}
	for i := len(recs) - 1; i >= 0; i-- {
		rec := recs[i]
		switch rec.Type {
		case audit.TypeVerdict:
			var v action.Verdict
			if json.Unmarshal(rec.Data, &v) != nil {
				continue
			}
			r.Actions++
			note(rec.Tool, rec.Session, rec.Time, v.Level)
		case audit.TypeIngested:
			var in IngestedRecord
			if json.Unmarshal(rec.Data, &in) != nil || !in.Ingested {
				continue
			}
			r.Ingested++
			at := in.Source.At
			if at.IsZero() {
				at = rec.Time
			}
			note(rec.Tool, rec.Session, at, in.Verdict.Level)
			if in.Verdict.Level == action.Block {
				r.Violations = append(r.Violations, Violation{ActionID: rec.ActionID, Tool: rec.Tool,
					Summary: in.Verdict.Summary(), Source: fmt.Sprintf("%s:%d", in.Source.File, in.Source.Line), At: at})
			}
		case audit.TypeTrust:
			var c TrustChange
			if json.Unmarshal(rec.Data, &c) == nil {
				r.History = append(r.History, c)
			}
		}
	}
	denied, err := k.Store.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusDenied})
	if err != nil {
		return nil, err
	}
	for _, ap := range denied {
		if ap.Agent == agent && ap.Answer != nil && ap.Answer.Who != gate.TimeoutActor {
			r.Refusals++
			tainted[ap.Tool] = true
		}
	}
	p := &GrantProposal{Basis: r.Actions + r.Ingested, BasisIngested: r.Ingested}
	for tool := range r.Tools {
		if tainted[tool] {
			p.Excluded = append(p.Excluded, tool)
		} else {
			p.Tools = append(p.Tools, tool)
		}
	}
	sort.Strings(p.Tools)
	sort.Strings(p.Excluded)
	for _, s := range sessions {
		p.MaxSteps = max(p.MaxSteps, 2*s.steps)
		p.MaxDuration = max(p.MaxDuration, 2*s.last.Sub(s.first))
	}
	p.MaxDuration = max(p.MaxDuration, 10*time.Minute).Round(time.Second)
	r.Proposal = p
	return r, nil
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// Promotion is a person's request to move an agent one step up.
type Promotion struct {
	Agent string
	To    TrustMode
	// Tools are the tools to auto-approve (promotion to supervised; at
	// least one, each one the agent used).
	Tools  []string
	Who    string
	Reason string
	// AcceptViolations lets a person promote an agent whose record holds
	// violations since the person's last trust decision about it (they are
	// named in the record of the promotion).
	AcceptViolations bool
}

// PromoteAgent moves an agent one step up the ladder, on a person's
// request: audited → delegated (a grant issued from the proposal built
// from its record: its tools, twice its largest session's steps and time,
// for grant.MaxLife), delegated →
// supervised with auto-approval on p.Tools (user rules, which never lower
// an admin rule or a hard guard). An agent whose record holds violations
// not answered by a later demotion is refused. The change is audited.
func (k *Kernel) PromoteAgent(ctx context.Context, p Promotion) (*TrustChange, error) {
	if strings.TrimSpace(p.Who) == "" {
		return nil, fmt.Errorf("%w: a promotion needs the person's name", ErrPromotion)
	}
	rec, err := k.AgentRecord(ctx, p.Agent)
	if err != nil {
		return nil, err
	}
	cur := rec.Trust
	if p.To.rank() != cur.Mode.rank()+1 {
		return nil, fmt.Errorf("%w: %s is %s; the next step is %s", ErrPromotion, p.Agent, cur.Mode, next(cur.Mode))
	}
	unanswered := unansweredViolations(rec)
	if len(unanswered) > 0 && !p.AcceptViolations {
		return nil, fmt.Errorf("%w: %s has %d violation(s) since a person last decided on its trust (accept them explicitly to promote)", ErrPromotion, p.Agent, len(unanswered))
	}
	t := *cur
	t.Mode, t.Since, t.By, t.Reason = p.To, k.Clock.Now().Round(0).UTC(), p.Who, p.Reason
	switch p.To {
	case ModeDelegated:
		if rec.Proposal == nil || len(rec.Proposal.Tools) == 0 {
			return nil, fmt.Errorf("%w: %s has no record to build a grant from", ErrPromotion, p.Agent)
		}
		t.Grant = rec.Proposal
		g, err := k.IssueGrant(ctx, proposedSpec(p.Agent, rec.Proposal, p.Reason, k.Clock.Now()), p.Who, "trust")
		if err != nil {
			return nil, fmt.Errorf("issuing the proposed grant: %w", err)
		}
		t.GrantID = g.ID
	case ModeSupervised:
		if len(p.Tools) == 0 {
			return nil, fmt.Errorf("%w: name the tools to auto-approve", ErrPromotion)
		}
		for _, tool := range p.Tools {
			if rec.Tools[tool] == 0 {
				return nil, fmt.Errorf("%w: %s never used %s", ErrPromotion, p.Agent, tool)
			}
			if slices.Contains(rec.Proposal.Excluded, tool) {
				return nil, fmt.Errorf("%w: %s has a violation or refusal on %s", ErrPromotion, p.Agent, tool)
			}
		}
		for _, tool := range p.Tools {
			r := policy.Rule{Name: AutoRuleName(p.Agent, tool), Agent: []string{globEscape(p.Agent)}, Tool: []string{globEscape(tool)},
				Level: action.Auto, Message: "earned trust: auto-approved for " + p.Agent + " by " + p.Who}
			if _, err := k.addUserRule(ctx, r, p.Who, nil, "human", "trust: "+p.Agent+" promoted to supervised with auto on "+tool); err != nil {
				return nil, fmt.Errorf("auto-approving %s: %w", tool, err)
			}
		}
		t.AutoTools = slices.Clone(p.Tools)
	}
	c, err := k.putTrust(ctx, TrustChange{Agent: p.Agent, Op: "promote", From: cur.Mode, To: p.To, Who: p.Who, Reason: p.Reason,
		Accepted: unanswered, Trust: &t})
	if err != nil && t.GrantID != "" {
		// The promotion is not recorded: its grant must not stay.
		_, _ = k.RevokeGrant(ctx, t.GrantID, p.Who, "trust", "the promotion it was issued for failed")
	}
	return c, err
}

// proposedSpec is the grant a promotion to delegated issues: the agent's
// main agent (not its sub-agents), the tools of the proposal, its step and
// time budgets, for the longest a grant may run.
func proposedSpec(agent string, p *GrantProposal, reason string, now time.Time) GrantSpec {
	if reason == "" {
		reason = "earned trust: promoted to delegated"
	}
	return GrantSpec{
		Subject: grant.Subject{Agent: agent},
		Allow:   []grant.Permit{{Tools: slices.Clone(p.Tools)}},
		Budget:  grant.Budget{Steps: int64(p.MaxSteps), WallTime: grant.Duration(p.MaxDuration)},
		Expires: now.Add(grant.MaxLife),
		Reason:  reason,
	}
}

func next(m TrustMode) TrustMode {
	if i := m.rank(); i+1 < len(ladder) {
		return ladder[i+1]
	}
	return "none (it is at the top)"
}

// unansweredViolations lists the violations (action ids) found after a
// person last decided on the agent's trust (an automatic demotion is no
// person's decision).
func unansweredViolations(r *AgentRecord) []string {
	var since time.Time
	for _, c := range r.History {
		if c.Who != "overseer" && c.Trust != nil {
			since = c.Trust.Since
		}
	}
	var out []string
	for _, v := range r.Violations {
		if v.At.After(since) {
			out = append(out, v.ActionID)
		}
	}
	return out
}

// DemoteAgent moves an agent one step down, on a person's request.
func (k *Kernel) DemoteAgent(ctx context.Context, agent, who, reason string) (*TrustChange, error) {
	return k.demote(ctx, agent, who, reason, "")
}

// DemoteOnViolation moves an agent one step down after a violation (the
// action cause), unless it is audited already (then nil).
func (k *Kernel) DemoteOnViolation(ctx context.Context, agent, cause, reason string) (*TrustChange, error) {
	return k.demote(ctx, agent, "overseer", "violation: "+reason, cause)
}

func (k *Kernel) demote(ctx context.Context, agent, who, reason, cause string) (*TrustChange, error) {
	cur, err := k.AgentTrustOf(ctx, agent)
	if err != nil {
		return nil, err
	}
	now := k.Clock.Now().Round(0).UTC()
	if cur.Mode == ModeAudited {
		if cause != "" {
			return nil, nil
		}
		// A person's demotion of an audited agent still records that
		// its violations were looked at.
	}
	t := *cur
	t.Since, t.By, t.Reason = now, who, reason
	to := cur.Mode
	if i := cur.Mode.rank(); i > 0 {
		to = ladder[i-1]
	}
	switch cur.Mode {
	case ModeSupervised:
		for _, tool := range cur.AutoTools {
			if err := k.deleteRule(ctx, AutoRuleName(agent, tool), PolicyChange{Origin: "human", Op: "remove",
				RuleID: AutoRuleName(agent, tool), Who: who, Reason: "trust: " + agent + " demoted: " + reason}); err != nil && !errors.Is(err, store.ErrNotFound) {
				return nil, fmt.Errorf("removing the auto-approval of %s: %w", tool, err)
			}
		}
		if err := k.Engine.Reload(ctx); err != nil {
			return nil, err
		}
		t.AutoTools = nil
	case ModeDelegated:
		if cur.GrantID != "" {
			if _, err := k.RevokeGrant(ctx, cur.GrantID, who, "trust", "trust: "+agent+" demoted: "+reason); err != nil && !errors.Is(err, grant.ErrNotFound) {
				return nil, fmt.Errorf("revoking the grant %s: %w", cur.GrantID, err)
			}
		}
		t.Grant, t.GrantID = nil, ""
	}
	t.Mode = to
	return k.putTrust(ctx, TrustChange{Agent: agent, Op: "demote", From: cur.Mode, To: to, Who: who, Reason: reason, Cause: cause, Trust: &t})
}

// putTrust records a trust change with its state, in one transaction.
func (k *Kernel) putTrust(ctx context.Context, c TrustChange) (*TrustChange, error) {
	val, err := json.Marshal(c.Trust)
	if err != nil {
		return nil, err
	}
	e := audit.Entry{Type: audit.TypeTrust, Agent: c.Agent, Data: c, Seal: true,
		Effect: &store.PutStateEffect{NS: nsTrust, Key: c.Agent, Value: val}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		return nil, fmt.Errorf("recording the trust change: %w", err)
	}
	return &c, nil
}

// Agents lists the agents the audit log and the trust store know.
func (k *Kernel) Agents(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	trusted, err := k.Store.ListState(ctx, nsTrust)
	if err != nil {
		return nil, err
	}
	for a := range trusted {
		seen[a] = true
	}
	recs, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction, audit.TypeIngested}, Desc: true, Limit: recordLimit})
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Agent != "" {
			seen[r.Agent] = true
		}
	}
	out := make([]string, 0, len(seen))
	for a := range seen {
		out = append(out, a)
	}
	sort.Strings(out)
	return out, nil
}
