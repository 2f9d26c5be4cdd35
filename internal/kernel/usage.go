package kernel

// Rate limits and budget caps (package usage).
//
// The definitions are controls in the store, changed only with an audit
// record (control_change), compiled into an immutable usage.Set. The
// counts and the spend live in memory in a usage.Counter, so that a check
// costs a few map look-ups under one mutex; the engine asks it through
// firewall.UsageSignals, and a submitted call is counted atomically with
// its check (an evaluation only checks). Persistence is write-behind: every
// flushInterval (and at Close) what changed is merged into the state store
// in one transaction per namespace — no database round trip per call — and
// the merged windows are read back, so counts made by other processes on
// the same database are seen within a flush.
//
// What a limit or cap asks beyond the verdict is carried out here: pause
// the agent (PauseAgent, by "rate-limit ID"), and tell a person the first
// time a limit is reached in its window or a cap's 80% and 100% marks are
// crossed in its period (an alert record, and OnNotice subscribers such as
// the daemon's notification channels).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/usage"
)

// OwnAgent is the agent name of Overseer's own loop (package agent).
const OwnAgent = "overseer"

// Audit record types and state namespaces of the hybrid controls.
const (
	TypeControlChange = "control_change"
	nsRateCounters    = "rate_counters"
	nsBudgetUsage     = "budget_usage"
	nsRateHosts       = "rate_hosts"
	nsUsageReported   = "usage_reported"
	// nsSpendRecent is each agent's spend by the minute (usage.CostBucket),
	// which cost_threshold auto-rules count.
	nsSpendRecent = "spend_recent"
)

// flushInterval is how often counts and spend are written behind.
var flushInterval = time.Second

// ErrNoControl is returned for a rate limit or budget cap that does not exist.
var ErrNoControl = errors.New("no such control")

// usageState is the kernel's part of the hybrid controls.
type usageState struct {
	counter *usage.Counter
	mu      sync.Mutex
	version int64
	err     error // the controls could not be read: calls go to a person
	loaded  bool
	// reported is the last cumulative usage an agent reported per session
	// (agent|session), to add only what is new.
	reported      map[string]Reported
	dirtyReported map[string]bool
	notices       []func(Notice)
	flushMu       sync.Mutex
	stop          chan struct{}
	done          chan struct{}
	closeOnce     sync.Once
	// spendRead is when the spend was last read from the store (other
	// processes' spend is seen from then on).
	spendRead time.Time
	// spendKick asks the spend reader (shared stores) to read the spend
	// again: another instance wrote some.
	spendKick chan struct{}
}

// Reported is an agent's cumulative token counts of a session, as it
// reports them (Claude Code's transcript, Codex's token counts).
type Reported struct {
	Input  int64 `json:"in"`
	Output int64 `json:"out"`
}

// Notice is something a person should be told at once: a rate limit
// reached, a budget cap's 80% or 100% mark crossed. Each is also an alert
// record of the audit log.
type Notice struct {
	Kind    string    `json:"kind"` // rate_limit, budget
	ID      string    `json:"id"`
	Agent   string    `json:"agent,omitempty"`
	Session string    `json:"session,omitempty"`
	Action  string    `json:"action,omitempty"`
	Share   float64   `json:"share,omitempty"`
	Message string    `json:"message"`
	At      time.Time `json:"at"`
}

// OnNotice calls fn (on its own goroutine) for every notice this kernel
// raises.
func (k *Kernel) OnNotice(fn func(Notice)) {
	k.usage.mu.Lock()
	defer k.usage.mu.Unlock()
	k.usage.notices = append(k.usage.notices, fn)
}

// openUsage loads the controls and the persisted counts and starts the
// write-behind flusher.
func (k *Kernel) openUsage(ctx context.Context) {
	k.usage = &usageState{counter: usage.NewCounter(nil), reported: map[string]Reported{}, dirtyReported: map[string]bool{},
		stop: make(chan struct{}), done: make(chan struct{})}
	_ = k.reloadControls(ctx, true)
	k.loadCounts(ctx)
	if k.shared {
		// Several instances count the same agents: a rate limit admits
		// calls only from leases of the shared window (usage.Leaser).
		k.usage.counter.SetLeaser(k.leaseWindows)
		// The spend other instances write is read again as soon as they
		// announce it (the watch calls kickSpend).
		k.usage.spendKick = make(chan struct{}, 1)
		go k.spendReader()
	}
	go k.flusher()
}

