package kernel

// Delegated mode: grants (package grant) kept in the audit log.
//
// A grant is not a table beside the log: issuing one appends a `grant`
// record holding the whole grant, revoking one appends a `grant` record
// naming it. The records are hash-chained and sealed like every other, so
// a grant cannot be widened or a revocation undone without breaking the
// chain; every process sharing the database reads the same grants (a
// revocation by the CLI takes effect on the daemon's next call). What is
// counted of a grant's use lives in the state store (namespace
// grant_use): a lost count can only shorten a grant, never lengthen it —
// a count that cannot be read makes the grant unusable (fail closed).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/grant"
	"github.com/overseer-dev/overseer/internal/store"
)

// TypeGrant is the audit record type of a grant's issue and revocation.
const TypeGrant = "grant"

// grantUseNS is the state namespace of grants' usage counters.
const grantUseNS = "grant_use"

// Grant re-exports the grant types for front ends.
type (
	Grant      = grant.Grant
	GrantSpec  = grant.Spec
	GrantUsage = grant.Usage
)

// GrantView is a grant as front ends list it: with its use and whether it
// can be used now.
type GrantView struct {
	grant.Grant
	Usage grant.Usage `json:"usage"`
	// Active is true when the grant can be used now; otherwise Why says
	// why not.
	Active bool   `json:"active"`
	Why    string `json:"why,omitempty"`
}

// grantRecord is the data of a TypeGrant audit record.
type grantRecord struct {
	Op      string            `json:"op"` // issue, revoke
	Grant   *grant.Grant      `json:"grant,omitempty"`
	ID      string            `json:"id"`
	Revoked *grant.Revocation `json:"revoked,omitempty"`
}

// grantBook is the kernel's view of the grants in the audit log: it reads
// the records appended since it last looked.
type grantBook struct {
	mu      sync.Mutex
	seq     int64
	grants  map[string]*grant.Grant
	order   []string        // issue order
	forged  map[string]bool // issues without an instance's signature: not in force
	checked time.Time       // when the log was last read (monotonic)
}

// grantRecheck is how long a caller that holds no grant is judged by the
// book as last read: a grant issued to it by another process meanwhile is
// missed for that long (which only puts its calls to a person). A caller
// that holds a grant always has the log read again, so a revocation takes
// effect on its next call.
const grantRecheck = time.Second

// refresh reads the grant records appended since the last look. An issue
// that signed (see signing.go) does not vouch for is not in force: only an
// instance writes one that does.
func (b *grantBook) refresh(ctx context.Context, st store.AuditStore, signed func(store.AuditRecord) bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.checked = time.Now()
	recs, err := st.QueryAudit(ctx, store.AuditQuery{AfterSeq: b.seq, Types: []string{TypeGrant}})
	if err != nil {
		return fmt.Errorf("reading grants: %w", err)
	}
	if b.grants == nil {
		b.grants = map[string]*grant.Grant{}
	}
	for _, r := range recs {
		var gr grantRecord
		if err := json.Unmarshal(r.Data, &gr); err != nil {
			return fmt.Errorf("grant record %d: %w", r.Seq, err)
		}
		switch gr.Op {
		case "issue":
			if gr.Grant == nil || gr.Grant.ID == "" || b.grants[gr.Grant.ID] != nil || b.forged[gr.Grant.ID] {
				return fmt.Errorf("grant record %d: malformed or duplicate issue", r.Seq)
			}
			if !signed(r) {
				if b.forged == nil {
					b.forged = map[string]bool{}
				}
				b.forged[gr.Grant.ID] = true
				b.seq = r.Seq
				continue
			}
			g := *gr.Grant
			g.Revoked = nil
			b.grants[g.ID] = &g
			b.order = append(b.order, g.ID)
		case "revoke":
			g := b.grants[gr.ID]
			if g == nil && b.forged[gr.ID] {
				b.seq = r.Seq
				continue // never in force
			}
			if g == nil || gr.Revoked == nil {
				return fmt.Errorf("grant record %d: revocation of unknown grant %q", r.Seq, gr.ID)
			}
			if g.Revoked == nil {
				rv := *gr.Revoked
				c := *g
				c.Revoked = &rv
				b.grants[gr.ID] = &c
			}
		default:
			return fmt.Errorf("grant record %d: unknown op %q", r.Seq, gr.Op)
		}
		b.seq = r.Seq
	}
	return nil
}

