package policy

import (
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/overloads"
	"cel.dev/cel-go/common/types"

	"github.com/overseer-dev/overseer/internal/action"
)

// conjunctTest decides one top-level conjunct of a condition in Go, without
// CEL, where it can. It returns false only when the conjunct is certainly
// false on the action (false, not an error), and true when the conjunct
// holds or when the test cannot tell (a value of another type than the test
// reads, a NaN): CEL then decides.
//
// A condition a && b && c is false whenever one of its conjuncts is false,
// even when another is an error (CEL's && is commutative in this way), so a
// conjunct found false decides the whole condition: the rule does not
// match, exactly as CEL would have said. The one exception is a program
// that tracks its cost: CEL evaluates its conjuncts in order and may stop
// with "cost limit exceeded" in one before reaching a false one, an error on
// which the engine fails closed; such programs get no tests (see
// compileCEL), so no decision differs from evaluating every condition.
//
// These are the shapes rules are usually written in, about the arguments,
// the working directory, the SQL class or the confidence:
//
//	has(args.command)           "command" in args
//	args.command.startsWith("git push")     (endsWith, contains, matches)
//	args["url"] == "x"          args.method in ["POST", "PUT"]     cwd != "/"
//	facts.sql_class == "ddl"    confidence < 0.3
//
// Most rules a given action meets fail on one of them, and deciding that in
// Go costs a map lookup and a string comparison instead of a CEL evaluation
// (with the conversion of the argument to a CEL value every time).
type conjunctTest func(s *subject) bool

// conjunctTests returns the tests of a checked condition's top-level
// conjuncts that have a shape conjunctTest knows; nil when none has.
func conjunctTests(a *cel.Ast) []conjunctTest {
	var out []conjunctTest
	for _, e := range conjuncts(a.NativeRep().Expr(), nil) {
		if t := conjunctTestOf(e); t != nil {
			out = append(out, t)
		}
	}
	return out
}