// kickSpend asks the spend reader to read the stored spend again.
func (k *Kernel) kickSpend() {
	if k.usage == nil || k.usage.spendKick == nil {
		return
	}
	select {
	case k.usage.spendKick <- struct{}{}:
	default: // a read is already due: it reads this change too
	}
}

// spendReader reads the stored spend each time another instance announces
// a change of it, until the kernel closes: what any instance spends counts
// against every instance's caps once it is written (at once near a cap,
// see RecordUse; within the write-behind's second otherwise).
func (k *Kernel) spendReader() {
	u := k.usage
	for {
		select {
		case <-u.stop:
			return
		case <-u.spendKick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		u.flushMu.Lock() // not while a flush has taken this process's spend
		err := k.loadSpend(ctx)
		if err == nil {
			u.spendRead = time.Now()
		}
		u.flushMu.Unlock()
		if err == nil && u.counter.NearAnyCap(k.Clock.Now()) {
			// The fleet is near a cap: what this process spent and has
			// not written yet is written now, for the others to count.
			_ = k.FlushUsage(ctx)
		}
		cancel()
	}
}

// leaseWindows takes leases of shared rate-limit windows in one
// transaction, each window under its lock. It waits for a flush under
// way, so that a flush's merged window and a lease's are not put back out
// of order.
func (k *Kernel) leaseWindows(ctx context.Context, reqs []usage.KeyedLease) ([]usage.Lease, error) {
	u := k.usage
	u.flushMu.Lock()
	defer u.flushMu.Unlock()
	now := k.Clock.Now()
	keys := make([]string, len(reqs))
	idx := make(map[string]int, len(reqs))
	for i, r := range reqs {
		keys[i], idx[r.Key] = r.Key, i
	}
	out := make([]usage.Lease, len(reqs))
	err := k.raw.UpdateStates(ctx, nsRateCounters, keys, func(key string, old []byte) ([]byte, error) {
		req := reqs[idx[key]].LeaseRequest
		b, got, err := usage.LeaseWindow(old, req, now)
		if err != nil { // an unreadable stored window starts again, as a flush does
			b, got, err = usage.LeaseWindow(nil, req, now)
		}
		out[idx[key]] = got
		return b, err
	})
	if err != nil {
		return nil, fmt.Errorf("counting the rate limits through the shared database: %w", err)
	}
	return out, nil
}

// loadCounts reads the persisted windows, hosts and spend. A failure leaves
// the counts empty (the limits count from now) and is kept as the usage
// error: calls go to a person until the controls load again.
func (k *Kernel) loadCounts(ctx context.Context) {
	c := k.usage.counter
	var errs []error
	if m, err := k.raw.ListState(ctx, nsRateCounters); err == nil {
		for key, b := range m {
			var bs []usage.Bucket
			if json.Unmarshal(b, &bs) == nil {
				c.PutWindow(key, bs)
			}
		}
	} else {
		errs = append(errs, err)
	}
	if m, err := k.raw.ListState(ctx, nsRateHosts); err == nil {
		hosts := map[string][]string{}
		for a, b := range m {
			var hs []string
			if json.Unmarshal(b, &hs) == nil {
				hosts[a] = hs
			}
		}
		c.LoadHosts(hosts)
	} else {
		errs = append(errs, err)
	}
	if err := k.loadSpend(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		k.usage.mu.Lock()
		k.usage.err = fmt.Errorf("reading the rate-limit counts and the spend: %w", err)
		k.usage.mu.Unlock()
	}
}

func (k *Kernel) loadSpend(ctx context.Context) error {
	m, err := k.raw.ListState(ctx, nsBudgetUsage)
	if err != nil {
		return err
	}
	rows := make(map[string]usage.Spend, len(m))
	for key, b := range m {
		var sp usage.Spend
		if json.Unmarshal(b, &sp) == nil {
			rows[key] = sp
		}
	}
	k.usage.counter.LoadRows(rows)
	m, err = k.raw.ListState(ctx, nsSpendRecent)
	if err != nil {
		return err
	}
	recent := make(map[string][]usage.CostBucket, len(m))
	for agent, b := range m {
		var bs []usage.CostBucket
		if json.Unmarshal(b, &bs) == nil {
			recent[agent] = bs
		}
	}
	k.usage.counter.LoadCosts(recent)
	return nil
}

// reloadControls reads the controls when their version changed (always
// with force) and compiles them.
func (k *Kernel) reloadControls(ctx context.Context, force bool) error {
	u := k.usage
	ver, err := k.raw.ControlsVersion(ctx)
	if err == nil && !force {
		u.mu.Lock()
		same := u.loaded && u.err == nil && ver == u.version
		u.mu.Unlock()
		if same {
			return nil
		}
	}
	var set *usage.Set
	if err == nil {
		set, err = k.compileControls(ctx)
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err != nil {
		u.err = fmt.Errorf("reading the rate limits and budget caps: %w", err)
		return u.err
	}
	u.counter.SetSet(set)
	u.version, u.err, u.loaded = ver, nil, true
	return nil
}

func (k *Kernel) compileControls(ctx context.Context) (*usage.Set, error) {
	list, err := k.checkedControls(ctx)
	if err != nil {
		return nil, err
	}
	var (
		limits []usage.RateLimit
		caps   []usage.BudgetCap
		prices = usage.DefaultPrices
	)
	for _, c := range list {
		switch c.Kind {
		case usage.KindRateLimit:
			l, err := usage.DecodeRateLimit(c.Body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.ID, err)
			}
			limits = append(limits, l)
		case usage.KindBudgetCap:
			cp, err := usage.DecodeBudgetCap(c.Body)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", c.ID, err)
			}
			caps = append(caps, cp)
		case usage.KindPrices:
			var p usage.Prices
			if err := json.Unmarshal(c.Body, &p); err != nil {
				return nil, fmt.Errorf("the price table: %w", err)
			}
			prices = p
		}
	}
	return usage.Compile(limits, caps, prices)
}

