package policy

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
)

// invalidCase is one file of testdata/invalid: a policy that must not load.
// Its first line is "# want: <text>", the text the error must contain right
// after the file's name (it starts with ":<line>:").
type invalidCase struct {
	name string
	data []byte
	want string
}

func invalidCases(t testing.TB) []invalidCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "invalid", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid cases: %v", err)
	}
	var out []invalidCase
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(data), "\n")
		want, ok := strings.CutPrefix(first, "# want: ")
		if !ok {
			t.Fatalf("%s: first line must be \"# want: ...\"", f)
		}
		out = append(out, invalidCase{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), data: data, want: strings.TrimRight(want, " ")})
	}
	return out
}

func TestParseInvalid(t *testing.T) {
	for _, tc := range invalidCases(t) {
		t.Run(tc.name, func(t *testing.T) {
			const name = "policy.yaml"
			p, err := Parse(name, tc.data, Options{})
			if err == nil {
				t.Fatalf("Parse succeeded (%d rules); want error containing %q", len(p.Rules), tc.want)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error does not wrap ErrInvalid: %v", err)
			}
			if !strings.Contains(err.Error(), name+tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s%s", err, name, tc.want)
			}
			// Every problem names the file and its line.
			for _, e := range flatten(err) {
				var pe *Error
				if !errors.As(e, &pe) {
					t.Errorf("problem %v is not a *policy.Error", e)
					continue
				}
				if pe.File != name || pe.Line <= 0 {
					t.Errorf("problem %q has file %q line %d; want %q and a line", pe.Msg, pe.File, pe.Line, name)
				}
			}
		})
	}
}

func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		if _, isPolicyErr := err.(*Error); !isPolicyErr {
			var out []error
			for _, e := range j.Unwrap() {
				out = append(out, flatten(e)...)
			}
			return out
		}
	}
	return []error{err}
}

func TestParseExampleErrorsWrapErrExample(t *testing.T) {
	tests := []struct {
		name string
		file string
		want bool
	}{
		{"failing match example", "example-match-fails.yaml", true},
		{"failing not_match example", "example-notmatch-fails.yaml", true},
		{"unknown field", "unknown-field-rule.yaml", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(filepath.Join("testdata", "invalid", tc.file), Options{})
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if got := errors.Is(err, ErrExample); got != tc.want {
				t.Errorf("errors.Is(err, ErrExample) = %v, want %v (err: %v)", got, tc.want, err)
			}
		})
	}
}

func TestParseReportsSeveralProblems(t *testing.T) {
	data := []byte(`version: 1
rules:
  - name: a
    levle: auto
  - name: b
    level: sometimes
settings:
  loop: {window: forever}
`)
	_, err := Parse("p.yaml", data, Options{})
	if err == nil {
		t.Fatal("Parse succeeded")
	}
	for _, want := range []string{"p.yaml:4:", "p.yaml:6:", "p.yaml:8:"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// TestUnknownFieldEveryLevel puts an unknown field at every nesting level of
// the file and expects each to be refused with its line.
func TestUnknownFieldEveryLevel(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"top", "bogus: 1\n", `:1: unknown field "bogus" in the policy`},
		{"rule", "rules:\n  - name: r\n    level: auto\n    bogus: 1\n", `:4: unknown field "bogus" in rule "r"`},
		{"rule without name", "rules:\n  - level: auto\n    bogus: 1\n", `:3: unknown field "bogus" in rules[0]`},
		{"match example", "rules:\n  - name: r\n    level: auto\n    match: [{tool: x, bogus: 1}]\n", `:4: unknown field "bogus" in rule "r".match[0]`},
		{"not_match example", "rules:\n  - name: r\n    tool: y\n    level: auto\n    not_match: [{tool: x, bogus: 1}]\n", `:5: unknown field "bogus" in rule "r".not_match[0]`},
		{"settings", "settings:\n  bogus: 1\n", `:2: unknown field "bogus" in settings`},
		{"settings.loop", "settings:\n  loop:\n    bogus: 1\n", `:3: unknown field "bogus" in settings.loop`},
		{"settings.metacognition", "settings:\n  metacognition:\n    bogus: 1\n", `:3: unknown field "bogus" in settings.metacognition`},
		{"settings.approvals", "settings:\n  approvals:\n    bogus: 1\n", `:3: unknown field "bogus" in settings.approvals`},
		{"settings.adaptation", "settings:\n  adaptation:\n    bogus: 1\n", `:3: unknown field "bogus" in settings.adaptation`},
		{"settings.params", "settings:\n  params:\n    bogus: 1\n", `:3: unknown field "bogus" in settings.params`},
		{"settings.sandbox", "settings:\n  sandbox:\n    bogus: 1\n", `:3: unknown field "bogus" in settings.sandbox`},
		{"defaults", "defaults:\n  bogus: auto\n", `:2: unknown kind "bogus" in defaults`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("f.yaml", []byte(tc.yaml), Options{})
			if err == nil || !strings.Contains(err.Error(), "f.yaml"+tc.want) {
				t.Fatalf("error = %v\nwant it to contain f.yaml%s", err, tc.want)
			}
		})
	}
}

