// Package grant is delegated mode (seed 000): a person — or a parent agent
// within its own grant — lets an agent or sub-agent act without asking,
// inside an allow-list of tools and kinds with argument constraints, a
// budget of steps, tokens, cost and wall time, and an expiry. At the
// grant's edge (a call outside the list, a budget spent, the expiry, a
// revocation) the agent's calls are put to a person again.
//
// The package is pure: it holds the model, its validation, the nesting
// rule (a child never exceeds its parent) and the judgement of one action
// against the grants of its subject. Storing grants (as audit records),
// counting their use and wiring them into the firewall is the kernel's.
package grant

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Subject is who a grant is for. The fields are what the entry point
// reports of the caller: Claude Code's hooks carry the sub-agent's id and
// type (agent_id, agent_type) beside the session; Codex and Gemini CLI
// only the session; the MCP gateway the client and its session; the own
// loop the task's session.
type Subject struct {
	// Agent is the agent program ("claude-code", "codex", "overseer", an
	// MCP client's name). Required.
	Agent string `json:"agent"`
	// Session is the agent's session; empty: any session of Agent.
	Session string `json:"session,omitempty"`
	// SubagentType selects sub-agents by type: empty means the main agent
	// only (calls without a sub-agent), "*" any sub-agent, otherwise
	// sub-agents of exactly this type.
	SubagentType string `json:"subagent_type,omitempty"`
	// SubagentID narrows to one sub-agent; empty: any (of SubagentType).
	SubagentID string `json:"subagent_id,omitempty"`
}

// Matches reports whether a's caller is the subject.
func (s Subject) Matches(a *action.Action) bool {
	if s.Agent == "" || a.Agent != s.Agent {
		return false
	}
	if s.Session != "" && a.Session != s.Session {
		return false
	}
	switch s.SubagentType {
	case "":
		if a.SubagentID != "" || a.SubagentType != "" {
			return false
		}
	case "*":
		if a.SubagentID == "" && a.SubagentType == "" {
			return false
		}
	default:
		if a.SubagentType != s.SubagentType {
			return false
		}
	}
	return s.SubagentID == "" || a.SubagentID == s.SubagentID
}

// within reports whether every caller of s is a caller of p.
func (s Subject) within(p Subject) bool {
	if s.Agent != p.Agent {
		return false
	}
	if p.Session != "" && s.Session != p.Session {
		return false
	}
	switch p.SubagentType {
	case "":
		if s.SubagentType != "" {
			return false
		}
	case "*":
		if s.SubagentType == "" {
			return false
		}
	default:
		if s.SubagentType != p.SubagentType {
			return false
		}
	}
	return p.SubagentID == "" || s.SubagentID == p.SubagentID
}

func (s Subject) String() string {
	var b strings.Builder
	b.WriteString(s.Agent)
	if s.Session != "" {
		b.WriteString(" session " + s.Session)
	}
	switch s.SubagentType {
	case "":
		b.WriteString(" (main agent)")
	case "*":
		b.WriteString(" sub-agents")
	default:
		b.WriteString(" sub-agents of type " + s.SubagentType)
	}
	if s.SubagentID != "" {
		b.WriteString(" id " + s.SubagentID)
	}
	return b.String()
}

// Permit is one entry of a grant's allow-list. A call is inside it when
// every condition set holds; an empty condition does not restrict.
type Permit struct {
	// Tools are tool names as the agent spells them, or globs ("mcp__fs__*").
	Tools []string `json:"tools,omitempty"`
	// Kinds are canonical kinds (file_read, shell, …).
	Kinds []action.Kind `json:"kinds,omitempty"`
	// Under are directories (absolute): every path the call touches must
	// lie under one of them.
	Under []string `json:"under,omitempty"`
	// ReadOnly: the call may only read (no path written, deleted or handed
	// to a program of unknown effect, no SQL other than reads).
	ReadOnly bool `json:"read_only,omitempty"`
	// Hosts are the hosts the call may reach; a call with a URL needs its
	// host listed (with no Hosts, a call with a URL is outside).
	Hosts []string `json:"hosts,omitempty"`
}

// Budget limits a grant's use; a zero field does not limit. Tokens and
// cost are counted where the entry point reports them (the own loop).
type Budget struct {
	Steps    int64    `json:"steps,omitempty"`
	Tokens   int64    `json:"tokens,omitempty"`
	CostUSD  float64  `json:"cost_usd,omitempty"`
	WallTime Duration `json:"wall_time,omitempty"` // from the grant's first use
}

// Duration is a time.Duration written as text ("30m") in JSON.
type Duration time.Duration

// MarshalText writes the duration as "1h30m0s".
func (d Duration) MarshalText() ([]byte, error) { return []byte(time.Duration(d).String()), nil }

