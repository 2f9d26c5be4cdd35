package policy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	celast "cel.dev/cel-go/common/ast"
	"go.yaml.in/yaml/v3"
)

// quickCases are conditions beyond the policies' that exercise the
// grammar: macros, literals of every kind, escapes, precedence, errors.
var quickCases = []string{
	`true`, `false || true && !false`, `1 + 2 * 3 - 4 / 2 % 3 == 5`, `-1 < 0 && 2u > 1u && 1.5e3 >= 1500.0`,
	`"a\tb\n\u00e9\x41\101" + 'c' + r"\d+" + """x"""`, `b"\xff" == bytes("\xff")`, `null == null`,
	`args.command.startsWith("echo ") && args.command.contains("x") || args.command.endsWith(";")`,
	`args.command.matches("^git\\s+push") ? true : false`, `tool in ["Bash", "Edit"] && kind == "shell"`,
	`has(args.command) && has(facts.paths)`, `args.x.y.z == 1`, `args["command"] == "a"`, `{"a": 1}["a"] == 1`,
	`[1, 2, 3].all(x, x > 0)`, `[1, 2, 3].exists(x, x == 2)`, `[1, 2, 3].exists_one(x, x == 2)`,
	`[1, 2, 3].map(x, x * 2).size() == 3`, `[1, 2, 3].filter(x, x > 1).size() == 2`, `[1, 2].map(x, x > 1, x) == [2]`,
	`{"a": 1}.all(k, k == "a")`, `facts.paths.exists(p, p.path.startsWith("/etc/") && p.intent == "write")`,
	`args.command.split(" ").size() > 2`, `args.command.lowerAscii().trim() == "ls"`, `glob("*.go", args.path)`,
	`size(args) > 0 && int(confidence * 100.0) > 50 && double(1) == 1.0 && string(1) == "1"`,
	`((((tool == "a"))))`, `!(!(true))`, `-(-1) == 1`, `1 < 2 == true`, `a.b`, `tool ==`, `tool == "unterminated`,
	`[1, 2,`, `args.`, `1 +* 2`, `in in in`, `tool == 'a' ? 'b'`, `f(`, `{"a" 1}`, `x.all(y)`, `1.2.3`, `0x`, `"\z"`,
	`args.command.size()`, `tool == 1`, `args.missing_function()`, `[].all(x, x)`, `{}.size() == 0`,
	`args.command.startsWith("a") && args.command.startsWith("b") && args.command.startsWith("c") && tool == "d"`,
	`dyn(1) == 1 && type(1) == int`, `1 in [1] && "a" in {"a": 1}`, `args.?command == "a"`, "tool == `a`",
	`args.cmd.all(c, c.exists(d, d == "x"))`, `.tool == "a"`, `__result__ == 1`, `@result`, `tool.a.b.c.d.e.f.g.h`,
}

// conditions gathers the when: conditions of the YAML files under dirs.
func conditions(t *testing.T, files ...string) []string {
	t.Helper()
	var out []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && k == "when" {
					out = append(out, s)
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		if strings.HasSuffix(f, ".json") {
			_ = json.Unmarshal(b, &v)
		} else {
			_ = yaml.Unmarshal(b, &v) // an invalid test file still gives what it holds
		}
		walk(v)
	}
	return out
}

