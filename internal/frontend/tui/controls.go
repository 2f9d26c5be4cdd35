package tui

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/usage"
)

// The controls of unattended hours, three list views: the auto-rules
// (R: each rule, whether it is on, how often and when it last fired, and
// the selected rule's log; E turns it on or off), the anomaly rules and
// the anomaly timeline with its rollbacks (n; E turns a rule on or off),
// and the rate limits and budget caps with their current use against the
// limit (l). Changes go through the daemon's API as the person, audited
// there; making rules stays with the console and the CLI.

// ControlsAPI is what the controls views need. An API that does not
// implement it has none of them.
type ControlsAPI interface {
	AutoRules(ctx context.Context) ([]autorule.Rule, error)
	RuleLog(ctx context.Context, limit int) ([]client.RuleLogEntry, error)
	SetAutoRuleEnabled(ctx context.Context, id string, enabled bool, who string) error
	AnomalyRules(ctx context.Context) ([]autorule.AnomalyRule, error)
	AnomalyEvents(ctx context.Context) ([]kernel.AnomalyEvent, error)
	SetAnomalyRuleEnabled(ctx context.Context, id string, enabled bool, who string) error
	RateLimits(ctx context.Context) ([]usage.RateLimit, []usage.LimitUse, error)
	Budgets(ctx context.Context) ([]usage.BudgetCap, []usage.Status, error)
}

var _ ControlsAPI = ClientAPI{}

// AutoRules implements ControlsAPI.
func (a ClientAPI) AutoRules(ctx context.Context) ([]autorule.Rule, error) { return a.C.AutoRules(ctx) }

// RuleLog implements ControlsAPI.
func (a ClientAPI) RuleLog(ctx context.Context, limit int) ([]client.RuleLogEntry, error) {
	return a.C.RuleLog(ctx, "", limit)
}

// SetAutoRuleEnabled implements ControlsAPI: the rule as stored now, with
// enabled set.
func (a ClientAPI) SetAutoRuleEnabled(ctx context.Context, id string, enabled bool, who string) error {
	var r autorule.Rule
	if err := a.get(ctx, "/api/v1/auto-rules/"+url.PathEscape(id), &r); err != nil {
		return err
	}
	r.Enabled = enabled
	_, err := a.C.PutAutoRule(ctx, r, who)
	return err
}

// AnomalyRules implements ControlsAPI.
func (a ClientAPI) AnomalyRules(ctx context.Context) ([]autorule.AnomalyRule, error) {
	return a.C.AnomalyRules(ctx)
}

// AnomalyEvents implements ControlsAPI.
func (a ClientAPI) AnomalyEvents(ctx context.Context) ([]kernel.AnomalyEvent, error) {
	return a.C.AnomalyEvents(ctx)
}

// SetAnomalyRuleEnabled implements ControlsAPI.
func (a ClientAPI) SetAnomalyRuleEnabled(ctx context.Context, id string, enabled bool, who string) error {
	var r autorule.AnomalyRule
	if err := a.get(ctx, "/api/v1/anomaly/rules/"+url.PathEscape(id), &r); err != nil {
		return err
	}
	r.Enabled = enabled
	_, err := a.C.PutAnomalyRule(ctx, r, who)
	return err
}

// RateLimits implements ControlsAPI.
func (a ClientAPI) RateLimits(ctx context.Context) ([]usage.RateLimit, []usage.LimitUse, error) {
	ls, err := a.C.RateLimits(ctx)
	if err != nil {
		return nil, nil, err
	}
	us, err := a.C.RateUsage(ctx)
	return ls, us, err
}

// Budgets implements ControlsAPI.
func (a ClientAPI) Budgets(ctx context.Context) ([]usage.BudgetCap, []usage.Status, error) {
	cs, err := a.C.BudgetCaps(ctx)
	if err != nil {
		return nil, nil, err
	}
	st, err := a.C.Budgets(ctx)
	return cs, st, err
}

