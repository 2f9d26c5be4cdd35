package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/firewall"
	"github.com/overseer-dev/overseer/internal/store"
)

// The hybrid controls of unattended hours (seed 003, parts 3 and 4): the
// auto-rules and anomaly rules, kept in the state store, every change an
// audit record. The engine checks a call against their compiled Set in
// memory; the counters the triggers read are fed from the audit trail, so
// they count every process's calls; what follows a firing (the rule log, a
// hold, pausing the agent, an anomaly's rollback, notices) is done here
// once the verdict is recorded.

// State store namespaces of the controls.
const (
	AutoRuleNS     = "auto_rules"
	AnomalyRuleNS  = "anomaly_rules"
	AnomalyEventNS = "anomaly_events"
)

// Audit record types of the controls.
const (
	TypeAutoRuleChange    = "auto_rule_change"
	TypeAnomalyRuleChange = "anomaly_rule_change"
	// TypeAutoRule is an auto-rule that fired (the rule log).
	TypeAutoRule        = "auto_rule"
	TypeAnomalyDetected = "anomaly_detected"
	TypeRolledBack      = "rolled_back"
)

// ErrControls is wrapped by refusals of the controls' operations that are
// the caller's fault (unknown template, a rollback with nothing to undo).
var ErrControls = errors.New("controls")

// controlState is the kernel's side of firewall.Controls.
type controlState struct {
	k        *Kernel
	set      atomic.Pointer[autorule.Set]
	err      atomic.Pointer[error] // the rules could not be loaded: fail closed
	counters atomic.Pointer[autorule.Counters]
	holds    *autorule.Holds
	syncMu   sync.Mutex // one feed at a time; guards fed
	warmed   atomic.Bool
	// Feeds are numbered as they start; fed is the number of the last
	// one that completed (rules reloaded if it said so). A sync is done
	// by any feed that started after the sync was called.
	started atomic.Uint64
	fed     uint64
	// others is the store's OthersVersion when the last feed without
	// rules read the rule changes (othersOK: it did, and nothing was read
	// since with rules), at othersAt; under syncMu.
	others   int64
	othersOK bool
	othersAt time.Time

	baseMu sync.Mutex
	base   map[string]baselineEntry
}

type baselineEntry struct {
	avg float64
	at  time.Time
}

var _ firewall.Controls = (*controlState)(nil)

func newControls(k *Kernel) *controlState {
	c := &controlState{k: k, holds: autorule.NewHolds(), base: map[string]baselineEntry{}}
	c.set.Store(&autorule.Set{})
	c.counters.Store(autorule.NewCounters(time.Hour))
	return c
}

// Check is firewall.Controls: memory only.
func (c *controlState) Check(a *action.Action, now time.Time) ([]autorule.Finding, error) {
	if e := c.err.Load(); e != nil {
		return nil, *e
	}
	s := c.set.Load()
	if s.Empty() {
		return nil, nil
	}
	return s.Check(a, autorule.Env{Now: now, Counters: c.counters.Load(), Spend: c.k.usage.counter, Holds: c.holds, Baseline: c.baseline}), nil
}

// load reads and compiles the rules. On failure the previous set stays
// and every call is put to a person until a load succeeds.
func (c *controlState) load(ctx context.Context) error {
	rules, err := c.k.listAutoRules(ctx)
	var anomalies []autorule.AnomalyRule
	if err == nil {
		anomalies, err = c.k.listAnomalyRules(ctx)
	}
	var set *autorule.Set
	if err == nil {
		set, err = autorule.Compile(rules, anomalies)
	}
	if err != nil {
		err = fmt.Errorf("loading the auto-rules and anomaly rules: %w", err)
		c.err.Store(&err)
		return err
	}
	old := c.set.Swap(set)
	c.err.Store(nil)
	keep := max(set.MaxWindow(), time.Hour)
	if old == nil || old.Empty() && !set.Empty() || keep > c.counters.Load().Keep() {
		// Counting starts (or reaches further back): read the trail again.
		c.syncMu.Lock()
		c.counters.Store(autorule.NewCounters(keep))
		c.warmed.Store(false)
		c.fed = 0 // no earlier feed serves a sync any more
		c.syncMu.Unlock()
	}
	return nil
}

