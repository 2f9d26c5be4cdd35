package policy

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	celast "cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"

	"github.com/overseer-dev/overseer/internal/action"
)

// celCostLimit bounds the work one condition may do on one action. A
// condition that exceeds it fails to evaluate, and the engine fails closed.
// Cost tracking slows evaluation down, so it is applied only to conditions
// with more than one comprehension (macros such as all, exists, map): the
// others do work linear in the size of the action, which is bounded by the
// parameter size cap, while nested comprehensions multiply it.
const celCostLimit = 1_000_000

// celEnv is the CEL environment every condition is compiled in. It is built
// once; cel.Env is safe for concurrent use.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("kind", cel.StringType),
		cel.Variable("agent", cel.StringType),
		cel.Variable("session", cel.StringType),
		cel.Variable("cwd", cel.StringType),
		cel.Variable("intent", cel.StringType),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("facts", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("confidence", cel.DoubleType),
		ext.Strings(),
		cel.CrossTypeNumericComparisons(true),
		cel.Function("glob",
			cel.Overload("glob_string_string", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType,
				cel.BinaryBinding(celGlob))),
	)
})

// celGlob implements glob(pattern, s): a case-insensitive path.Match.
func celGlob(pattern, s ref.Val) ref.Val {
	p, ok1 := pattern.(types.String)
	v, ok2 := s.(types.String)
	if !ok1 || !ok2 {
		return types.NewErr("glob: want (string, string)")
	}
	ok, err := path.Match(strings.ToLower(string(p)), strings.ToLower(string(v)))
	if err != nil {
		return types.NewErr("glob: bad pattern %q", string(p))
	}
	return types.Bool(ok)
}

// celProgram is a compiled condition.
type celProgram struct {
	prg cel.Program
	// limited reports whether prg tracks its cost (see celCostLimit).
	limited bool
	// commands, when set, are names one of which some shell command of the
	// action must have for the condition to be true (see commandPrefilter).
	commands []string
	// tests decide some of the condition's conjuncts without CEL (see
	// conjunctTest); none when limited.
	tests []conjunctTest
}

// compileCEL compiles a condition that must return bool.
func compileCEL(expr string) (*celProgram, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, errors.New(strings.TrimSpace(iss.Err().Error()))
	}
	if !ast.OutputType().IsExactType(cel.BoolType) {
		return nil, fmt.Errorf("condition returns %s, want bool", ast.OutputType())
	}
	p := &celProgram{limited: comprehensions(ast) > 1, commands: commandPrefilter(ast)}
	if !p.limited {
		p.tests = conjunctTests(ast)
	}
	opts := []cel.ProgramOption{cel.EvalOptions(cel.OptOptimize)}
	if p.limited {
		opts = append(opts, cel.CostLimit(celCostLimit))
	}
	if p.prg, err = env.Program(ast, opts...); err != nil {
		return nil, err
	}
	return p, nil
}

// comprehensions counts the comprehensions of a checked expression.
func comprehensions(a *cel.Ast) int {
	n := 0
	celast.PreOrderVisit(a.NativeRep().Expr(), celast.NewExprVisitor(func(e celast.Expr) {
		if e.Kind() == celast.ComprehensionKind {
			n++
		}
	}))
	return n
}

// Shared read-only CEL values.
var (
	emptyArgs    = types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{})
	noConfidence = types.Double(-1)
)

// subject is one action being matched against a list of rules. It caches
// what rules need more than once (lower-cased names, the arguments' hash,
// the CEL form of args and facts) and is the CEL activation, resolving
// variables lazily: a condition that reads only args never builds facts.
type subject struct {
	a        *action.Action
	tool     string  // lower-cased
	agent    string  // lower-cased
	kind     kindSet // the action's kind as a set bit; 0 for an unknown kind
	hash     string
	hashDone bool
	// CEL values, made on first use.
	vals [numVars]ref.Val
	// argKey, argVal and argOK are the last argument the conjunct tests
	// looked up (argDone once there is one): rules one after another read
	// the same one.
	argKey  string
	argVal  any
	argOK   bool
	argDone bool
	// frame is the execution frame shared by the evaluations of programs
	// without cost tracking, made on first use and released by close. (A
	// cost-tracked program gets a fresh frame each time: the tracker lives
	// in the frame.)
	frame *interpreter.ExecutionFrame
}

// input returns what a program is evaluated on.
func (s *subject) input(limited bool) any {
	if limited {
		return s
	}
	if s.frame == nil {
		f, err := interpreter.NewExecutionFrame(s)
		if err != nil {
			return s // cannot happen for an Activation; evaluate unshared
		}
		s.frame = f
	}
	return s.frame
}

// arg returns the argument k of the action and whether it has one.
func (s *subject) arg(k string) (any, bool) {
	if !s.argDone || s.argKey != k {
		s.argVal, s.argOK = s.a.Args[k]
		s.argKey, s.argDone = k, true
	}
	return s.argVal, s.argOK
}

