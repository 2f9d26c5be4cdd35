package firewall

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// AdaptivePrefix starts the name (and ID) of every rule the adaptive layer
// writes, so that verdicts can say a decision came from adaptation.
const AdaptivePrefix = "adaptive:"

// Change is one change the adaptive layer made to the user layer. The kernel
// writes each one to the audit log.
type Change struct {
	Tool   string       `json:"tool"`
	Before action.Level `json:"before"`
	After  action.Level `json:"after"` // unset: the rule was removed, the other layers apply
	Reason string       `json:"reason"`
	RuleID string       `json:"rule_id"`
	Time   time.Time    `json:"time"`
}

// Adapt decides, from a tool's answer statistics, whether the adaptive
// layer escalates the tool to approve (after EscalateAfter consecutive
// rejections) or reverts an escalation (after RevertAfter consecutive
// approvals). It only ever writes the user layer, never the admin layer.
// level is the level of the request that was just answered. It returns nil
// when nothing changed.
func (e *Engine) Adapt(ctx context.Context, tool string, level action.Level, st perception.ToolStats) (*Change, error) {
	set := e.Policy().Settings.Adapt
	if set.Disabled || tool == "" {
		return nil, nil
	}
	if e.rules == nil {
		return nil, ErrNoRules
	}
	id := AdaptivePrefix + tool
	existing, err := e.adaptiveRule(ctx, id)
	if err != nil {
		return nil, err
	}
	now := e.clock.Now()
	switch {
	case existing == nil && set.EscalateAfter > 0 && st.ConsecutiveRejections >= set.EscalateAfter && level < action.Approve:
		reason := fmt.Sprintf("%d consecutive rejections of %s", st.ConsecutiveRejections, tool)
		rule := policy.Rule{
			Name:    id,
			Tool:    []string{globEscape(tool)},
			Level:   action.Approve,
			Message: fmt.Sprintf("Escalated to approve by the adaptive layer after %s (was %s).", reason, level),
		}
		raw, err := json.Marshal(rule)
		if err != nil {
			return nil, err
		}
		ch := &Change{Tool: tool, Before: level, After: action.Approve, Reason: reason, RuleID: id, Time: now}
		if err := e.rules.PutUserRule(WithChange(ctx, ch), &store.UserRule{ID: id, Rule: raw, Origin: "adaptive",
			CreatedBy: "overseer", CreatedAt: now}); err != nil {
			return nil, err
		}
		if err := e.Reload(ctx); err != nil {
			return nil, err
		}
		return ch, nil
	case existing != nil && set.RevertAfter > 0 && st.ConsecutiveApprovals >= set.RevertAfter:
		ch := &Change{Tool: tool, Before: action.Approve, After: action.Unset, RuleID: id, Time: now,
			Reason: fmt.Sprintf("%d consecutive approvals since the escalation", st.ConsecutiveApprovals)}
		if err := e.rules.DeleteUserRule(WithChange(ctx, ch), id); err != nil {
			return nil, err
		}
		if err := e.Reload(ctx); err != nil {
			return nil, err
		}
		return ch, nil
	}
	return nil, nil
}

type changeKey struct{}

// WithChange tells the user layer's store which adaptive change a write
// makes, so that a store that records writes can say why.
func WithChange(ctx context.Context, c *Change) context.Context {
	return context.WithValue(ctx, changeKey{}, c)
}

// ChangeFrom returns the change WithChange attached to ctx, or nil.
func ChangeFrom(ctx context.Context) *Change {
	c, _ := ctx.Value(changeKey{}).(*Change)
	return c
}

func (e *Engine) adaptiveRule(ctx context.Context, id string) (*store.UserRule, error) {
	rules, err := e.rules.ListUserRules(ctx, e.clock.Now())
	if err != nil {
		return nil, err
	}
	for i := range rules {
		if rules[i].ID == id {
			return &rules[i], nil
		}
	}
	return nil, nil
}

// globEscape makes a tool name match itself literally as a glob.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}