// sync feeds the counters and holds from the audit records written since
// the last feed (by any process), and reloads the rules when a record says
// they changed.
//
// Concurrent calls share feeds: a call is done by any feed that started
// after it was called (that feed read everything written before), so the
// calls that wait while one feed runs are all served by the next.
func (c *controlState) sync(ctx context.Context) error {
	called := c.started.Load()
	c.syncMu.Lock()
	if c.fed > called {
		c.syncMu.Unlock()
		return nil
	}
	n := c.started.Add(1)
	reload, err := c.feed(ctx)
	c.syncMu.Unlock()
	if err == nil && reload {
		err = c.load(ctx)
	}
	if err == nil {
		c.syncMu.Lock()
		c.fed = max(c.fed, n)
		c.syncMu.Unlock()
	}
	return err
}

// feed is sync's reading of the trail (under syncMu); it reports whether
// the rules changed.
func (c *controlState) feed(ctx context.Context) (bool, error) {
	now := c.k.Clock.Now()
	feedTypes := []string{audit.TypeAction, audit.TypeResult}
	holdTypes := []string{TypeAutoRule, TypeAnomalyDetected}
	changeTypes := []string{TypeAutoRuleChange, TypeAnomalyRuleChange}
	var recs []store.AuditRecord
	if c.warmed.Load() {
		types := append(append(feedTypes, holdTypes...), changeTypes...)
		qctx := ctx
		empty := c.set.Load().Empty()
		if empty {
			// Nothing counts and nothing is held: only a change of the
			// rules matters, and reading just those (usually none, from
			// the type index) keeps the sync before every call cheap; so
			// short a read is not worth the watch a cancellable one costs.
			// Counting starts when rules are loaded (load reads the
			// windows back).
			types, qctx = changeTypes, context.WithoutCancel(ctx)
		}
		// Without rules, and with nothing written by another process since
		// the last read of the rule changes, there is nothing to read: the
		// changes this process makes are loaded as it makes them
		// (controlChanged). The version is read before the query, so that
		// a change committed while it runs is read by the next feed.
		// The changes are read at least every othersMaxAge all the same.
		ver, verOK := int64(0), false
		if empty {
			ver, verOK = c.othersVersion(ctx)
			if verOK && c.othersOK && ver == c.others && now.Sub(c.othersAt) < othersMaxAge && !now.Before(c.othersAt) {
				return false, nil
			}
		}
		c.othersOK = false
		var err error
		recs, err = c.k.Store.QueryAudit(qctx, store.AuditQuery{AfterSeq: c.counters.Load().Seq(), Types: types})
		if err != nil {
			return false, err
		}
		c.others, c.othersOK, c.othersAt = ver, verOK, now
	} else {
		c.othersOK = false
		// The first feed reads the windows back from now: the calls and
		// results within the longest window, the firings within the
		// longest hold.
		tail, err := c.k.Store.QueryAudit(ctx, store.AuditQuery{Desc: true, Limit: 1})
		if err != nil {
			return false, err
		}
		if c.set.Load().Empty() {
			// Nothing counts yet: follow the trail from here (a rule
			// added later reads the windows back when it is loaded).
			if len(tail) == 1 {
				c.counters.Load().SetSeq(tail[0].Seq)
			}
			c.warmed.Store(true)
			return false, nil
		}
		calls, err := c.k.Store.QueryAudit(ctx, store.AuditQuery{Since: now.Add(-c.counters.Load().Keep()), Types: feedTypes})
		if err != nil {
			return false, err
		}
		holds, err := c.k.Store.QueryAudit(ctx, store.AuditQuery{Since: now.Add(-autorule.MaxWindow), Types: holdTypes})
		if err != nil {
			return false, err
		}
		recs = append(calls, holds...)
		slices.SortFunc(recs, func(a, b store.AuditRecord) int { return int(a.Seq - b.Seq) })
		if len(tail) == 1 {
			c.counters.Load().SetSeq(tail[0].Seq)
		}
		c.warmed.Store(true)
	}
	reload := false
	keepFrom := now.Add(-c.counters.Load().Keep())
	samples := make([]autorule.Sample, 0, len(recs))
	for _, r := range recs {
		switch r.Type {
		case audit.TypeAction, audit.TypeResult:
			if r.Time.Before(keepFrom) {
				continue
			}
			s := autorule.Sample{Seq: r.Seq, At: r.Time, Agent: r.Agent, Tool: r.Tool}
			if r.Type == audit.TypeAction {
				var a struct {
					Kind string `json:"kind"`
				}
				_ = json.Unmarshal(r.Data, &a)
				s.Call, s.Kind = true, a.Kind
			} else {
				var res struct {
					IsError bool `json:"is_error"`
				}
				_ = json.Unmarshal(r.Data, &res)
				s.Result, s.Failed = true, res.IsError
			}
			samples = append(samples, s)
		case TypeAutoRule:
			var f RuleFired
			if json.Unmarshal(r.Data, &f) == nil && !f.HoldUntil.IsZero() {
				c.holds.Set(f.RuleID, r.Agent, f.HoldUntil)
			}
		case TypeAnomalyDetected:
			var ev AnomalyEvent
			if json.Unmarshal(r.Data, &ev) == nil {
				c.holds.Set(ev.RuleID, r.Agent, ev.At.Add(time.Duration(ev.WindowSeconds)*time.Second))
			}
		case TypeAutoRuleChange, TypeAnomalyRuleChange:
			reload = true
			var ch AutoRuleChange
			if json.Unmarshal(r.Data, &ch) == nil && ch.Op != "add" {
				c.holds.Clear(ch.ID)
			}
		}
		c.counters.Load().SetSeq(r.Seq)
	}
	// Samples were marked seen above; feed them by time (Seq cleared, the
	// feed's position is already recorded).
	for i := range samples {
		samples[i].Seq = 0
	}
	slices.SortStableFunc(samples, func(a, b autorule.Sample) int { return a.At.Compare(b.At) })
	c.counters.Load().Add(now, samples...)
	return reload, nil
}