// fresh reports whether the book was read within grantRecheck.
func (b *grantBook) fresh() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.checked.IsZero() && time.Since(b.checked) < grantRecheck
}

// holds reports whether any grant of the book that still has an effect
// at now is a's caller's.
func (b *grantBook) holds(a *action.Action, now time.Time) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, g := range b.grants {
		if g.Subject.Matches(a) && !grant.Forgotten(g, now) {
			return true
		}
	}
	return false
}

// snapshot returns the grants (shared, read-only) in issue order.
func (b *grantBook) snapshot() []*grant.Grant {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*grant.Grant, 0, len(b.order))
	for _, id := range b.order {
		out = append(out, b.grants[id])
	}
	return out
}

func (b *grantBook) get(id string) *grant.Grant {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.grants[id]
}

// grantSource is what the engine reads (firewall.Grants).
type grantSource struct{ k *Kernel }

// GrantsFor implements firewall.Grants: the grants whose subject is a's
// caller, newest first, with their use and their ancestors'.
func (s grantSource) GrantsFor(ctx context.Context, a *action.Action) ([]grant.State, error) {
	k := s.k
	if !k.grants.fresh() || k.grants.holds(a, k.Clock.Now()) {
		if err := k.grants.refresh(ctx, k.raw, k.signedRecord); err != nil {
			return nil, err
		}
	}
	all := k.grants.snapshot()
	var out []grant.State
	for i := len(all) - 1; i >= 0; i-- {
		g := all[i]
		if !g.Subject.Matches(a) {
			continue
		}
		st, err := k.grantState(ctx, g)
		if err != nil {
			return nil, err
		}
		out = append(out, st)
	}
	return out, nil
}

// grantState reads g's use and its ancestors'.
func (k *Kernel) grantState(ctx context.Context, g *grant.Grant) (grant.State, error) {
	u, err := k.grantUsage(ctx, g.ID)
	if err != nil {
		return grant.State{}, err
	}
	st := grant.State{Grant: g, Usage: u}
	seen := map[string]bool{g.ID: true}
	for p := g.Parent; p != ""; {
		pg := k.grants.get(p)
		if pg == nil || seen[p] {
			return grant.State{}, fmt.Errorf("grant %s: parent %s is unknown", g.ID, p)
		}
		seen[p] = true
		pu, err := k.grantUsage(ctx, p)
		if err != nil {
			return grant.State{}, err
		}
		st.Ancestors = append(st.Ancestors, grant.State{Grant: pg, Usage: pu})
		p = pg.Parent
	}
	return st, nil
}

func (k *Kernel) grantUsage(ctx context.Context, id string) (grant.Usage, error) {
	var u grant.Usage
	b, err := k.raw.GetState(ctx, grantUseNS, id)
	if errors.Is(err, store.ErrNotFound) {
		return u, nil
	}
	if err != nil {
		return u, fmt.Errorf("reading the use of grant %s: %w", id, err)
	}
	if err := json.Unmarshal(b, &u); err != nil {
		return u, fmt.Errorf("the use of grant %s: %w", id, err)
	}
	return u, nil
}

// IssueGrant issues a grant on a person's word (who, through channel). A
// spec with a Parent must lie within that grant (see grant.Within).
func (k *Kernel) IssueGrant(ctx context.Context, spec GrantSpec, who, channel string) (*Grant, error) {
	if who == "" {
		return nil, fmt.Errorf("%w: a grant needs the name of who issues it", grant.ErrInvalid)
	}
	return k.issueGrant(ctx, spec, who, channel, false)
}

// IssueChildGrant issues a grant carved out of parent on behalf of the
// agent that holds parent (Overseer's own loop giving a sub-task part of
// its task's grant): the child must lie within the parent, which must be
// active.
//
// A spec whose subject is a sub-task (sub-agent type grant.SubTaskType) is
// carved for one of the holder's own sub-tasks: see grant.WithinAsSubTask.
func (k *Kernel) IssueChildGrant(ctx context.Context, parent string, spec GrantSpec) (*Grant, error) {
	spec.Parent = parent
	if parent == "" {
		return nil, fmt.Errorf("%w: a child grant needs its parent", grant.ErrInvalid)
	}
	return k.issueGrant(ctx, spec, "grant:"+parent, "agent", spec.Subject.SubagentType == grant.SubTaskType)
}

