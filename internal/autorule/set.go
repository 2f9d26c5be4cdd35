package autorule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"time"
	_ "time/tzdata" // time_based rules name zones; a CGO-less binary must know them everywhere

	"github.com/overseer-dev/overseer/internal/action"
)

// Set is the compiled, immutable form of the enabled rules: indexed by the
// tool name or kind they name, so that a call is checked against the
// rules that can match it only. Checking reads memory only.
type Set struct {
	rules     []*compiledRule // by priority
	byTool    map[string][]*compiledRule
	wild      []*compiledRule // tool empty or a glob
	anomalies []*compiledAnomaly
	maxWindow time.Duration
}

type compiledRule struct {
	Rule
	toolMatch  matcher
	agentMatch matcher
	actMatch   matcher // block_tool's tool, when it names one
	re         *regexp.Regexp
	text       string // lower case
	from, to   int
	days       uint8 // bit per weekday; 0: every day
	loc        *time.Location
	window     time.Duration
	hold       time.Duration
}

type compiledAnomaly struct {
	AnomalyRule
	toolMatch, agentMatch matcher
}

// matcher matches a tool name or kind (or an agent) against a name or
// glob; the empty pattern matches everything.
type matcher struct {
	pat    string
	glob   bool
	prefix string // set for "prefix*": matched without path.Match
}

func newMatcher(p string) matcher {
	m := matcher{pat: p, glob: strings.ContainsAny(p, "*?[\\")}
	if rest, ok := strings.CutSuffix(p, "*"); ok && m.glob && !strings.ContainsAny(rest, "*?[\\/") {
		m.prefix = rest
	}
	return m
}

func (m matcher) one(s string) bool {
	switch {
	case m.pat == "":
		return true
	case !m.glob:
		return m.pat == s
	case m.prefix != "":
		return strings.HasPrefix(s, m.prefix) && !strings.Contains(s[len(m.prefix):], "/")
	}
	ok, _ := path.Match(m.pat, s)
	return ok
}

func (m matcher) call(tool, kind string) bool { return m.one(tool) || m.one(kind) }

// Compile builds the Set of the enabled rules. A rule that does not
// validate is an error (the caller keeps its previous Set and fails
// closed).
func Compile(rules []Rule, anomalies []AnomalyRule) (*Set, error) {
	s := &Set{byTool: map[string][]*compiledRule{}}
	for i := range rules {
		r := rules[i]
		if !r.Enabled {
			continue
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("auto-rule %s: %w", r.ID, err)
		}
		c := &compiledRule{Rule: r, toolMatch: newMatcher(r.Trigger.Tool), agentMatch: newMatcher(r.Trigger.Agent)}
		t := &r.Trigger
		switch t.Type {
		case TriggerTime:
			c.from, _ = parseClock(t.From)
			c.to, _ = parseClock(t.To)
			c.loc, _ = loadZone(t.TZ)
			for _, d := range t.Days {
				c.days |= 1 << weekdays[strings.ToLower(d)]
			}
		case TriggerPattern:
			if t.Regex != "" {
				c.re = regexp.MustCompile(t.Regex) // validated above
			}
			c.text = strings.ToLower(t.Text)
		}
		c.window = time.Duration(t.WindowMinutes * float64(time.Minute))
		c.hold = time.Duration(r.Action.DurationMinutes * float64(time.Minute))
		if r.Action.Type == ActBlockTool && r.Action.Tool != "" {
			c.actMatch = newMatcher(r.Action.Tool)
		} else {
			c.actMatch = c.toolMatch
		}
		s.maxWindow = max(s.maxWindow, c.window)
		s.rules = append(s.rules, c)
	}
	slices.SortStableFunc(s.rules, func(a, b *compiledRule) int {
		if a.Priority != b.Priority {
			return a.Priority - b.Priority
		}
		return strings.Compare(a.ID, b.ID)
	})
	for _, c := range s.rules {
		// A block_tool rule whose action names another tool than its
		// trigger must be seen by calls of either.
		keys := []matcher{c.toolMatch}
		if c.actMatch != c.toolMatch {
			keys = append(keys, c.actMatch)
		}
		wild := false
		for _, m := range keys {
			if m.pat == "" || m.glob {
				wild = true
			}
		}
		if wild {
			s.wild = append(s.wild, c)
			continue
		}
		for _, m := range keys {
			s.byTool[m.pat] = append(s.byTool[m.pat], c)
		}
	}
	for i := range anomalies {
		r := anomalies[i]
		if !r.Enabled {
			continue
		}
		if err := r.Validate(); err != nil {
			return nil, fmt.Errorf("anomaly rule %s: %w", r.ID, err)
		}
		s.anomalies = append(s.anomalies, &compiledAnomaly{AnomalyRule: r, toolMatch: newMatcher(r.Tool), agentMatch: newMatcher(r.Agent)})
		s.maxWindow = max(s.maxWindow, r.Window())
	}
	return s, nil
}

