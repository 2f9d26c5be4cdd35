// Package usage holds the hybrid controls that count what agents do and
// spend while nobody watches: rate limits (at most N calls of an agent, a
// tool, a risk class or an effect in a sliding window) and budget caps (at
// most so many US dollars of model use per day, week, month or session).
//
// Definitions are data: decoded strictly, validated, and compiled into an
// immutable Set that checks only read. The counts live in memory (Counter)
// so that a check is a few map look-ups; the kernel persists them
// write-behind (see Counter.Dirty and Merge) and wires the findings into
// the engine, which turns them into reasons. This package decides nothing
// about what a finding's level means for the agent: it reports which limit
// or cap a call reaches and what its action asks.
//
// It is not package limits, which guards the HTTP API itself (request
// quotas and the database's size).
package usage

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// Control kinds, as the store keeps them.
const (
	KindRateLimit = "rate_limit"
	KindBudgetCap = "budget_cap"
	KindPrices    = "prices"
)

// LimitAction is what a rate limit does to the call that reaches it.
type LimitAction string

// The limit actions.
const (
	// Pause refuses the call and pauses the agent until a person resumes it;
	// the person is told.
	Pause LimitAction = "pause"
	// Block refuses the call; the agent goes on (its next calls are judged
	// as the window slides).
	Block LimitAction = "block"
	// NotifyOnly lets the call run and tells a person.
	NotifyOnly LimitAction = "notify_only"
	// Ask puts the call to a person (with the count and the window in the
	// preview) instead of refusing it.
	Ask LimitAction = "ask"
)

// Effect classes a rate limit may count.
const (
	EffectWrite   = "write"    // writes or deletes a file
	EffectDelete  = "delete"   // deletes a file
	EffectExec    = "exec"     // runs a command
	EffectSend    = "send"     // sends to a URL
	EffectNewHost = "new_host" // sends to a host the agent has not sent to before
)

var effects = map[string]bool{EffectWrite: true, EffectDelete: true, EffectExec: true, EffectSend: true, EffectNewHost: true}

// RateLimit is at most MaxCalls matching calls within WindowSeconds. Agent
// and Tool empty mean every agent (each counted on its own) and every tool
// (counted together). Risk, when set, counts only calls the firewall judged
// at that level or above (notify, confirm, approve); Effect only calls with
// that effect.
type RateLimit struct {
	ID            string      `json:"id"`
	Name          string      `json:"name,omitempty"`
	Agent         string      `json:"agent,omitempty"`
	Tool          string      `json:"tool,omitempty"` // a tool name, or a glob (Bash, mcp__*)
	Risk          string      `json:"risk,omitempty"`
	Effect        string      `json:"effect,omitempty"`
	MaxCalls      int         `json:"max_calls"`
	WindowSeconds int         `json:"window_seconds"`
	Action        LimitAction `json:"action_on_limit"`
	Enabled       bool        `json:"enabled"`
}

// BudgetAction is what a budget cap does when the spend reaches it.
type BudgetAction string

// The budget actions.
const (
	// Stop refuses the agent's calls (the own loop pauses its task) until
	// the period ends or the cap is raised; the person is told.
	Stop BudgetAction = "stop"
	// Notify tells a person; the agent goes on.
	Notify BudgetAction = "notify"
	// Downgrade switches the own loop to the router's cheaper model; an
	// agent Overseer does not drive is told about (notify) and refused at
	// the hard cap.
	Downgrade BudgetAction = "downgrade"
)

// Budget scopes.
const (
	ScopeGlobal  = "global"
	ScopeAgent   = "agent"
	ScopeSession = "session"
)

// Budget periods.
const (
	Daily   = "daily"
	Weekly  = "weekly"
	Monthly = "monthly"
	Session = "session"
)

// BudgetCap is at most MaxCostUSD of model use in a period. ScopeID empty
// with scope agent or session means each agent or session on its own.
// HardCostUSD is where a downgrade cap refuses calls (default 1.5 times
// MaxCostUSD); stop caps refuse at MaxCostUSD.
type BudgetCap struct {
	ID          string       `json:"id"`
	Name        string       `json:"name,omitempty"`
	Scope       string       `json:"scope"`
	ScopeID     string       `json:"scope_id,omitempty"`
	MaxCostUSD  float64      `json:"max_cost_usd"`
	HardCostUSD float64      `json:"hard_cost_usd,omitempty"`
	Period      string       `json:"period"`
	Action      BudgetAction `json:"action_on_limit"`
	Enabled     bool         `json:"enabled"`
}

// AlertAt is the share of a cap at which a person is warned.
const AlertAt = 0.8

// MaxWindow bounds a rate limit's window, and MaxCalls its count (each
// counted call is remembered).
const (
	MaxWindow = 31 * 24 * time.Hour
	MaxCalls  = 100000
)

