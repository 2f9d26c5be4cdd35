package policy

import (
	"context"
	"sync"

	"encoding/json"
	"fmt"
	"github.com/overseer-dev/overseer/internal/guard/shell"
	"path/filepath"
	"strings"

	"github.com/overseer-dev/overseer/internal/action"
)

// Checks of an ExampleResult.
const (
	CheckMatch    = "match"     // a match example must be matched by its rule
	CheckNotMatch = "not_match" // a not_match example must not be
	CheckLevel    = "level"     // an example's level: the whole policy's decision
)

// ExampleResult is the outcome of one check of one example, for
// `overseer policy test`.
type ExampleResult struct {
	Rule    string // the rule's name
	Layer   string // the rule's layer
	Check   string // CheckMatch, CheckNotMatch or CheckLevel
	Index   int    // the example's position in the rule's match or not_match list
	Line    int    // the example's line in the policy file, 0 when unknown
	Example Example
	Want    string // "match", "no match", or a level
	Got     string // what happened: "match", "no match", a level, or "error: ..."
	// Decider names what set the level for CheckLevel: a rule's name, or
	// "default" when no rule matched.
	Decider string
	Pass    bool
	Err     error // an error preparing or matching the example
}

// Test checks every example of every rule of the policy, the built-in rules
// included when the file extends them, and returns every outcome in rule
// order, passing or not. Examples with a level are also checked against the
// whole admin-layer decision: the first matching rule's level, or the kind's
// default when no rule matches.
func (p *Policy) Test() []ExampleResult {
	var out []ExampleResult
	for _, c := range p.Rules {
		out = append(out, c.testExamples(p, p.opts)...)
	}
	return out
}

// checkExamples reports every failing match or not_match example of c.
func checkExamples(d *diag, c *Compiled, opts Options) {
	for _, r := range c.testExamples(nil, opts) {
		if r.Pass {
			continue
		}
		d.add(r.Line, ErrExample, "%s: %s example %d %s: want %s, got %s", ruleLabel(c.Rule, c.Layer, c.Index),
			r.Check, r.Index+1, describeExample(r.Example), r.Want, r.Got)
	}
}

// testExamples checks c's examples; with p, the level checks too.
func (c *Compiled) testExamples(p *Policy, opts Options) []ExampleResult {
	var out []ExampleResult
	run := func(check string, exs []Example, lines []int, want bool) {
		for i, ex := range exs {
			r := ExampleResult{Rule: c.Name, Layer: c.Layer, Check: check, Index: i, Example: ex, Want: matchWord(want)}
			if i < len(lines) {
				r.Line = lines[i]
			}
			a, err := exampleAction(ex, opts)
			if err == nil {
				var ok bool
				ok, err = c.Matches(a)
				r.Got, r.Pass = matchWord(ok), ok == want
			}
			if err != nil {
				r.Err, r.Got, r.Pass = err, "error: "+err.Error(), false
			}
			out = append(out, r)
			if p == nil || ex.Level == action.Unset || err != nil {
				continue
			}
			lr := r
			lr.Check, lr.Want = CheckLevel, ex.Level.String()
			lvl, decider, err := p.decide(a)
			if err != nil {
				lr.Err, lr.Got, lr.Pass = err, "error: "+err.Error(), false
			} else {
				lr.Got, lr.Decider, lr.Pass = lvl.String(), decider, lvl == ex.Level
			}
			out = append(out, lr)
		}
	}
	run(CheckMatch, c.Match, c.matchLines, true)
	run(CheckNotMatch, c.NotMatch, c.notMatchLines, false)
	return out
}

// decide is the admin layer's decision alone: the first matching rule's
// level, or the kind's default.
func (p *Policy) decide(a *action.Action) (action.Level, string, error) {
	c, err := First(p.Rules, a)
	if err != nil {
		return action.Unset, "", err
	}
	if c != nil {
		return c.Level, c.Name, nil
	}
	return p.Default(a.Kind), "default", nil
}

func matchWord(b bool) string {
	if b {
		return "match"
	}
	return "no match"
}

// exampleAction builds the action an example stands for. Its arguments go
// through JSON, so that they look exactly like those of a real action (numbers
// are float64, keys are strings).
func exampleAction(ex Example, opts Options) (*action.Action, error) {
	a := &action.Action{
		Tool:    ex.Tool,
		Kind:    ex.Kind,
		Agent:   ex.Agent,
		Session: ex.Session,
		Cwd:     ex.Cwd,
		Args:    map[string]any{},
	}
	if len(ex.Args) > 0 {
		b, err := json.Marshal(ex.Args)
		if err != nil {
			return nil, fmt.Errorf("args are not JSON: %w", err)
		}
		if err := json.Unmarshal(b, &a.Args); err != nil {
			return nil, fmt.Errorf("args are not JSON: %w", err)
		}
	}
	if a.Kind == "" {
		a.Kind = action.InferKind(a.Tool)
	}
	if opts.Prepare != nil {
		if err := opts.Prepare(a); err != nil {
			return nil, fmt.Errorf("prepare: %w", err)
		}
		return a, nil
	}
	action.DeriveFileFacts(a)
	naiveShellFacts(a)
	return a, nil
}

// naiveShellFacts derives a shell example's facts when no Prepare is given,
// with the shell guard's analyzer in its default configuration — the same
// analysis live actions get — so examples of rules on facts.commands and
// facts.paths mean what they say. If the analyzer cannot be built (its
// embedded lists are broken, which tests rule out), it falls back to one
// Command made by splitting args.command on white space.
func naiveShellFacts(a *action.Action) {
	if a.Kind != action.KindShell || len(a.Facts.Commands) > 0 {
		return
	}
	exampleShellOnce.Do(func() { exampleShell, _ = shell.New(shell.Config{}) })
	if exampleShell != nil {
		if _, err := exampleShell.Check(context.Background(), a); err == nil {
			return
		}
	}
	cmd, _ := a.StringArg("command", "cmd")
	words := strings.Fields(cmd)
	if len(words) == 0 {
		return
	}
	c := action.Command{Name: filepath.Base(words[0])}
	if len(words) > 1 {
		c.Args = words[1:]
	}
	a.Facts.Commands = []action.Command{c}
}

var (
	exampleShellOnce sync.Once
	exampleShell     *shell.Guard
)

// describeExample is a short form of an example for error messages.
func describeExample(ex Example) string {
	var b strings.Builder
	fmt.Fprintf(&b, "{tool: %s", ex.Tool)
	if ex.Kind != "" {
		fmt.Fprintf(&b, ", kind: %s", ex.Kind)
	}
	if ex.Agent != "" {
		fmt.Fprintf(&b, ", agent: %s", ex.Agent)
	}
	if len(ex.Args) > 0 {
		if args, err := json.Marshal(ex.Args); err == nil {
			s := string(args)
			if len(s) > 80 {
				s = s[:77] + "..."
			}
			fmt.Fprintf(&b, ", args: %s", s)
		}
	}
	b.WriteString("}")
	return b.String()
}