// controlsState is the model's part of the controls views.
type controlsState struct {
	autoRules []autorule.Rule
	ruleLog   []client.RuleLogEntry
	autoList  listView
	anomalies []autorule.AnomalyRule
	events    []kernel.AnomalyEvent
	anomList  listView
	limits    []usage.RateLimit
	uses      []usage.LimitUse
	caps      []usage.BudgetCap
	budgets   []usage.Status
}

type (
	autoRulesMsg struct {
		rules []autorule.Rule
		log   []client.RuleLogEntry
		err   error
	}
	anomalyMsg struct {
		rules  []autorule.AnomalyRule
		events []kernel.AnomalyEvent
		err    error
	}
	limitsMsg struct {
		limits  []usage.RateLimit
		uses    []usage.LimitUse
		caps    []usage.BudgetCap
		budgets []usage.Status
		err     error
	}
	// toggledMsg is the outcome of turning a rule on or off.
	toggledMsg struct {
		what, id string
		enabled  bool
		err      error
	}
)

// ruleLogShown is how many firings the auto-rules view reads.
const ruleLogShown = 200

func (m Model) controlsAPI() (ControlsAPI, bool) {
	c, ok := m.api.(ControlsAPI)
	return c, ok
}

// fetchControls reads what the view in mode shows.
func (m Model) fetchControls(md mode) tea.Cmd {
	c, ok := m.controlsAPI()
	if !ok {
		return nil
	}
	return m.call(func(cctx context.Context) tea.Msg {
		switch md {
		case modeAutoRules:
			rules, err := c.AutoRules(cctx)
			if err != nil {
				return autoRulesMsg{err: err}
			}
			log, err := c.RuleLog(cctx, ruleLogShown)
			return autoRulesMsg{rules: rules, log: log, err: err}
		case modeAnomaly:
			rules, err := c.AnomalyRules(cctx)
			if err != nil {
				return anomalyMsg{err: err}
			}
			evs, err := c.AnomalyEvents(cctx)
			return anomalyMsg{rules: rules, events: evs, err: err}
		default:
			ls, us, err := c.RateLimits(cctx)
			if err != nil {
				return limitsMsg{err: err}
			}
			cs, st, err := c.Budgets(cctx)
			return limitsMsg{limits: ls, uses: us, caps: cs, budgets: st, err: err}
		}
	})
}

// updateControls handles the controls views' messages; ok is false for
// any other message.
func (m Model) updateControls(msg tea.Msg) (Model, tea.Cmd, bool) {
	bad := func(what string, err error) {
		if m.mode == modeAutoRules || m.mode == modeAnomaly || m.mode == modeLimits {
			m.setStatus(what+": "+err.Error(), true)
		}
	}
	switch msg := msg.(type) {
	case autoRulesMsg:
		if msg.err != nil {
			bad("auto-rules", msg.err)
		} else {
			m.ctl.autoRules, m.ctl.ruleLog = msg.rules, msg.log
			m.ctl.autoList.resize(len(msg.rules))
		}
		return m, nil, true
	case anomalyMsg:
		if msg.err != nil {
			bad("anomaly rules", msg.err)
		} else {
			m.ctl.anomalies, m.ctl.events = msg.rules, msg.events
			m.ctl.anomList.resize(len(msg.rules))
		}
		return m, nil, true
	case limitsMsg:
		if msg.err != nil {
			bad("limits and budgets", msg.err)
		} else {
			m.ctl.limits, m.ctl.uses, m.ctl.caps, m.ctl.budgets = msg.limits, msg.uses, msg.caps, msg.budgets
		}
		return m, nil, true
	case toggledMsg:
		delete(m.busy, msg.what+" "+msg.id)
		if msg.err != nil {
			m.setStatus(fmt.Sprintf("turning %s %s %s failed: %v", msg.what, msg.id, onOffWord(msg.enabled), msg.err), true)
		} else {
			m.setStatus(fmt.Sprintf("%s %s: %s (audited)", msg.what, msg.id, onOffWord(msg.enabled)), false)
		}
		return m, m.fetchControls(m.mode), true
	}
	return m, nil, false
}

func onOffWord(enabled bool) string {
	if enabled {
		return "on"
	}
	return "off"
}