// Empty reports whether the set has no rule.
func (s *Set) Empty() bool { return s == nil || len(s.rules) == 0 && len(s.anomalies) == 0 }

// MaxWindow is the longest window a rule counts over.
func (s *Set) MaxWindow() time.Duration {
	if s == nil {
		return 0
	}
	return s.maxWindow
}

// Rules returns the compiled rules, by priority.
func (s *Set) Rules() []Rule {
	if s == nil {
		return nil
	}
	out := make([]Rule, len(s.rules))
	for i, c := range s.rules {
		out[i] = c.Rule
	}
	return out
}

// Finding is one rule that fires on a call.
type Finding struct {
	// RuleID and RuleName name the auto-rule or the anomaly rule.
	RuleID   string `json:"rule_id"`
	RuleName string `json:"rule_name"`
	Anomaly  bool   `json:"anomaly,omitempty"`
	// Action is the rule's action (an auto-rule's action type, or the
	// anomaly rule's action).
	Action string `json:"action"`
	// Level is the level the finding asks for: a floor for tightening
	// findings; for auto_approve the level to lower to; unset for
	// downgrade_risk (one step below the policy's decision).
	// Tightening findings ask for notify at least, so that every finding
	// is in the verdict's reasons.
	Level action.Level `json:"level"`
	// Loosens is set for auto_approve and downgrade_risk.
	Loosens bool `json:"loosens,omitempty"`
	// Stop asks the agent to stop (pause_agent, an anomaly that stops).
	Stop bool `json:"stop,omitempty"`
	// Notify: people are told over Channels (empty: every channel).
	Notify   bool     `json:"notify,omitempty"`
	Channels []string `json:"channels,omitempty"`
	// HoldUntil is set when the trigger fired now and the action lasts
	// (block_tool with a duration): until then the tool stays blocked.
	HoldUntil time.Time `json:"hold_until,omitzero"`
	// Held is set when the finding comes from an earlier firing's hold.
	Held bool `json:"held,omitempty"`
	// Count and Baseline are an anomaly's figures (Baseline: the agent's
	// average per window, -1 when not asked for).
	Count    int     `json:"count,omitempty"`
	Baseline float64 `json:"baseline,omitempty"`
	Message  string  `json:"message"`
}

// Baseline returns the agent's average number of matching calls per
// window over its history (see AnomalyRule.BaselineDays), for an anomaly
// rule whose threshold was reached. ok false means unknown.
type Baseline func(agent string, r *AnomalyRule) (avg float64, ok bool)

// Spend tells what an agent's model calls cost after from and up to to:
// the budget store's record (package usage), which every process sharing
// the database writes — costs are not in the audit trail.
type Spend interface {
	CostBetween(agent string, from, to time.Time) float64
}

// Env is what a check reads besides the call.
type Env struct {
	Now      time.Time
	Counters *Counters // nil: no counts (count and error triggers and anomalies cannot fire)
	Spend    Spend     // nil: no spend (cost triggers cannot fire)
	Holds    *Holds    // nil: no holds
	Baseline Baseline  // nil: the baseline test is skipped (the threshold alone decides)
}

