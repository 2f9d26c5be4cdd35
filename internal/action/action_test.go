package action

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestLevels(t *testing.T) {
	for _, name := range []string{"auto", "notify", "confirm", "approve", "block"} {
		l, err := ParseLevel(name)
		if err != nil || l.String() != name || !l.Valid() {
			t.Errorf("ParseLevel(%q) = %v, %v", name, l, err)
		}
		b, _ := json.Marshal(l)
		var back Level
		if err := json.Unmarshal(b, &back); err != nil || back != l {
			t.Errorf("JSON round trip of %s: %v %v", l, back, err)
		}
	}
	for _, bad := range []string{"", "unset", "allow", "AUTOMATIC"} {
		if _, err := ParseLevel(bad); err == nil {
			t.Errorf("ParseLevel(%q) accepted", bad)
		}
	}
	var zero Level
	if zero.Valid() || zero.RunsWithoutPerson() || zero.OrStrict() != Approve {
		t.Error("the zero level must not be a permission")
	}
	b, _ := json.Marshal(zero)
	var back Level = Block
	if err := json.Unmarshal(b, &back); err != nil || back != Unset {
		t.Errorf("unset round trip: %v %v", back, err)
	}
	if Max(Auto, Block, Notify) != Block || Max() != Unset {
		t.Error("Max")
	}
	if !(Auto < Notify && Notify < Confirm && Confirm < Approve && Approve < Block) {
		t.Error("levels out of order")
	}
}

func TestInferKind(t *testing.T) {
	for tool, want := range map[string]Kind{
		"Bash": KindShell, "bash": KindShell, "exec_command": KindShell, "Read": KindFileRead,
		"Write": KindFileWrite, "Edit": KindFileEdit, "MultiEdit": KindFileEdit, "WebFetch": KindNetFetch,
		"sql_query": KindSQL, "mcp__fs__write_file": KindMCP, "frobnicate": KindOther,
	} {
		if got := InferKind(tool); got != want {
			t.Errorf("InferKind(%q) = %s, want %s", tool, got, want)
		}
	}
}

func TestArgsHash(t *testing.T) {
	a := &Action{Tool: "Bash", Kind: KindShell, Cwd: "/p", Args: map[string]any{"command": "ls", "n": 1}}
	b := &Action{Tool: "Bash", Kind: KindShell, Cwd: "/p", Args: map[string]any{"n": 1, "command": "ls"}}
	if a.ArgsHash() != b.ArgsHash() {
		t.Error("key order changes the hash")
	}
	for _, mod := range []func(*Action){
		func(x *Action) { x.Args["command"] = "ls " },
		func(x *Action) { x.Cwd = "/q" },
		func(x *Action) { x.Tool = "bash" },
	} {
		c := &Action{Tool: "Bash", Kind: KindShell, Cwd: "/p", Args: map[string]any{"command": "ls", "n": 1}}
		mod(c)
		if c.ArgsHash() == a.ArgsHash() {
			t.Errorf("a changed action hashes alike: %+v", c)
		}
	}
	bad := &Action{Tool: "x", Args: map[string]any{"f": func() {}}}
	if h := bad.ArgsHash(); len(h) == 64 {
		t.Error("unencodable arguments produced a normal hash")
	}
}

func TestDeriveFileFacts(t *testing.T) {
	tests := []struct {
		name string
		a    Action
		path string
		in   bool
	}{
		{"relative inside", Action{Kind: KindFileWrite, Cwd: "/p", Args: map[string]any{"file_path": "a/b.go"}}, "/p/a/b.go", true},
		{"dotdot escapes", Action{Kind: KindFileWrite, Cwd: "/p", Args: map[string]any{"file_path": "../q/x"}}, "/q/x", false},
		{"absolute outside", Action{Kind: KindFileEdit, Cwd: "/p", Args: map[string]any{"path": "/etc/hosts"}}, "/etc/hosts", false},
		{"sibling prefix", Action{Kind: KindFileRead, Cwd: "/p", Args: map[string]any{"path": "/p2/x"}}, "/p2/x", false},
		{"no cwd", Action{Kind: KindFileRead, Args: map[string]any{"path": "/p/x"}}, "/p/x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			DeriveFileFacts(&tt.a)
			if len(tt.a.Facts.Paths) != 1 || tt.a.Facts.Paths[0].Path != tt.path || tt.a.Facts.Paths[0].InCwd != tt.in {
				t.Fatalf("facts: %+v", tt.a.Facts.Paths)
			}
		})
	}
}

func FuzzParseLevel(f *testing.F) {
	for _, s := range []string{"auto", "Block", " confirm ", "", "unset", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLevel(s)
		if err == nil && !l.Valid() {
			t.Fatalf("ParseLevel(%q) = invalid level %v without error", s, l)
		}
	})
}

func TestPreviewLines(t *testing.T) {
	cases := []struct {
		name string
		p    *Preview
		want []string
	}{
		{"nil", nil, nil},
		{"items within the cap", &Preview{Summary: "rm would remove 2 path(s)", Items: []string{"a", "b"}},
			[]string{"Preview: rm would remove 2 path(s)", "  a", "  b"}},
		{"items over the cap count what is not listed", &Preview{Summary: "s", Items: []string{"a", "b", "c"}, More: 7},
			[]string{"Preview: s", "  a", "  b", "  … and 8 more"}},
		{"items the analyser did not list", &Preview{Summary: "s", Items: []string{"a"}, More: 4},
			[]string{"Preview: s", "  a", "  … and 4 more"}},
		{"a diff is clipped", &Preview{Summary: "edit", Diff: "-old\n+new line\n"},
			[]string{"Preview: edit", "-old", "+ne…"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := c.p.Lines(2, 8)
			if strings.Join(got, "|") != strings.Join(c.want, "|") || len(got) != len(c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