// ActiveGrantOf returns the newest grant of a's caller that can be used
// now, and its use; nil when it holds none.
func (k *Kernel) ActiveGrantOf(ctx context.Context, a *action.Action) (*Grant, GrantUsage, error) {
	states, err := grantSource{k}.GrantsFor(ctx, a)
	if err != nil {
		return nil, GrantUsage{}, err
	}
	now := k.Clock.Now()
	for i := range states {
		st := &states[i]
		if grant.Active(st.Grant, st.Usage, now) != "" {
			continue
		}
		usable := true
		for _, an := range st.Ancestors {
			usable = usable && grant.Active(an.Grant, an.Usage, now) == ""
		}
		if usable {
			return st.Grant, st.Usage, nil
		}
	}
	return nil, GrantUsage{}, nil
}

func (k *Kernel) issueGrant(ctx context.Context, spec GrantSpec, who, channel string, subTask bool) (*Grant, error) {
	now := k.Clock.Now()
	if err := spec.Validate(now); err != nil {
		return nil, err
	}
	if spec.Parent != "" {
		if err := k.grants.refresh(ctx, k.raw, k.signedRecord); err != nil {
			return nil, err
		}
		p := k.grants.get(spec.Parent)
		if p == nil {
			return nil, fmt.Errorf("%w: parent %s", grant.ErrNotFound, spec.Parent)
		}
		st, err := k.grantState(ctx, p)
		if err != nil {
			return nil, err
		}
		if why := grant.Active(p, st.Usage, now); why != "" {
			return nil, fmt.Errorf("%w: %s", grant.ErrInactive, why)
		}
		for _, an := range st.Ancestors {
			if why := grant.Active(an.Grant, an.Usage, now); why != "" {
				return nil, fmt.Errorf("%w: %s", grant.ErrInactive, why)
			}
		}
		within := grant.Within
		if subTask {
			within = grant.WithinAsSubTask
		}
		if err := within(&spec, p, st.Usage); err != nil {
			return nil, err
		}
	}
	g := &grant.Grant{ID: NewID("grt_"), Spec: spec, IssuedBy: who, Channel: channel, IssuedAt: now}
	rec := grantRecord{Op: "issue", Grant: g, ID: g.ID}
	data, err := k.signedData(TypeGrant, rec)
	if err != nil {
		return nil, fmt.Errorf("signing the grant: %w", err)
	}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: TypeGrant, Agent: spec.Subject.Agent, Session: spec.Subject.Session,
		Data: data, Seal: true}); err != nil {
		return nil, fmt.Errorf("recording the grant: %w", err)
	}
	if err := k.grants.refresh(ctx, k.raw, k.signedRecord); err != nil {
		return nil, err
	}
	return g, nil
}

// RevokeGrant revokes a grant and every grant carved out of it, at once:
// the next call of their subjects is judged without them (and put to a
// person). Revoking a revoked grant changes nothing.
func (k *Kernel) RevokeGrant(ctx context.Context, id, who, channel, reason string) (*Grant, error) {
	if who == "" {
		return nil, fmt.Errorf("%w: a revocation needs the name of who revokes", grant.ErrInvalid)
	}
	if err := k.grants.refresh(ctx, k.raw, k.signedRecord); err != nil {
		return nil, err
	}
	g := k.grants.get(id)
	if g == nil {
		return nil, fmt.Errorf("%w: %s", grant.ErrNotFound, id)
	}
	// The grant and its descendants, parents first.
	ids := []string{id}
	all := k.grants.snapshot()
	for i := 0; i < len(ids); i++ {
		for _, c := range all {
			if c.Parent == ids[i] {
				ids = append(ids, c.ID)
			}
		}
	}
	now := k.Clock.Now()
	var entries []audit.Entry
	for _, gid := range ids {
		cur := k.grants.get(gid)
		if cur.Revoked != nil {
			continue
		}
		why := reason
		if gid != id {
			why = fmt.Sprintf("its parent %s was revoked", id)
		}
		rv := grant.Revocation{By: who, Channel: channel, At: now, Reason: why}
		entries = append(entries, audit.Entry{Type: TypeGrant, Agent: cur.Subject.Agent, Session: cur.Subject.Session,
			Data: grantRecord{Op: "revoke", ID: gid, Revoked: &rv}, Seal: true})
	}
	if len(entries) > 0 {
		if _, err := k.Audit.AppendAll(ctx, entries...); err != nil {
			return nil, fmt.Errorf("recording the revocation: %w", err)
		}
		if err := k.grants.refresh(ctx, k.raw, k.signedRecord); err != nil {
			return nil, err
		}
	}
	return k.grants.get(id), nil
}

