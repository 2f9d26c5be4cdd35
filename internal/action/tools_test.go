package action

import (
	"fmt"
	"maps"
	"strings"
	"testing"
)

func TestBuiltinToolsValid(t *testing.T) {
	for agent, tools := range builtinTools {
		for name, m := range tools {
			if err := m.Validate(); err != nil {
				t.Errorf("%s/%s: %v", agent, name, err)
			}
			if m.Level.Valid() && m.Level > Notify {
				t.Errorf("%s/%s: a table default above notify belongs in the policy", agent, name)
			}
		}
	}
}

func TestNormalize(t *testing.T) {
	tab, err := NewToolTable(map[string]map[string]ToolMapping{
		AgentClaudeCode: {"Deploy": {Kind: KindShell, Alias: map[string]string{"command": "script"}}},
		AnyAgent:        {"run_sql": {Kind: KindSQL}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		in        Action
		kind      Kind
		args      map[string]any
		known     bool
		wantLevel Level
	}{
		{"bookkeeping", Action{Agent: AgentClaudeCode, Tool: "TodoWrite", Args: map[string]any{"todos": []any{}}}, KindOther,
			map[string]any{"todos": []any{}}, true, Auto},
		{"caller's other is filled", Action{Agent: AgentClaudeCode, Tool: "Grep", Kind: KindOther}, KindFileRead, map[string]any{}, true, Unset},
		{"another kind: not the agent's tool", Action{Agent: AgentClaudeCode, Tool: "TodoWrite", Kind: KindMCP}, KindMCP, nil, false, Unset},
		{"the same kind", Action{Agent: AgentClaudeCode, Tool: "Grep", Kind: KindFileRead}, KindFileRead, map[string]any{}, true, Unset},
		{"apply_patch's command is its patch", Action{Agent: AgentCodex, Tool: "apply_patch", Args: map[string]any{"command": "*** Begin Patch"}},
			KindFileEdit, map[string]any{"input": "*** Begin Patch"}, true, Unset},
		{"a moved name already set is kept", Action{Agent: AgentCodex, Tool: "apply_patch", Args: map[string]any{"command": "x", "input": "y"}},
			KindFileEdit, map[string]any{"command": "x", "input": "y"}, true, Unset},
		{"alias", Action{Agent: AgentGemini, Tool: "read_file", Args: map[string]any{"absolute_path": "/p/a"}},
			KindFileRead, map[string]any{"absolute_path": "/p/a", "file_path": "/p/a"}, true, Unset},
		{"configured", Action{Agent: AgentClaudeCode, Tool: "Deploy", Args: map[string]any{"script": "make"}}, KindShell,
			map[string]any{"script": "make", "command": "make"}, true, Unset},
		{"any agent", Action{Agent: AgentGemini, Tool: "run_sql"}, KindSQL, map[string]any{}, true, Unset},
		{"unknown agent", Action{Agent: "my-framework", Tool: "TodoWrite"}, "", nil, false, Unset},
		{"unknown tool", Action{Agent: AgentCodex, Tool: "mcp__fs__read"}, "", nil, false, Unset},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := tc.in
			a.Args = maps.Clone(tc.in.Args)
			m, ok := tab.Normalize(&a)
			if ok != tc.known || a.Kind != tc.kind || m.Level != tc.wantLevel {
				t.Fatalf("known %v kind %q level %v, want %v %q %v", ok, a.Kind, m.Level, tc.known, tc.kind, tc.wantLevel)
			}
			if tc.args != nil && !maps.Equal(fmtArgs(a.Args), fmtArgs(tc.args)) {
				t.Fatalf("args %v, want %v", a.Args, tc.args)
			}
			// Idempotent: the hooks and the engine both apply it.
			b := a
			b.Args = maps.Clone(a.Args)
			tab.Normalize(&b)
			if b.Kind != a.Kind || !maps.Equal(fmtArgs(b.Args), fmtArgs(a.Args)) {
				t.Fatalf("not idempotent: %+v then %+v", a, b)
			}
		})
	}
}

func fmtArgs(m map[string]any) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

func TestNewToolTableRejects(t *testing.T) {
	for _, extra := range []map[string]map[string]ToolMapping{
		{"cursor": {"x": {Kind: KindShell}}},
		{AgentCodex: {"x": {Kind: "exec"}}},
		{AgentCodex: {"x": {Kind: KindShell, Level: Level(9)}}},
		{AgentCodex: {"x": {Kind: KindShell, Move: map[string]string{"a": "a"}}}},
		{AgentCodex: {"x": {Kind: KindShell, Patterns: []string{""}}}},
	} {
		if _, err := NewToolTable(extra); err == nil {
			t.Errorf("%v: accepted", extra)
		}
	}
}