// checkedControls returns the controls as their control_change records
// say, not as the table does: whoever can write the database could drop a
// budget cap, raise a limit or zero the prices there. The latest record of
// a control decides (a control the table lost is used as recorded, one the
// table has and no record adds is not used); a record no instance signed
// (signing.go) does not override one that an instance did, so a writer of
// the database without the keys cannot remove or change what a person set.
func (k *Kernel) checkedControls(ctx context.Context) ([]store.Control, error) {
	rows, err := k.raw.ListControls(ctx, "")
	if err != nil {
		return nil, err
	}
	recs, err := k.raw.QueryAudit(ctx, store.AuditQuery{Types: []string{TypeControlChange}})
	if err != nil {
		return nil, fmt.Errorf("checking the controls against the audit log: %w", err)
	}
	type recorded struct {
		ch     ControlChange
		at     time.Time
		signed bool
	}
	byKey := map[[2]string]*recorded{}
	var order [][2]string
	for _, r := range recs {
		var ch ControlChange
		if json.Unmarshal(r.Data, &ch) != nil || ch.Kind == "" || ch.ID == "" {
			continue
		}
		key := [2]string{ch.Kind, ch.ID}
		signed := k.signedRecord(r)
		cur := byKey[key]
		if cur == nil {
			order = append(order, key)
		} else if cur.signed && !signed {
			continue
		}
		byKey[key] = &recorded{ch: ch, at: r.Time, signed: signed}
	}
	seen := map[[2]string]bool{}
	var out []store.Control
	add := func(key [2]string, c store.Control) {
		rec := byKey[key]
		if seen[key] || rec == nil || rec.ch.Op == "remove" || len(rec.ch.After) == 0 {
			return
		}
		seen[key] = true
		c.ID, c.Kind, c.Body = key[1], key[0], rec.ch.After
		out = append(out, c)
	}
	for _, c := range rows { // the table's order
		add([2]string{c.Kind, c.ID}, c)
	}
	for _, key := range order {
		add(key, store.Control{CreatedBy: byKey[key].ch.Who, CreatedAt: byKey[key].at, UpdatedAt: byKey[key].at})
	}
	// A control this process enforced that has vanished from the table and
	// from the log alike (deleted with its records: a gap only audit
	// verify shows) is kept.
	k.known.mu.Lock()
	defer k.known.mu.Unlock()
	for key, c := range k.known.controls {
		if _, recorded := byKey[key]; !recorded && !seen[key] {
			out = append(out, c)
		}
	}
	k.known.controls = make(map[[2]string]store.Control, len(out))
	for _, c := range out {
		k.known.controls[[2]string{c.Kind, c.ID}] = c
	}
	return out, nil
}

