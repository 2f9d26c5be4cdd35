package usage

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Call is what a check sees of one call.
type Call struct {
	Agent, Session, Tool string
	// Level is the firewall's level for the call before the limits.
	Level action.Level
	// Effects of the call.
	Write, Delete, Exec bool
	// Hosts are the hosts the call sends to.
	Hosts []string
	// Driven: the agent is Overseer's own loop, which switches models
	// itself (a downgrade cap does not refuse it before the hard cap).
	Driven bool
	Now    time.Time
}

// Finding sources.
const (
	SourceRateLimit = "rate_limit"
	SourceBudget    = "budget"
)

// Finding is a rate limit or budget cap a call reaches.
type Finding struct {
	Source  string // rate_limit, budget
	ID      string
	Name    string
	Action  string // the limit's or cap's action
	Level   action.Level
	Message string
	// Pause: pause the agent. Stop: ask the agent to stop its task.
	Pause, Stop bool
	// Notice: the first time in this window or period; tell a person.
	Notice bool
	// Count and Max are the calls in the window and the limit; Window the
	// window (rate limits).
	Count, Max int
	Window     time.Duration
	// Spent and Cap are the spend in the period and the cap (budgets).
	Spent, Cap float64
}

// Spend is the use of one day, agent and session.
type Spend struct {
	Input  int64   `json:"in"`
	Output int64   `json:"out"`
	Cost   float64 `json:"cost"`
	Calls  int64   `json:"calls"`
}

func (s Spend) add(o Spend) Spend {
	return Spend{Input: s.Input + o.Input, Output: s.Output + o.Output, Cost: s.Cost + o.Cost, Calls: s.Calls + o.Calls}
}

// SpendKey is a row of the spend: a local day (2006-01-02), an agent and a
// session, joined by "|".
func SpendKey(day, agent, session string) string { return day + "|" + agent + "|" + session }

