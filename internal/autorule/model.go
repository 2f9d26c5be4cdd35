// Package autorule holds the hybrid controls of unattended hours that react
// to the audit trail (seed 003, parts 3 and 4): auto-rules — a trigger on
// the trail (count_threshold, error_rate, time_based, cost_threshold,
// pattern_match) and an action (auto_approve, block_tool, pause_agent,
// notify, downgrade_risk, require_approval) — and anomaly rules — a burst
// of calls of one agent over a threshold and over its own baseline, which
// stops the agent and may roll back its last reversible actions.
//
// The package decodes and validates rules strictly, compiles the enabled
// ones into an immutable Set indexed by tool and kind, and keeps the
// sliding-window Counters the triggers read. Checking a call against a Set
// is pure and reads memory only: the firewall calls it on the hot path. It
// decides nothing on its own and performs nothing: the engine turns its
// findings into reasons of a verdict, and the kernel carries out what must
// happen after the audit write (pause, rollback, notify).
package autorule

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// ErrInvalid is wrapped by every validation error.
var ErrInvalid = errors.New("invalid rule")

// Trigger types.
const (
	TriggerCount   = "count_threshold"
	TriggerErrors  = "error_rate"
	TriggerTime    = "time_based"
	TriggerCost    = "cost_threshold"
	TriggerPattern = "pattern_match"
)

// Action types.
const (
	ActAutoApprove     = "auto_approve"
	ActBlockTool       = "block_tool"
	ActPauseAgent      = "pause_agent"
	ActNotify          = "notify"
	ActDowngradeRisk   = "downgrade_risk"
	ActRequireApproval = "require_approval"
)

// Anomaly actions.
const (
	AnomalyStop         = "stop"
	AnomalyStopRollback = "stop_and_rollback"
	AnomalyNotify       = "notify"
)

// DefaultPriority is a rule's priority when none is given (lower is
// earlier), and DefaultRollback how many reversible actions an anomaly
// rolls back.
const (
	DefaultPriority = 100
	DefaultRollback = 10
	// MaxRollback bounds a rule's rollback depth.
	MaxRollback = 1000
	// MaxWindow bounds every window a rule counts over.
	MaxWindow = 31 * 24 * time.Hour
)

// Trigger is when an auto-rule fires. Which fields apply depends on Type.
type Trigger struct {
	Type string `json:"type"`
	// Tool limits the rule to calls of a tool: a tool name as the agent
	// spells it, or a canonical kind (shell, file_write, …); a glob (*, ?)
	// matches either. Empty: every call.
	Tool string `json:"tool,omitempty"`
	// Agent limits the rule to one agent (a glob); empty: every agent,
	// each counted on its own.
	Agent string `json:"agent,omitempty"`

	// count_threshold: more than Count calls within WindowMinutes.
	Count         int     `json:"count,omitempty"`
	WindowMinutes float64 `json:"window_minutes,omitempty"`
	// error_rate: at least Percent of the agent's results within
	// WindowMinutes were errors, over at least MinCalls results.
	Percent  float64 `json:"percent,omitempty"`
	MinCalls int     `json:"min_calls,omitempty"`
	// time_based: from From to To ("22:00" to "06:00" wraps midnight) on
	// Days (mon … sun; empty: every day), in the time zone TZ (an IANA
	// name; empty: UTC).
	From string   `json:"from,omitempty"`
	To   string   `json:"to,omitempty"`
	Days []string `json:"days,omitempty"`
	TZ   string   `json:"tz,omitempty"`
	// cost_threshold: the agent's model calls cost at least USD within
	// WindowMinutes.
	USD float64 `json:"usd,omitempty"`
	// pattern_match: Text (case-insensitive) or Regex (RE2) found in the
	// call's arguments.
	Text  string `json:"text,omitempty"`
	Regex string `json:"regex,omitempty"`
}

// Action is what an auto-rule does when it fires.
type Action struct {
	Type string `json:"type"`
	// Tool is the tool block_tool blocks (default: the trigger's tool).
	Tool string `json:"tool,omitempty"`
	// DurationMinutes is how long block_tool blocks the tool after the
	// trigger fired (0: only while the trigger holds).
	DurationMinutes float64 `json:"duration_minutes,omitempty"`
	// Level is what require_approval asks: confirm or approve (default).
	Level string `json:"level,omitempty"`
	// Channels are the notification channels (by name in notify.yaml;
	// "web" is the console) a notify action, or any action with Notify,
	// tells. Empty: every channel.
	Channels []string `json:"channels,omitempty"`
	// Notify also tells people when another action fires.
	Notify bool `json:"notify,omitempty"`
	// Scope is informational for auto_approve (the seed's "session").
	Scope string `json:"scope,omitempty"`
}