// ListGrants returns every grant (newest first) with its use; with
// activeOnly, only those usable now.
func (k *Kernel) ListGrants(ctx context.Context, activeOnly bool) ([]GrantView, error) {
	if err := k.grants.refresh(ctx, k.raw, k.signedRecord); err != nil {
		return nil, err
	}
	all := k.grants.snapshot()
	now := k.Clock.Now()
	out := []GrantView{}
	for i := len(all) - 1; i >= 0; i-- {
		st, err := k.grantState(ctx, all[i])
		if err != nil {
			return nil, err
		}
		v := GrantView{Grant: *all[i], Usage: st.Usage}
		v.Why = grant.Active(all[i], st.Usage, now)
		for _, an := range st.Ancestors {
			if v.Why == "" {
				if w := grant.Active(an.Grant, an.Usage, now); w != "" {
					v.Why = "its parent " + w
				}
			}
		}
		v.Active = v.Why == ""
		if activeOnly && !v.Active {
			continue
		}
		out = append(out, v)
	}
	return out, nil
}

// GetGrant returns one grant with its use.
func (k *Kernel) GetGrant(ctx context.Context, id string) (*GrantView, error) {
	list, err := k.ListGrants(ctx, false)
	if err != nil {
		return nil, err
	}
	for i := range list {
		if list[i].ID == id {
			return &list[i], nil
		}
	}
	return nil, fmt.Errorf("%w: %s", grant.ErrNotFound, id)
}

// ChargeCaller charges tokens and cost to the grant a's caller acts under
// now (the newest active grant of its subject), if any.
func (k *Kernel) ChargeCaller(ctx context.Context, a *action.Action, tokens int64, costUSD float64) error {
	if tokens == 0 && costUSD == 0 {
		return nil
	}
	states, err := grantSource{k}.GrantsFor(ctx, a)
	if err != nil {
		return err
	}
	now := k.Clock.Now()
	for i := range states {
		st := &states[i]
		if grant.Active(st.Grant, st.Usage, now) == "" {
			return k.ChargeGrant(ctx, st.Grant.ID, tokens, costUSD)
		}
	}
	return nil
}

// errSpent is returned inside UpdateState when a budget is spent.
var errSpent = errors.New("grant budget spent")

// ChargeGrant adds tokens and cost to a grant's use and its ancestors'
// (the own loop reports what a model call under the grant used).
func (k *Kernel) ChargeGrant(ctx context.Context, id string, tokens int64, costUSD float64) error {
	return k.chargeChain(ctx, id, grant.Usage{Tokens: tokens, CostUSD: costUSD}, false)
}

// consumeStep takes one step of the grant that let v's action run (and
// of its ancestors). It reports false when a budget turned out to be
// spent (another call took the last step first): then the action must be
// judged again.
func (k *Kernel) consumeStep(ctx context.Context, v *action.Verdict) (bool, error) {
	id := firewall.InsideGrant(v)
	if id == "" {
		return true, nil
	}
	err := k.chargeChain(ctx, id, grant.Usage{Steps: 1}, true)
	if errors.Is(err, errSpent) {
		return false, nil
	}
	return err == nil, err
}

// chargeChain adds d to the use of id and its ancestors; with strict, a
// step that would exceed a step budget is refused (errSpent).
func (k *Kernel) chargeChain(ctx context.Context, id string, d grant.Usage, strict bool) error {
	ids := []string{id}
	for g := k.grants.get(id); g != nil && g.Parent != "" && len(ids) < 64; g = k.grants.get(g.Parent) {
		ids = append(ids, g.Parent)
	}
	now := k.Clock.Now()
	for _, gid := range ids {
		g := k.grants.get(gid)
		if g == nil {
			return fmt.Errorf("%w: %s", grant.ErrNotFound, gid)
		}
		err := k.raw.UpdateState(ctx, grantUseNS, gid, func(old []byte) ([]byte, error) {
			var u grant.Usage
			if old != nil {
				if err := json.Unmarshal(old, &u); err != nil {
					return nil, err
				}
			}
			if strict && g.Budget.Steps > 0 && u.Steps+d.Steps > g.Budget.Steps {
				return nil, errSpent
			}
			u.Steps += d.Steps
			u.Tokens += d.Tokens
			u.CostUSD += d.CostUSD
			if u.First.IsZero() {
				u.First = now
			}
			return json.Marshal(u)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