// SplitSpendKey splits a SpendKey.
func SplitSpendKey(k string) (day, agent, session string, ok bool) {
	parts := strings.SplitN(k, "|", 3)
	if len(parts) != 3 {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// wkey is a rate limit's counter of one agent.
type wkey struct{ limit, agent string }

// window is one limit's count of one agent: base, the store's buckets as
// last read (every process's counts, coarse), plus fresh, the times (unix
// nanoseconds, ascending) of the calls this process counted since.
type window struct {
	base    []Bucket
	baseIdx int // base[:baseIdx] are out of the window
	baseSum int // the counts of base[baseIdx:]
	fresh   []int64
	// flushing is how many of fresh a flush under way took.
	flushing int

	// Shared counting (see lease.go). lease is the part of the current
	// lease not used yet, of leaseGranted, recorded in the stored bucket
	// ending at leaseEnd and usable until leaseUntil; leaseUsed is how much
	// of the previous lease was used. leasing is set while a check takes a
	// new lease (leaseDone is closed when it is done). returning is an
	// expired lease's unused part a flush under way gives back. storeCount
	// and storeRoom are the store's count at the last lease and whether it
	// had room left.
	lease, leaseGranted, leaseUsed int
	leaseEnd, leaseUntil           int64
	leasing                        bool
	leaseDone                      chan struct{}
	returning                      int
	storeCount                     int
	storeRoom                      bool
}

// since counts the calls after t. t only grows for a window (now minus
// its limit's window), so expired buckets are dropped as it goes; a bucket
// counts while its end is after t (a bucket's calls count as late as they
// may be: stricter, never looser).
func (w *window) since(t int64) int {
	for w.baseIdx < len(w.base) && w.base[w.baseIdx].End <= t {
		w.baseSum -= w.base[w.baseIdx].Count
		w.baseIdx++
	}
	i := sort.Search(len(w.fresh), func(i int) bool { return w.fresh[i] > t })
	return w.baseSum + len(w.fresh) - i
}

func (w *window) add(t int64) {
	if n := len(w.fresh); n > 0 && t < w.fresh[n-1] {
		t = w.fresh[n-1]
	}
	w.fresh = append(w.fresh, t)
}

// capKey is a budget cap's total for one scope key (an agent or session).
type capKey struct{ cap, key string }

// Counter holds the counts of calls and the spend. Safe for concurrent use.
type Counter struct {
	mu      sync.Mutex
	set     *Set
	windows map[wkey]*window
	hosts   map[string]map[string]bool // agent → hosts it sent to
	// rows is the spend by SpendKey; pending the part not yet persisted.
	rows    map[string]Spend
	pending map[string]Spend
	// totals caches a cap's spend in its current period (start).
	totals  map[capKey]float64
	started map[string]int64 // cap → the period start totals are for
	// noticed says until when a limit's or cap's notice is not repeated.
	noticed map[string]int64
	alerted map[string]bool // cap|key|start|level → alerted
	dirtyH  bool
	// agents caches, per agent, its window of each limit of set (by
	// index): one map look-up per check instead of one per limit.
	agents map[string][]*window
	// leaser, when set, takes leases of the shared windows (lease.go).
	leaser Leaser
	// costs is each agent's recent spend by time (recent.go).
	costs map[string]*costWindow
}

// NewCounter returns an empty counter checking set.
func NewCounter(set *Set) *Counter {
	if set == nil {
		set = &Set{}
	}
	return &Counter{set: set, windows: map[wkey]*window{}, hosts: map[string]map[string]bool{},
		rows: map[string]Spend{}, pending: map[string]Spend{}, totals: map[capKey]float64{}, started: map[string]int64{},
		noticed: map[string]int64{}, alerted: map[string]bool{}, agents: map[string][]*window{},
		costs: map[string]*costWindow{}}
}

// Set returns the set in force.
func (c *Counter) Set() *Set {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.set
}

// SetSet replaces the set in force (after a change): counts of limits that
// remain are kept; the caps' totals are computed again.
func (c *Counter) SetSet(s *Set) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.set = s
	clear(c.totals)
	clear(c.started)
	clear(c.agents)
}

// windowOf returns agent's window of limit i of the set in force.
func (c *Counter) windowOf(i int, agent string) *window {
	ws := c.agents[agent]
	if ws == nil {
		ws = make([]*window, len(c.set.Limits))
		c.agents[agent] = ws
	}
	w := ws[i]
	if w == nil {
		k := wkey{c.set.Limits[i].ID, agent}
		if w = c.windows[k]; w == nil {
			w = &window{}
			c.windows[k] = w
		}
		ws[i] = w
	}
	return w
}

// Check reports the limits and caps call c reaches. With count, the call
// is counted (atomically with the check) unless a limit refuses it. A
// counter with a leaser is checked with CheckContext.
func (c *Counter) Check(call *Call, count bool) []Finding {
	out, _ := c.CheckContext(context.Background(), call, count)
	return out
}

// checkLocked is Check under c.mu. With a leaser, a window admits a
// counted call only from its lease; short reports a window whose lease was
// used up while the store still had room (the caller takes another lease
// and checks again).
func (c *Counter) checkLocked(call *Call, count bool) (out []Finding, short bool) {
	s := c.set
	shared := c.leaser != nil && count
	now := call.Now.UnixNano()
	refused := false
	var counted [8]counting
	countedN := 0
	var extra []counting
	for i := range s.Limits {
		if !s.matches(i, call) {
			continue
		}
		l := &s.Limits[i]
		if l.Effect == EffectNewHost && !c.newHost(call) {
			continue
		}
		w := c.windowOf(i, call.Agent)
		win := l.Window()
		var (
			n     int
			under bool
			cw    = counting{w: w}
		)
		switch {
		case shared:
			n = w.estimate(now - int64(win))
			under = w.lease > 0 && now <= w.leaseUntil && !w.leasing
			cw.leased = under
			if !under {
				n = max(n, w.storeCount, l.MaxCalls)
				if w.storeRoom {
					short = true
				}
			}
		case c.leaser != nil:
			n = w.estimate(now - int64(win))
			under = n < l.MaxCalls
		default:
			n = w.since(now - int64(win))
			under = n < l.MaxCalls
		}
		if under {
			if countedN < len(counted) {
				counted[countedN] = cw
				countedN++
			} else {
				extra = append(extra, cw)
			}
			continue
		}
		f := Finding{Source: SourceRateLimit, ID: l.ID, Name: l.Name, Action: string(l.Action), Count: n, Max: l.MaxCalls, Window: win}
		what := limitWhat(l, call)
		switch l.Action {
		case Block:
			f.Level = action.Block
			f.Message = fmt.Sprintf("rate limit %s: %s — %d within %s, the limit is %d; this call is refused, later ones run as the window slides",
				l.ID, what, n, win, l.MaxCalls)
			refused = true
		case Pause:
			f.Level, f.Pause, f.Stop = action.Block, true, true
			f.Message = fmt.Sprintf("rate limit %s: %s — %d within %s, the limit is %d; the agent is paused until a person resumes it",
				l.ID, what, n, win, l.MaxCalls)
			refused = true
		case NotifyOnly:
			f.Level = action.Notify
			f.Message = fmt.Sprintf("rate limit %s: %s — %d within %s, over the limit of %d; a person is told, the call runs",
				l.ID, what, n, win, l.MaxCalls)
			extra = append(extra, cw)
		case Ask:
			f.Level = action.Approve
			f.Message = fmt.Sprintf("rate limit %s: %s — %d within %s, the limit is %d; a person decides whether this call runs",
				l.ID, what, n, win, l.MaxCalls)
			extra = append(extra, cw)
		}
		nk := "rl|" + l.ID + "|" + call.Agent
		if until, ok := c.noticed[nk]; !ok || now >= until {
			f.Notice = true
			if count {
				c.noticed[nk] = now + int64(win)
			}
		}
		out = append(out, f)
	}
	ps := periods{now: call.Now}
	for i := range s.Caps {
		cp := &s.Caps[i]
		if !cp.Enabled {
			continue
		}
		key, ok := capScopeKey(cp, call.Agent, call.Session)
		if !ok {
			continue
		}
		spent := c.spentIn(cp, key, &ps)
		hard := cp.Hard()
		switch {
		case hard > 0 && spent >= hard:
			f := Finding{Source: SourceBudget, ID: cp.ID, Name: cp.Name, Action: string(cp.Action), Level: action.Block, Stop: true,
				Spent: spent, Cap: cp.MaxCostUSD}
			f.Message = fmt.Sprintf("budget cap %s: $%.2f of $%.2f spent %s%s; calls are refused until %s or a person raises the cap",
				cp.ID, spent, cp.MaxCostUSD, scopeWhat(cp, call), hardWhat(cp, hard), periodEndWhat(cp, call.Now))
			refused = true
			out = append(out, f)
		case cp.Action == Downgrade && spent >= cp.MaxCostUSD && !call.Driven:
			f := Finding{Source: SourceBudget, ID: cp.ID, Name: cp.Name, Action: string(cp.Action), Level: action.Notify,
				Spent: spent, Cap: cp.MaxCostUSD}
			f.Message = fmt.Sprintf("budget cap %s: $%.2f of $%.2f spent %s; this agent cannot be switched to a cheaper model, so a person is told, and at $%.2f its calls are refused",
				cp.ID, spent, cp.MaxCostUSD, scopeWhat(cp, call), hard)
			out = append(out, f)
		}
	}
	if count && !refused {
		for _, cw := range counted[:countedN] {
			cw.count(now)
		}
		for _, cw := range extra {
			cw.count(now)
		}
		c.rememberHosts(call)
	}
	return out, short
}

// counting is a window that counts a call, when it is not refused
// (leased: from the window's lease).
type counting struct {
	w      *window
	leased bool
}

// count counts a call: from the lease (already in the store), or as a
// fresh time written behind.
func (cw counting) count(now int64) {
	if cw.leased {
		cw.w.lease--
		return
	}
	cw.w.add(now)
}

func limitWhat(l *RateLimit, call *Call) string {
	var b strings.Builder
	b.WriteString(call.Agent)
	if l.Tool != "" {
		b.WriteString(" calls of " + l.Tool)
	} else {
		b.WriteString(" calls")
	}
	if l.Risk != "" {
		b.WriteString(" at " + l.Risk + " or above")
	}
	switch l.Effect {
	case EffectWrite:
		b.WriteString(" that write files")
	case EffectDelete:
		b.WriteString(" that delete files")
	case EffectExec:
		b.WriteString(" that run commands")
	case EffectSend:
		b.WriteString(" that send over the network")
	case EffectNewHost:
		b.WriteString(" that send to new hosts")
	}
	return b.String()
}

func scopeWhat(cp *BudgetCap, call *Call) string {
	p := map[string]string{Daily: "today", Weekly: "this week", Monthly: "this month", Session: "in this session"}[cp.Period]
	switch cp.Scope {
	case ScopeAgent:
		return "by " + call.Agent + " " + p
	case ScopeSession:
		return "in session " + call.Session + " " + strings.TrimPrefix(p, "in this session")
	}
	return "by all agents " + p
}

func hardWhat(cp *BudgetCap, hard float64) string {
	if cp.Action == Downgrade {
		return fmt.Sprintf(", at its hard cap of $%.2f", hard)
	}
	return ""
}

func periodEndWhat(cp *BudgetCap, now time.Time) string {
	if cp.Period == Session {
		return "a new session starts"
	}
	return "the period ends (" + PeriodEnd(cp.Period, now).Format(time.RFC3339) + ")"
}

// newHost reports whether call sends to a host its agent has not sent to.
func (c *Counter) newHost(call *Call) bool {
	seen := c.hosts[call.Agent]
	for _, h := range call.Hosts {
		if !seen[h] {
			return true
		}
	}
	return false
}

// maxHosts bounds the hosts remembered per agent.
const maxHosts = 10000

func (c *Counter) rememberHosts(call *Call) {
	if len(call.Hosts) == 0 {
		return
	}
	seen := c.hosts[call.Agent]
	if seen == nil {
		seen = map[string]bool{}
		c.hosts[call.Agent] = seen
	}
	for _, h := range call.Hosts {
		if !seen[h] && len(seen) < maxHosts {
			seen[h] = true
			c.dirtyH = true
		}
	}
}

// capScopeKey is the key of a cap's total for a call, and whether the cap
// applies to it.
func capScopeKey(cp *BudgetCap, agent, session string) (string, bool) {
	switch cp.Scope {
	case ScopeGlobal:
		return "", true
	case ScopeAgent:
		if cp.ScopeID != "" && cp.ScopeID != agent {
			return "", false
		}
		return agent, true
	case ScopeSession:
		if cp.ScopeID != "" && cp.ScopeID != session || session == "" {
			return "", false
		}
		return session, true
	}
	return "", false
}

// PeriodStart is the start of the period containing t, in t's location:
// midnight, Monday midnight, the first of the month; the zero time for a
// session.
func PeriodStart(period string, t time.Time) time.Time {
	y, m, d := t.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, t.Location())
	switch period {
	case Daily:
		return day
	case Weekly:
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	case Monthly:
		return time.Date(y, m, 1, 0, 0, 0, 0, t.Location())
	}
	return time.Time{}
}

