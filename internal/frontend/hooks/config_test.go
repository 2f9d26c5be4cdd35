package hooks

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func TestParseConfig(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		wantErr bool
		check   func(t *testing.T, c Config)
	}{
		{name: "empty is the default", in: "", check: func(t *testing.T, c Config) {
			if c.Confirm != "" || c.MaxWait != 0 || c.Tools != nil {
				t.Fatalf("%+v", c)
			}
		}},
		{name: "all fields", in: "confirm: ask\nmax_wait: 90s\ntools:\n  codex:\n    deploy: {kind: shell, intent_arg: why}\n  \"*\":\n    q: {kind: sql, alias: {sql: query}}\n",
			check: func(t *testing.T, c Config) {
				if c.Confirm != ConfirmAsk || time.Duration(c.MaxWait) != 90*time.Second ||
					c.Tools["codex"]["deploy"].Kind != action.KindShell || c.Tools["*"]["q"].Alias["sql"] != "query" {
					t.Fatalf("%+v", c)
				}
			}},
		{name: "unknown field", in: "confirm: hold\nsurprise: true\n", wantErr: true},
		{name: "unknown mapping field", in: "tools:\n  codex:\n    x: {kind: shell, sudo: true}\n", wantErr: true},
		{name: "bad confirm", in: "confirm: sometimes\n", wantErr: true},
		{name: "bad duration", in: "max_wait: soon\n", wantErr: true},
		{name: "negative duration", in: "max_wait: -1m\n", wantErr: true},
		{name: "bad kind", in: "tools:\n  codex:\n    x: {kind: rocket}\n", wantErr: true},
		{name: "unknown agent", in: "tools:\n  cursor:\n    x: {kind: shell}\n", wantErr: true},
		{name: "empty alias", in: "tools:\n  gemini:\n    x: {kind: file_read, alias: {file_path: \"\"}}\n", wantErr: true},
		{name: "not yaml", in: "confirm: [\n", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := ParseConfig([]byte(tc.in))
			if tc.wantErr {
				if !errors.Is(err, ErrConfig) {
					t.Fatalf("err %v, want ErrConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, c)
		})
	}
}

func TestLoadConfig(t *testing.T) {
	home := t.TempDir()
	if c, err := LoadConfig(home); err != nil || c.Confirm != "" {
		t.Fatalf("missing file: %+v %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte("confirm: ask\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := LoadConfig(home); err != nil || c.Confirm != ConfirmAsk {
		t.Fatalf("%+v %v", c, err)
	}
	if err := os.WriteFile(filepath.Join(home, ConfigFile), []byte("confirm: 1: 2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadConfig(home); !errors.Is(err, ErrConfig) {
		t.Fatalf("err %v", err)
	}
}

func TestTableExtension(t *testing.T) {
	tab, err := NewTable(map[string]map[string]Mapping{
		ClaudeCode: {"Deploy": {Kind: action.KindShell, Alias: map[string]string{"command": "script"}}, "Bash": {Kind: action.KindOther}},
		AnyAgent:   {"run_sql": {Kind: action.KindSQL}},
	})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		agent, tool string
		kind        action.Kind
	}{
		{ClaudeCode, "Deploy", action.KindShell},
		{ClaudeCode, "Bash", action.KindOther}, // configuration wins over the built-in table
		{Codex, "run_sql", action.KindSQL},
		{Gemini, "run_sql", action.KindSQL},
		{Codex, "Bash", action.KindShell},
		{Gemini, "mcp__fs__write", action.KindMCP},
		{ClaudeCode, "SomethingNew", action.KindOther},
		{Gemini, "read_file", action.KindFileRead},
	}
	for _, tc := range tests {
		t.Run(tc.agent+"/"+tc.tool, func(t *testing.T) {
			if got := tab.Lookup(tc.agent, tc.tool).Kind; got != tc.kind {
				t.Fatalf("kind %q, want %q", got, tc.kind)
			}
		})
	}
	a := tab.Action(&Event{Agent: ClaudeCode, ToolName: "Deploy", ToolInput: map[string]any{"script": "make deploy"}})
	if a.Args["command"] != "make deploy" || a.Args["script"] != "make deploy" {
		t.Fatalf("alias not applied: %v", a.Args)
	}
	a = tab.Action(&Event{Agent: ClaudeCode, ToolName: "Deploy", ToolInput: map[string]any{"script": "x", "command": "y"}})
	if a.Args["command"] != "y" {
		t.Fatalf("an alias must not overwrite an argument the agent set: %v", a.Args)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("confirm: ask\nmax_wait: 90s\ntools:\n  codex:\n    deploy: {kind: shell}\n"))
	f.Add([]byte("tools:\n  \"*\":\n    q: {kind: sql, alias: {sql: query}, cwd_arg: d, intent_arg: i}\n"))
	f.Add([]byte("confirm: hold\n"))
	f.Add([]byte("max_wait: -1s\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, ErrConfig) {
				t.Fatalf("error without ErrConfig: %v", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("a parsed configuration must be valid: %v", err)
		}
		if _, err := NewTable(c.Tools); err != nil {
			t.Fatal(err)
		}
	})
}

// The lean hook names the hooks' configuration file without the kernel.
func TestConfigFileIsTheKernels(t *testing.T) {
	if ConfigFile != kernel.HooksFile {
		t.Fatalf("hookcore.ConfigFile %q, kernel.HooksFile %q", ConfigFile, kernel.HooksFile)
	}
}