// Rule is one auto-rule.
type Rule struct {
	ID          string  `json:"id"`
	Name        string  `json:"name"`
	Description string  `json:"description,omitempty"`
	Trigger     Trigger `json:"trigger"`
	Action      Action  `json:"action"`
	// Priority orders the rules (lower first): the first loosening rule
	// that matches is the one applied.
	Priority int  `json:"priority"`
	Enabled  bool `json:"enabled"`
	// Template names the template the rule was made from, if any.
	Template       string    `json:"template,omitempty"`
	TimesTriggered int       `json:"times_triggered"`
	LastTriggered  time.Time `json:"last_triggered,omitzero"`
	CreatedAt      time.Time `json:"created_at,omitzero"`
	CreatedBy      string    `json:"created_by,omitempty"`
	UpdatedAt      time.Time `json:"updated_at,omitzero"`
}

// Loosens reports whether the rule's action may lower a level: such rules
// live in the user layer and never go below an admin rule or a hard guard.
func (r *Rule) Loosens() bool {
	return r.Action.Type == ActAutoApprove || r.Action.Type == ActDowngradeRisk
}

// AnomalyRule is a burst of calls that stops an agent.
type AnomalyRule struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Tool is a tool name or kind (a glob); empty: every call.
	Tool string `json:"tool_name,omitempty"`
	// Agent limits the rule to matching agents (a glob); empty: all.
	Agent string `json:"agent,omitempty"`
	// ThresholdCount calls within WindowSeconds by one agent are an
	// anomaly …
	ThresholdCount int `json:"threshold_count"`
	WindowSeconds  int `json:"window_seconds"`
	// … when they are also at least BaselineMultiplier times the agent's
	// own average over such windows in the last BaselineDays days (0: no
	// baseline test).
	BaselineMultiplier float64 `json:"baseline_multiplier,omitempty"`
	BaselineDays       int     `json:"baseline_days,omitempty"`
	// Action is stop, stop_and_rollback or notify.
	Action string `json:"action"`
	// Rollback is how many of the agent's last reversible actions
	// stop_and_rollback undoes (default 10).
	Rollback       int       `json:"rollback,omitempty"`
	NotifyChannels []string  `json:"notify_channels,omitempty"`
	Enabled        bool      `json:"enabled"`
	CreatedAt      time.Time `json:"created_at,omitzero"`
	CreatedBy      string    `json:"created_by,omitempty"`
	UpdatedAt      time.Time `json:"updated_at,omitzero"`
}

// Window is the rule's window.
func (r *AnomalyRule) Window() time.Duration { return time.Duration(r.WindowSeconds) * time.Second }

// RollbackDepth is how many actions the rule rolls back.
func (r *AnomalyRule) RollbackDepth() int {
	if r.Rollback <= 0 {
		return DefaultRollback
	}
	return r.Rollback
}

// Stops reports whether the rule stops the agent.
func (r *AnomalyRule) Stops() bool { return r.Action == AnomalyStop || r.Action == AnomalyStopRollback }

// decodeStrict decodes one JSON value, refusing unknown fields and
// trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: trailing data after the rule", ErrInvalid)
	}
	return nil
}

// DecodeRule decodes a rule strictly and validates it, filling in the
// defaults (priority, enabled when "enabled" is absent).
func DecodeRule(b []byte) (Rule, error) {
	var probe struct {
		Enabled  *bool `json:"enabled"`
		Priority *int  `json:"priority"`
	}
	_ = json.Unmarshal(b, &probe)
	var r Rule
	if err := decodeStrict(b, &r); err != nil {
		return Rule{}, err
	}
	if probe.Enabled == nil {
		r.Enabled = true
	}
	if probe.Priority == nil {
		r.Priority = DefaultPriority
	}
	if err := r.Validate(); err != nil {
		return Rule{}, err
	}
	return r, nil
}