// PeriodEnd is the end of the period containing t (zero for a session).
func PeriodEnd(period string, t time.Time) time.Time {
	s := PeriodStart(period, t)
	switch period {
	case Daily:
		return s.AddDate(0, 0, 1)
	case Weekly:
		return s.AddDate(0, 0, 7)
	case Monthly:
		return s.AddDate(0, 1, 0)
	}
	return time.Time{}
}

// DayKey is the local day of t as spend rows name it.
func DayKey(t time.Time) string { return t.Format("2006-01-02") }

// periods caches the period starts of one instant.
type periods struct {
	now   time.Time
	start [3]time.Time
	done  [3]bool
}

func (p *periods) of(period string) time.Time {
	i := 0
	switch period {
	case Weekly:
		i = 1
	case Monthly:
		i = 2
	case Session:
		return time.Time{}
	}
	if !p.done[i] {
		p.start[i], p.done[i] = PeriodStart(period, p.now), true
	}
	return p.start[i]
}

// spentLocked is what cap cp's scope key spent in the period of now.
func (c *Counter) spentLocked(cp *BudgetCap, key string, now time.Time) float64 {
	p := periods{now: now}
	return c.spentIn(cp, key, &p)
}

func (c *Counter) spentIn(cp *BudgetCap, key string, p *periods) float64 {
	start := p.of(cp.Period)
	su := start.UnixNano()
	if cp.Period == Session {
		su = 0
	}
	if st, ok := c.started[cp.ID]; !ok || st != su {
		c.recomputeLocked(cp, start)
		c.started[cp.ID] = su
	}
	return c.totals[capKey{cp.ID, key}]
}