// UnmarshalText reads a duration ("30m", "2h").
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := time.ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// Spec is what an issuer asks for.
type Spec struct {
	Subject Subject   `json:"subject"`
	Allow   []Permit  `json:"allow"`
	Budget  Budget    `json:"budget"`
	Expires time.Time `json:"expires"`
	// Parent is the grant this one is carved out of; empty for a person's
	// own grant.
	Parent string `json:"parent,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Grant is an issued grant.
type Grant struct {
	ID string `json:"id"`
	Spec
	IssuedBy string    `json:"issued_by"`
	Channel  string    `json:"channel,omitempty"`
	IssuedAt time.Time `json:"issued_at"`
	// Revoked is set once the grant is revoked.
	Revoked *Revocation `json:"revoked,omitempty"`
}

// Revocation says who revoked a grant, when and why.
type Revocation struct {
	By      string    `json:"by"`
	Channel string    `json:"channel,omitempty"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason,omitempty"`
}

// Usage is what a grant has used so far.
type Usage struct {
	Steps   int64     `json:"steps"`
	Tokens  int64     `json:"tokens"`
	CostUSD float64   `json:"cost_usd"`
	First   time.Time `json:"first,omitzero"`
}

// Limits on what a spec may ask for.
const (
	// MaxLife is the longest a grant may run: delegation is for a task,
	// not a standing permission.
	MaxLife = 7 * 24 * time.Hour
	// Remembered is how long after its end (expiry or revocation) a grant
	// still holds its subject at the edge: the subject's calls are put to
	// a person instead of falling back to what the policy alone allows.
	Remembered = 24 * time.Hour
	maxPermits = 64
	maxList    = 64
)

// Sentinel errors callers branch on.
var (
	ErrInvalid  = errors.New("grant: invalid")
	ErrExceeds  = errors.New("grant: exceeds its parent")
	ErrNotFound = errors.New("grant: not found")
	ErrInactive = errors.New("grant: not active")
)

// Validate checks a spec at time now and cleans its paths.
func (s *Spec) Validate(now time.Time) error {
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(f, args...)) }
	if strings.TrimSpace(s.Subject.Agent) == "" {
		return bad("the subject needs an agent")
	}
	if strings.ContainsAny(s.Subject.Agent+s.Subject.Session+s.Subject.SubagentID, "*?[") {
		return bad("agent, session and sub-agent id are exact names, not patterns")
	}
	if s.Subject.SubagentType != "*" && strings.ContainsAny(s.Subject.SubagentType, "*?[") {
		return bad("sub-agent type is an exact name or *")
	}
	if s.Subject.SubagentID != "" && s.Subject.SubagentType == "" {
		return bad("a sub-agent id needs a sub-agent type (or *)")
	}
	if len(s.Allow) == 0 {
		return bad("the allow-list is empty")
	}
	if len(s.Allow) > maxPermits {
		return bad("more than %d permits", maxPermits)
	}
	for i := range s.Allow {
		p := &s.Allow[i]
		if len(p.Tools)+len(p.Kinds) == 0 {
			return bad("permit %d names neither tools nor kinds", i+1)
		}
		if len(p.Tools) > maxList || len(p.Kinds) > maxList || len(p.Under) > maxList || len(p.Hosts) > maxList {
			return bad("permit %d has more than %d entries in a list", i+1, maxList)
		}
		for _, t := range p.Tools {
			if t == "" {
				return bad("permit %d: empty tool name", i+1)
			}
			if _, err := path.Match(t, ""); err != nil {
				return bad("permit %d: tool pattern %q: %v", i+1, t, err)
			}
		}
		for _, k := range p.Kinds {
			if !k.Valid() {
				return bad("permit %d: unknown kind %q", i+1, k)
			}
		}
		for j, d := range p.Under {
			if !filepath.IsAbs(d) {
				return bad("permit %d: %q is not an absolute directory", i+1, d)
			}
			p.Under[j] = filepath.Clean(d)
		}
		for j, h := range p.Hosts {
			h = strings.ToLower(strings.TrimSpace(h))
			if h == "" || strings.ContainsAny(h, "/*?[ ") {
				return bad("permit %d: host %q is not a host name", i+1, p.Hosts[j])
			}
			p.Hosts[j] = h
		}
	}
	b := s.Budget
	if b.Steps < 0 || b.Tokens < 0 || b.CostUSD < 0 || b.WallTime < 0 || b.CostUSD != b.CostUSD {
		return bad("a budget is negative")
	}
	if s.Expires.IsZero() {
		return bad("a grant needs an expiry")
	}
	if !s.Expires.After(now) {
		return bad("the expiry %s has passed", s.Expires.Format(time.RFC3339))
	}
	if s.Expires.Sub(now) > MaxLife {
		return bad("a grant may run for at most %s", MaxLife)
	}
	return nil
}

