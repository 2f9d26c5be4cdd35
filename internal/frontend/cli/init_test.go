package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/frontend/hookcore"
	"github.com/overseer-dev/overseer/internal/frontend/hooks"
)

func fakeExecutable(t *testing.T, path string) {
	t.Helper()
	old := executable
	executable = func() (string, error) { return path, nil }
	t.Cleanup(func() { executable = old })
}

func readSettings(t *testing.T, p string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v\n%s", p, err, b)
	}
	return m
}

// hookCommands returns the commands of an event's hooks in a settings map.
func hookCommands(m map[string]any, event string) []string {
	var out []string
	hooks, _ := m["hooks"].(map[string]any)
	list, _ := hooks[event].([]any)
	for _, g := range list {
		hs, _ := g.(map[string]any)["hooks"].([]any)
		for _, h := range hs {
			if c, ok := h.(map[string]any)["command"].(string); ok {
				out = append(out, c)
			}
		}
	}
	return out
}

func TestInit(t *testing.T) {
	tests := []struct {
		name    string
		args    func(dir string) []string
		env     map[string]string
		file    func(dir string) string
		pre     string
		post    string
		confirm bool
	}{
		{name: "claude-code project", args: func(d string) []string { return []string{"init", "claude-code", "--project", d} },
			file: func(d string) string { return filepath.Join(d, ".claude", "settings.json") }, pre: "PreToolUse", post: "PostToolUse"},
		{name: "claude-code user", args: func(string) []string { return []string{"init", "claude-code", "--user", "--confirm", "ask"} },
			env:  map[string]string{"HOME": "@dir"},
			file: func(d string) string { return filepath.Join(d, ".claude", "settings.json") }, pre: "PreToolUse", post: "PostToolUse", confirm: true},
		{name: "codex in CODEX_HOME", args: func(string) []string { return []string{"init", "codex"} },
			env:  map[string]string{"CODEX_HOME": "@dir/codex-home"},
			file: func(d string) string { return filepath.Join(d, "codex-home", "hooks.json") }, pre: "PreToolUse", post: "PostToolUse"},
		{name: "gemini project", args: func(d string) []string { return []string{"init", "gemini", "--project", d, "--max-wait", "2m"} },
			file: func(d string) string { return filepath.Join(d, ".gemini", "settings.json") }, pre: "BeforeTool", post: "AfterTool"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for k, v := range tc.env {
				t.Setenv(k, strings.ReplaceAll(v, "@dir", dir))
			}
			fakeExecutable(t, "/opt/overseer dir/overseer")
			home := t.TempDir()
			code, out, errOut := runHookCLI(t, home, "", tc.args(dir)...)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			p := tc.file(dir)
			m := readSettings(t, p)
			pre, post := hookCommands(m, tc.pre), hookCommands(m, tc.post)
			if len(pre) != 1 || len(post) != 1 {
				t.Fatalf("hooks %v / %v in %v", pre, post, m)
			}
			wantPrefix := "'/opt/overseer dir/overseer' --home " + home + " hook "
			if !strings.HasPrefix(pre[0], wantPrefix) || !strings.Contains(pre[0], "--max-wait") ||
				strings.Contains(pre[0], "--confirm ask") != tc.confirm {
				t.Fatalf("pre hook command %q", pre[0])
			}
			// Again: nothing changes, no backup.
			before, _ := os.ReadFile(p)
			code, out, _ = runHookCLI(t, home, "", tc.args(dir)...)
			if after, _ := os.ReadFile(p); code != 0 || string(after) != string(before) || !strings.Contains(out, "nothing changed") {
				t.Fatalf("second init changed the file (exit %d): %s", code, out)
			}
			// Uninstall: the file is back to nothing of ours.
			code, out, errOut = runHookCLI(t, home, "", append(tc.args(dir), "--uninstall")...)
			if code != 0 || !strings.Contains(out, "backup") {
				t.Fatalf("uninstall exit %d: %s %s", code, out, errOut)
			}
			if m := readSettings(t, p); len(m) != 0 {
				t.Fatalf("after uninstall: %v", m)
			}
		})
	}
}