func TestDeriveToolFacts(t *testing.T) {
	tests := []struct {
		agent, tool string
		args        map[string]any
		want        []PathFact
	}{
		{AgentClaudeCode, "Grep", map[string]any{"pattern": "TODO"}, []PathFact{{"/p", PathRead, true, false, true, ""}}},
		{AgentClaudeCode, "Grep", map[string]any{"pattern": "TODO", "path": "src"}, []PathFact{{"/p/src", PathRead, true, false, true, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "**/*.go"}, []PathFact{{"/p", PathRead, true, false, false, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "internal/**/*.go"}, []PathFact{{"/p/internal", PathRead, true, false, false, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "/etc/*.conf"}, []PathFact{{"/etc", PathRead, false, false, false, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "../../**"}, []PathFact{{"/", PathRead, false, false, false, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "*.md", "path": "/q"},
			[]PathFact{{"/q", PathRead, false, false, false, ""}}},
		{AgentGemini, "read_many_files", map[string]any{"paths": []any{"src/**/*.ts", "../x/*.md"}},
			[]PathFact{{"/p/src", PathRead, true, false, true, ""}, {"/x", PathRead, false, false, true, ""}}},
		{AgentGemini, "read_many_files", map[string]any{"paths": []any{"{src/*.ts,/etc/passwd}"}},
			[]PathFact{{"/p/src", PathRead, true, false, true, ""}, {"/etc/passwd", PathRead, false, false, true, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "{a,{b,/c}}/*"},
			[]PathFact{{"/p/a", PathRead, true, false, false, ""}, {"/p/b", PathRead, true, false, false, ""}, {"/c", PathRead, false, false, false, ""}}},
		{AgentClaudeCode, "Glob", map[string]any{"pattern": "{unclosed/*"}, []PathFact{{"/", PathRead, false, false, false, ""}}},
		{AgentClaudeCode, "ReadMcpResourceTool", map[string]any{"server": "fs", "uri": "file:///etc/hosts"},
			[]PathFact{{"/etc/hosts", PathRead, false, false, false, ""}}},
		{AgentClaudeCode, "ReadMcpResourceTool", map[string]any{"server": "db", "uri": "postgres://x/y"}, nil},
		{AgentClaudeCode, "TodoWrite", map[string]any{"todos": []any{}}, nil},
	}
	for _, tc := range tests {
		a := &Action{Agent: tc.agent, Tool: tc.tool, Cwd: "/p", Args: tc.args}
		m, _ := (*ToolTable)(nil).Normalize(a)
		DeriveToolFacts(a, m)
		if len(a.Facts.Paths) != len(tc.want) {
			t.Errorf("%s %v: facts %+v, want %+v", tc.tool, tc.args, a.Facts.Paths, tc.want)
			continue
		}
		for i := range tc.want {
			if a.Facts.Paths[i] != tc.want[i] {
				t.Errorf("%s %v: facts %+v, want %+v", tc.tool, tc.args, a.Facts.Paths, tc.want)
			}
		}
	}
}

func TestGlobBase(t *testing.T) {
	for in, want := range map[string]string{
		"*.go": ".", "**/*.go": ".", "src/**/*.ts": "src", "/etc/*.conf": "/etc", "/*": "/", "a/b/c.txt": "a/b/c.txt",
		"a/{b,c}/d": "a", "../x/?": "../x",
	} {
		if got := GlobBase(in); got != want {
			t.Errorf("GlobBase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEffectFree(t *testing.T) {
	tests := []struct {
		facts Facts
		want  bool
	}{
		{Facts{}, true},
		{Facts{Paths: []PathFact{{"/p/a", PathRead, true, false, false, ""}}}, true},
		{Facts{Paths: []PathFact{{"/etc/a", PathRead, false, false, false, ""}}}, false},
		{Facts{Paths: []PathFact{{"/p/a", PathWrite, true, false, false, ""}}}, false},
		{Facts{Commands: []Command{{Name: "ls"}}}, false},
		{Facts{URLs: []string{"https://x"}}, false},
	}
	for _, tc := range tests {
		if got := EffectFree(&Action{Facts: tc.facts}); got != tc.want {
			t.Errorf("%+v: %v", tc.facts, got)
		}
	}
}

// FuzzGlobPatterns: whatever the pattern, the reads derived from it are
// absolute (or under ~) and bounded in number.
func FuzzGlobPatterns(f *testing.F) {
	for _, s := range []string{"**/*.go", "{a,b}/*", "{/etc,{x,y}}/**", "{", "}", "../../*", "~/.ssh/*", "{a,{b,{c,{d}}}}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, pat string) {
		a := &Action{Agent: AgentClaudeCode, Tool: "Glob", Cwd: "/p", Args: map[string]any{"pattern": pat}}
		m, _ := (*ToolTable)(nil).Normalize(a)
		DeriveToolFacts(a, m)
		if len(a.Facts.Paths) > 33 {
			t.Fatalf("%d facts", len(a.Facts.Paths))
		}
		for _, p := range a.Facts.Paths {
			if p.Intent != PathRead || !strings.HasPrefix(p.Path, "/") && !strings.HasPrefix(p.Path, "~") {
				t.Fatalf("fact %+v", p)
			}
		}
	})
}