// recomputeLocked sums the rows into cap cp's totals for the period from
// start.
func (c *Counter) recomputeLocked(cp *BudgetCap, start time.Time) {
	for k := range c.totals {
		if k.cap == cp.ID {
			delete(c.totals, k)
		}
	}
	from := DayKey(start)
	for rk, sp := range c.rows {
		day, agent, session, ok := SplitSpendKey(rk)
		if !ok || cp.Period != Session && day < from {
			continue
		}
		if key, ok := capScopeKey(cp, agent, session); ok {
			c.totals[capKey{cp.ID, key}] += sp.Cost
		}
	}
}

// Alert is a budget cap's spend crossing 80% or 100% of the cap.
type Alert struct {
	Cap     BudgetCap
	Key     string // the agent or session, for per-agent or per-session caps
	Share   float64
	Spent   float64
	Message string
}

// Record adds spend of agent's session at now and returns the caps whose
// 80% or 100% mark it crossed (each once per period and scope key).
func (c *Counter) Record(agent, session string, sp Spend, now time.Time) []Alert {
	c.mu.Lock()
	defer c.mu.Unlock()
	// The totals are brought to the period before the row changes (a
	// total computed afresh reads the rows).
	befores := make([]float64, len(c.set.Caps))
	for i := range c.set.Caps {
		if key, ok := capScopeKey(&c.set.Caps[i], agent, session); ok {
			befores[i] = c.spentLocked(&c.set.Caps[i], key, now)
		}
	}
	rk := SpendKey(DayKey(now), agent, session)
	c.rows[rk] = c.rows[rk].add(sp)
	c.pending[rk] = c.pending[rk].add(sp)
	c.addCostLocked(agent, sp.Cost, now)
	var out []Alert
	for i := range c.set.Caps {
		cp := &c.set.Caps[i]
		key, ok := capScopeKey(cp, agent, session)
		if !ok {
			continue
		}
		before := befores[i]
		after := before + sp.Cost
		c.totals[capKey{cp.ID, key}] = after
		for _, share := range []float64{AlertAt, 1} {
			mark := share * cp.MaxCostUSD
			ak := fmt.Sprintf("%s|%s|%d|%v", cp.ID, key, c.started[cp.ID], share)
			if after >= mark && !c.alerted[ak] {
				c.alerted[ak] = true
				if before >= mark {
					continue // loaded above the mark: already told in its time
				}
				out = append(out, Alert{Cap: *cp, Key: key, Share: share, Spent: after, Message: alertMessage(cp, key, share, after, now)})
			}
		}
	}
	return out
}

