package agents

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// codex runs `codex exec` in the project with the scripted model.
func (e *env) codex(t *testing.T, bin, codexHome string, script modeltest.Script) (*modeltest.Server, string) {
	t.Helper()
	return e.codexWith(t, bin, codexHome, "m", "", script)
}

// codexWith is codex with another model name (Codex gives each model the
// tools of its family) and more of Codex's configuration (TOML) appended.
func (e *env) codexWith(t *testing.T, bin, codexHome, model, extra string, script modeltest.Script) (*modeltest.Server, string) {
	t.Helper()
	srv := modeltest.Responses(t, script)
	cfg := fmt.Sprintf(`model = %q
model_provider = "fake"
approval_policy = "never"

[model_providers.fake]
name = "fake"
base_url = "%s/v1"
wire_api = "responses"
env_key = "OVERSEER_TEST_MODEL_KEY"
request_max_retries = 0
stream_max_retries = 0
`, model, srv.URL) + extra
	if err := os.WriteFile(filepath.Join(codexHome, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := append(baseEnv(e.userHome), "CODEX_HOME="+codexHome, "OVERSEER_TEST_MODEL_KEY=test")
	out, _ := runCLI(t, e.proj, environ, 90*time.Second, bin, "exec", "--skip-git-repo-check",
		"-s", "danger-full-access", "--dangerously-bypass-hook-trust", "Run the command you are asked to run.")
	return srv, out
}

func TestCodex(t *testing.T) {
	bin, e, codexHome := newCodexEnv(t)
	if _, err := os.Stat(filepath.Join(codexHome, "hooks.json")); err != nil {
		t.Fatal(err)
	}

	t.Run("harmless command runs", func(t *testing.T) {
		srv, out := e.codex(t, bin, codexHome, modeltest.OneCall("exec_command", map[string]any{"cmd": "echo hello-codex"}))
		if rs := srv.Results(); len(rs) != 1 || !strings.Contains(rs[0].Content, "hello-codex") {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
	})

	t.Run("rm -rf of a protected path is denied and the victim survives", func(t *testing.T) {
		victim, keep := e.victim(t)
		srv, out := e.codex(t, bin, codexHome, modeltest.OneCall("exec_command", map[string]any{"cmd": "rm -rf " + victim}))
		survived(t, keep, out)
		rs := srv.Results()
		if len(rs) != 1 || !strings.Contains(rs[0].Content, "victim directory is protected") {
			t.Fatalf("the denial did not reach the model: %+v\n%s", rs, out)
		}
	})

	t.Run("confirm is held until overseer approve, then runs", func(t *testing.T) {
		marker := filepath.Join(e.proj, "codex-approved.txt")
		var srv *modeltest.Server
		var out string
		e.whileApproving(t, func() string {
			srv, out = e.codex(t, bin, codexHome, modeltest.OneCall("exec_command", map[string]any{"cmd": "touch " + marker}))
			return out
		})
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the approved command did not run: %v (results %+v)\n%s", err, srv.Results(), out)
		}
	})

	t.Run("audit names the agent and session", func(t *testing.T) {
		actions, results := 0, 0
		for _, r := range e.audit(t) {
			switch r.Type {
			case "action":
				actions++
				if r.Agent != "codex" || r.Session == "" {
					t.Errorf("action %s: agent %q session %q", r.ActionID, r.Agent, r.Session)
				}
			case "result":
				results++
			}
		}
		// Three calls; the two that ran reported their results (PostToolUse).
		if actions != 3 || results != 2 {
			t.Fatalf("%d actions and %d results recorded", actions, results)
		}
	})
}