// decodeStrict decodes b into v, refusing unknown fields and trailing data.
func decodeStrict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	return nil
}

// DecodeRateLimit reads a rate limit strictly. An absent enabled is true.
func DecodeRateLimit(b []byte) (RateLimit, error) {
	l := RateLimit{Enabled: true, Action: Pause}
	if err := decodeStrict(b, &l); err != nil {
		return RateLimit{}, fmt.Errorf("rate limit: %w", err)
	}
	return l, nil
}

// DecodeBudgetCap reads a budget cap strictly. An absent enabled is true.
func DecodeBudgetCap(b []byte) (BudgetCap, error) {
	c := BudgetCap{Enabled: true, Action: Stop, Period: Daily, Scope: ScopeGlobal}
	if err := decodeStrict(b, &c); err != nil {
		return BudgetCap{}, fmt.Errorf("budget cap: %w", err)
	}
	return c, nil
}

// Validate reports what is wrong with l.
func (l *RateLimit) Validate() error {
	var errs []error
	if strings.TrimSpace(l.ID) == "" {
		errs = append(errs, errors.New("no id"))
	}
	if l.MaxCalls < 1 || l.MaxCalls > MaxCalls {
		errs = append(errs, fmt.Errorf("max_calls %d is not between 1 and %d", l.MaxCalls, MaxCalls))
	}
	if l.WindowSeconds < 1 || time.Duration(l.WindowSeconds)*time.Second > MaxWindow {
		errs = append(errs, fmt.Errorf("window_seconds %d is not between 1 and %d", l.WindowSeconds, int(MaxWindow/time.Second)))
	}
	switch l.Action {
	case Pause, Block, NotifyOnly, Ask:
	default:
		errs = append(errs, fmt.Errorf("action_on_limit %q is not pause, block, notify_only or ask", l.Action))
	}
	if l.Risk != "" {
		lv, err := action.ParseLevel(l.Risk)
		if err != nil || lv < action.Notify || lv > action.Approve {
			errs = append(errs, fmt.Errorf("risk %q is not notify, confirm or approve", l.Risk))
		}
	}
	if l.Effect != "" && !effects[l.Effect] {
		errs = append(errs, fmt.Errorf("effect %q is not write, delete, exec, send or new_host", l.Effect))
	}
	if l.Tool != "" {
		if _, err := path.Match(l.Tool, ""); err != nil {
			errs = append(errs, fmt.Errorf("tool %q is not a valid glob", l.Tool))
		}
	}
	return errors.Join(errs...)
}

// Window is the limit's window.
func (l *RateLimit) Window() time.Duration { return time.Duration(l.WindowSeconds) * time.Second }

// Validate reports what is wrong with c.
func (c *BudgetCap) Validate() error {
	var errs []error
	if strings.TrimSpace(c.ID) == "" {
		errs = append(errs, errors.New("no id"))
	}
	switch c.Scope {
	case ScopeGlobal:
		if c.ScopeID != "" {
			errs = append(errs, errors.New("a global cap takes no scope_id"))
		}
	case ScopeAgent, ScopeSession:
	default:
		errs = append(errs, fmt.Errorf("scope %q is not global, agent or session", c.Scope))
	}
	switch c.Period {
	case Daily, Weekly, Monthly:
	case Session:
		if c.Scope != ScopeSession {
			errs = append(errs, errors.New("period session needs scope session"))
		}
	default:
		errs = append(errs, fmt.Errorf("period %q is not daily, weekly, monthly or session", c.Period))
	}
	if !(c.MaxCostUSD > 0) || c.MaxCostUSD > 1e9 {
		errs = append(errs, fmt.Errorf("max_cost_usd %v is not a positive amount", c.MaxCostUSD))
	}
	if c.HardCostUSD != 0 && (c.HardCostUSD < c.MaxCostUSD || c.HardCostUSD > 1e9) {
		errs = append(errs, fmt.Errorf("hard_cost_usd %v is below max_cost_usd", c.HardCostUSD))
	}
	switch c.Action {
	case Stop, Notify, Downgrade:
	default:
		errs = append(errs, fmt.Errorf("action_on_limit %q is not stop, notify or downgrade", c.Action))
	}
	return errors.Join(errs...)
}

// Hard is where the cap refuses calls: MaxCostUSD for stop, HardCostUSD
// (default 1.5 × MaxCostUSD) for downgrade, never for notify.
func (c *BudgetCap) Hard() float64 {
	switch c.Action {
	case Stop:
		return c.MaxCostUSD
	case Downgrade:
		if c.HardCostUSD > 0 {
			return c.HardCostUSD
		}
		return 1.5 * c.MaxCostUSD
	}
	return 0
}