func alertMessage(cp *BudgetCap, key string, share, spent float64, now time.Time) string {
	who := "all agents"
	switch cp.Scope {
	case ScopeAgent:
		who = "agent " + key
	case ScopeSession:
		who = "session " + key
	}
	what := map[BudgetAction]string{Stop: "its calls are refused", Notify: "it goes on", Downgrade: "the own loop switches to the cheaper model"}[cp.Action]
	if share < 1 {
		return fmt.Sprintf("budget cap %s: %s spent $%.2f, %.0f%% of $%.2f (%s); at 100%% %s", cp.ID, who, spent, 100*spent/cp.MaxCostUSD, cp.MaxCostUSD, cp.Period, what)
	}
	return fmt.Sprintf("budget cap %s: %s spent $%.2f, over the cap of $%.2f (%s): %s", cp.ID, who, spent, cp.MaxCostUSD, cp.Period, what)
}

// Status is a cap's spend for one scope key in its current period.
type Status struct {
	Cap   BudgetCap `json:"cap"`
	Key   string    `json:"key,omitempty"`
	Spent float64   `json:"spent_usd"`
	Share float64   `json:"share"`
	// Start and End bound the period (zero for a session).
	Start time.Time `json:"period_start,omitzero"`
	End   time.Time `json:"period_end,omitzero"`
}