func TestParseValid(t *testing.T) {
	data := []byte(`version: 1
extends: builtin
locked: true
defaults:
  shell: approve
  mcp: notify
rules:
  - name: no-force-push
    tool: [Bash, bash]
    kind: shell
    agent: "claude-*"
    when: 'args.command.contains("--force")'
    level: approve
    message: Force pushes rewrite shared history.
    match:     [{tool: Bash, agent: claude-code, args: {command: "git push --force"}}]
    not_match: [{tool: Bash, agent: claude-code, args: {command: "git push"}}]
  - name: reads
    tool: Read
    level: auto
settings:
  loop:
    window: 2m
    same_args: 4
  approvals:
    default: approve
  sandbox:
    readable_paths: [/srv/data]
guards:
  shell:
    extra_readonly: [jq]
`)
	p, err := Parse("admin.yaml", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b := Builtin()
	t.Run("header", func(t *testing.T) {
		if p.Name != "admin.yaml" || p.Version != 1 || p.Extends != ExtendsBuiltin || !p.Locked || len(p.Digest) != 64 {
			t.Errorf("got name %q version %d extends %q locked %v digest %q", p.Name, p.Version, p.Extends, p.Locked, p.Digest)
		}
	})
	t.Run("rules: the file's, then the built-in's", func(t *testing.T) {
		if len(p.Rules) != 2+len(b.Rules) {
			t.Fatalf("got %d rules, want %d", len(p.Rules), 2+len(b.Rules))
		}
		r := p.Rules[0]
		if r.Name != "no-force-push" || r.Layer != LayerAdmin || r.Index != 0 || r.Line != 8 || r.Level != action.Approve {
			t.Errorf("rule 0 = %s/%s index %d line %d level %s", r.Name, r.Layer, r.Index, r.Line, r.Level)
		}
		if !reflect.DeepEqual(r.Tool, []string{"Bash", "bash"}) || !reflect.DeepEqual(r.Kind, []action.Kind{action.KindShell}) ||
			!reflect.DeepEqual(r.Agent, []string{"claude-*"}) || r.Message != "Force pushes rewrite shared history." {
			t.Errorf("rule 0 fields = %+v", r.Rule)
		}
		if p.Rules[1].Line != 17 || p.Rules[1].Index != 1 {
			t.Errorf("rule 1 line %d index %d, want 17 and 1", p.Rules[1].Line, p.Rules[1].Index)
		}
		for i, c := range p.Rules[2:] {
			if c != b.Rules[i] || c.Layer != LayerBuiltin {
				t.Errorf("rule %d is not built-in rule %d", i+2, i)
			}
		}
	})
	t.Run("defaults merged", func(t *testing.T) {
		want := map[action.Kind]action.Level{action.KindShell: action.Approve, action.KindMCP: action.Notify}
		for _, k := range action.Kinds {
			w, ok := want[k]
			if !ok {
				w = b.Default(k)
			}
			if got := p.Default(k); got != w {
				t.Errorf("Default(%s) = %s, want %s", k, got, w)
			}
		}
	})
	t.Run("settings filled", func(t *testing.T) {
		want := DefaultSettings()
		want.Loop.Window = Duration(2 * time.Minute)
		want.Loop.SameArgs = 4
		want.Gate.Default = GateApprove
		want.Sandbox.ReadablePaths = []string{"/srv/data"}
		if !reflect.DeepEqual(p.Settings, want) {
			t.Errorf("settings =\n%+v\nwant\n%+v", p.Settings, want)
		}
	})
	t.Run("guards", func(t *testing.T) {
		if got := p.GuardNames(); !reflect.DeepEqual(got, []string{"shell"}) {
			t.Errorf("GuardNames = %v", got)
		}
		n, ok := p.GuardConfig("shell")
		if !ok || n == nil || n.Line != 30 {
			t.Fatalf("GuardConfig(shell) = %v, %v", n, ok)
		}
		n.Content = nil // a copy: changing it must not change the policy
		var cfg struct {
			ExtraReadonly []string `yaml:"extra_readonly"`
		}
		found, err := p.DecodeGuard("shell", &cfg)
		if !found || err != nil || !reflect.DeepEqual(cfg.ExtraReadonly, []string{"jq"}) {
			t.Errorf("DecodeGuard = %v, %v, %+v", found, err, cfg)
		}
		if _, ok := p.GuardConfig("paths"); ok {
			t.Error("GuardConfig(paths) found")
		}
		if found, err := p.DecodeGuard("paths", &cfg); found || err != nil {
			t.Errorf("DecodeGuard(paths) = %v, %v", found, err)
		}
	})
}

func TestDecodeGuardStrict(t *testing.T) {
	p, err := Parse("g.yaml", []byte("guards:\n  shell:\n    extra_readonly: [jq]\n    extra_readonyl: [yq]\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		ExtraReadonly []string `yaml:"extra_readonly"`
	}
	_, err = p.DecodeGuard("shell", &cfg)
	want := `g.yaml:4: unknown field "extra_readonyl" in guards.shell (did you mean "extra_readonly"?)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	if _, err := p.DecodeGuard("shell", cfg); err == nil {
		t.Error("DecodeGuard into a non-pointer succeeded")
	}
}

func TestParseExtendsNone(t *testing.T) {
	p, err := Parse("n.yaml", []byte("extends: none\ndefaults: {file_read: auto}\nrules: [{name: r, tool: x, level: block}]\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 1 {
		t.Errorf("got %d rules, want only the file's", len(p.Rules))
	}
	for _, k := range action.Kinds {
		want := action.Confirm
		if k == action.KindFileRead {
			want = action.Auto
		}
		if got := p.Default(k); got != want {
			t.Errorf("Default(%s) = %s, want %s", k, got, want)
		}
	}
	if !reflect.DeepEqual(p.Settings, DefaultSettings()) {
		t.Errorf("settings not filled from the defaults: %+v", p.Settings)
	}
}

func TestParseEmpty(t *testing.T) {
	for _, data := range []string{"", "# only a comment\n", "---\n"} {
		p, err := Parse("e.yaml", []byte(data), Options{})
		if err != nil {
			t.Fatalf("Parse(%q): %v", data, err)
		}
		if len(p.Rules) != len(Builtin().Rules) || p.Extends != ExtendsBuiltin {
			t.Errorf("Parse(%q): an empty file should be the built-in policy", data)
		}
	}
}

func TestDefaultNeverAuto(t *testing.T) {
	p, err := Parse("a.yaml", []byte("extends: none\ndefaults: {shell: auto, file_read: auto, other: auto}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		kind action.Kind
		want action.Level
	}{
		{action.KindShell, action.Auto}, // the file said so
		{action.KindOther, action.Auto},
		{action.KindSQL, action.Confirm}, // unset in an extends: none file
		{"", action.Confirm},
		{"teleport", action.Confirm}, // unknown kinds never take "other"'s default
	}
	for _, tc := range tests {
		t.Run(string(tc.kind), func(t *testing.T) {
			if got := p.Default(tc.kind); got != tc.want {
				t.Errorf("Default(%q) = %s, want %s", tc.kind, got, tc.want)
			}
		})
	}
}

func TestScalarOrList(t *testing.T) {
	p, err := Parse("s.yaml", []byte("extends: none\nrules:\n  - {name: a, tool: Bash, kind: shell, agent: codex, level: auto}\n  - {name: b, tool: [Bash, sh], kind: [shell, other], agent: [x, y], level: auto}\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Rules[0], p.Rules[1]
	if !reflect.DeepEqual(a.Tool, []string{"Bash"}) || !reflect.DeepEqual(a.Kind, []action.Kind{"shell"}) || !reflect.DeepEqual(a.Agent, []string{"codex"}) {
		t.Errorf("scalar forms: %+v", a.Rule)
	}
	if len(b.Tool) != 2 || len(b.Kind) != 2 || len(b.Agent) != 2 {
		t.Errorf("list forms: %+v", b.Rule)
	}
}

func TestAliases(t *testing.T) {
	data := []byte("extends: none\nrules:\n  - name: a\n    tool: &tools [Bash, sh]\n    level: auto\n  - name: b\n    tool: *tools\n    level: notify\n")
	p, err := Parse("a.yaml", data, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(p.Rules[1].Tool, []string{"Bash", "sh"}) {
		t.Errorf("alias not followed: %v", p.Rules[1].Tool)
	}
}

func TestAliasBomb(t *testing.T) {
	var b strings.Builder
	b.WriteString("guards:\n  a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i < 9; i++ {
		b.WriteString("  a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [")
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			b.WriteString("*a" + string(rune('0'+i-1)))
		}
		b.WriteString("]\n")
	}
	start := time.Now()
	_, err := Parse("bomb.yaml", []byte(b.String()), Options{})
	if err == nil || !strings.Contains(err.Error(), "too large") {
		t.Errorf("err = %v, want a too-large error", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
}

func TestDuration(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{"30s", 30 * time.Second, false},
		{"10m", 10 * time.Minute, false},
		{"1h30m", 90 * time.Minute, false},
		{"0s", 0, false},
		{"", 0, false},
		{"250ms", 250 * time.Millisecond, false},
		{"30", 0, true},
		{"-1s", 0, true},
		{"soon", 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			var d Duration
			err := d.UnmarshalText([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("UnmarshalText(%q) err = %v, wantErr %v", tc.in, err, tc.wantErr)
			}
			if err == nil && d.Std() != tc.want {
				t.Errorf("UnmarshalText(%q) = %v, want %v", tc.in, d.Std(), tc.want)
			}
		})
	}
	t.Run("json round trip", func(t *testing.T) {
		in := Duration(90 * time.Second)
		b, err := in.MarshalJSON()
		if err != nil || string(b) != `"1m30s"` {
			t.Fatalf("MarshalJSON = %s, %v", b, err)
		}
		var out Duration
		if err := out.UnmarshalJSON(b); err != nil || out != in {
			t.Errorf("UnmarshalJSON = %v, %v", out, err)
		}
		if err := out.UnmarshalJSON([]byte(`90`)); err == nil {
			t.Error("a JSON number was accepted")
		}
	})
	t.Run("yaml round trip", func(t *testing.T) {
		in := Duration(5 * time.Minute)
		v, err := in.MarshalYAML()
		if err != nil || v != "5m0s" {
			t.Fatalf("MarshalYAML = %v, %v", v, err)
		}
		p, err := Parse("d.yaml", []byte("settings: {approvals: {timeout: 5m0s}, loop: {window: \"90s\"}}\n"), Options{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Settings.Gate.Timeout != in || p.Settings.Loop.Window != Duration(90*time.Second) {
			t.Errorf("timeout %v window %v", p.Settings.Gate.Timeout, p.Settings.Loop.Window)
		}
	})
	t.Run("settings json", func(t *testing.T) {
		s := DefaultSettings()
		b, err := jsonMarshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"window":"5m0s"`) {
			t.Errorf("settings JSON = %s", b)
		}
	})
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(good, []byte("rules: [{name: r, tool: Bash, level: confirm}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := Load(good, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != good || p.Rules[0].Name != "r" {
		t.Errorf("loaded %q rule %q", p.Name, p.Rules[0].Name)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("rules: [{name: r, levle: confirm}]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad, Options{}); err == nil || !strings.HasPrefix(err.Error(), bad+":1: ") {
		t.Errorf("bad file: err = %v, want it to start with %s:1:", err, bad)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, make([]byte, maxFileBytes+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big, Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("big file: err = %v, want ErrInvalid", err)
	}
}

func TestDecodeRuleJSON(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
	}{
		{"good", `{"name":"r","tool":["Bash"],"level":"approve","when":"true"}`, false},
		{"unknown field", `{"name":"r","levle":"approve"}`, true},
		{"bad level", `{"name":"r","level":"often"}`, true},
		{"trailing", `{"name":"r","level":"auto"} {}`, true},
		{"not json", `name: r`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRuleJSON([]byte(tc.in))
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrInvalid) {
				t.Errorf("err %v does not wrap ErrInvalid", err)
			}
			if err == nil && (r.Name != "r" || r.Level != action.Approve) {
				t.Errorf("rule = %+v", r)
			}
		})
	}
}

