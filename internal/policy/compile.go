package policy

import (
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/overseer-dev/overseer/internal/action"
)

// Compiled is a rule ready to match: its globs checked and lower-cased, its
// kinds in a set, its condition compiled to a CEL program once. It is
// immutable and safe for concurrent use.
type Compiled struct {
	Rule
	// Layer is the policy layer the rule belongs to (LayerAdmin, LayerBuiltin,
	// LayerUser).
	Layer string
	// Index is the rule's position in its layer, from 0.
	Index int
	// Line is the rule's line in its policy file; 0 for user-layer rules.
	Line int

	tools, agents []glob
	kinds         kindSet
	cond          *celProgram // nil when the rule has no condition
	// lazyCond, for a built-in rule with a condition, compiles it on first
	// use (cond is then nil): a process judges one or two calls, and most
	// rules never reach their condition.
	lazyCond func() (*celProgram, error)
	// exampleLines are the lines of the Match and NotMatch examples.
	matchLines, notMatchLines []int
}

// condition returns the rule's compiled condition, nil when it has none.
func (c *Compiled) condition() (*celProgram, error) {
	if c.lazyCond != nil {
		return c.lazyCond()
	}
	return c.cond, nil
}

// glob is one tool or agent pattern, lower-cased. The common shapes
// ("Bash", "mcp__github__*", "*_file") are matched without path.Match.
type glob struct {
	pattern string
	shape   globShape
	fixed   string // the pattern without its leading or trailing '*'
}

type globShape uint8

const (
	globLiteral globShape = iota // no wildcard
	globPrefix                   // "abc*"
	globSuffix                   // "*abc"
	globGeneral                  // anything else: path.Match
)

