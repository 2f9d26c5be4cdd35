package hooks

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const testCmd = `'/opt/my tools/overseer' --home /h hook `

func spec(agent string) InstallSpec {
	return InstallSpec{Agent: agent, Command: testCmd + agent, MaxWait: 5 * time.Minute}
}

// plain decodes JSON into plain Go values for comparison.
func plain(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return m
}

func TestInstallMergesAndUninstallRestores(t *testing.T) {
	tests := []struct {
		name, agent, before string
	}{
		{"claude new file", ClaudeCode, ``},
		{"claude empty object", ClaudeCode, `{}`},
		{"claude keeps other settings and hooks", ClaudeCode, `{
  "model": "opus",
  "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
  "hooks": {
    "PreToolUse": [{"matcher": "Write", "hooks": [{"type": "command", "command": "prettier --check"}]}],
    "Stop": [{"hooks": [{"type": "command", "command": "notify-send done"}]}]
  },
  "env": {"A": "1"}
}`},
		{"codex hooks.json with another hook", Codex, `{"hooks":{"PostToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"log.sh","timeout":5}]}]}}`},
		{"gemini settings", Gemini, `{"general":{"vimMode":true},"hooksConfig":{"enabled":true},"tools":{"sandbox":false}}`},
		{"numbers and unicode survive", Gemini, `{"ui":{"theme":"Dräcula","ratio":1.50,"big":12345678901234567890}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, changed, err := Install([]byte(tc.before), spec(tc.agent))
			if err != nil || !changed {
				t.Fatalf("Install: changed=%v err=%v", changed, err)
			}
			got := plain(t, out)
			evs := agentEvents[tc.agent]
			hooks := got["hooks"].(map[string]any)
			pre := hooks[evs[0]].([]any)[0].(map[string]any)["hooks"].([]any)[0].(map[string]any)
			if !strings.Contains(pre["command"].(string), "--max-wait 5m0s") || !IsHookCommand(pre["command"].(string), tc.agent) {
				t.Fatalf("pre hook %v", pre)
			}
			wantTimeout := 5*60 + 30.0
			if tc.agent == Gemini {
				wantTimeout *= 1000
			}
			if pre["timeout"].(float64) != wantTimeout {
				t.Fatalf("timeout %v, want %v", pre["timeout"], wantTimeout)
			}
			if _, ok := hooks[evs[1]]; !ok {
				t.Fatalf("no %s hook", evs[1])
			}
			// Everything that was there is still there.
			if tc.before != "" {
				orig := plain(t, []byte(tc.before))
				for k, v := range orig {
					if k == "hooks" {
						continue
					}
					if !reflect.DeepEqual(got[k], v) {
						t.Errorf("%s changed: %v -> %v", k, v, got[k])
					}
				}
				if oh, ok := orig["hooks"].(map[string]any); ok {
					for ev, list := range oh {
						for _, g := range list.([]any) {
							if !containsJSON(hooks[ev].([]any), g) {
								t.Errorf("lost %s group %v", ev, g)
							}
						}
					}
				}
			}
			// Idempotent.
			again, changed, err := Install(out, spec(tc.agent))
			if err != nil || changed || string(again) != string(out) {
				t.Fatalf("second Install changed it: %v %v\n%s", changed, err, again)
			}
			// Uninstall removes exactly what was added.
			back, changed, err := Uninstall(out, tc.agent)
			if err != nil || !changed {
				t.Fatalf("Uninstall: %v %v", changed, err)
			}
			want := map[string]any{}
			if tc.before != "" {
				want = plain(t, []byte(tc.before))
			}
			if !reflect.DeepEqual(plain(t, back), want) {
				t.Fatalf("after uninstall\n got %s\nwant %s", back, tc.before)
			}
			if _, changed, _ := Uninstall(back, tc.agent); changed {
				t.Fatal("a second uninstall changed something")
			}
		})
	}
}

func containsJSON(list []any, v any) bool {
	for _, e := range list {
		if reflect.DeepEqual(e, v) {
			return true
		}
	}
	return false
}

func TestInstallKeepsKeyOrder(t *testing.T) {
	before := `{"zeta":1,"alpha":{"y":2,"b":3},"hooks":{"Stop":[]},"mid":true}`
	out, _, err := Install([]byte(before), spec(ClaudeCode))
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !(strings.Index(s, `"zeta"`) < strings.Index(s, `"alpha"`) && strings.Index(s, `"y"`) < strings.Index(s, `"b"`) &&
		strings.Index(s, `"alpha"`) < strings.Index(s, `"mid"`)) {
		t.Fatalf("order lost:\n%s", s)
	}
}

func TestInstallOtherAgentUntouched(t *testing.T) {
	out, _, err := Install(nil, spec(ClaudeCode))
	if err != nil {
		t.Fatal(err)
	}
	if _, changed, _ := Uninstall(out, Codex); changed {
		t.Fatal("uninstalling codex removed claude-code's hooks")
	}
}

func TestInstallRejectsBadSettings(t *testing.T) {
	for name, in := range map[string]string{
		"not json":         `{"a":`,
		"not an object":    `[1]`,
		"hooks not object": `{"hooks":[1]}`,
		"trailing":         `{} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, _, err := Install([]byte(in), spec(ClaudeCode)); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

func TestInstallFileBackupAndUninstall(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".claude", "settings.json")
	now := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)

	// A new file: created, no backup.
	fc, err := InstallFile(p, spec(ClaudeCode), now)
	if err != nil || !fc.Changed || fc.Backup != "" {
		t.Fatalf("%+v %v", fc, err)
	}
	// Unchanged: nothing written, no backup.
	fc, err = InstallFile(p, spec(ClaudeCode), now.Add(time.Second))
	if err != nil || fc.Changed || fc.Backup != "" {
		t.Fatalf("%+v %v", fc, err)
	}
	// A user edit, then a re-install with another wait: backup of the edit.
	b, _ := os.ReadFile(p)
	edited := strings.Replace(string(b), "{\n", "{\n  \"model\": \"sonnet\",\n", 1)
	if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, 0o600); err != nil {
		t.Fatal(err)
	}
	s := spec(ClaudeCode)
	s.MaxWait = time.Minute
	fc, err = InstallFile(p, s, now.Add(2*time.Second))
	if err != nil || !fc.Changed || fc.Backup == "" {
		t.Fatalf("%+v %v", fc, err)
	}
	if bb, _ := os.ReadFile(fc.Backup); string(bb) != edited {
		t.Fatalf("backup holds %q", bb)
	}
	if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v: the file's mode must be kept", st.Mode().Perm())
	}
	fc, err = UninstallFile(p, ClaudeCode, now.Add(3*time.Second))
	if err != nil || !fc.Changed || fc.Backup == "" {
		t.Fatalf("%+v %v", fc, err)
	}
	if got := plain(t, mustRead(t, p)); !reflect.DeepEqual(got, map[string]any{"model": "sonnet"}) {
		t.Fatalf("after uninstall: %v", got)
	}
	// Invalid JSON is left alone.
	if err := os.WriteFile(p, []byte("{oops"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallFile(p, spec(ClaudeCode), now); err == nil {
		t.Fatal("installed into invalid JSON")
	}
	if string(mustRead(t, p)) != "{oops" {
		t.Fatal("invalid file was changed")
	}
	// Uninstall from a missing file: nothing to do.
	if fc, err := UninstallFile(filepath.Join(dir, "none.json"), ClaudeCode, now); err != nil || fc.Changed {
		t.Fatalf("%+v %v", fc, err)
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestIsHookCommand(t *testing.T) {
	tests := []struct {
		cmd, agent string
		want       bool
	}{
		{"overseer hook claude-code", ClaudeCode, true},
		{"/usr/local/bin/overseer hook codex --max-wait 1m", Codex, true},
		{`'/opt/my tools/overseer' --home '/h h' hook gemini`, Gemini, true},
		{"overseer hook codex", ClaudeCode, false},
		{"my-overseer-wrapper.sh hook claude-code", ClaudeCode, false},
		{"echo overseer hook claude-code", ClaudeCode, false},
		{"overseer", ClaudeCode, false},
		{"", ClaudeCode, false},
	}
	for _, tc := range tests {
		t.Run(tc.cmd, func(t *testing.T) {
			if got := IsHookCommand(tc.cmd, tc.agent); got != tc.want {
				t.Fatalf("IsHookCommand(%q, %q) = %v", tc.cmd, tc.agent, got)
			}
		})
	}
}

func TestShellQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"/usr/bin/overseer", "/opt/my tools/overseer", "/it's/here", ""} {
		if w := splitWords(ShellQuote(s)); s != "" && (len(w) != 1 || w[0] != s) {
			t.Errorf("%q -> %q -> %q", s, ShellQuote(s), w)
		}
	}
}

func FuzzInstall(f *testing.F) {
	f.Add([]byte(``), ClaudeCode)
	f.Add([]byte(`{"hooks":{"PreToolUse":[{"matcher":"*","hooks":[{"type":"command","command":"x"}]}]}}`), ClaudeCode)
	f.Add([]byte(`{"a":[1,2,{"b":null}],"hooks":{}}`), Codex)
	f.Add([]byte(`{"hooks":{"BeforeTool":"x"}}`), Gemini)
	f.Fuzz(func(t *testing.T, data []byte, agent string) {
		out, _, err := Install(data, InstallSpec{Agent: agent, Command: "overseer hook " + agent})
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON out: %s", out)
		}
		again, changed, err := Install(out, InstallSpec{Agent: agent, Command: "overseer hook " + agent})
		if err != nil || changed || string(again) != string(out) {
			t.Fatalf("not idempotent: %v %v", changed, err)
		}
		back, _, err := Uninstall(out, agent)
		if err != nil || !json.Valid(back) {
			t.Fatalf("uninstall: %v %s", err, back)
		}
	})
}