// Check returns the findings of the rules that fire on a. The call itself
// counts: a count of N means this is the Nth call in the window.
func (s *Set) Check(a *action.Action, env Env) []Finding {
	if s.Empty() {
		return nil
	}
	var out []Finding
	var argText *[2]string
	lists := [...][]*compiledRule{s.byTool[a.Tool], s.byTool[string(a.Kind)], s.wild}
	if string(a.Kind) == a.Tool {
		lists[1] = nil // the same list twice (a tool named as its kind)
	}
	for _, list := range lists {
		for _, c := range list {
			if f, ok := c.check(a, env, &argText); ok {
				out = append(out, f)
			}
		}
	}
	if len(out) > 1 {
		// Indexed lists are each in priority order; merge them.
		slices.SortStableFunc(out, func(x, y Finding) int { return s.priority(x.RuleID) - s.priority(y.RuleID) })
		out = slices.CompactFunc(out, func(x, y Finding) bool { return x.RuleID == y.RuleID })
	}
	for _, c := range s.anomalies {
		if f, ok := c.check(a, env); ok {
			out = append(out, f)
		}
	}
	return out
}

// MatchesAnomaly reports whether anomaly rule id counts a's calls (its
// tool and agent), whatever the counts.
func (s *Set) MatchesAnomaly(id string, a *action.Action) bool {
	if s == nil {
		return false
	}
	for _, c := range s.anomalies {
		if c.ID == id {
			return c.agentMatch.one(a.Agent) && c.toolMatch.call(a.Tool, string(a.Kind))
		}
	}
	return false
}

func (s *Set) priority(id string) int {
	for _, c := range s.rules {
		if c.ID == id {
			return c.Priority
		}
	}
	return 0
}

func (c *compiledRule) check(a *action.Action, env Env, argText **[2]string) (Finding, bool) {
	if !c.agentMatch.one(a.Agent) {
		return Finding{}, false
	}
	onTrigger := c.toolMatch.call(a.Tool, string(a.Kind))
	onAction := c.Action.Type == ActBlockTool && c.actMatch.call(a.Tool, string(a.Kind))
	f := Finding{RuleID: c.ID, RuleName: c.Name, Action: c.Action.Type, Channels: c.Action.Channels, Notify: c.Action.Notify}
	if onAction && env.Holds != nil {
		if until, ok := env.Holds.Until(c.ID, a.Agent, env.Now); ok {
			f.Held = true
			f.Level = action.Block
			f.Notify = false
			f.Message = fmt.Sprintf("auto-rule %q blocks %s until %s", c.Name, a.Tool, until.UTC().Format(time.RFC3339))
			return f, true
		}
	}
	if !onTrigger && !(onAction && c.Trigger.Type != TriggerTime && c.Trigger.Type != TriggerPattern) {
		return Finding{}, false
	}
	why, ok := c.fires(a, env, onTrigger, argText)
	if !ok {
		return Finding{}, false
	}
	switch c.Action.Type {
	case ActBlockTool:
		if !onAction && c.hold == 0 {
			return Finding{}, false // fired, but this call is not of the tool it blocks
		}
		f.Level = action.Block
		if c.hold > 0 {
			f.HoldUntil = env.Now.Add(c.hold)
		}
		if !onAction {
			// The trigger fired on another tool: the hold blocks the
			// next calls of the tool; this one runs, and people are told.
			f.Level = action.Notify
		}
	case ActRequireApproval:
		f.Level = action.Approve
		if c.Action.Level == "confirm" {
			f.Level = action.Confirm
		}
	case ActPauseAgent:
		f.Level, f.Stop = action.Block, true
	case ActNotify:
		f.Level, f.Notify = action.Notify, true
	case ActAutoApprove:
		f.Level, f.Loosens = action.Auto, true
	case ActDowngradeRisk:
		f.Level, f.Loosens = action.Unset, true
	}
	f.Message = fmt.Sprintf("auto-rule %q (%s → %s): %s", c.Name, c.Trigger.Type, c.Action.Type, why)
	return f, true
}