// Within checks that child (a spec) never exceeds parent: its subject is
// among the parent's, every permit of it lies inside a permit of the
// parent, its budgets are within what the parent has left (used: the
// parent's usage), and it expires no later.
func Within(child *Spec, parent *Grant, used Usage) error {
	exceeds := func(f string, args ...any) error {
		return fmt.Errorf("%w %s: %s", ErrExceeds, parent.ID, fmt.Sprintf(f, args...))
	}
	if !child.Subject.within(parent.Subject) {
		return exceeds("the subject %s is not among the parent's (%s)", child.Subject, parent.Subject)
	}
	for i, cp := range child.Allow {
		if !slices.ContainsFunc(parent.Allow, func(pp Permit) bool { return cp.inside(pp) }) {
			return exceeds("permit %d is not inside any of the parent's permits", i+1)
		}
	}
	if child.Expires.After(parent.Expires) {
		return exceeds("it would expire after the parent (%s)", parent.Expires.Format(time.RFC3339))
	}
	pb, cb := parent.Budget, child.Budget
	left := func(limit, use int64, want int64, what string) error {
		if limit == 0 {
			return nil
		}
		if want == 0 || want > limit-use {
			return exceeds("%s: the parent has %d left, the child asks for %s", what, max(limit-use, 0), unlimited(want))
		}
		return nil
	}
	if err := left(pb.Steps, used.Steps, cb.Steps, "steps"); err != nil {
		return err
	}
	if err := left(pb.Tokens, used.Tokens, cb.Tokens, "tokens"); err != nil {
		return err
	}
	if pb.CostUSD > 0 && (cb.CostUSD == 0 || cb.CostUSD > pb.CostUSD-used.CostUSD) {
		return exceeds("cost: the parent has $%.4f left", max(pb.CostUSD-used.CostUSD, 0))
	}
	if pb.WallTime > 0 && (cb.WallTime == 0 || cb.WallTime > pb.WallTime) {
		return exceeds("wall time: the parent allows %s", time.Duration(pb.WallTime))
	}
	return nil
}

// SubTaskType is the sub-agent type of Overseer's own loop's sub-tasks:
// a task's sub-task acts as agent "overseer" in its parent's session with
// this type and its own id (Action.SubagentType, SubagentID).
const SubTaskType = "subtask"

// WithinAsSubTask is Within for a grant the holder of parent carves out
// for one of its own sub-tasks (the own loop): the child's subject is one
// sub-task — agent the parent's, session the parent's (or, for a parent
// of any session, one session), type SubTaskType, one id — of a parent
// that is for a main agent; everything else (permits, budgets left,
// expiry) must lie within the parent as for Within. The parent's own
// calls never match the child, so a sub-task's call outside the child is
// at the child's edge (a person decides), not inside the parent.
func WithinAsSubTask(child *Spec, parent *Grant, used Usage) error {
	s, p := child.Subject, parent.Subject
	switch {
	case p.SubagentType != "" || p.SubagentID != "":
		return fmt.Errorf("%w %s: a sub-task's grant is carved out of a main agent's grant only", ErrExceeds, parent.ID)
	case s.Agent != p.Agent || s.SubagentType != SubTaskType || s.SubagentID == "" || s.Session == "" ||
		(p.Session != "" && s.Session != p.Session):
		return fmt.Errorf("%w %s: the subject %s is not a sub-task of the parent's (%s)", ErrExceeds, parent.ID, s, p)
	}
	c := *child
	c.Subject = Subject{Agent: p.Agent, Session: s.Session}
	return Within(&c, parent, used)
}

func unlimited(n int64) string {
	if n == 0 {
		return "no limit"
	}
	return fmt.Sprint(n)
}

// inside reports whether every call inside c is inside p.
func (c Permit) inside(p Permit) bool {
	if len(p.Tools) > 0 {
		if len(c.Tools) == 0 {
			return false
		}
		for _, t := range c.Tools {
			if !slices.ContainsFunc(p.Tools, func(q string) bool { return patternCovers(q, t) }) {
				return false
			}
		}
	}
	if len(p.Kinds) > 0 {
		if len(c.Kinds) == 0 {
			return false
		}
		for _, k := range c.Kinds {
			if !slices.Contains(p.Kinds, k) {
				return false
			}
		}
	}
	if len(p.Under) > 0 {
		if len(c.Under) == 0 {
			return false
		}
		for _, d := range c.Under {
			if !slices.ContainsFunc(p.Under, func(pd string) bool { return action.Within(pd, d) }) {
				return false
			}
		}
	}
	if p.ReadOnly && !c.ReadOnly {
		return false
	}
	for _, h := range c.Hosts {
		if !slices.Contains(p.Hosts, h) {
			return false
		}
	}
	return true
}

// patternCovers reports whether every name matching the child pattern c
// matches the parent pattern q. Only what is certain counts: the same
// pattern, the parent's "*", or a literal child name the parent matches.
func patternCovers(q, c string) bool {
	if q == "*" || q == c {
		return true
	}
	if strings.ContainsAny(c, `*?[\`) {
		return false
	}
	ok, err := path.Match(q, c)
	return err == nil && ok
}