// controlsKey handles a key in one of the controls views.
func (m Model) controlsKey(s string) (tea.Model, tea.Cmd) {
	back := map[mode]string{modeAutoRules: "R", modeAnomaly: "n", modeLimits: "l"}[m.mode]
	var l *listView
	switch m.mode {
	case modeAutoRules:
		l = &m.ctl.autoList
	case modeAnomaly:
		l = &m.ctl.anomList
	}
	md := m.mode
	if cmd, ok := m.listKey(s, back, l, func() tea.Cmd { return m.fetchControls(md) }); ok {
		return m, cmd
	}
	if s != "E" || l == nil {
		return m, nil
	}
	api, ok := m.controlsAPI()
	i, sel := l.at()
	if !ok || !sel {
		return m, nil
	}
	var what, id string
	var enabled bool
	var set func(context.Context, string, bool, string) error
	if m.mode == modeAutoRules {
		what, id, enabled, set = "auto-rule", m.ctl.autoRules[i].ID, !m.ctl.autoRules[i].Enabled, api.SetAutoRuleEnabled
	} else {
		what, id, enabled, set = "anomaly rule", m.ctl.anomalies[i].ID, !m.ctl.anomalies[i].Enabled, api.SetAnomalyRuleEnabled
	}
	if m.busy[what+" "+id] {
		return m, nil
	}
	m.busy[what+" "+id] = true
	m.setStatus(fmt.Sprintf("turning %s %s %s…", what, id, onOffWord(enabled)), false)
	who := m.opts.Who
	return m, m.call(func(cctx context.Context) tea.Msg {
		return toggledMsg{what: what, id: id, enabled: enabled, err: set(cctx, id, enabled, who)}
	})
}

// The controls views' key lines.
const (
	autoRulesFoot = "E turn the rule on/off · j/k move · g reload · R/Esc back · q quit  (make rules: overseer auto-rules or the web console)"
	anomalyFoot   = "E turn the rule on/off · j/k move · g reload · n/Esc back · q quit  (roll back again: overseer anomaly rollback EVENT)"
	limitsFoot    = "g reload · l/Esc back · q quit  (change limits and caps: overseer limits, overseer budget or the web console)"
)

// when formats a time the controls views show.
func (m Model) when(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	t = t.Local()
	if y, mo, d := m.opts.Now().Local().Date(); t.Year() == y && t.Month() == mo && t.Day() == d {
		return t.Format("15:04:05")
	}
	return t.Format("Jan 2 15:04")
}

func triggerWhat(t autorule.Trigger) string {
	tool := orAllTools(t.Tool)
	var s string
	switch t.Type {
	case autorule.TriggerTime:
		s = fmt.Sprintf("%s %s–%s", tool, t.From, t.To)
		if len(t.Days) > 0 {
			s += " " + strings.Join(t.Days, ",")
		}
		if t.TZ != "" {
			s += " " + t.TZ
		}
	case autorule.TriggerCount:
		s = fmt.Sprintf("more than %d calls of %s in %gm", t.Count, tool, t.WindowMinutes)
	case autorule.TriggerErrors:
		s = fmt.Sprintf("%g%% errors of %s (at least %d) in %gm", t.Percent, tool, t.MinCalls, t.WindowMinutes)
	case autorule.TriggerCost:
		s = fmt.Sprintf("$%.2f of model calls in %gm", t.USD, t.WindowMinutes)
	case autorule.TriggerPattern:
		if t.Regex != "" {
			s = fmt.Sprintf("%s args match /%s/", tool, t.Regex)
		} else {
			s = fmt.Sprintf("%s args contain %q", tool, t.Text)
		}
	default:
		s = t.Type
	}
	if t.Agent != "" {
		s += " · agent " + t.Agent
	}
	return s
}

func orAllTools(tool string) string {
	if tool == "" {
		return "any tool"
	}
	return tool
}