// fires reports whether the trigger holds for a, and why.
func (c *compiledRule) fires(a *action.Action, env Env, self bool, argText **[2]string) (string, bool) {
	t := &c.Trigger
	this := 0
	if self {
		this = 1
	}
	switch t.Type {
	case TriggerTime:
		now := env.Now.In(c.loc)
		m := minuteOf(now)
		day := now.Weekday()
		var in bool
		switch {
		case c.from < c.to:
			in = m >= c.from && m < c.to
		case m >= c.from:
			in = true
		case m < c.to:
			// A window past midnight belongs to the day it starts on.
			in, day = true, (day+6)%7
		}
		if !in || c.days != 0 && c.days&(1<<day) == 0 {
			return "", false
		}
		return fmt.Sprintf("it is %s (%s), within %s–%s", now.Format("Mon 15:04"), c.loc, t.From, t.To), true
	case TriggerPattern:
		if *argText == nil {
			// Not HTML-escaped: a pattern with < > & matches as written.
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			s := ""
			if err := enc.Encode(a.Args); err == nil {
				s = strings.TrimSuffix(buf.String(), "\n")
			} else {
				s = fmt.Sprint(a.Args)
			}
			*argText = &[2]string{s, strings.ToLower(s)}
		}
		if c.re != nil {
			if c.re.MatchString((*argText)[0]) {
				return fmt.Sprintf("the arguments match /%s/", t.Regex), true
			}
			return "", false
		}
		if strings.Contains((*argText)[1], c.text) {
			return fmt.Sprintf("the arguments contain %q", t.Text), true
		}
		return "", false
	}
	since := env.Now.Add(-c.window)
	if t.Type == TriggerCost {
		if env.Spend == nil {
			return "", false
		}
		if usd := env.Spend.CostBetween(a.Agent, since, env.Now); usd >= t.USD {
			return fmt.Sprintf("model calls cost $%.2f within %s, at least $%.2f", usd, c.window, t.USD), true
		}
		return "", false
	}
	if env.Counters == nil {
		return "", false
	}
	switch t.Type {
	case TriggerCount:
		n := env.Counters.Calls(a.Agent, since, c.toolMatch) + this
		if n > t.Count {
			return fmt.Sprintf("%d calls of %s within %s, over %d", n, orAll(t.Tool), c.window, t.Count), true
		}
	case TriggerErrors:
		total, failed := env.Counters.Results(a.Agent, since, c.toolMatch)
		if total > 0 && total >= max(t.MinCalls, 1) && float64(failed)*100 >= t.Percent*float64(total) {
			return fmt.Sprintf("%d of %d results of %s within %s were errors (%.0f%%, threshold %.0f%%)",
				failed, total, orAll(t.Tool), c.window, float64(failed)*100/float64(total), t.Percent), true
		}
	}
	return "", false
}

func minuteOf(t time.Time) int { return t.Hour()*60 + t.Minute() }

func orAll(tool string) string {
	if tool == "" {
		return "any tool"
	}
	return tool
}

func (c *compiledAnomaly) check(a *action.Action, env Env) (Finding, bool) {
	if env.Counters == nil || !c.agentMatch.one(a.Agent) || !c.toolMatch.call(a.Tool, string(a.Kind)) {
		return Finding{}, false
	}
	if env.Holds != nil {
		if _, ok := env.Holds.Until(c.ID, a.Agent, env.Now); ok {
			return Finding{}, false // fired already; its response (pause) is under way
		}
	}
	n := env.Counters.Calls(a.Agent, env.Now.Add(-c.Window()), c.toolMatch) + 1
	if n < c.ThresholdCount {
		return Finding{}, false
	}
	f := Finding{RuleID: c.ID, RuleName: c.Name, Anomaly: true, Action: c.Action, Count: n, Baseline: -1,
		Notify: true, Channels: c.NotifyChannels}
	msg := fmt.Sprintf("anomaly rule %q: %s made %d calls of %s within %s (threshold %d)", c.Name, a.Agent, n, orAll(c.Tool), c.Window(), c.ThresholdCount)
	if c.BaselineMultiplier > 0 && env.Baseline != nil {
		avg, ok := env.Baseline(a.Agent, &c.AnomalyRule)
		if ok {
			f.Baseline = avg
			if float64(n) < c.BaselineMultiplier*avg {
				return Finding{}, false // busy, but not unusual for this agent
			}
			msg += fmt.Sprintf(", %.1f× its usual %.1f per window", float64(n)/max(avg, 0.1), avg)
		} else {
			msg += "; its usual rate is unknown"
		}
	}
	f.Message = msg
	// Held for the window: the burst's next calls do not fire again.
	f.HoldUntil = env.Now.Add(c.Window())
	if c.Stops() {
		f.Level, f.Stop = action.Block, true
	} else {
		f.Level = action.Notify
	}
	return f, true
}