// othersMaxAge bounds how long a feed without rules relies on the
// store's OthersVersion: past it, the rule changes are read again even if
// the version says nothing changed (a shared store's version is only as
// good as the announcements it hears).
const othersMaxAge = time.Second

// othersVersion returns the store's OthersVersion, when it has one (the
// SQLite store; a PostgreSQL store while it listens for announcements) and
// it can be read.
func (c *controlState) othersVersion(ctx context.Context) (int64, bool) {
	s, ok := c.k.Store.(interface {
		OthersVersion(context.Context) (int64, error)
	})
	if !ok {
		return 0, false
	}
	v, err := s.OthersVersion(ctx)
	return v, err == nil
}

// baseline is the agent's average number of the rule's calls per window
// over the last BaselineDays (default 7) days, before the current window;
// read from the audit trail when a threshold is reached, and remembered
// for five minutes.
func (c *controlState) baseline(agent string, r *autorule.AnomalyRule) (float64, bool) {
	key := r.ID + "\x00" + agent
	now := c.k.Clock.Now()
	c.baseMu.Lock()
	if b, ok := c.base[key]; ok && now.Sub(b.at) < 5*time.Minute {
		c.baseMu.Unlock()
		return b.avg, true
	}
	c.baseMu.Unlock()
	days := r.BaselineDays
	if days <= 0 {
		days = 7
	}
	from, to := now.Add(-time.Duration(days)*24*time.Hour), now.Add(-r.Window())
	if !to.After(from) {
		return 0, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	recs, err := c.k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypeAction}, Agent: agent, Since: from, Until: to})
	if err != nil {
		return 0, false
	}
	set := c.set.Load()
	n := 0
	first := to
	for _, rec := range recs {
		var a struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal(rec.Data, &a)
		probe := &action.Action{Agent: agent, Tool: rec.Tool, Kind: action.Kind(a.Kind)}
		if set.MatchesAnomaly(r.ID, probe) {
			n++
			if rec.Time.Before(first) {
				first = rec.Time
			}
		}
	}
	// The history is as long as the agent has been seen, at least a day:
	// a new agent's first burst is judged against its short past, not
	// against a week of silence.
	span := max(to.Sub(first), 24*time.Hour)
	if span > to.Sub(from) {
		span = to.Sub(from)
	}
	avg := float64(n) / (float64(span) / float64(r.Window()))
	c.baseMu.Lock()
	c.base[key] = baselineEntry{avg: avg, at: now}
	c.baseMu.Unlock()
	return avg, true
}

// SyncControls feeds the auto-rules' counters from the audit trail and
// reloads the rules when they changed (the daemon calls it every second;
// Submit calls it before judging while rules are configured).
func (k *Kernel) SyncControls(ctx context.Context) error {
	return k.controls.sync(ctx)
}