func TestCompileRules(t *testing.T) {
	ok := Rule{Name: "s", Session: "s1", Level: action.Auto, Tool: []string{"Bash"},
		Match: []Example{{Tool: "Bash", Session: "s1"}}, NotMatch: []Example{{Tool: "Bash", Session: "s2"}}}
	tests := []struct {
		name    string
		rules   []Rule
		want    string // error text; "" for success
		example bool
	}{
		{"good", []Rule{ok, {Name: "t", Tool: []string{"mcp__*"}, Level: action.Notify}}, "", false},
		{"duplicate", []Rule{ok, ok}, `user rule "s": duplicate rule name`, false},
		{"missing name", []Rule{{Level: action.Auto}}, "user rule #1: missing name", false},
		{"missing level", []Rule{{Name: "x"}}, `user rule "x": missing level`, false},
		{"invalid level", []Rule{{Name: "x", Level: action.Level(9)}}, `user rule "x": unknown level level(9)`, false},
		{"bad glob", []Rule{{Name: "x", Level: action.Auto, Tool: []string{"["}}}, `user rule "x": tool: bad glob "["`, false},
		{"bad kind", []Rule{{Name: "x", Level: action.Auto, Kind: []action.Kind{"net"}}}, `user rule "x": unknown kind "net"`, false},
		{"bad cel", []Rule{{Name: "x", Level: action.Auto, When: "1 +"}}, `user rule "x": when:`, false},
		{"failing example", []Rule{{Name: "x", Level: action.Auto, Tool: []string{"Bash"}, Match: []Example{{Tool: "Read"}}}},
			`user rule "x": match example 1 {tool: Read}: want match, got no match`, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := CompileRules(LayerUser, tc.rules, Options{})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				for i, c := range cs {
					if c.Layer != LayerUser || c.Index != i || c.Line != 0 {
						t.Errorf("rule %d: layer %q index %d line %d", i, c.Layer, c.Index, c.Line)
					}
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.want)
			}
			if !errors.Is(err, ErrInvalid) || errors.Is(err, ErrExample) != tc.example {
				t.Errorf("err %v: ErrInvalid %v, ErrExample %v (want %v)", err, errors.Is(err, ErrInvalid), errors.Is(err, ErrExample), tc.example)
			}
		})
	}
}