// hasCommand reports whether a shell command of the action has one of the
// names (sorted).
func (s *subject) hasCommand(names []string) bool {
	for _, c := range s.a.Facts.Commands {
		if _, ok := slices.BinarySearch(names, c.Name); ok {
			return true
		}
	}
	return false
}

// close releases the shared frame.
func (s *subject) close() {
	if s.frame != nil {
		s.frame.Close()
		s.frame = nil
	}
}

// Indexes of subject.vals.
const (
	varTool = iota
	varKind
	varAgent
	varSession
	varCwd
	varIntent
	varConfidence
	varArgs
	varFacts
	numVars
)

var _ interpreter.Activation = (*subject)(nil)

func newSubject(a *action.Action) *subject {
	return &subject{a: a, tool: strings.ToLower(a.Tool), agent: strings.ToLower(a.Agent), kind: kindBit(a.Kind)}
}

func (s *subject) argsHash() string {
	if !s.hashDone {
		s.hash, s.hashDone = s.a.ArgsHash(), true
	}
	return s.hash
}

// ResolveName implements interpreter.Activation.
func (s *subject) ResolveName(name string) (any, bool) {
	var i int
	switch name {
	case "tool":
		i = varTool
	case "kind":
		i = varKind
	case "agent":
		i = varAgent
	case "session":
		i = varSession
	case "cwd":
		i = varCwd
	case "intent":
		i = varIntent
	case "confidence":
		i = varConfidence
	case "args":
		i = varArgs
	case "facts":
		i = varFacts
	default:
		return nil, false
	}
	if v := s.vals[i]; v != nil {
		return v, true
	}
	v := s.value(i)
	s.vals[i] = v
	return v, true
}

// value makes the CEL value of variable i.
func (s *subject) value(i int) ref.Val {
	a := s.a
	switch i {
	case varTool:
		return types.String(a.Tool)
	case varKind:
		return types.String(a.Kind)
	case varAgent:
		return types.String(a.Agent)
	case varSession:
		return types.String(a.Session)
	case varCwd:
		return types.String(a.Cwd)
	case varIntent:
		return types.String(a.Intent)
	case varConfidence:
		if a.Confidence == nil {
			return noConfidence
		}
		return types.Double(*a.Confidence)
	case varArgs:
		if a.Args == nil {
			return emptyArgs
		}
		return types.NewStringInterfaceMap(types.DefaultTypeAdapter, a.Args)
	default:
		return factsValue(&a.Facts)
	}
}

// Parent implements interpreter.Activation.
func (s *subject) Parent() interpreter.Activation { return nil }

// factsValue is the CEL form of facts: the JSON field names, with every list
// present (empty when absent) so that .all() and .exists() always work. It
// is built from CEL values directly, so that conditions read it without
// reflection.
func factsValue(f *action.Facts) ref.Val {
	reg := types.DefaultTypeAdapter
	cmds := make([]ref.Val, len(f.Commands))
	for i, c := range f.Commands {
		cmds[i] = types.NewRefValMap(reg, map[ref.Val]ref.Val{
			keyName:    types.String(c.Name),
			keySub:     types.String(c.Sub()),
			keyArgs:    types.NewStringList(reg, c.Args),
			keyDynamic: types.Bool(c.Dynamic),
			keyLocal:   types.Bool(c.LocalCluster),
		})
	}
	paths := make([]ref.Val, len(f.Paths))
	for i, p := range f.Paths {
		paths[i] = types.NewRefValMap(reg, map[ref.Val]ref.Val{
			keyPath:    types.String(p.Path),
			keyIntent:  types.String(p.Intent),
			keyInCwd:   types.Bool(p.InCwd),
			keyCreated: types.Bool(p.Created),
		})
	}
	return types.NewRefValMap(reg, map[ref.Val]ref.Val{
		keyCommands: types.NewRefValList(reg, cmds),
		keyPaths:    types.NewRefValList(reg, paths),
		keyURLs:     types.NewStringList(reg, f.URLs),
		keySQLClass: types.String(f.SQLClass),
		keyNotes:    types.NewStringList(reg, f.Notes),
	})
}

// Keys of the CEL form of facts.
var (
	keyName     = types.String("name")
	keyArgs     = types.String("args")
	keySub      = types.String("sub")
	keyDynamic  = types.String("dynamic")
	keyLocal    = types.String("local_cluster")
	keyPath     = types.String("path")
	keyIntent   = types.String("intent")
	keyInCwd    = types.String("in_cwd")
	keyCreated  = types.String("created")
	keyCommands = types.String("commands")
	keyPaths    = types.String("paths")
	keyURLs     = types.String("urls")
	keySQLClass = types.String("sql_class")
	keyNotes    = types.String("notes")
)