// Budgets returns every cap's spend in its current period, one status per
// scope key that spent (a global cap always has one).
func (c *Counter) Budgets(now time.Time) []Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []Status
	for i := range c.set.Caps {
		cp := &c.set.Caps[i]
		c.spentLocked(cp, "", now)
		var keys []string
		if cp.Scope == ScopeGlobal {
			keys = []string{""}
		} else if cp.ScopeID != "" {
			keys = []string{cp.ScopeID}
		} else {
			for k := range c.totals {
				if k.cap == cp.ID {
					keys = append(keys, k.key)
				}
			}
			sort.Strings(keys)
		}
		for _, k := range keys {
			sp := c.totals[capKey{cp.ID, k}]
			out = append(out, Status{Cap: *cp, Key: k, Spent: sp, Share: sp / cp.MaxCostUSD,
				Start: PeriodStart(cp.Period, now), End: PeriodEnd(cp.Period, now)})
		}
	}
	return out
}

// LimitUse is a rate limit's count for one agent now.
type LimitUse struct {
	Limit RateLimit `json:"limit"`
	Agent string    `json:"agent"`
	Count int       `json:"count"`
	Share float64   `json:"share"`
}

// Uses returns every rate limit's count per agent that has one.
func (c *Counter) Uses(now time.Time) []LimitUse {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []LimitUse
	t := now.UnixNano()
	for _, l := range c.set.Limits {
		var agents []string
		for k := range c.windows {
			if k.limit == l.ID {
				agents = append(agents, k.agent)
			}
		}
		sort.Strings(agents)
		for _, a := range agents {
			n := c.windows[wkey{l.ID, a}].estimate(t - int64(l.Window()))
			out = append(out, LimitUse{Limit: l, Agent: a, Count: n, Share: float64(n) / float64(l.MaxCalls)})
		}
	}
	return out
}

// Rows returns a copy of the spend rows.
func (c *Counter) Rows() map[string]Spend {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]Spend, len(c.rows))
	for k, v := range c.rows {
		out[k] = v
	}
	return out
}

// NearCap reports whether a cap that applies to agent's session has
// reached AlertAt of its amount at now: from there, the spend is shared
// between processes at once rather than written behind.
func (c *Counter) NearCap(agent, session string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.set.Caps {
		cp := &c.set.Caps[i]
		if !cp.Enabled {
			continue
		}
		if key, ok := capScopeKey(cp, agent, session); ok && c.spentLocked(cp, key, now) >= AlertAt*cp.MaxCostUSD {
			return true
		}
	}
	return false
}

// NearAnyCap reports whether this process has spend not written yet while
// some cap's spend (any scope key) has reached AlertAt of its amount at now.
func (c *Counter) NearAnyCap(now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return false
	}
	p := periods{now: now}
	for i := range c.set.Caps {
		cp := &c.set.Caps[i]
		if !cp.Enabled {
			continue
		}
		c.spentIn(cp, "", &p) // brings the totals to the period
		for k, v := range c.totals {
			if k.cap == cp.ID && v >= AlertAt*cp.MaxCostUSD {
				return true
			}
		}
	}
	return false
}

// CapState is a cap that applies to a call, with its spend in the period.
type CapState struct {
	Cap   BudgetCap
	Spent float64
}

// CapsFor returns the enabled caps that apply to call's agent and session
// with their spend now.
func (c *Counter) CapsFor(call *Call) []CapState {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []CapState
	for i := range c.set.Caps {
		cp := &c.set.Caps[i]
		if !cp.Enabled {
			continue
		}
		key, ok := capScopeKey(cp, call.Agent, call.Session)
		if !ok {
			continue
		}
		out = append(out, CapState{Cap: *cp, Spent: c.spentLocked(cp, key, call.Now)})
	}
	return out
}