// canon writes a tree without its ids: the parsers number nodes
// differently, and the optimizer renumbers them.
func canon(e celast.Expr) string {
	var b strings.Builder
	var w func(e celast.Expr)
	w = func(e celast.Expr) {
		switch e.Kind() {
		case celast.LiteralKind:
			v := e.AsLiteral()
			fmt.Fprintf(&b, "lit(%T:%v)", v, v.Value())
		case celast.IdentKind:
			b.WriteString("id(" + e.AsIdent() + ")")
		case celast.SelectKind:
			s := e.AsSelect()
			b.WriteString("sel(")
			w(s.Operand())
			fmt.Fprintf(&b, ".%s,%t)", s.FieldName(), s.IsTestOnly())
		case celast.CallKind:
			c := e.AsCall()
			b.WriteString("call(" + c.FunctionName())
			if c.IsMemberFunction() {
				b.WriteString(",target=")
				w(c.Target())
			}
			for _, a := range c.Args() {
				b.WriteString(",")
				w(a)
			}
			b.WriteString(")")
		case celast.ListKind:
			l := e.AsList()
			fmt.Fprintf(&b, "list(opt=%v", l.OptionalIndices())
			for _, x := range l.Elements() {
				b.WriteString(",")
				w(x)
			}
			b.WriteString(")")
		case celast.MapKind:
			b.WriteString("map(")
			for _, en := range e.AsMap().Entries() {
				me := en.AsMapEntry()
				fmt.Fprintf(&b, "[%t:", me.IsOptional())
				w(me.Key())
				b.WriteString("=")
				w(me.Value())
				b.WriteString("]")
			}
			b.WriteString(")")
		case celast.StructKind:
			s := e.AsStruct()
			b.WriteString("struct(" + s.TypeName())
			for _, f := range s.Fields() {
				sf := f.AsStructField()
				fmt.Fprintf(&b, ",%s:%t=", sf.Name(), sf.IsOptional())
				w(sf.Value())
			}
			b.WriteString(")")
		case celast.ComprehensionKind:
			c := e.AsComprehension()
			fmt.Fprintf(&b, "comp(%s,%s,%s,", c.IterVar(), c.IterVar2(), c.AccuVar())
			for _, x := range []celast.Expr{c.IterRange(), c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
				w(x)
				b.WriteString(";")
			}
			b.WriteString(")")
		default:
			fmt.Fprintf(&b, "kind(%d)", e.Kind())
		}
	}
	w(e)
	return b.String()
}

// TestQuickCompileAgrees: for every condition of the built-in policy, the
// test policies, the benchmark's rule set and quickCases, compiling with
// the Pratt parser (compileQuick) gives the same checked tree and type as
// cel.Env's own Compile, or declines (the caller then compiles with
// Compile); it never accepts what Compile refuses.
func TestQuickCompileAgrees(t *testing.T) {
	env, err := celEnv()
	if err != nil {
		t.Fatal(err)
	}
	files := []string{"builtin.yaml", filepath.Join("..", "frontend", "hooks", "testdata", "policy.yaml")}
	for _, dir := range []string{"testdata"} {
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
				files = append(files, p)
			}
			return nil
		})
	}
	exprs := append(conditions(t, files...), quickCases...)
	exprs = append(exprs, docConditions(t)...)
	sort.Strings(exprs)
	if len(exprs) < len(quickCases)+20 {
		t.Fatalf("only %d conditions gathered", len(exprs))
	}
	quick, declined := 0, 0
	for _, expr := range exprs {
		slow, iss := env.Compile(expr)
		fast, ok := compileQuick(env, expr)
		switch {
		case !ok:
			declined++
		case iss.Err() != nil:
			t.Errorf("%q: the quick compile accepts what Compile refuses (%v)", expr, iss.Err())
		default:
			quick++
			if a, b := canon(slow.NativeRep().Expr()), canon(fast.NativeRep().Expr()); a != b {
				t.Errorf("%q: trees differ:\n  Compile %s\n  quick   %s", expr, a, b)
			}
			if !slow.OutputType().IsExactType(fast.OutputType()) {
				t.Errorf("%q: types differ: %v, %v", expr, slow.OutputType(), fast.OutputType())
			}
		}
		if ok && iss.Err() == nil {
			continue
		}
		if ok != (iss.Err() == nil) && ok {
			t.Errorf("%q: accepted quickly, refused by Compile", expr)
		}
	}
	t.Logf("%d conditions: %d compiled quickly and identically, %d left to Compile", len(exprs), quick, declined)
	if quick < len(exprs)/2 {
		t.Errorf("only %d of %d compiled quickly", quick, len(exprs))
	}
}

// docConditions are the one-line conditions the documentation shows.
func docConditions(t *testing.T) []string {
	t.Helper()
	var out []string
	md, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	more, _ := filepath.Glob(filepath.Join("..", "..", "docs", "*", "*.md"))
	for _, f := range append(md, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			_, rest, ok := strings.Cut(line, "when: ")
			if !ok || len(rest) < 2 {
				continue
			}
			var v string
			if yaml.Unmarshal([]byte(strings.TrimSpace(rest)), &v) == nil && v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}