// renderAutoRules renders the auto-rules view below the header.
func (m Model) renderAutoRules(add func(string), rule func(string)) {
	rule("Auto-rules (a trigger on the audit trail, an action on the next calls), by priority")
	if _, ok := m.controlsAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	rows := make([]listRow, 0, len(m.ctl.autoRules))
	for _, r := range m.ctl.autoRules {
		act := r.Action.Type
		if r.Action.DurationMinutes > 0 {
			act += fmt.Sprintf(" for %gm", r.Action.DurationMinutes)
		}
		line := fmt.Sprintf("%s %s  %s → %s · prio %d · fired %d× · last %s", onOff(r.Enabled), r.Name, r.Trigger.Type, act,
			r.Priority, r.TimesTriggered, m.when(r.LastTriggered))
		if !r.Enabled {
			line += " (off)"
		}
		if m.busy["auto-rule "+r.ID] {
			line += " · sending…"
		}
		row := listRow{line: line, faint: !r.Enabled, sub: []string{r.ID + ": " + triggerWhat(r.Trigger)}}
		n := 0
		for _, e := range m.ctl.ruleLog {
			if e.Fired == nil || e.Fired.RuleID != r.ID {
				continue
			}
			if n == 5 {
				row.open = append(row.open, stFaint.Render("… more: overseer auto-rules log --rule "+r.ID))
				break
			}
			n++
			at, _ := time.Parse(time.RFC3339Nano, e.Time)
			row.open = append(row.open, fmt.Sprintf("%s  %s %s → %s  %s", m.when(at), orDash(e.Agent), e.Tool, lvl(e.Fired.Verdict),
				stFaint.Render(oneLine(e.Fired.Message))))
		}
		if n == 0 {
			row.open = append(row.open, stFaint.Render("never fired (in the last "+fmt.Sprint(ruleLogShown)+" firings)"))
		}
		rows = append(rows, row)
	}
	sel, _ := m.ctl.autoList.at()
	renderRows(add, rows, sel, "No auto-rule. Add one with `overseer auto-rules add`, a template (night-mode, weekend-safety) or the web console.")
}

// renderAnomaly renders the anomaly view below the header.
func (m Model) renderAnomaly(add func(string), rule func(string)) {
	rule("Anomaly rules (a burst of calls stops the agent, and may roll back its last changes)")
	if _, ok := m.controlsAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	rows := make([]listRow, 0, len(m.ctl.anomalies))
	for _, r := range m.ctl.anomalies {
		line := fmt.Sprintf("%s %s  %s: %d in %ds", onOff(r.Enabled), r.Name, orAllTools(r.Tool), r.ThresholdCount, r.WindowSeconds)
		if r.BaselineMultiplier > 0 {
			line += fmt.Sprintf(" and %g× the baseline", r.BaselineMultiplier)
		}
		line += " → " + r.Action
		if r.Action == "stop_and_rollback" {
			depth := r.Rollback
			if depth <= 0 {
				depth = autorule.DefaultRollback
			}
			line += fmt.Sprintf(" (the last %d)", depth)
		}
		if !r.Enabled {
			line += " (off)"
		}
		if m.busy["anomaly rule "+r.ID] {
			line += " · sending…"
		}
		sub := r.ID
		if r.Agent != "" {
			sub += " · agent " + r.Agent
		}
		rows = append(rows, listRow{line: line, faint: !r.Enabled, sub: []string{sub}})
	}
	sel, _ := m.ctl.anomList.at()
	renderRows(add, rows, sel, "No anomaly rule. Add one with `overseer anomaly add` or the web console.")

	rule("Anomalies, newest first, and their rollbacks")
	if len(m.ctl.events) == 0 {
		add(stFaint.Render("  No anomaly detected."))
	}
	room := max(4, m.height-12-2*len(rows))
	for _, ev := range m.ctl.events {
		if room <= 0 {
			add(stFaint.Render("  … more: overseer anomaly events"))
			break
		}
		state := ""
		switch {
		case ev.Paused:
			state = stBad.Render("stopped, paused")
		case ev.Stopped:
			state = stBad.Render("stopped")
		default:
			state = "told"
		}
		base := ""
		if ev.Baseline >= 0 {
			base = fmt.Sprintf(" (baseline %.1f)", ev.Baseline)
		}
		add(fmt.Sprintf("  %s  %s · %s · %s · %d in %ds%s · %s", m.when(ev.At), ev.RuleName, ev.Agent, ev.Tool, ev.Count, ev.WindowSeconds, base, state))
		room--
		for _, rb := range ev.Rollbacks {
			var names, errs []string
			for _, u := range rb.Undone {
				for _, p := range u.Paths {
					names = append(names, shortPath(p))
				}
				if u.Error != "" {
					errs = append(errs, u.Error)
				}
			}
			line := fmt.Sprintf("    ↩ %s by %s: %d undone", m.when(rb.At), rb.Who, len(rb.Undone))
			if len(names) > 0 {
				line += " (" + strings.Join(names, ", ") + ")"
			}
			if len(rb.Skipped) > 0 {
				line += fmt.Sprintf(", %d skipped (commands are only stopped)", len(rb.Skipped))
			}
			if len(errs) > 0 {
				add(stBad.Render(line + " — " + oneLine(strings.Join(errs, "; "))))
			} else {
				add(stFaint.Render(line))
			}
			room--
		}
		if len(ev.Rollbacks) == 0 && ev.Action == "stop_and_rollback" {
			add(stFaint.Render("    nothing to roll back"))
			room--
		}
	}
}