// AutoRuleChange is the audit record of a change to an auto-rule or an
// anomaly rule.
type AutoRuleChange struct {
	Op      string                `json:"op"` // add, update, remove
	ID      string                `json:"id"`
	Name    string                `json:"name"`
	Who     string                `json:"who"`
	Rule    *autorule.Rule        `json:"rule,omitempty"`
	Anomaly *autorule.AnomalyRule `json:"anomaly_rule,omitempty"`
	// Template names the template a rule was added from.
	Template string `json:"template,omitempty"`
}

// RuleFired is the audit record of an auto-rule that fired (the rule log).
type RuleFired struct {
	RuleID    string       `json:"rule_id"`
	RuleName  string       `json:"rule_name"`
	Action    string       `json:"action"`
	Level     action.Level `json:"level"`
	Verdict   action.Level `json:"verdict"`
	Message   string       `json:"message"`
	HoldUntil time.Time    `json:"hold_until,omitzero"`
	Held      bool         `json:"held,omitempty"`
	Notify    bool         `json:"notify,omitempty"`
	Channels  []string     `json:"channels,omitempty"`
	// Paused is set when the rule paused the agent; PauseError says why
	// it could not.
	Paused     bool   `json:"paused,omitempty"`
	PauseError string `json:"pause_error,omitempty"`
}

// listAutoRules returns the auto-rules in force. The state store holds
// them, but whoever can write the database could put an auto_approve rule
// there: a rule's definition is taken from the latest auto_rule_change
// record an instance signed (signing.go), with only what the rule did (the
// times it fired) from the store; a rule the store lost is used as
// recorded; one no signed record adds is used only when it cannot lower a
// level.
func (k *Kernel) listAutoRules(ctx context.Context) ([]autorule.Rule, error) {
	raw, err := k.Store.ListState(ctx, AutoRuleNS)
	if err != nil {
		return nil, err
	}
	recorded, removed, err := k.signedAutoRules(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]autorule.Rule, 0, len(raw))
	for id, b := range raw {
		var r autorule.Rule
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("auto-rule %s: %w", id, err)
		}
		if def := recorded[id]; def != nil {
			d := *def
			d.TimesTriggered, d.LastTriggered = r.TimesTriggered, r.LastTriggered
			r = d
		} else if r.Loosens() {
			continue
		}
		out = append(out, r)
	}
	for id, def := range recorded {
		if _, ok := raw[id]; !ok {
			out = append(out, *def)
		}
	}
	// A rule this process used that has vanished from the store and from
	// the log alike (deleted with its records: a gap only audit verify
	// shows) is kept, unless an instance's signed record removed it.
	k.known.mu.Lock()
	for id, r := range k.known.autoRules {
		if _, ok := raw[id]; !ok && recorded[id] == nil && !removed[id] {
			out = append(out, r)
		}
	}
	prev := k.known.autoRules
	k.known.autoRules = make(map[string]autorule.Rule, len(out))
	for _, r := range out {
		if _, kept := prev[r.ID]; recorded[r.ID] != nil || kept {
			k.known.autoRules[r.ID] = r // a rule a signed record made, not one only the store holds
		}
	}
	k.known.mu.Unlock()
	slices.SortFunc(out, func(a, b autorule.Rule) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, nil
}

// signedAutoRules replays the auto_rule_change records instances signed:
// the definition of every auto-rule they say is in force.
// removed holds those such a record removed last.
func (k *Kernel) signedAutoRules(ctx context.Context) (inForce map[string]*autorule.Rule, removed map[string]bool, err error) {
	recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{Types: []string{TypeAutoRuleChange}})
	if err != nil {
		return nil, nil, fmt.Errorf("checking the auto-rules against the audit log: %w", err)
	}
	inForce, removed = map[string]*autorule.Rule{}, map[string]bool{}
	for _, r := range recs {
		var ch AutoRuleChange
		if json.Unmarshal(r.Data, &ch) != nil || ch.ID == "" || !k.signedRecord(r) {
			continue
		}
		if ch.Op == "remove" || ch.Rule == nil {
			delete(inForce, ch.ID)
			removed[ch.ID] = true
			continue
		}
		inForce[ch.ID], removed[ch.ID] = ch.Rule, false
	}
	return inForce, removed, nil
}

