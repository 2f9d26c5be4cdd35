package action

import "testing"

func TestSubject(t *testing.T) {
	cases := []struct {
		args   map[string]any
		want   string
		wantOK bool
	}{
		{map[string]any{"command": "ls -la", "path": "/tmp"}, "ls -la", true},
		{map[string]any{"cmd": "git status", "url": "https://go.dev"}, "git status", true},
		{map[string]any{"file_path": "/a", "path": "/b"}, "/a", true},
		{map[string]any{"path": "/b", "url": "https://go.dev"}, "/b", true},
		{map[string]any{"url": "https://go.dev", "sql": "select 1"}, "https://go.dev", true},
		{map[string]any{"sql": "select 1", "query": "q"}, "select 1", true},
		{map[string]any{"query": "weather"}, "weather", true},
		// Not a string: the next key that is one.
		{map[string]any{"command": []any{"ls"}, "path": "/b"}, "/b", true},
		{map[string]any{"content": "x", "n": 3}, "", false},
		{nil, "", false},
	}
	for _, c := range cases {
		got, ok := (&Action{Args: c.args}).Subject()
		if got != c.want || ok != c.wantOK {
			t.Errorf("Subject of %v = %q, %v; want %q, %v", c.args, got, ok, c.want, c.wantOK)
		}
	}
}

func TestArgsLine(t *testing.T) {
	cases := []struct {
		args map[string]any
		want string
	}{
		{nil, ""},
		{map[string]any{"b": 2, "a": "x", "c": true}, "a=x b=2 c=true"},
		{map[string]any{"list": []any{"p", "q"}}, "list=[p q]"},
	}
	for _, c := range cases {
		if got := (&Action{Args: c.args}).ArgsLine(); got != c.want {
			t.Errorf("ArgsLine of %v = %q, want %q", c.args, got, c.want)
		}
	}
}

func TestReasonOrigin(t *testing.T) {
	if got := (Reason{Source: SourceRule, Name: "no-force-push"}).Origin(); got != "rule no-force-push" {
		t.Errorf("a named rule: %q", got)
	}
	if got := (Reason{Source: SourceLoop}).Origin(); got != "loop" {
		t.Errorf("a reason without a name: %q", got)
	}
}
