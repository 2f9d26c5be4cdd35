package policy

import (
	"fmt"
	"strings"

	"cel.dev/cel-go/common/types"

	"github.com/overseer-dev/overseer/internal/action"
)

// The conditions of a rule, in the order they are checked; TraceStep.Failed
// holds one of them.
const (
	CondSession  = "session"
	CondArgsHash = "args_hash"
	CondKind     = "kind"
	CondTool     = "tool"
	CondAgent    = "agent"
	CondWhen     = "when"
)

// Matches reports whether the rule matches a. An error (wrapping ErrEval)
// means the condition could not be evaluated; it is not "no match", and the
// caller must fail closed.
func (c *Compiled) Matches(a *action.Action) (bool, error) {
	s := newSubject(a)
	defer s.close()
	ok, _, err := c.match(s)
	return ok, err
}

// First returns the first rule of rules that matches a, or nil when none
// does. Rules are read in order and the first match wins. An error of a
// rule's condition stops the search and is returned (wrapping ErrEval,
// as an *EvalError naming the rule): the engine fails closed on it.
func First(rules []*Compiled, a *action.Action) (*Compiled, error) {
	s := newSubject(a)
	defer s.close()
	for _, c := range rules {
		ok, _, err := c.match(s)
		if err != nil {
			return nil, err
		}
		if ok {
			return c, nil
		}
	}
	return nil, nil
}

// TraceStep is what happened to one rule when an action was matched against
// a list, for `overseer policy explain`.
type TraceStep struct {
	Rule    *Compiled
	Matched bool
	// Failed names the first condition that did not hold (CondTool, CondKind,
	// CondAgent, CondSession, CondArgsHash, CondWhen); empty when Matched or
	// when Err is set.
	Failed string
	// Detail says why, for a person.
	Detail string
	// Err is the evaluation error of the rule's condition, if any. Matching
	// stops at it.
	Err error
}

// Trace matches a against rules in order, like First, and records every
// rule it looked at: whether it matched and, if not, which condition failed.
// It stops after the first match or the first error.
func Trace(rules []*Compiled, a *action.Action) []TraceStep {
	s := newSubject(a)
	defer s.close()
	steps := make([]TraceStep, 0, len(rules))
	for _, c := range rules {
		ok, failed, err := c.match(s)
		st := TraceStep{Rule: c, Matched: ok, Err: err}
		switch {
		case err != nil:
			st.Detail = err.Error()
		case ok:
			st.Detail = "matched"
		default:
			st.Failed = failed
			st.Detail = c.why(failed, s)
		}
		steps = append(steps, st)
		if ok || err != nil {
			break
		}
	}
	return steps
}

// match checks the conditions in order of cost, cheapest first; CEL runs
// last and only when everything else holds. It returns the failed condition.
func (c *Compiled) match(s *subject) (bool, string, error) {
	a := s.a
	if c.Session != "" && c.Session != a.Session {
		return false, CondSession, nil
	}
	if c.kinds != 0 && c.kinds&s.kind == 0 {
		return false, CondKind, nil
	}
	if len(c.tools) > 0 && !matchAny(c.tools, s.tool) {
		return false, CondTool, nil
	}
	if len(c.agents) > 0 && !matchAny(c.agents, s.agent) {
		return false, CondAgent, nil
	}
	// An action whose arguments cannot be hashed never matches a rule made
	// for one exact call.
	if c.ArgsHash != "" && (!strings.EqualFold(c.ArgsHash, s.argsHash()) || strings.HasPrefix(s.argsHash(), "unhashable:")) {
		return false, CondArgsHash, nil
	}
	cond, err := c.condition()
	if err != nil {
		return false, "", &EvalError{Rule: c.Name, Layer: c.Layer, Err: err}
	}
	if cond == nil {
		return true, "", nil
	}
	if cond.commands != nil && !s.hasCommand(cond.commands) {
		return false, CondWhen, nil
	}
	for _, t := range cond.tests {
		if !t(s) {
			return false, CondWhen, nil
		}
	}
	out, _, err := cond.prg.Eval(s.input(cond.limited))
	if err != nil {
		return false, "", &EvalError{Rule: c.Name, Layer: c.Layer, Err: err}
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, "", &EvalError{Rule: c.Name, Layer: c.Layer, Err: fmt.Errorf("condition returned %s, want bool", out.Type())}
	}
	if !b {
		return false, CondWhen, nil
	}
	return true, "", nil
}

// why explains a failed condition.
func (c *Compiled) why(failed string, s *subject) string {
	a := s.a
	switch failed {
	case CondSession:
		return fmt.Sprintf("session %q is not %q", a.Session, c.Session)
	case CondKind:
		return fmt.Sprintf("kind %q is not one of %s", a.Kind, quoteList(kindStrings(c.Kind)))
	case CondTool:
		return fmt.Sprintf("tool %q matches none of %s", a.Tool, quoteList(c.Tool))
	case CondAgent:
		return fmt.Sprintf("agent %q matches none of %s", a.Agent, quoteList(c.Agent))
	case CondArgsHash:
		return "the arguments differ from the ones the rule was made for"
	case CondWhen:
		return fmt.Sprintf("when %s is false", c.When)
	}
	return failed
}

func kindStrings(ks []action.Kind) []string {
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