func TestPrepareOption(t *testing.T) {
	data := []byte(`extends: none
rules:
  - name: rm
    kind: shell
    when: 'facts.commands.exists(c, c.name == "rm")'
    level: approve
    match: [{tool: Bash, args: {command: "cd /tmp && rm -rf x"}}]
`)
	// Without Prepare the shell guard's analyzer derives the facts: it sees
	// both segments, so the example passes.
	if _, err := Parse("p.yaml", data, Options{}); err != nil {
		t.Fatalf("default shell analysis: %v", err)
	}
	// A Prepare that derives nothing makes the example fail: Prepare
	// replaces the default derivation.
	if _, err := Parse("p.yaml", data, Options{Prepare: func(*action.Action) error { return nil }}); !errors.Is(err, ErrExample) {
		t.Fatalf("empty Prepare: err = %v, want ErrExample", err)
	}
	var seen []string
	prepare := func(a *action.Action) error {
		seen = append(seen, string(a.Kind))
		cmd, _ := a.StringArg("command")
		for _, seg := range strings.Split(cmd, "&&") {
			f := strings.Fields(seg)
			a.Facts.Commands = append(a.Facts.Commands, action.Command{Name: f[0], Args: f[1:]})
		}
		return nil
	}
	p, err := Parse("p.yaml", data, Options{Prepare: prepare})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(seen, []string{"shell"}) {
		t.Errorf("Prepare saw kinds %v; want the inferred kind", seen)
	}
	for _, r := range p.Test() {
		if !r.Pass {
			t.Errorf("Test: %+v", r)
		}
	}
	failing := func(*action.Action) error { return errors.New("analyzer down") }
	if _, err := Parse("p.yaml", data, Options{Prepare: failing}); err == nil || !strings.Contains(err.Error(), "analyzer down") {
		t.Errorf("a failing Prepare: err = %v", err)
	}
}