func (k *Kernel) listAnomalyRules(ctx context.Context) ([]autorule.AnomalyRule, error) {
	raw, err := k.Store.ListState(ctx, AnomalyRuleNS)
	if err != nil {
		return nil, err
	}
	out := make([]autorule.AnomalyRule, 0, len(raw))
	for id, b := range raw {
		var r autorule.AnomalyRule
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("anomaly rule %s: %w", id, err)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b autorule.AnomalyRule) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// AutoRules returns the auto-rules, by priority.
func (k *Kernel) AutoRules(ctx context.Context) ([]autorule.Rule, error) { return k.listAutoRules(ctx) }

// AnomalyRules returns the anomaly rules.
func (k *Kernel) AnomalyRules(ctx context.Context) ([]autorule.AnomalyRule, error) {
	return k.listAnomalyRules(ctx)
}

// AutoRule returns one auto-rule, or an error wrapping store.ErrNotFound.
func (k *Kernel) AutoRule(ctx context.Context, id string) (*autorule.Rule, error) {
	b, err := k.Store.GetState(ctx, AutoRuleNS, id)
	if err != nil {
		return nil, fmt.Errorf("auto-rule %s: %w", id, err)
	}
	var r autorule.Rule
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PutAutoRule adds a rule (empty ID) or replaces one, as who; the change is
// audited and in force at once (in this process; other processes within a
// second, or at their next submission: on a shared PostgreSQL database,
// their next once they heard the change announced, which takes
// milliseconds). The times it fired are kept.
func (k *Kernel) PutAutoRule(ctx context.Context, r autorule.Rule, who string) (*autorule.Rule, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	now := k.Clock.Now()
	op := "update"
	if r.ID == "" {
		r.ID, op = NewID("ar_"), "add"
	}
	var stored autorule.Rule
	err := k.Store.UpdateState(ctx, AutoRuleNS, r.ID, func(old []byte) ([]byte, error) {
		if old == nil && op == "update" {
			return nil, fmt.Errorf("auto-rule %s: %w", r.ID, store.ErrNotFound)
		}
		if old != nil {
			var prev autorule.Rule
			if err := json.Unmarshal(old, &prev); err == nil {
				r.TimesTriggered, r.LastTriggered, r.CreatedAt, r.CreatedBy = prev.TimesTriggered, prev.LastTriggered, prev.CreatedAt, prev.CreatedBy
			}
		} else {
			// What a rule did is Overseer's to count, never the caller's.
			r.CreatedAt, r.CreatedBy, r.TimesTriggered, r.LastTriggered = now, who, 0, time.Time{}
		}
		r.UpdatedAt = now
		stored = r
		return json.Marshal(r)
	})
	if err != nil {
		return nil, err
	}
	return &stored, k.controlChanged(ctx, AutoRuleChange{Op: op, ID: r.ID, Name: r.Name, Who: who, Rule: &stored, Template: r.Template}, TypeAutoRuleChange)
}

// DeleteAutoRule removes a rule, as who (audited).
func (k *Kernel) DeleteAutoRule(ctx context.Context, id, who string) error {
	r, err := k.AutoRule(ctx, id)
	if err != nil {
		return err
	}
	if err := k.Store.UpdateState(ctx, AutoRuleNS, id, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		return err
	}
	return k.controlChanged(ctx, AutoRuleChange{Op: "remove", ID: id, Name: r.Name, Who: who, Rule: r}, TypeAutoRuleChange)
}

// AddTemplate adds every rule of a template, as who.
func (k *Kernel) AddTemplate(ctx context.Context, name, who string) ([]autorule.Rule, error) {
	t, ok := autorule.TemplateByName(name)
	if !ok {
		return nil, fmt.Errorf("%w: no template %q", ErrControls, name)
	}
	var out []autorule.Rule
	for _, r := range t.Rules {
		r.Template = t.Name
		got, err := k.PutAutoRule(ctx, r, who)
		if err != nil {
			return out, err
		}
		out = append(out, *got)
	}
	return out, nil
}

// AnomalyRule returns one anomaly rule, or an error wrapping
// store.ErrNotFound.
func (k *Kernel) AnomalyRule(ctx context.Context, id string) (*autorule.AnomalyRule, error) {
	b, err := k.Store.GetState(ctx, AnomalyRuleNS, id)
	if err != nil {
		return nil, fmt.Errorf("anomaly rule %s: %w", id, err)
	}
	var r autorule.AnomalyRule
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// PutAnomalyRule adds (empty ID) or replaces an anomaly rule, as who
// (audited).
func (k *Kernel) PutAnomalyRule(ctx context.Context, r autorule.AnomalyRule, who string) (*autorule.AnomalyRule, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	now := k.Clock.Now()
	op := "update"
	if r.ID == "" {
		r.ID, op = NewID("an_"), "add"
	}
	var stored autorule.AnomalyRule
	err := k.Store.UpdateState(ctx, AnomalyRuleNS, r.ID, func(old []byte) ([]byte, error) {
		if old == nil && op == "update" {
			return nil, fmt.Errorf("anomaly rule %s: %w", r.ID, store.ErrNotFound)
		}
		if old != nil {
			var prev autorule.AnomalyRule
			if err := json.Unmarshal(old, &prev); err == nil {
				r.CreatedAt, r.CreatedBy = prev.CreatedAt, prev.CreatedBy
			}
		} else {
			r.CreatedAt, r.CreatedBy = now, who
		}
		r.UpdatedAt = now
		stored = r
		return json.Marshal(r)
	})
	if err != nil {
		return nil, err
	}
	return &stored, k.controlChanged(ctx, AutoRuleChange{Op: op, ID: r.ID, Name: r.Name, Who: who, Anomaly: &stored}, TypeAnomalyRuleChange)
}

// DeleteAnomalyRule removes an anomaly rule, as who (audited).
func (k *Kernel) DeleteAnomalyRule(ctx context.Context, id, who string) error {
	r, err := k.AnomalyRule(ctx, id)
	if err != nil {
		return err
	}
	if err := k.Store.UpdateState(ctx, AnomalyRuleNS, id, func([]byte) ([]byte, error) { return nil, nil }); err != nil {
		return err
	}
	return k.controlChanged(ctx, AutoRuleChange{Op: "remove", ID: id, Name: r.Name, Who: who, Anomaly: r}, TypeAnomalyRuleChange)
}

// controlChanged audits a change and puts it in force in this process.
func (k *Kernel) controlChanged(ctx context.Context, ch AutoRuleChange, typ string) error {
	data, err := k.signedData(typ, ch)
	if err != nil {
		return fmt.Errorf("the change was saved but signing its record failed: %w", err)
	}
	if _, err := k.Audit.Append(ctx, audit.Entry{Type: typ, Data: data}); err != nil {
		return fmt.Errorf("the change was saved but recording it failed: %w", err)
	}
	k.announceControls(ctx)
	if ch.Op != "add" {
		k.controls.holds.Clear(ch.ID)
	}
	if err := k.controls.load(ctx); err != nil {
		return err
	}
	return k.controls.sync(ctx)
}

// changeControls announces a change of the auto-rules or anomaly rules
// to the instances sharing the store.
const changeControls = "controls"

// announceControls tells the instances sharing the store that the rules
// changed (after the change's record is committed), so that their next
// call reads the change (their OthersVersion moves). An announcement that
// is lost delays it by othersMaxAge at most.
func (k *Kernel) announceControls(ctx context.Context) {
	if pub, ok := k.raw.(store.Publisher); ok && k.shared {
		_ = pub.Publish(ctx, changeControls, "")
	}
}

// RuleLog returns the auto-rules that fired, newest first (at most limit;
// 0: 200), optionally of one rule.
func (k *Kernel) RuleLog(ctx context.Context, ruleID string, limit int) ([]store.AuditRecord, error) {
	if limit <= 0 {
		limit = 200
	}
	q := store.AuditQuery{Types: []string{TypeAutoRule}, Desc: true, Limit: limit}
	if ruleID != "" {
		q.Text = `"rule_id":"` + ruleID + `"`
	}
	return k.Store.QueryAudit(ctx, q)
}

// controlsFired carries out what follows the findings of a recorded
// verdict: the rule log (an auto_rule record per auto-rule, its count and
// last time), holds, pausing the agent, and an anomaly's response. What
// fails is recorded; the verdict stands.
func (k *Kernel) controlsFired(ctx context.Context, a *action.Action, v *action.Verdict, fired []autorule.Finding) {
	now := k.Clock.Now()
	for _, f := range fired {
		if f.Anomaly {
			k.anomalyDetected(ctx, a, f)
			continue
		}
		if f.Loosens && !appliedReason(v, firewall.AutoRulePrefix+f.RuleID) {
			continue // the policy kept its level: nothing was done
		}
		rec := RuleFired{RuleID: f.RuleID, RuleName: f.RuleName, Action: f.Action, Level: f.Level, Verdict: v.Level,
			Message: f.Message, HoldUntil: f.HoldUntil, Held: f.Held, Notify: f.Notify, Channels: f.Channels}
		if !f.HoldUntil.IsZero() {
			k.controls.holds.Set(f.RuleID, a.Agent, f.HoldUntil)
		}
		if f.Stop {
			if err := k.pauseAgent(ctx, a.Agent, fmt.Sprintf("auto-rule %q: %s", f.RuleName, f.Message)); err != nil {
				rec.PauseError = err.Error()
			} else {
				rec.Paused = true
			}
		}
		_, _ = k.Audit.Append(ctx, audit.Entry{Type: TypeAutoRule, ActionID: a.ID, Agent: a.Agent, Session: a.Session, Tool: a.Tool, Data: rec})
		if f.Held {
			continue // the firing was counted when the hold began
		}
		_ = k.Store.UpdateState(ctx, AutoRuleNS, f.RuleID, func(old []byte) ([]byte, error) {
			if old == nil {
				return nil, nil
			}
			var r autorule.Rule
			if err := json.Unmarshal(old, &r); err != nil {
				return old, nil
			}
			r.TimesTriggered++
			r.LastTriggered = now
			return json.Marshal(r)
		})
	}
}

// appliedReason reports whether v carries the reason name.
func appliedReason(v *action.Verdict, name string) bool {
	return slices.ContainsFunc(v.Reasons, func(r action.Reason) bool { return r.Name == name })
}

// ControlsActor is who the controls act as in the audit trail.
const ControlsActor = "overseer:controls"

func (k *Kernel) pauseAgent(ctx context.Context, agent, reason string) error {
	return k.PauseAgent(ctx, agent, reason, ControlsActor)
}

// DefaultDryRunDays is how far back a dry run of a control reads the
// audit trail when the caller does not say.
const DefaultDryRunDays = 7

// ControlDryRun is the dry run of one auto-rule or anomaly rule.
type ControlDryRun struct {
	Rule    *autorule.Rule        `json:"rule,omitempty"`
	Anomaly *autorule.AnomalyRule `json:"anomaly_rule,omitempty"`
	Days    int                   `json:"days"`
	*firewall.ControlReplay
}

// DryRunAutoRule replays an auto-rule over the audit trail of the last
// days days (DefaultDryRunDays when <= 0) and reports, call by call, what
// it would have done (firewall.Engine.ReplayControls). It changes nothing;
// the rule need not be saved.
func (k *Kernel) DryRunAutoRule(ctx context.Context, r autorule.Rule, days int) (*ControlDryRun, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.ID == "" {
		r.ID = "dry-run"
	}
	r.Enabled = true
	set, err := autorule.Compile([]autorule.Rule{r}, nil)
	if err != nil {
		return nil, err
	}
	rep, days, err := k.dryRun(ctx, set, days)
	if err != nil {
		return nil, err
	}
	return &ControlDryRun{Rule: &r, Days: days, ControlReplay: rep}, nil
}

// DryRunAnomalyRule is DryRunAutoRule for an anomaly rule.
func (k *Kernel) DryRunAnomalyRule(ctx context.Context, r autorule.AnomalyRule, days int) (*ControlDryRun, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if r.ID == "" {
		r.ID = "dry-run"
	}
	r.Enabled = true
	set, err := autorule.Compile(nil, []autorule.AnomalyRule{r})
	if err != nil {
		return nil, err
	}
	rep, days, err := k.dryRun(ctx, set, days)
	if err != nil {
		return nil, err
	}
	return &ControlDryRun{Anomaly: &r, Days: days, ControlReplay: rep}, nil
}

func (k *Kernel) dryRun(ctx context.Context, set *autorule.Set, days int) (*firewall.ControlReplay, int, error) {
	if days <= 0 {
		days = DefaultDryRunDays
	}
	days = min(days, 90)
	past, err := k.History(ctx, 0)
	if err != nil {
		return nil, days, err
	}
	from := k.Clock.Now().Add(-time.Duration(days) * 24 * time.Hour)
	i := 0
	for i < len(past) && past[i].Time.Before(from) {
		i++
	}
	// The spend is the budget store's (to the minute for a day, to the
	// hour before), as every process recorded it.
	rep, err := k.Engine.ReplayControls(ctx, set, past[i:], k.usage.counter)
	return rep, days, err
}
