package firewall

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/policy"
)

// PastAction is one judged action of the audit trail, as a dry run needs
// it: the action as it was submitted, the verdict recorded then, whether a
// person was asked and what the person answered.
type PastAction struct {
	Seq     int64          `json:"seq"` // the sequence number of the action's audit record
	Time    time.Time      `json:"time"`
	Action  action.Action  `json:"action"`
	Verdict action.Verdict `json:"verdict"`
	// Asked is true when the action was put to a person (an approval was
	// opened for it).
	Asked bool `json:"asked"`
	// Answer is the applied answer of a person: "approve", "deny" or
	// "abort"; empty when nobody answered (no approval, still pending,
	// timed out or withdrawn).
	Answer string `json:"answer,omitempty"`
	// Who answered, when a person did.
	Who string `json:"who,omitempty"`
	// Result is the recorded result of the call: ResultOK, ResultError, or
	// empty when none was recorded.
	Result string `json:"result,omitempty"`
}

// Results of a past action.
const (
	ResultOK    = "ok"
	ResultError = "error"
)

// Refused reports whether a person refused the action.
func (p *PastAction) Refused() bool { return p.Answer == "deny" || p.Answer == "abort" }

// Approved reports whether a person approved the action.
func (p *PastAction) Approved() bool { return p.Answer == "approve" }

// ReplayCase is one past action a dry run reports.
type ReplayCase struct {
	ActionID string    `json:"action_id"`
	Seq      int64     `json:"seq"`
	Time     time.Time `json:"time"`
	Tool     string    `json:"tool"`
	Summary  string    `json:"summary"` // the call, on one line
	Cwd      string    `json:"cwd,omitempty"`
	// Then is the level recorded when the action was judged; Without and
	// With are its level now, without and with the rule.
	Then    action.Level `json:"then"`
	Without action.Level `json:"without"`
	With    action.Level `json:"with"`
	Answer  string       `json:"answer,omitempty"`
	Who     string       `json:"who,omitempty"`
	// Why says what makes a let-through case risky, for a person.
	Why string `json:"why,omitempty"`
}

// ReplayReport is the outcome of replaying one rule over past actions.
type ReplayReport struct {
	Rule policy.Rule `json:"rule"`
	// Examined is the number of past actions replayed; Since is the time of
	// the oldest one.
	Examined int       `json:"examined"`
	Since    time.Time `json:"since,omitempty"`
	// Matched is the number of past actions the rule matches.
	Matched int `json:"matched"`
	// PromptsSaved counts the past actions that were put to a person and,
	// with the rule, would run without one (Saved lists them).
	PromptsSaved int          `json:"prompts_saved"`
	Saved        []ReplayCase `json:"saved"`
	// LetThrough lists every past action the rule would let run without a
	// person that a person refused, or that was risky: judged approve or
	// block then, or with a guard's finding at confirm or above that no
	// approved action the rule matches had.
	LetThrough []ReplayCase `json:"let_through"`
	// Held lists matched past actions that still need a person (or stay
	// blocked) with the rule: a hard guard's floor or an admin rule holds
	// them, which no user-layer rule lowers.
	Held []ReplayCase `json:"held"`
	// Tightened counts matched past actions the rule makes stricter.
	Tightened int `json:"tightened"`
}

// Safe reports whether the dry run found nothing the rule would wrongly let
// through.
func (r *ReplayReport) Safe() bool { return len(r.LetThrough) == 0 }

// Replay is the dry run of a user-layer rule over past actions: each one is
// judged again by the engine as it is now (admin layer, user layer, guards;
// no behaviour signals, which belonged to their moment), once without and
// once with rule read first in the user layer, and compared with what
// happened then. It changes nothing. The rule's examples are not checked
// here (see policy.CompileRules).
func (e *Engine) Replay(ctx context.Context, rule policy.Rule, past []PastAction) (*ReplayReport, error) {
	reps, err := e.ReplayAll(ctx, []policy.Rule{rule}, past)
	if err != nil {
		return nil, err
	}
	return reps[0], nil
}

