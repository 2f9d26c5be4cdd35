package kernel

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/policy"
	"github.com/overseer-dev/overseer/internal/store"
)

// ProposeRule is the rule a "remember" answer would save, shown to the
// person (and editable) before it is saved: the same tool with exactly the
// same arguments, allowed with a notification (approve) or blocked (deny).
// A person may broaden it; Overseer never proposes a broader rule itself.
func ProposeRule(apr *store.Approval, decision string) policy.Rule {
	level, verb := action.Notify, "allow"
	if decision != "approve" {
		level, verb = action.Block, "block"
	}
	summary := apr.Tool
	if cmd, ok := apr.Action.StringArg("command", "cmd", "path", "file_path", "url", "sql", "query"); ok {
		if len(cmd) > 60 {
			cmd = cmd[:60] + "…"
		}
		summary += " " + cmd
	}
	return policy.Rule{
		Name:     fmt.Sprintf("remember-%s-%s", verb, apr.ID),
		Tool:     []string{globEscape(apr.Tool)},
		ArgsHash: apr.ArgsHash,
		Level:    level,
		Message:  fmt.Sprintf("Remembered answer (%s): %s", verb, summary),
	}
}

func globEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// remember saves the rule a remembering answer asks for.
func (k *Kernel) remember(ctx context.Context, apr *store.Approval, ans store.Answer) error {
	var r policy.Rule
	switch ans.Remember {
	case "", "once":
		return nil
	case "session":
		if apr.Session == "" {
			return fmt.Errorf("remember=session: the action has no session to scope the rule to")
		}
		r = ProposeRule(apr, ans.Decision)
		r.Session = apr.Session
		r.Name = strings.Replace(r.Name, "remember-", "remember-session-", 1)
	case "rule":
		if len(ans.Rule) == 0 {
			r = ProposeRule(apr, ans.Decision)
		} else if err := decodeRule(ans.Rule, &r); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown remember value %q (want once, session or rule)", ans.Remember)
	}
	_, err := k.AddUserRule(ctx, r, ans.Who, &apr.Action)
	return err
}

func decodeRule(raw json.RawMessage, r *policy.Rule) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return fmt.Errorf("the rule to remember is not valid: %w", err)
	}
	return nil
}

// AddUserRule validates and saves a rule in the user layer (first position:
// the newest human decision is read first), records the change in the audit
// log and reloads the engine.
func (k *Kernel) AddUserRule(ctx context.Context, r policy.Rule, who string, a *action.Action) (*store.UserRule, error) {
	return k.addUserRule(ctx, r, who, a, "human", "rule added by "+who)
}

// addUserRule is AddUserRule with the change's origin (human, learned) and
// reason.
func (k *Kernel) addUserRule(ctx context.Context, r policy.Rule, who string, a *action.Action, origin, reason string) (*store.UserRule, error) {
	if r.Name == "" {
		r.Name = NewID("rule_")
	}
	if _, err := policy.CompileRules(policy.LayerUser, []policy.Rule{r}, policy.Options{}); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	ur := &store.UserRule{ID: r.Name, Rule: raw, Origin: origin, CreatedBy: who, CreatedAt: k.Clock.Now().Round(0).UTC()}
	pc := PolicyChange{Origin: origin, Op: "add", RuleID: ur.ID, Rule: &r, Who: who, After: r.Level,
		Tool: strings.Join(r.Tool, ","), Reason: reason}
	if a != nil {
		ctx = withAction(ctx, a)
	}
	// The rule and its record are one transaction, sealed at once.
	if err := k.putRule(ctx, ur, pc, true); err != nil {
		return nil, err
	}
	return ur, k.Engine.Reload(ctx)
}

// RemoveUserRule deletes a rule of the user layer and records it.
func (k *Kernel) RemoveUserRule(ctx context.Context, id, who string) error {
	if err := k.deleteRule(ctx, id, PolicyChange{
		Origin: "human", Op: "remove", RuleID: id, Who: who, Reason: "rule removed by " + who,
	}); err != nil {
		return err
	}
	return k.Engine.Reload(ctx)
}

// PolicyHistory returns the policy_change records of the audit log, oldest first.
func (k *Kernel) PolicyHistory(ctx context.Context, limit int) ([]store.AuditRecord, error) {
	return k.Store.QueryAudit(ctx, store.AuditQuery{Types: []string{audit.TypePolicyChange}, Limit: limit})
}