// flusher writes counts behind until Close.
func (k *Kernel) flusher() {
	defer close(k.usage.done)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-k.usage.stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = k.FlushUsage(ctx)
			cancel()
		}
	}
}

// closeUsage stops the flusher and flushes what is left.
func (k *Kernel) closeUsage() error {
	if k.usage == nil {
		return nil
	}
	var err error
	k.usage.closeOnce.Do(func() { // Close may be called more than once
		close(k.usage.stop)
		<-k.usage.done
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = k.flushUsage(ctx, true)
	})
	return err
}

// FlushUsage writes what the counters changed since the last flush, in one
// transaction per namespace, and reads back the merged windows. What a
// failed write took is given back to the counter for the next flush.
func (k *Kernel) FlushUsage(ctx context.Context) error { return k.flushUsage(ctx, false) }

// flushUsage is FlushUsage; final gives back every lease not used and
// reads nothing back (the kernel closes: nobody reads the spend again).
func (k *Kernel) flushUsage(ctx context.Context, final bool) error {
	u := k.usage
	u.flushMu.Lock()
	defer u.flushMu.Unlock()
	d := u.counter.TakeDirtyAt(k.Clock.Now(), final)
	u.mu.Lock()
	var rep map[string]Reported
	if len(u.dirtyReported) > 0 {
		rep = map[string]Reported{}
		for key := range u.dirtyReported {
			rep[key] = u.reported[key]
		}
		clear(u.dirtyReported)
	}
	u.mu.Unlock()
	if d.Empty() && rep == nil {
		if final {
			return nil // nothing to write, and nobody reads the spend again
		}
		return k.rereadSpend(ctx)
	}
	now := k.Clock.Now()
	var errs []error
	if len(d.Windows) > 0 {
		keys := sortedKeys(d.Windows)
		merged := map[string][]usage.Bucket{}
		err := k.raw.UpdateStates(ctx, nsRateCounters, keys, func(key string, old []byte) ([]byte, error) {
			dw := d.Windows[key]
			b, bs, err := usage.MergeWindow(old, dw, now)
			if err != nil { // an unreadable stored window starts again
				b, bs, err = usage.MergeBuckets(nil, dw.Fresh, dw.Window, now)
			}
			merged[key] = bs
			return b, err
		})
		if err != nil {
			errs = append(errs, err)
			u.counter.Restore(usage.Dirty{Windows: d.Windows})
		} else {
			for key, bs := range merged {
				u.counter.PutWindow(key, bs)
			}
		}
	}
	if len(d.Spend) > 0 {
		err := k.raw.UpdateStates(ctx, nsBudgetUsage, sortedKeys(d.Spend), func(key string, old []byte) ([]byte, error) {
			b, err := usage.MergeSpend(old, d.Spend[key])
			if err != nil {
				return usage.MergeSpend(nil, d.Spend[key])
			}
			return b, nil
		})
		if err != nil {
			errs = append(errs, err)
			u.counter.Restore(usage.Dirty{Spend: d.Spend})
		}
	}
	if len(d.Hosts) > 0 {
		err := k.raw.UpdateStates(ctx, nsRateHosts, sortedKeys(d.Hosts), func(key string, old []byte) ([]byte, error) {
			var prev []string
			_ = json.Unmarshal(old, &prev)
			return json.Marshal(unionSorted(prev, d.Hosts[key]))
		})
		if err != nil {
			errs = append(errs, err)
			u.counter.Restore(usage.Dirty{Hosts: d.Hosts})
		}
	}
	if len(d.Costs) > 0 {
		merged := map[string][]usage.CostBucket{}
		err := k.raw.UpdateStates(ctx, nsSpendRecent, sortedKeys(d.Costs), func(key string, old []byte) ([]byte, error) {
			b, bs, err := usage.MergeCosts(old, d.Costs[key], now)
			if err != nil { // an unreadable stored row starts again
				b, bs, err = usage.MergeCosts(nil, d.Costs[key], now)
			}
			merged[key] = bs
			return b, err
		})
		if err != nil {
			errs = append(errs, err)
			u.counter.Restore(usage.Dirty{Costs: d.Costs})
		} else {
			for key, bs := range merged {
				u.counter.PutCosts(key, bs)
			}
		}
	}
	if rep != nil {
		err := k.raw.UpdateStates(ctx, nsUsageReported, sortedKeys(rep), func(key string, old []byte) ([]byte, error) {
			var prev Reported
			_ = json.Unmarshal(old, &prev)
			r := rep[key]
			r.Input, r.Output = max(r.Input, prev.Input), max(r.Output, prev.Output)
			return json.Marshal(r)
		})
		if err != nil {
			errs = append(errs, err)
			u.mu.Lock()
			for key := range rep {
				u.dirtyReported[key] = true
			}
			u.mu.Unlock()
		}
	}
	if !final {
		if err := k.rereadSpend(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// spendReread is how often the spend other processes wrote is read again.
var spendReread = 10 * time.Second

// rereadSpend reads the stored spend again when it is due, so that the
// caps and the cost_threshold auto-rules count what other processes on the
// database spent (the own loop run apart from the daemon, another instance). Called under flushMu, after
// this process's spend was written: what is not written yet is kept.
func (k *Kernel) rereadSpend(ctx context.Context) error {
	now := time.Now()
	if now.Sub(k.usage.spendRead) < spendReread {
		return nil
	}
	k.usage.spendRead = now
	return k.loadSpend(ctx)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

func unionSorted(a, b []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// countKey marks a context whose evaluation counts the call (Submit);
// the findings land in the holder.
type countKey struct{}

type countHolder struct{ findings []usage.Finding }

// Usage implements firewall.UsageSignals.
func (s signals) Usage(ctx context.Context, a *action.Action, level action.Level, eff usage.Call) ([]usage.Finding, error) {
	u := s.usage
	u.mu.Lock()
	err := u.err
	u.mu.Unlock()
	eff.Agent, eff.Session, eff.Tool, eff.Level = a.Agent, a.Session, a.Tool, level
	eff.Driven = a.Agent == OwnAgent
	eff.Now = s.clock.Now()
	h, count := ctx.Value(countKey{}).(*countHolder)
	f, cerr := u.counter.CheckContext(ctx, &eff, count)
	if cerr != nil {
		return nil, cerr // nothing counted: the call goes to a person
	}
	if count {
		h.findings = f
	}
	return f, err
}

// afterCount carries out what the findings of a submitted call ask beyond
// its verdict: pause the agent, tell a person.
func (k *Kernel) afterCount(ctx context.Context, a *action.Action, findings []usage.Finding) {
	for _, f := range findings {
		if f.Pause {
			if p, ok := k.AgentPause(a.Agent); !ok || p.Agent == AllAgents {
				// A failure to pause leaves the call refused; the next
				// call at the limit tries again.
				_ = k.PauseAgent(ctx, a.Agent, f.Message, "rate-limit "+f.ID)
			}
		}
		if f.Notice {
			k.notify(ctx, Notice{Kind: f.Source, ID: f.ID, Agent: a.Agent, Session: a.Session, Action: f.Action,
				Message: f.Message, At: k.Clock.Now().UTC()})
		}
	}
}

// notify records a notice as an alert and hands it to the subscribers.
func (k *Kernel) notify(ctx context.Context, n Notice) {
	// The daemon's notification channels follow alert records (any
	// process's); subscribers of this process hear at once.
	_, _ = k.Audit.Append(ctx, audit.Entry{Type: audit.TypeAlert, Agent: n.Agent, Session: n.Session, Data: map[string]any{
		"kind": n.Kind, "id": n.ID, "action": n.Action, "share": n.Share, "summary": n.Message}})
	k.usage.mu.Lock()
	subs := append([]func(Notice){}, k.usage.notices...)
	k.usage.mu.Unlock()
	for _, fn := range subs {
		go fn(n) // owned by the subscriber, which must return
	}
}

// Use is one model call's use, or an agent's report of its cumulative use.
type Use struct {
	Agent   string `json:"agent"`
	Session string `json:"session,omitempty"`
	Model   string `json:"model,omitempty"`
	Input   int64  `json:"input_tokens"`
	Output  int64  `json:"output_tokens"`
	// CostUSD is the cost when the caller knows it (the own loop's price
	// table); zero: estimated from the budget's price table.
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// RecordUse adds one model call's use to the spend, and tells a person of
// the caps it brings to 80% or 100%. It returns the cost counted.
func (k *Kernel) RecordUse(ctx context.Context, u Use) float64 {
	cost := u.CostUSD
	if cost <= 0 {
		cost = k.usage.counter.Set().Prices.Cost(u.Model, u.Input, u.Output)
	}
	now := k.Clock.Now()
	alerts := k.usage.counter.Record(u.Agent, u.Session, usage.Spend{Input: u.Input, Output: u.Output, Cost: cost, Calls: 1}, now)
	if k.shared && cost > 0 && k.usage.counter.NearCap(u.Agent, u.Session, now) {
		// Near a cap the spend is written through, and the other
		// instances read it at once (kickSpend), rather than after the
		// write-behind's second. A failure leaves it to the next flush.
		_ = k.FlushUsage(ctx)
	}
	for _, al := range alerts {
		n := Notice{Kind: usage.SourceBudget, ID: al.Cap.ID, Agent: u.Agent, Session: u.Session, Action: string(al.Cap.Action),
			Share: al.Share, Message: al.Message, At: now.UTC()}
		if al.Cap.Scope == usage.ScopeGlobal {
			n.Agent, n.Session = "", ""
		}
		k.notify(ctx, n)
	}
	return cost
}

// RecordReported takes an agent's report of its cumulative use of a
// session (what Claude Code's transcript or Codex's token counts say so
// far) and counts what is new since its last report. Totals that go down
// count nothing.
func (k *Kernel) RecordReported(ctx context.Context, u Use) float64 {
	if u.Agent == "" || u.Session == "" || u.Input < 0 || u.Output < 0 {
		return 0
	}
	key := u.Agent + "|" + u.Session
	us := k.usage
	us.mu.Lock()
	prev, ok := us.reported[key]
	us.mu.Unlock()
	if !ok {
		if b, err := k.raw.GetState(ctx, nsUsageReported, key); err == nil {
			_ = json.Unmarshal(b, &prev)
		}
	}
	us.mu.Lock()
	if cur, ok := us.reported[key]; ok {
		prev = cur
	}
	dIn, dOut := u.Input-prev.Input, u.Output-prev.Output
	if dIn <= 0 && dOut <= 0 {
		us.mu.Unlock()
		return 0
	}
	us.reported[key] = Reported{Input: max(u.Input, prev.Input), Output: max(u.Output, prev.Output)}
	us.dirtyReported[key] = true
	us.mu.Unlock()
	return k.RecordUse(ctx, Use{Agent: u.Agent, Session: u.Session, Model: u.Model, Input: max(dIn, 0), Output: max(dOut, 0)})
}

// BudgetStep is what the budget caps say before the own loop's next model
// call.
type BudgetStep struct {
	// Downgrade: a downgrade cap is reached; switch to the cheaper model.
	Downgrade bool
	// Stop is set when a cap refuses further use: why.
	Stop string
	// Caps says which caps are reached.
	Caps []string
}

// BudgetFor says what the caps ask of agent's session now.
func (k *Kernel) BudgetFor(agent, session string) BudgetStep {
	var st BudgetStep
	call := usage.Call{Agent: agent, Session: session, Driven: true, Now: k.Clock.Now()}
	for _, s := range k.usage.counter.CapsFor(&call) {
		cp := s.Cap
		hard := cp.Hard()
		switch {
		case hard > 0 && s.Spent >= hard:
			st.Stop = fmt.Sprintf("budget cap %s: $%.2f of $%.2f spent (%s)", cp.ID, s.Spent, cp.MaxCostUSD, cp.Period)
			st.Caps = append(st.Caps, cp.ID)
		case cp.Action == usage.Downgrade && s.Spent >= cp.MaxCostUSD:
			st.Downgrade = true
			st.Caps = append(st.Caps, cp.ID)
		}
	}
	return st
}

// maybeReloadControls reads the controls again when another process
// changed them (see maybeReloadPauses for the pace).
func (k *Kernel) maybeReloadControls(ctx context.Context) { _ = k.reloadControls(ctx, false) }

// RateLimits returns the rate limits in force.
func (k *Kernel) RateLimits() []usage.RateLimit {
	return append([]usage.RateLimit{}, k.usage.counter.Set().Limits...)
}

// BudgetCaps returns the budget caps in force.
func (k *Kernel) BudgetCaps() []usage.BudgetCap {
	return append([]usage.BudgetCap{}, k.usage.counter.Set().Caps...)
}

// Prices returns the price table in force.
func (k *Kernel) Prices() usage.Prices { return k.usage.counter.Set().Prices }

// LimitUses returns every rate limit's count per agent now.
func (k *Kernel) LimitUses() []usage.LimitUse { return k.usage.counter.Uses(k.Clock.Now()) }

// Budgets returns every cap's spend in its current period.
func (k *Kernel) Budgets() []usage.Status { return k.usage.counter.Budgets(k.Clock.Now()) }

// SpendRows returns the spend per day, agent and session (usage.SpendKey).
func (k *Kernel) SpendRows() map[string]usage.Spend { return k.usage.counter.Rows() }

// ControlChange is the data of a control_change record.
type ControlChange struct {
	Kind   string          `json:"kind"`
	ID     string          `json:"id"`
	Op     string          `json:"op"` // add, change, remove
	Who    string          `json:"who"`
	Before json.RawMessage `json:"before,omitempty"`
	After  json.RawMessage `json:"after,omitempty"`
}

// PutRateLimit adds or replaces (by ID; a new one gets an ID) a rate limit,
// recording who in the audit log.
func (k *Kernel) PutRateLimit(ctx context.Context, l usage.RateLimit, who string) (usage.RateLimit, error) {
	if l.ID == "" {
		l.ID = NewID("rl_")
	}
	if err := l.Validate(); err != nil {
		return l, err
	}
	return l, k.putControl(ctx, usage.KindRateLimit, l.ID, l, who)
}

// PutBudgetCap adds or replaces a budget cap.
func (k *Kernel) PutBudgetCap(ctx context.Context, c usage.BudgetCap, who string) (usage.BudgetCap, error) {
	if c.ID == "" {
		c.ID = NewID("bc_")
	}
	if err := c.Validate(); err != nil {
		return c, err
	}
	return c, k.putControl(ctx, usage.KindBudgetCap, c.ID, c, who)
}

// SetPrices replaces the budget's price table.
func (k *Kernel) SetPrices(ctx context.Context, p usage.Prices, who string) error {
	if err := p.Validate(); err != nil {
		return err
	}
	return k.putControl(ctx, usage.KindPrices, "prices", p, who)
}

// DeleteRateLimit removes a rate limit.
func (k *Kernel) DeleteRateLimit(ctx context.Context, id, who string) error {
	return k.deleteControl(ctx, usage.KindRateLimit, id, who)
}

// DeleteBudgetCap removes a budget cap.
func (k *Kernel) DeleteBudgetCap(ctx context.Context, id, who string) error {
	return k.deleteControl(ctx, usage.KindBudgetCap, id, who)
}

func (k *Kernel) putControl(ctx context.Context, kind, id string, body any, who string) error {
	if strings.TrimSpace(who) == "" {
		return errors.New("say who makes the change")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	now := k.Clock.Now().UTC()
	c := &store.Control{ID: id, Kind: kind, Body: b, CreatedBy: who, CreatedAt: now, UpdatedAt: now}
	e := audit.Entry{Type: TypeControlChange, Seal: true, Effect: &store.PutControlEffect{Control: c,
		Describe: func(old *store.Control) (json.RawMessage, error) {
			ch := ControlChange{Kind: kind, ID: id, Op: "add", Who: who, After: b}
			if old != nil {
				ch.Op, ch.Before = "change", old.Body
			}
			return k.signedData(TypeControlChange, ch)
		}}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		return fmt.Errorf("saving %s %s: %w", kind, id, err)
	}
	return k.reloadControls(ctx, true)
}

func (k *Kernel) deleteControl(ctx context.Context, kind, id, who string) error {
	if strings.TrimSpace(who) == "" {
		return errors.New("say who makes the change")
	}
	e := audit.Entry{Type: TypeControlChange, Seal: true, Effect: &store.DeleteControlEffect{ID: id, Kind: kind,
		Describe: func(old *store.Control) (json.RawMessage, error) {
			return k.signedData(TypeControlChange, ControlChange{Kind: kind, ID: id, Op: "remove", Who: who, Before: old.Body})
		}}}
	if _, err := k.Audit.Append(ctx, e); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: %s %s", ErrNoControl, strings.ReplaceAll(kind, "_", " "), id)
		}
		return fmt.Errorf("removing %s %s: %w", kind, id, err)
	}
	return k.reloadControls(ctx, true)
}