// DecodeAnomalyRule decodes an anomaly rule strictly and validates it.
func DecodeAnomalyRule(b []byte) (AnomalyRule, error) {
	var probe struct {
		Enabled *bool `json:"enabled"`
	}
	_ = json.Unmarshal(b, &probe)
	var r AnomalyRule
	if err := decodeStrict(b, &r); err != nil {
		return AnomalyRule{}, err
	}
	if probe.Enabled == nil {
		r.Enabled = true
	}
	if r.Action == "" {
		r.Action = AnomalyStopRollback
	}
	if err := r.Validate(); err != nil {
		return AnomalyRule{}, err
	}
	return r, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalid, fmt.Sprintf(format, args...))
}

func checkGlob(what, g string) error {
	if _, err := path.Match(g, ""); err != nil {
		return invalid("%s %q is not a valid glob", what, g)
	}
	return nil
}

func checkWindow(minutes float64) error {
	if minutes <= 0 || time.Duration(minutes*float64(time.Minute)) > MaxWindow {
		return invalid("window_minutes must be above 0 and at most %s", MaxWindow)
	}
	return nil
}

// Validate checks a rule.
func (r *Rule) Validate() error {
	if strings.TrimSpace(r.Name) == "" {
		return invalid("a rule needs a name")
	}
	if len(r.Name) > 200 || len(r.Description) > 2000 {
		return invalid("name or description too long")
	}
	t := &r.Trigger
	if err := checkGlob("tool", t.Tool); err != nil {
		return err
	}
	if err := checkGlob("agent", t.Agent); err != nil {
		return err
	}
	switch t.Type {
	case TriggerCount:
		if t.Count <= 0 {
			return invalid("count_threshold needs a count above 0")
		}
		if err := checkWindow(t.WindowMinutes); err != nil {
			return err
		}
	case TriggerErrors:
		if t.Percent <= 0 || t.Percent > 100 {
			return invalid("error_rate needs a percent in (0, 100]")
		}
		if t.MinCalls < 0 {
			return invalid("min_calls must not be negative")
		}
		if err := checkWindow(t.WindowMinutes); err != nil {
			return err
		}
	case TriggerTime:
		if _, err := parseClock(t.From); err != nil {
			return invalid("from: %v", err)
		}
		if _, err := parseClock(t.To); err != nil {
			return invalid("to: %v", err)
		}
		if t.From == t.To {
			return invalid("from and to are the same time")
		}
		for _, d := range t.Days {
			if _, ok := weekdays[strings.ToLower(d)]; !ok {
				return invalid("unknown day %q (mon … sun)", d)
			}
		}
		if _, err := loadZone(t.TZ); err != nil {
			return invalid("tz: %v", err)
		}
	case TriggerCost:
		if t.USD <= 0 {
			return invalid("cost_threshold needs usd above 0")
		}
		if err := checkWindow(t.WindowMinutes); err != nil {
			return err
		}
	case TriggerPattern:
		if (t.Text == "") == (t.Regex == "") {
			return invalid("pattern_match needs text or regex (one of them)")
		}
		if len(t.Text) > 1000 || len(t.Regex) > 1000 {
			return invalid("pattern too long")
		}
		if t.Regex != "" {
			if _, err := regexp.Compile(t.Regex); err != nil {
				return invalid("regex: %v", err)
			}
		}
	default:
		return invalid("unknown trigger type %q", t.Type)
	}
	if t.Type != TriggerCount && t.Count != 0 || t.Type != TriggerErrors && (t.Percent != 0 || t.MinCalls != 0) ||
		t.Type != TriggerTime && (t.From != "" || t.To != "" || len(t.Days) > 0 || t.TZ != "") ||
		t.Type != TriggerCost && t.USD != 0 || t.Type != TriggerPattern && (t.Text != "" || t.Regex != "") ||
		(t.Type == TriggerTime || t.Type == TriggerPattern) && t.WindowMinutes != 0 {
		return invalid("the trigger has fields that do not belong to %s", t.Type)
	}
	a := &r.Action
	if err := checkGlob("action tool", a.Tool); err != nil {
		return err
	}
	switch a.Type {
	case ActAutoApprove, ActDowngradeRisk, ActPauseAgent, ActNotify:
		if a.Tool != "" || a.DurationMinutes != 0 || a.Level != "" {
			return invalid("%s takes no tool, duration or level", a.Type)
		}
	case ActBlockTool:
		if a.DurationMinutes < 0 || time.Duration(a.DurationMinutes*float64(time.Minute)) > MaxWindow {
			return invalid("duration_minutes out of range")
		}
		if a.Level != "" {
			return invalid("block_tool takes no level")
		}
	case ActRequireApproval:
		switch a.Level {
		case "", "confirm", "approve":
		default:
			return invalid("require_approval's level is confirm or approve")
		}
		if a.Tool != "" || a.DurationMinutes != 0 {
			return invalid("require_approval takes no tool or duration")
		}
	default:
		return invalid("unknown action type %q", a.Type)
	}
	if r.Loosens() && t.Type != TriggerTime && t.Type != TriggerPattern && t.Type != TriggerCount {
		// Loosening because calls fail or cost much would reward what the
		// trigger is meant to catch.
		return invalid("%s cannot follow %s", a.Type, t.Type)
	}
	if r.Loosens() && t.Tool == "" && t.Type != TriggerPattern {
		return invalid("%s needs a tool: a rule that loosens every call is too wide", a.Type)
	}
	for _, c := range a.Channels {
		if strings.TrimSpace(c) == "" || len(c) > 100 {
			return invalid("bad channel name %q", c)
		}
	}
	return nil
}

