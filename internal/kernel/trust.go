package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/gate"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// DefaultHistory is how many of the most recent actions of the audit trail
// a dry run and the proposals read.
const DefaultHistory = 5000

// History reads the judged actions of the audit trail, oldest first: each
// action with the verdict recorded then, whether a person was asked and the
// person's applied answer (answers applied by the timeout or a withdrawal
// are no one's). At most limit of the most recent actions are read
// (DefaultHistory when limit <= 0).
func (k *Kernel) History(ctx context.Context, limit int) ([]firewall.PastAction, error) {
	if limit <= 0 {
		limit = DefaultHistory
	}
	acts, err := k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction}, Desc: true, Limit: limit})
	if err != nil {
		return nil, err
	}
	if len(acts) == 0 {
		return nil, nil
	}
	slices.Reverse(acts)
	byID := make(map[string]int, len(acts))
	out := make([]firewall.PastAction, 0, len(acts))
	for _, r := range acts {
		var a action.Action
		if err := json.Unmarshal(r.Data, &a); err != nil || r.ActionID == "" {
			continue
		}
		byID[r.ActionID] = len(out)
		out = append(out, firewall.PastAction{Seq: r.Seq, Time: r.Time, Action: a})
	}
	rest, err := k.Store.QueryAudit(ctx, store.AuditQuery{AfterSeq: acts[0].Seq - 1,
		Types: []string{audit.TypeVerdict, audit.TypeApprovalRequest, audit.TypeAnswer, audit.TypeResult}})
	if err != nil {
		return nil, err
	}
	for _, r := range rest {
		i, ok := byID[r.ActionID]
		if !ok {
			continue
		}
		p := &out[i]
		switch r.Type {
		case audit.TypeVerdict:
			_ = json.Unmarshal(r.Data, &p.Verdict)
		case audit.TypeApprovalRequest:
			p.Asked = true
		case audit.TypeResult:
			var res struct {
				IsError bool `json:"is_error"`
			}
			if json.Unmarshal(r.Data, &res) == nil {
				p.Result = firewall.ResultOK
				if res.IsError {
					p.Result = firewall.ResultError
				}
			}
		case audit.TypeAnswer:
			var ar answerRecord
			if json.Unmarshal(r.Data, &ar) != nil || !ar.Answer.Applied {
				continue
			}
			switch ar.Answer.Who {
			case gate.TimeoutActor, gate.WithdrawnActor:
				continue
			}
			if d := p.Verdict.Decider; d != nil && d.Source == action.SourceAgent {
				continue // an answer to the agent's own question
			}
			p.Answer, p.Who = ar.Answer.Decision, ar.Answer.Who
		}
	}
	return out, nil
}

// ReplayRule is the dry run of a user-layer rule over the audit trail (see
// firewall.Engine.Replay): how many past prompts it would have saved, and
// every past refusal or risky action it would have let through. It changes
// nothing.
func (k *Kernel) ReplayRule(ctx context.Context, r policy.Rule) (*firewall.ReplayReport, error) {
	past, err := k.History(ctx, 0)
	if err != nil {
		return nil, err
	}
	return k.Engine.Replay(ctx, r, past)
}

// Proposal is a rule Overseer proposes after a person approved the same
// kind of call several times and refused none like it, with its dry run
// over the audit trail. It changes nothing until a person accepts it.
type Proposal struct {
	ID    string      `json:"id"`
	Title string      `json:"title"`
	Rule  policy.Rule `json:"rule"`
	// Version changes whenever the proposed rule does; an accept that
	// names a version accepts that rule or nothing.
	Version   string                 `json:"version"`
	Approvals int                    `json:"approvals"`
	Refusals  int                    `json:"refusals"`
	DryRun    *firewall.ReplayReport `json:"dry_run"`
}

// Proposal states, kept in the state store under ProposalNS.
const (
	ProposalNS        = "proposals"
	ProposalAccepted  = "accepted"
	ProposalDismissed = "dismissed"
)

// ProposalDecision is what a person decided about a proposal.
type ProposalDecision struct {
	Status string    `json:"status"` // accepted, dismissed
	Who    string    `json:"who"`
	At     time.Time `json:"at"`
	RuleID string    `json:"rule_id,omitempty"`
}

// Errors of proposals.
var (
	// ErrProposalChanged means the proposal is not the version the person
	// looked at: it must be reviewed again.
	ErrProposalChanged = errors.New("the proposal changed since it was shown; review it again")
	// ErrUnsafeRule means an edited rule would let through a call a person
	// refused.
	ErrUnsafeRule = errors.New("the rule would let through a call a person refused")
)

// Proposals returns the open proposals, each with its dry run. Proposals a
// person accepted or dismissed are not proposed again, nor are rules that
// would save no prompt (a guard's floor or an admin rule holds the calls,
// or they already run) or that would let through a call a person refused.
func (k *Kernel) Proposals(ctx context.Context) ([]Proposal, error) {
	after := k.Engine.Policy().Settings.Adapt.ProposeAfter
	if after < 0 || k.Engine.Policy().Settings.Adapt.Disabled {
		return []Proposal{}, nil
	}
	past, err := k.History(ctx, 0)
	if err != nil {
		return nil, err
	}
	decided, err := k.Store.ListState(ctx, ProposalNS)
	if err != nil {
		return nil, err
	}
	var open []firewall.Candidate
	var rules []policy.Rule
	for _, c := range firewall.Propose(past, after) {
		if _, ok := decided[c.ID]; !ok {
			open = append(open, c)
			rules = append(rules, c.Rule)
		}
	}
	out := []Proposal{}
	if len(open) == 0 {
		return out, nil
	}
	reps, err := k.Engine.ReplayAll(ctx, rules, past)
	if err != nil {
		return nil, fmt.Errorf("the proposals' dry run: %w", err)
	}
	for i, c := range open {
		rep := reps[i]
		if rep.PromptsSaved == 0 || refusedLetThrough(rep) {
			continue
		}
		out = append(out, Proposal{ID: c.ID, Title: c.Title, Rule: c.Rule, Version: ruleVersion(c.Rule),
			Approvals: len(c.Approvals), Refusals: len(c.Refusals), DryRun: rep})
	}
	return out, nil
}