func TestInitRefuses(t *testing.T) {
	fakeExecutable(t, "/usr/bin/overseer")
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
	}{
		{"unknown agent", []string{"init", "cursor"}},
		{"project and user", []string{"init", "claude-code", "--project", dir, "--user"}},
		{"codex project", []string{"init", "codex", "--project", dir}},
		{"codex ask", []string{"init", "codex", "--user", "--confirm", "ask"}},
		{"bad confirm", []string{"init", "gemini", "--project", dir, "--confirm", "later"}},
		{"no wait", []string{"init", "gemini", "--project", dir, "--max-wait", "0s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CODEX_HOME", filepath.Join(dir, "codex"))
			if code, out, errOut := runHookCLI(t, t.TempDir(), "", tc.args...); code == 0 {
				t.Fatalf("accepted: %s %s", out, errOut)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("wrote %v", ents)
			}
		})
	}
}

func TestInitKeepsOtherSettings(t *testing.T) {
	fakeExecutable(t, "/usr/bin/overseer")
	dir := t.TempDir()
	p := filepath.Join(dir, ".claude", "settings.json")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	orig := `{"permissions":{"deny":["Read(./.env)"]},"hooks":{"PreToolUse":[{"matcher":"Write","hooks":[{"type":"command","command":"lint"}]}]}}`
	if err := os.WriteFile(p, []byte(orig), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := runHookCLI(t, t.TempDir(), "", "init", "claude-code", "--project", dir); code != 0 {
		t.Fatalf("%s %s", out, errOut)
	}
	m := readSettings(t, p)
	if cmds := hookCommands(m, "PreToolUse"); len(cmds) != 2 || !strings.Contains(cmds[0], "hook claude-code") || cmds[1] != "lint" {
		t.Fatalf("PreToolUse hooks %v", cmds)
	}
	if _, ok := m["permissions"]; !ok {
		t.Fatal("permissions lost")
	}
	backups, _ := filepath.Glob(p + ".overseer-backup-*")
	if len(backups) != 1 {
		t.Fatalf("backups %v", backups)
	}
	if b, _ := os.ReadFile(backups[0]); string(b) != orig {
		t.Fatalf("backup %s", b)
	}
}

// TestInitInstallsLeanHook: `overseer init` installs the lean hook entry
// next to the binary when it is fit to run — an executable of the binary's
// owner that nobody else may write, built from the same source — and this
// binary otherwise, saying why.
func TestInitInstallsLeanHook(t *testing.T) {
	for _, tc := range []struct {
		name     string
		id       string // what the lean entry says it was built from; "" none there
		mode     os.FileMode
		flags    []string
		wantLean bool
		warn     string
	}{
		{name: "fit", id: hookcore.BuildID(), mode: 0o755, wantLean: true},
		{name: "none there", mode: 0o755},
		{name: "writable by others", id: hookcore.BuildID(), mode: 0o775, warn: "writable by others"},
		{name: "other source", id: "github.com/overseer-dev/overseer v0.0.1", mode: 0o755, warn: "built from other source"},
		{name: "not executable", id: hookcore.BuildID(), mode: 0o644, warn: "not an executable"},
		{name: "refused by flag", id: hookcore.BuildID(), mode: 0o755, flags: []string{"--lean=false"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			exe := filepath.Join(bin, "overseer")
			if err := os.WriteFile(exe, []byte("#!/bin/sh\nexit 2\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			lean := filepath.Join(bin, hookcore.LeanName)
			if tc.id != "" {
				script := "#!/bin/sh\n[ \"$1\" = " + hookcore.BuildFlag + " ] && echo " + hooks.ShellQuote(tc.id) + "\n"
				if err := os.WriteFile(lean, []byte(script), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(lean, tc.mode); err != nil {
					t.Fatal(err)
				}
			}
			fakeExecutable(t, exe)
			proj, home := t.TempDir(), t.TempDir()
			code, out, errOut := runHookCLI(t, home, "", append([]string{"init", "claude-code", "--project", proj}, tc.flags...)...)
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, out, errOut)
			}
			pre := hookCommands(readSettings(t, filepath.Join(proj, ".claude", "settings.json")), "PreToolUse")
			want := exe
			if tc.wantLean {
				want = lean
			}
			if len(pre) != 1 || !strings.HasPrefix(pre[0], want+" --home ") || !hooks.IsHookCommand(pre[0], "claude-code") {
				t.Fatalf("pre hook %q, want it to run %s", pre, want)
			}
			if tc.warn != "" && !strings.Contains(errOut, tc.warn) || tc.warn == "" && strings.Contains(errOut, "lean") {
				t.Fatalf("stderr %q, want %q", errOut, tc.warn)
			}
		})
	}
}