func compileGlob(p string) (glob, error) {
	lp := strings.ToLower(p)
	if _, err := path.Match(lp, ""); err != nil {
		return glob{}, fmt.Errorf("bad glob %q: %w", p, err)
	}
	g := glob{pattern: lp, shape: globGeneral}
	switch inner := strings.Trim(lp, "*"); {
	case strings.ContainsAny(inner, `*?[\`):
	case inner == lp:
		g.shape, g.fixed = globLiteral, lp
	case lp == inner+"*":
		g.shape, g.fixed = globPrefix, inner
	case lp == "*"+inner:
		g.shape, g.fixed = globSuffix, inner
	}
	return g, nil
}

// match reports whether the lower-cased s matches. As in path.Match, '*'
// does not match '/'.
func (g glob) match(s string) bool {
	switch g.shape {
	case globLiteral:
		return g.fixed == s
	case globPrefix:
		return strings.HasPrefix(s, g.fixed) && !strings.Contains(s[len(g.fixed):], "/")
	case globSuffix:
		return strings.HasSuffix(s, g.fixed) && !strings.Contains(s[:len(s)-len(g.fixed)], "/")
	}
	ok, _ := path.Match(g.pattern, s) // patterns are checked at compile time
	return ok
}

func matchAny(gs []glob, s string) bool {
	for _, g := range gs {
		if g.match(s) {
			return true
		}
	}
	return false
}

// kindSet is a set of canonical kinds, one bit per entry of action.Kinds.
type kindSet uint32

func kindBit(k action.Kind) kindSet {
	for i, c := range action.Kinds {
		if c == k {
			return 1 << i
		}
	}
	return 0
}

// lineFunc gives the line of a path inside a rule ("kind[1]", "when"), or 0.
type lineFunc func(sub string) int

// compileRule validates and compiles one rule. It reports every problem
// through d and returns nil when there was one.
func compileRule(d *diag, r Rule, layer string, index int, line lineFunc) *Compiled {
	before := len(d.errs)
	label := ruleLabel(r, layer, index)
	c := &Compiled{Rule: r, Layer: layer, Index: index, Line: line("")}
	if strings.TrimSpace(r.Name) == "" {
		d.errorf(c.Line, "%s: missing name", label)
	}
	switch {
	case r.Level == action.Unset:
		d.errorf(lineOr(line("level"), c.Line), "%s: missing level (one of auto, notify, confirm, approve, block)", label)
	case !r.Level.Valid():
		d.errorf(lineOr(line("level"), c.Line), "%s: unknown level %s", label, r.Level)
	}
	for i, t := range r.Tool {
		g, err := compileGlob(t)
		if err != nil {
			d.errorf(lineOr(line(fmt.Sprintf("tool[%d]", i)), c.Line), "%s: tool: %v", label, err)
			continue
		}
		c.tools = append(c.tools, g)
	}
	for i, a := range r.Agent {
		g, err := compileGlob(a)
		if err != nil {
			d.errorf(lineOr(line(fmt.Sprintf("agent[%d]", i)), c.Line), "%s: agent: %v", label, err)
			continue
		}
		c.agents = append(c.agents, g)
	}
	for i, k := range r.Kind {
		b := kindBit(k)
		if b == 0 {
			d.errorf(lineOr(line(fmt.Sprintf("kind[%d]", i)), c.Line), "%s: unknown kind %q%s (want one of %s)",
				label, k, suggest(string(k), kindNames()), strings.Join(kindNames(), ", "))
			continue
		}
		c.kinds |= b
	}
	if strings.TrimSpace(r.When) != "" && layer == LayerBuiltin {
		// The built-in policy is part of the binary and its conditions are
		// compiled by the tests (TestBuiltinConditionsCompile); should one
		// fail all the same, matching the rule is an error, on which the
		// engine fails closed.
		when := r.When
		c.lazyCond = sync.OnceValues(func() (*celProgram, error) { return compileCEL(when) })
	} else if strings.TrimSpace(r.When) != "" {
		cond, err := compileCEL(r.When)
		if err != nil {
			d.errorf(lineOr(line("when"), c.Line), "%s: when:%s", label, indent(err.Error()))
		} else {
			c.cond = cond
		}
	}
	if r.ArgsHash != "" && !isSHA256Hex(r.ArgsHash) {
		d.errorf(lineOr(line("args_hash"), c.Line), "%s: args_hash: want 64 hexadecimal digits (see action.ArgsHash)", label)
	}
	for _, set := range []struct {
		key string
		exs []Example
	}{{"match", r.Match}, {"not_match", r.NotMatch}} {
		for i, ex := range set.exs {
			if ex.Kind != "" && !ex.Kind.Valid() {
				at := fmt.Sprintf("%s[%d]", set.key, i)
				d.errorf(lineOr(line(at+".kind"), lineOr(line(at), c.Line)), "%s: %s example %d: unknown kind %q%s", label,
					set.key, i+1, ex.Kind, suggest(string(ex.Kind), kindNames()))
			}
		}
	}
	c.matchLines = exampleLines(line, "match", len(r.Match), c.Line)
	c.notMatchLines = exampleLines(line, "not_match", len(r.NotMatch), c.Line)
	if len(d.errs) > before {
		return nil
	}
	return c
}

func isSHA256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, r := range s {
		if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
			return false
		}
	}
	return true
}

func exampleLines(line lineFunc, key string, n, fallback int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = lineOr(line(fmt.Sprintf("%s[%d]", key, i)), fallback)
	}
	return out
}

func lineOr(l, fallback int) int {
	if l > 0 {
		return l
	}
	return fallback
}

func ruleLabel(r Rule, layer string, index int) string {
	if r.Name != "" {
		if layer == LayerUser {
			return fmt.Sprintf("user rule %q", r.Name)
		}
		return fmt.Sprintf("rule %q", r.Name)
	}
	if layer == LayerUser {
		return fmt.Sprintf("user rule #%d", index+1)
	}
	return fmt.Sprintf("rule #%d", index+1)
}

func kindNames() []string {
	out := make([]string, len(action.Kinds))
	for i, k := range action.Kinds {
		out[i] = string(k)
	}
	return out
}

// indent puts a multi-line message (CEL's, with its caret) on its own lines.
func indent(s string) string {
	if !strings.Contains(s, "\n") {
		return " " + s
	}
	return "\n    " + strings.ReplaceAll(s, "\n", "\n    ")
}

// CompileRules validates and compiles rules of a layer that does not come
// from a file (the user layer, stored as JSON of Rule). Rule names must be
// present and unique; every rule's examples are checked as in Parse, unless
// opts.SkipExamples. Errors wrap ErrInvalid (ErrExample for a failed
// example) and carry no line.
func CompileRules(layer string, rules []Rule, opts Options) ([]*Compiled, error) {
	d := &diag{}
	out := make([]*Compiled, 0, len(rules))
	seen := make(map[string]bool, len(rules))
	noLine := func(string) int { return 0 }
	for i, r := range rules {
		if r.Name != "" && seen[r.Name] {
			d.errorf(0, "%s: duplicate rule name", ruleLabel(r, layer, i))
		}
		seen[r.Name] = true
		if c := compileRule(d, r, layer, i, noLine); c != nil {
			out = append(out, c)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	for _, c := range out {
		if !opts.SkipExamples {
			checkExamples(d, c, opts)
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return out, nil
}