func refusedLetThrough(rep *firewall.ReplayReport) bool {
	for _, lt := range rep.LetThrough {
		if lt.Answer == "deny" || lt.Answer == "abort" {
			return true
		}
	}
	return false
}

func ruleVersion(r policy.Rule) string {
	b, _ := json.Marshal(r)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// Proposal returns one open proposal, or an error wrapping store.ErrNotFound.
func (k *Kernel) Proposal(ctx context.Context, id string) (*Proposal, error) {
	list, err := k.Proposals(ctx)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].ID == id {
			return &list[i], nil
		}
	}
	return nil, fmt.Errorf("no open proposal %s: %w", id, store.ErrNotFound)
}

// ProposalChange is the audit record of a decision about a proposal.
type ProposalChange struct {
	Op       string       `json:"op"` // accept, dismiss
	Proposal string       `json:"proposal"`
	Title    string       `json:"title"`
	Who      string       `json:"who"`
	RuleID   string       `json:"rule_id,omitempty"`
	Rule     *policy.Rule `json:"rule,omitempty"`
	Edited   bool         `json:"edited,omitempty"`
	// The dry run's figures when the person decided.
	PromptsSaved int `json:"prompts_saved"`
	LetThrough   int `json:"let_through"`
}

// TypeProposal is the audit record type of a decision about a proposal.
const TypeProposal = "proposal"

// AcceptProposal saves an open proposal's rule in the user layer, as a
// person's decision: audited (a proposal record and a policy_change) and
// revertible like any user rule (RemoveUserRule). version, when set, must be
// the version the person saw. edited, when set, is the person's version of
// the rule: it must pass its examples and may not let through any call the
// person refused; it is dry-run again.
func (k *Kernel) AcceptProposal(ctx context.Context, id, version string, edited *policy.Rule, who string) (*store.UserRule, *Proposal, error) {
	p, err := k.Proposal(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if version != "" && version != p.Version && edited == nil {
		return nil, p, ErrProposalChanged
	}
	r := p.Rule
	if edited != nil {
		r = *edited
		if r.Name == "" {
			r.Name = p.Rule.Name
		}
		// The refusals the proposal kept out stay out.
		r.NotMatch = appendMissing(r.NotMatch, p.Rule.NotMatch)
		rep, err := k.ReplayRule(ctx, r)
		if err != nil {
			return nil, p, err
		}
		if refusedLetThrough(rep) {
			return nil, p, ErrUnsafeRule
		}
		p.DryRun = rep
	}
	ur, err := k.addUserRule(ctx, r, who, nil, "learned",
		fmt.Sprintf("proposal %s accepted by %s: %s (%d prompts saved in the dry run)", p.ID, who, p.Title, p.DryRun.PromptsSaved))
	if err != nil {
		return nil, p, err
	}
	if err := k.decideProposal(ctx, p, ProposalDecision{Status: ProposalAccepted, Who: who, RuleID: ur.ID}, &r, edited != nil); err != nil {
		return ur, p, err
	}
	return ur, p, nil
}

// DismissProposal records that a person does not want a proposal: it is
// not proposed again.
func (k *Kernel) DismissProposal(ctx context.Context, id, who string) (*Proposal, error) {
	p, err := k.Proposal(ctx, id)
	if err != nil {
		return nil, err
	}
	return p, k.decideProposal(ctx, p, ProposalDecision{Status: ProposalDismissed, Who: who}, nil, false)
}

func (k *Kernel) decideProposal(ctx context.Context, p *Proposal, d ProposalDecision, rule *policy.Rule, edited bool) error {
	d.At = k.Clock.Now()
	b, err := json.Marshal(d)
	if err != nil {
		return err
	}
	if err := k.Store.UpdateState(ctx, ProposalNS, p.ID, func([]byte) ([]byte, error) { return b, nil }); err != nil {
		return err
	}
	op := "dismiss"
	if d.Status == ProposalAccepted {
		op = "accept"
	}
	pc := ProposalChange{Op: op, Proposal: p.ID, Title: p.Title, Who: d.Who, RuleID: d.RuleID, Rule: rule, Edited: edited}
	if p.DryRun != nil {
		pc.PromptsSaved, pc.LetThrough = p.DryRun.PromptsSaved, len(p.DryRun.LetThrough)
	}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: TypeProposal, Data: pc}); err != nil {
		return fmt.Errorf("recording the decision: %w", err)
	}
	return nil
}

func appendMissing(have, want []policy.Example) []policy.Example {
	seen := map[string]bool{}
	for _, e := range have {
		b, _ := json.Marshal(e)
		seen[string(b)] = true
	}
	for _, e := range want {
		if b, _ := json.Marshal(e); !seen[string(b)] {
			have = append(have, e)
		}
	}
	return have
}