// conjunctTestOf returns the test of e, or nil when e has no known shape.
func conjunctTestOf(e celast.Expr) conjunctTest {
	switch e.Kind() {
	case celast.SelectKind:
		// has(args.k)
		sel := e.AsSelect()
		if sel.IsTestOnly() && isIdent(sel.Operand(), "args") {
			return argPresent(sel.FieldName())
		}
		return nil
	case celast.ComprehensionKind:
		return existsTest(e)
	case celast.CallKind:
	default:
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	if fn := call.FunctionName(); !call.IsMemberFunction() && len(args) == 2 {
		switch fn {
		case operators.In:
			// "k" in args
			if k, ok := stringLiteral(args[0]); ok && isIdent(args[1], "args") {
				return argPresent(k)
			}
		case operators.Less, operators.LessEquals, operators.Greater, operators.GreaterEquals:
			return confidenceTest(fn, args[0], args[1])
		}
	}
	operand, f := stringCondition(e)
	if f == nil {
		return nil
	}
	if op := stringOperandOf(operand); op != nil {
		return stringTest(op, f)
	}
	return nil
}

// stringCondition recognises a test of one operand against string
// literals: operand.startsWith("…") (endsWith, contains, matches),
// operand == "…" (either way round), operand != "…", operand in ["…", …].
// It returns the operand and what the test is on a string, or a nil test.
// On a string the test is what CEL computes; whether the operand is a
// string is the caller's to know.
func stringCondition(e celast.Expr) (celast.Expr, func(string) bool) {
	if e.Kind() != celast.CallKind {
		return nil, nil
	}
	call := e.AsCall()
	args := call.Args()
	if call.IsMemberFunction() {
		if len(args) != 1 {
			return nil, nil
		}
		lit, ok := stringLiteral(args[0])
		if !ok {
			return nil, nil
		}
		switch call.FunctionName() {
		case overloads.StartsWith:
			return call.Target(), func(v string) bool { return strings.HasPrefix(v, lit) }
		case overloads.EndsWith:
			return call.Target(), func(v string) bool { return strings.HasSuffix(v, lit) }
		case overloads.Contains:
			return call.Target(), func(v string) bool { return strings.Contains(v, lit) }
		case overloads.Matches:
			// CEL's matches is Go's regexp (RE2 syntax, unanchored).
			if f := regexTest(lit); f != nil {
				return call.Target(), f
			}
		}
		return nil, nil
	}
	if len(args) != 2 {
		return nil, nil
	}
	switch fn := call.FunctionName(); fn {
	case operators.Equals, operators.NotEquals:
		operand, lit := args[0], args[1]
		if _, ok := stringLiteral(lit); !ok {
			operand, lit = lit, operand
		}
		l, ok := stringLiteral(lit)
		if !ok {
			return nil, nil
		}
		if fn == operators.Equals {
			return operand, func(v string) bool { return v == l }
		}
		return operand, func(v string) bool { return v != l }
	case operators.In:
		lits, ok := stringLiterals(args[1])
		if !ok {
			return nil, nil
		}
		return args[0], func(v string) bool { return slices.Contains(lits, v) }
	}
	return nil, nil
}

// existsTest decides facts.paths.exists(p, …) and facts.urls.exists(u, …)
// when some conjuncts of the body are tests of the element it knows: on
// p.path and p.intent (strings, as stringCondition), p.in_cwd and
// p.created (bools, or their negation), and on u (a string). Those parts
// can be neither an error nor anything but true or false on an element
// (every element has them, of those types: see factsValue), so when no
// element passes them, the body is false on every element and so is
// exists.
func existsTest(e celast.Expr) conjunctTest {
	comp := e.AsComprehension()
	if comp.HasIterVar2() {
		return nil
	}
	rng := comp.IterRange()
	if rng.Kind() != celast.SelectKind || rng.AsSelect().IsTestOnly() || !isIdent(rng.AsSelect().Operand(), "facts") {
		return nil
	}
	list := rng.AsSelect().FieldName()
	if list != "paths" && list != "urls" {
		return nil
	}
	body := existsBody(comp)
	if body == nil {
		return nil
	}
	v := comp.IterVar()
	if list == "urls" {
		var fs []func(string) bool
		for _, c := range conjuncts(body, nil) {
			if operand, f := stringCondition(c); f != nil && isIdent(operand, v) {
				fs = append(fs, f)
			}
		}
		if len(fs) == 0 {
			return nil
		}
		return func(s *subject) bool {
			for _, u := range s.a.Facts.URLs {
				if allHold(fs, u) {
					return true
				}
			}
			return false
		}
	}
	var fs []func(*action.PathFact) bool
	for _, c := range conjuncts(body, nil) {
		if f := pathCondition(c, v); f != nil {
			fs = append(fs, f)
		}
	}
	if len(fs) == 0 {
		return nil
	}
	return func(s *subject) bool {
		for i := range s.a.Facts.Paths {
			if allHold(fs, &s.a.Facts.Paths[i]) {
				return true
			}
		}
		return false
	}
}

// existsBody returns q of a comprehension made by the exists macro
// (accumulator false, step accu || q, result accu), or nil.
func existsBody(comp celast.ComprehensionExpr) celast.Expr {
	init := comp.AccuInit()
	if init.Kind() != celast.LiteralKind || init.AsLiteral() != types.False {
		return nil
	}
	if !isIdent(comp.Result(), comp.AccuVar()) {
		return nil
	}
	step := comp.LoopStep()
	if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.LogicalOr {
		return nil
	}
	args := step.AsCall().Args()
	if len(args) != 2 || !isIdent(args[0], comp.AccuVar()) {
		return nil
	}
	return args[1]
}

// pathCondition recognises a test of the path fact v: v.path or v.intent
// against string literals, v.in_cwd, v.created, or their negation.
func pathCondition(e celast.Expr, v string) func(*action.PathFact) bool {
	negate := false
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.LogicalNot && len(e.AsCall().Args()) == 1 {
		negate, e = true, e.AsCall().Args()[0]
	}
	if field, ok := fieldOf(e, v); ok && (field == "in_cwd" || field == "created") {
		if field == "in_cwd" {
			return func(p *action.PathFact) bool { return p.InCwd != negate }
		}
		return func(p *action.PathFact) bool { return p.Created != negate }
	}
	if negate {
		return nil
	}
	operand, f := stringCondition(e)
	if f == nil {
		return nil
	}
	switch field, _ := fieldOf(operand, v); field {
	case "path":
		return func(p *action.PathFact) bool { return f(p.Path) }
	case "intent":
		return func(p *action.PathFact) bool { return f(string(p.Intent)) }
	}
	return nil
}

// fieldOf returns f when e is v.f.
func fieldOf(e celast.Expr, v string) (string, bool) {
	if e == nil || e.Kind() != celast.SelectKind {
		return "", false
	}
	sel := e.AsSelect()
	if sel.IsTestOnly() || !isIdent(sel.Operand(), v) {
		return "", false
	}
	return sel.FieldName(), true
}

func allHold[T any](fs []func(T) bool, x T) bool {
	for _, f := range fs {
		if !f(x) {
			return false
		}
	}
	return true
}

// stringOperand reads a string value a condition tests; ok is false when
// the value is absent or not a Go string, and the test cannot tell.
type stringOperand func(s *subject) (v string, ok bool)

// stringOperandOf recognises args.k, args["k"], facts.sql_class and the
// string variables (tool, kind, agent, session, cwd, intent), whose CEL
// values are the action's fields unchanged (see subject.value).
func stringOperandOf(e celast.Expr) stringOperand {
	switch e.Kind() {
	case celast.IdentKind:
		switch e.AsIdent() {
		case "tool":
			return func(s *subject) (string, bool) { return s.a.Tool, true }
		case "kind":
			return func(s *subject) (string, bool) { return string(s.a.Kind), true }
		case "agent":
			return func(s *subject) (string, bool) { return s.a.Agent, true }
		case "session":
			return func(s *subject) (string, bool) { return s.a.Session, true }
		case "cwd":
			return func(s *subject) (string, bool) { return s.a.Cwd, true }
		case "intent":
			return func(s *subject) (string, bool) { return s.a.Intent, true }
		}
	case celast.SelectKind:
		sel := e.AsSelect()
		switch {
		case sel.IsTestOnly():
		case isIdent(sel.Operand(), "args"):
			return argString(sel.FieldName())
		case isIdent(sel.Operand(), "facts") && sel.FieldName() == "sql_class":
			return func(s *subject) (string, bool) { return s.a.Facts.SQLClass, true }
		}
	case celast.CallKind:
		// args["k"]
		call := e.AsCall()
		if args := call.Args(); call.FunctionName() == operators.Index && !call.IsMemberFunction() &&
			len(args) == 2 && isIdent(args[0], "args") {
			if k, ok := stringLiteral(args[1]); ok {
				return argString(k)
			}
		}
	}
	return nil
}

// argString reads the argument named k when it is a string.
func argString(k string) stringOperand {
	return func(s *subject) (string, bool) {
		v, _ := s.arg(k)
		str, ok := v.(string)
		return str, ok
	}
}

// argPresent is has(args.k): false when the action has no argument k.
func argPresent(k string) conjunctTest {
	return func(s *subject) bool {
		_, ok := s.arg(k)
		return ok
	}
}

// stringTest applies f to the operand's value; it cannot tell when there is
// no string to apply it to.
func stringTest(op stringOperand, f func(string) bool) conjunctTest {
	return func(s *subject) bool {
		v, ok := op(s)
		return !ok || f(v)
	}
}

// confidenceTest decides confidence < 0.3 and the like (either way round),
// against a double literal. CEL's confidence is -1 when the decider
// reported none. A NaN (which no JSON action carries) is left to CEL.
func confidenceTest(fn string, x, y celast.Expr) conjunctTest {
	lit, ok := doubleLiteral(y)
	if !ok || !isIdent(x, "confidence") {
		lit, ok = doubleLiteral(x)
		if !ok || !isIdent(y, "confidence") {
			return nil
		}
		// lit < confidence is confidence > lit, and so on.
		fn = map[string]string{operators.Less: operators.Greater, operators.LessEquals: operators.GreaterEquals,
			operators.Greater: operators.Less, operators.GreaterEquals: operators.LessEquals}[fn]
	}
	if math.IsNaN(lit) {
		return nil
	}
	var f func(c float64) bool
	switch fn {
	case operators.Less:
		f = func(c float64) bool { return c < lit }
	case operators.LessEquals:
		f = func(c float64) bool { return c <= lit }
	case operators.Greater:
		f = func(c float64) bool { return c > lit }
	default:
		f = func(c float64) bool { return c >= lit }
	}
	return func(s *subject) bool {
		c := -1.0
		if s.a.Confidence != nil {
			c = *s.a.Confidence
		}
		return math.IsNaN(c) || f(c)
	}
}

func isIdent(e celast.Expr, name string) bool {
	return e.Kind() == celast.IdentKind && e.AsIdent() == name
}

func doubleLiteral(e celast.Expr) (float64, bool) {
	if e.Kind() != celast.LiteralKind {
		return 0, false
	}
	d, ok := e.AsLiteral().(types.Double)
	return float64(d), ok
}

// stringLiterals returns the strings of a list literal of string literals.
func stringLiterals(e celast.Expr) ([]string, bool) {
	if e.Kind() != celast.ListKind {
		return nil, false
	}
	l := e.AsList()
	if len(l.OptionalIndices()) > 0 {
		return nil, false
	}
	out := make([]string, 0, len(l.Elements()))
	for _, el := range l.Elements() {
		s, ok := stringLiteral(el)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

// regexTest returns re.MatchString for the pattern, nil when it does not
// compile. Before running the regular expression it checks the literal text
// every match must have (see regexLiterals): most strings a rule meets lack
// it, and a string comparison is cheaper than starting a match.
func regexTest(pattern string) func(string) bool {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil
	}
	reqs := regexLiterals(pattern)
	if len(reqs) == 0 {
		return re.MatchString
	}
	return func(v string) bool {
		for _, r := range reqs {
			if !r.holds(v) {
				return false
			}
		}
		return re.MatchString(v)
	}
}

// litReq is a requirement on a string a regular expression matches: it
// starts with (prefix) or contains one of lits.
type litReq struct {
	prefix bool
	lits   []string
}

func (r litReq) holds(v string) bool {
	for _, l := range r.lits {
		if r.prefix && strings.HasPrefix(v, l) || !r.prefix && strings.Contains(v, l) {
			return true
		}
	}
	return false
}

// regexLiterals finds requirements every string the pattern matches (as Go's
// regexp, unanchored) meets: when the pattern is a sequence, each part that
// must begin with one of some literals puts one of them in the string, and
// after a leading ^ the first part's literal starts it. Case-insensitive
// literals give no requirement.
func regexLiterals(pattern string) []litReq {
	re, err := syntax.Parse(pattern, syntax.Perl) // as regexp.Compile
	if err != nil {
		return nil
	}
	parts := []*syntax.Regexp{re}
	if re.Op == syntax.OpConcat {
		parts = re.Sub
	}
	var out []litReq
	for i, p := range parts {
		lits, ok := leadingLiterals(p)
		if !ok {
			continue
		}
		out = append(out, litReq{prefix: i == 1 && parts[0].Op == syntax.OpBeginText, lits: lits})
	}
	return out
}

// leadingLiterals returns literals one of which begins every string re
// matches; ok is false when there are none such (re may match the empty
// string, begin with a class, ignore case).
func leadingLiterals(re *syntax.Regexp) ([]string, bool) {
	switch re.Op {
	case syntax.OpLiteral:
		// U+FFFD matches any byte that is not UTF-8, which its encoding
		// does not contain.
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 || slices.Contains(re.Rune, utf8.RuneError) {
			return nil, false
		}
		return []string{string(re.Rune)}, true
	case syntax.OpConcat:
		if len(re.Sub) == 0 {
			return nil, false
		}
		first, ok := leadingLiterals(re.Sub[0])
		if !ok || re.Sub[0].Op != syntax.OpLiteral || len(re.Sub) == 1 {
			return first, ok
		}
		// A literal followed by more: "s" then (witch|tash) is switch or
		// stash.
		rest, ok := leadingLiterals(&syntax.Regexp{Op: syntax.OpConcat, Sub: re.Sub[1:]})
		if !ok || len(rest) > maxLeadingLiterals {
			return first, true
		}
		out := make([]string, len(rest))
		for i, r := range rest {
			out[i] = first[0] + r
		}
		return out, true
	case syntax.OpCapture, syntax.OpPlus:
		return leadingLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min < 1 {
			return nil, false
		}
		return leadingLiterals(re.Sub[0])
	case syntax.OpAlternate:
		var out []string
		for _, sub := range re.Sub {
			lits, ok := leadingLiterals(sub)
			if !ok {
				return nil, false
			}
			out = append(out, lits...)
		}
		return out, len(out) > 0 && len(out) <= maxLeadingLiterals
	}
	return nil, false
}

// maxLeadingLiterals bounds the literals of one requirement.
const maxLeadingLiterals = 32