// ReplayAll is Replay of several rules, each on its own, judging every past
// action without a rule only once.
func (e *Engine) ReplayAll(ctx context.Context, rules []policy.Rule, past []PastAction) ([]*ReplayReport, error) {
	compiled := make([]*policy.Compiled, len(rules))
	for i, r := range rules {
		c, err := policy.CompileRules(policy.LayerUser, []policy.Rule{r}, policy.Options{SkipExamples: true})
		if err != nil {
			return nil, fmt.Errorf("rule %q: %w", r.Name, err)
		}
		compiled[i] = c[0]
	}
	without := e.replayEngine(nil)
	withs := make([]*Engine, len(rules))
	reps := make([]*ReplayReport, len(rules))
	hits := make([][]replayHit, len(rules))
	accepted := make([]map[string]bool, len(rules))
	for i, r := range rules {
		withs[i] = e.replayEngine(compiled[i])
		reps[i] = &ReplayReport{Rule: r, Saved: []ReplayCase{}, LetThrough: []ReplayCase{}, Held: []ReplayCase{}}
		accepted[i] = map[string]bool{}
	}
	var since time.Time
	for j := range past {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		p := &past[j]
		if j == 0 || p.Time.Before(since) {
			since = p.Time
		}
		a := replayCopy(&p.Action)
		vWithout := without.Evaluate(ctx, a)
		for i, c := range compiled {
			ok, err := c.Matches(a)
			if err != nil || !ok {
				// A rule whose condition fails on an action does not match
				// it: the live engine fails closed there (approve), never
				// open.
				continue
			}
			vWith := withs[i].Evaluate(ctx, replayCopy(&p.Action))
			h := replayHit{p: p, then: p.Verdict.Level, wo: vWithout.Level, wi: vWith.Level}
			for _, r := range vWithout.Reasons {
				if r.Source == action.SourceGuard && r.Level >= action.Confirm {
					h.checks = append(h.checks, r)
				}
			}
			if p.Approved() {
				// Guard concerns a person already accepted: the checks at
				// confirm or above of the approved actions the rule matches.
				for _, r := range h.checks {
					accepted[i][r.Name] = true
				}
			}
			hits[i] = append(hits[i], h)
		}
	}
	for i, rep := range reps {
		rep.Examined, rep.Since = len(past), since
		rep.Matched = len(hits[i])
		for _, h := range hits[i] {
			h.report(rep, accepted[i])
		}
	}
	return reps, nil
}

// replayHit is a past action a rule matches, judged again.
type replayHit struct {
	p            *PastAction
	then, wo, wi action.Level
	checks       []action.Reason // the guards' findings at confirm or above, without the rule
}

func (m replayHit) report(rep *ReplayReport, accepted map[string]bool) {
	rc := ReplayCase{ActionID: m.p.Action.ID, Seq: m.p.Seq, Time: m.p.Time, Tool: m.p.Action.Tool,
		Summary: CallSummary(&m.p.Action, 160), Cwd: m.p.Action.Cwd, Then: m.then, Without: m.wo, With: m.wi,
		Answer: m.p.Answer, Who: m.p.Who}
	if m.wi > m.wo {
		rep.Tightened++
	}
	if !m.wi.RunsWithoutPerson() {
		if m.wi < m.wo || m.wo.NeedsPerson() || m.wo == action.Block {
			rep.Held = append(rep.Held, rc)
		}
		return
	}
	if m.p.Asked && m.wo.NeedsPerson() {
		rep.PromptsSaved++
		rep.Saved = append(rep.Saved, rc)
	}
	var why []string
	if m.p.Refused() {
		who := m.p.Who
		if who == "" {
			who = "a person"
		}
		why = append(why, fmt.Sprintf("refused by %s", who))
	}
	if m.then >= action.Approve {
		why = append(why, fmt.Sprintf("judged %s then", m.then))
	}
	if m.wo >= action.Approve {
		why = append(why, fmt.Sprintf("judged %s now without the rule", m.wo))
	}
	for _, r := range m.checks {
		if !accepted[r.Name] {
			why = append(why, fmt.Sprintf("%s (%s): %s", r.Name, r.Level, r.Message))
		}
	}
	if len(why) > 0 {
		rc.Why = strings.Join(slices.Compact(why), "; ")
		rep.LetThrough = append(rep.LetThrough, rc)
	}
}

// replayEngine is a copy of the engine for dry runs: the same policy and
// guards, no behaviour signals and no store, with first (when set) read
// before the user layer.
func (e *Engine) replayEngine(first *policy.Compiled) *Engine {
	r := &Engine{guards: e.guards, clock: e.clock, protected: e.protected}
	s := e.snap.Load()
	user := s.user
	if first != nil {
		user = append([]*policy.Compiled{first}, s.user...)
	}
	r.snap.Store(&snapshot{admin: s.admin, user: user, userVersion: s.userVersion, userErr: s.userErr})
	return r
}

// replayCopy is a fresh copy of a recorded action to judge again: its
// derived facts are derived anew.
func replayCopy(a *action.Action) *action.Action {
	cp := *a
	cp.Facts = action.Facts{}
	return &cp
}

// CallSummary is a one-line account of a call for a person: the tool and
// its main argument, clipped to n runes.
func CallSummary(a *action.Action, n int) string {
	s := a.Tool
	if v, ok := a.StringArg("command", "cmd", "file_path", "path", "url", "query", "sql"); ok {
		s += " " + strings.Join(strings.Fields(v), " ")
	} else if len(a.Args) > 0 {
		keys := make([]string, 0, len(a.Args))
		for k := range a.Args {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		s += " {" + strings.Join(keys, ", ") + "}"
	}
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