// Validate checks an anomaly rule.
func (r *AnomalyRule) Validate() error {
	if strings.TrimSpace(r.Name) == "" {
		return invalid("a rule needs a name")
	}
	if len(r.Name) > 200 || len(r.Description) > 2000 {
		return invalid("name or description too long")
	}
	if err := checkGlob("tool_name", r.Tool); err != nil {
		return err
	}
	if err := checkGlob("agent", r.Agent); err != nil {
		return err
	}
	if r.ThresholdCount <= 1 {
		return invalid("threshold_count must be at least 2")
	}
	if r.WindowSeconds <= 0 || r.Window() > MaxWindow {
		return invalid("window_seconds must be above 0 and at most %s", MaxWindow)
	}
	if r.BaselineMultiplier < 0 || r.BaselineMultiplier > 1e6 {
		return invalid("baseline_multiplier out of range")
	}
	if r.BaselineDays < 0 || r.BaselineDays > 90 {
		return invalid("baseline_days is at most 90")
	}
	switch r.Action {
	case AnomalyStop, AnomalyStopRollback, AnomalyNotify:
	default:
		return invalid("unknown action %q (stop, stop_and_rollback, notify)", r.Action)
	}
	if r.Rollback < 0 || r.Rollback > MaxRollback {
		return invalid("rollback is at most %d", MaxRollback)
	}
	for _, c := range r.NotifyChannels {
		if strings.TrimSpace(c) == "" || len(c) > 100 {
			return invalid("bad channel name %q", c)
		}
	}
	return nil
}

var weekdays = map[string]time.Weekday{
	"sun": time.Sunday, "mon": time.Monday, "tue": time.Tuesday, "wed": time.Wednesday,
	"thu": time.Thursday, "fri": time.Friday, "sat": time.Saturday,
	"sunday": time.Sunday, "monday": time.Monday, "tuesday": time.Tuesday, "wednesday": time.Wednesday,
	"thursday": time.Thursday, "friday": time.Friday, "saturday": time.Saturday,
}

// parseClock parses "HH:MM" (or "HH") into minutes after midnight.
func parseClock(s string) (int, error) {
	h, m, found := strings.Cut(strings.TrimSpace(s), ":")
	hh, err := strconv.Atoi(h)
	if err != nil || len(h) == 0 || len(h) > 2 || hh < 0 || hh > 24 {
		return 0, fmt.Errorf("%q is not a time of day (HH:MM)", s)
	}
	mm := 0
	if found {
		if mm, err = strconv.Atoi(m); err != nil || len(m) != 2 || mm < 0 || mm > 59 {
			return 0, fmt.Errorf("%q is not a time of day (HH:MM)", s)
		}
	}
	if hh == 24 && mm != 0 {
		return 0, fmt.Errorf("%q is past midnight", s)
	}
	return hh*60 + mm, nil
}

func loadZone(name string) (*time.Location, error) {
	if name == "" || name == "UTC" {
		return time.UTC, nil
	}
	return time.LoadLocation(name)
}
