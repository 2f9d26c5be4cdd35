package policy

import (
	"slices"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
)

// commandPrefilter finds, in a condition, a necessary requirement on the
// names of the action's shell commands, so that most actions can be judged
// "no match" without running CEL. It recognises the form rules about
// commands are written in:
//
//	... && facts.commands.exists(c, (c.name == "git" && ...) || (c.name in ["npm", "yarn"] && ...)) && ...
//
// When every alternative inside exists requires c.name to be one of some
// string literals, and that exists is a conjunct of the whole condition, the
// condition can only be true when some command has one of those names.
// (CEL's && is false whenever one side is false, even when the other side is
// an error, so skipping the evaluation changes no result.) It returns the
// names, sorted, or nil when the condition has no such requirement.
func commandPrefilter(a *cel.Ast) []string {
	for _, e := range conjuncts(a.NativeRep().Expr(), nil) {
		if names := existsNames(e); names != nil {
			slices.Sort(names)
			return slices.Compact(names)
		}
	}
	return nil
}

// conjuncts flattens a && b && c.
func conjuncts(e celast.Expr, out []celast.Expr) []celast.Expr {
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.LogicalAnd {
		for _, arg := range e.AsCall().Args() {
			out = conjuncts(arg, out)
		}
		return out
	}
	return append(out, e)
}

// disjuncts flattens a || b || c.
func disjuncts(e celast.Expr, out []celast.Expr) []celast.Expr {
	if e.Kind() == celast.CallKind && e.AsCall().FunctionName() == operators.LogicalOr {
		for _, arg := range e.AsCall().Args() {
			out = disjuncts(arg, out)
		}
		return out
	}
	return append(out, e)
}

// existsNames returns the command names e requires when e is
// facts.commands.exists(c, q) with a name requirement in every alternative
// of q.
func existsNames(e celast.Expr) []string {
	if e.Kind() != celast.ComprehensionKind {
		return nil
	}
	comp := e.AsComprehension()
	if comp.HasIterVar2() || !isFactsCommands(comp.IterRange()) {
		return nil
	}
	// The exists macro: accumulator starts false, step is accu || q,
	// result is accu.
	init := comp.AccuInit()
	if init.Kind() != celast.LiteralKind || init.AsLiteral() != types.False {
		return nil
	}
	res := comp.Result()
	if res.Kind() != celast.IdentKind || res.AsIdent() != comp.AccuVar() {
		return nil
	}
	step := comp.LoopStep()
	if step.Kind() != celast.CallKind || step.AsCall().FunctionName() != operators.LogicalOr {
		return nil
	}
	args := step.AsCall().Args()
	if len(args) != 2 || args[0].Kind() != celast.IdentKind || args[0].AsIdent() != comp.AccuVar() {
		return nil
	}
	var names []string
	for _, alt := range disjuncts(args[1], nil) {
		found := false
		for _, c := range conjuncts(alt, nil) {
			if ns := nameRequirement(c, comp.IterVar()); ns != nil {
				names = append(names, ns...)
				found = true
				break
			}
		}
		if !found {
			return nil
		}
	}
	return names
}

func isFactsCommands(e celast.Expr) bool {
	if e.Kind() != celast.SelectKind {
		return false
	}
	sel := e.AsSelect()
	op := sel.Operand()
	return !sel.IsTestOnly() && sel.FieldName() == "commands" && op.Kind() == celast.IdentKind && op.AsIdent() == "facts"
}

// nameRequirement returns the names in `v.name == "x"`, `"x" == v.name` or
// `v.name in ["x", "y"]`, or nil.
func nameRequirement(e celast.Expr, v string) []string {
	if e.Kind() != celast.CallKind {
		return nil
	}
	call := e.AsCall()
	args := call.Args()
	if len(args) != 2 || call.IsMemberFunction() {
		return nil
	}
	switch call.FunctionName() {
	case operators.Equals:
		for i := range 2 {
			if isNameOf(args[i], v) {
				if s, ok := stringLiteral(args[1-i]); ok {
					return []string{s}
				}
			}
		}
	case operators.In:
		if !isNameOf(args[0], v) || args[1].Kind() != celast.ListKind {
			return nil
		}
		l := args[1].AsList()
		if len(l.OptionalIndices()) > 0 || len(l.Elements()) == 0 {
			return nil
		}
		var out []string
		for _, el := range l.Elements() {
			s, ok := stringLiteral(el)
			if !ok {
				return nil
			}
			out = append(out, s)
		}
		return out
	}
	return nil
}

func isNameOf(e celast.Expr, v string) bool {
	if e.Kind() != celast.SelectKind {
		return false
	}
	sel := e.AsSelect()
	op := sel.Operand()
	return !sel.IsTestOnly() && sel.FieldName() == "name" && op.Kind() == celast.IdentKind && op.AsIdent() == v
}

func stringLiteral(e celast.Expr) (string, bool) {
	if e.Kind() != celast.LiteralKind {
		return "", false
	}
	s, ok := e.AsLiteral().(types.String)
	return string(s), ok
}