// shortPath is a path's last two elements.
func shortPath(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 2 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return p
}

// renderLimits renders the limits and budgets view below the header.
func (m Model) renderLimits(add func(string), rule func(string)) {
	rule("Rate limits (calls in the window against the limit, per agent)")
	if _, ok := m.controlsAPI(); !ok {
		add(stFaint.Render("  Not available here."))
		return
	}
	rows := make([]listRow, 0, len(m.ctl.limits))
	for _, l := range m.ctl.limits {
		what := orDash(l.Agent) + " · " + orAllTools(l.Tool)
		if l.Risk != "" {
			what += " at " + l.Risk + "+"
		}
		if l.Effect != "" {
			what += " that " + l.Effect
		}
		name := l.ID
		if l.Name != "" {
			name += " " + l.Name
		}
		row := listRow{line: fmt.Sprintf("%s %s  %s: at most %d in %s → %s", onOff(l.Enabled), name, what, l.MaxCalls, l.Window(), l.Action),
			faint: !l.Enabled}
		for _, u := range m.ctl.uses {
			if u.Limit.ID == l.ID {
				row.sub = append(row.sub, fmt.Sprintf("%-16s %s %d/%d", short(orDash(u.Agent), 16), gauge(u.Share, 20), u.Count, l.MaxCalls))
			}
		}
		if len(row.sub) == 0 {
			row.sub = []string{"no calls counted in the window"}
		}
		rows = append(rows, row)
	}
	renderRows(add, rows, -1, "No rate limit. Add one with `overseer limits add` or the web console.")

	rule("Budget caps (model spend in the period against the cap)")
	rows = rows[:0]
	for _, c := range m.ctl.caps {
		scope := c.Scope
		if c.ScopeID != "" {
			scope += " " + c.ScopeID
		}
		name := c.ID
		if c.Name != "" {
			name += " " + c.Name
		}
		row := listRow{line: fmt.Sprintf("%s %s  %s, %s: $%.2f → %s", onOff(c.Enabled), name, scope, c.Period, c.MaxCostUSD, c.Action),
			faint: !c.Enabled}
		for _, st := range m.ctl.budgets {
			if st.Cap.ID != c.ID {
				continue
			}
			who := "all agents"
			if st.Key != "" {
				who = st.Key
			}
			line := fmt.Sprintf("%-16s %s $%.2f of $%.2f", short(who, 16), gauge(st.Share, 20), st.Spent, c.MaxCostUSD)
			if !st.End.IsZero() {
				line += " · until " + m.when(st.End)
			}
			row.sub = append(row.sub, line)
		}
		if len(row.sub) == 0 {
			row.sub = []string{"nothing spent in the period"}
		}
		rows = append(rows, row)
	}
	renderRows(add, rows, -1, "No budget cap. Add one with `overseer budget add` or the web console.")
}
