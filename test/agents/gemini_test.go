package agents

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// gemini runs `gemini -p` in the project with the scripted model.
func (e *env) gemini(t *testing.T, bin string, script modeltest.Script) (*modeltest.Server, string) {
	t.Helper()
	srv := modeltest.Gemini(t, script)
	dir := filepath.Join(e.userHome, ".gemini")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	settings := `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},` +
		`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},"general":{"disableAutoUpdate":true}}`
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatal(err)
	}
	environ := append(baseEnv(e.userHome), "GEMINI_API_KEY=test", "GOOGLE_GEMINI_BASE_URL="+srv.URL,
		"GEMINI_CLI_NO_RELAUNCH=true", "NO_COLOR=1")
	out, _ := runCLI(t, e.proj, environ, 90*time.Second, bin, "-p", "Run the command you are asked to run.",
		"--output-format", "json", "--yolo", "-m", "gemini-2.5-pro")
	return srv, out
}

func TestGemini(t *testing.T) {
	bin, e := newGeminiEnv(t)
	t.Run("harmless command runs", func(t *testing.T) {
		srv, out := e.gemini(t, bin, modeltest.OneCall("run_shell_command", map[string]any{"command": "echo hello-gemini"}))
		if rs := srv.Results(); len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "hello-gemini") {
			t.Fatalf("tool results %+v\n%s\nrequests: %d", rs, out, len(srv.Requests()))
		}
	})

	t.Run("rm -rf of a protected path is denied and the victim survives", func(t *testing.T) {
		victim, keep := e.victim(t)
		srv, out := e.gemini(t, bin, modeltest.OneCall("run_shell_command", map[string]any{"command": "rm -rf " + victim}))
		survived(t, keep, out)
		rs := srv.Results()
		if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "victim directory is protected") {
			t.Fatalf("the denial did not reach the model as an error: %+v\n%s", rs, out)
		}
	})

	t.Run("confirm is held until overseer approve, then runs", func(t *testing.T) {
		marker := filepath.Join(e.proj, "gemini-approved.txt")
		var srv *modeltest.Server
		var out string
		e.whileApproving(t, func() string {
			srv, out = e.gemini(t, bin, modeltest.OneCall("run_shell_command", map[string]any{"command": "touch " + marker}))
			return out
		})
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the approved command did not run: %v (results %+v)\n%s", err, srv.Results(), out)
		}
	})

	t.Run("audit pairs each call with its result", func(t *testing.T) {
		actions, results := map[string]bool{}, map[string]bool{}
		for _, r := range e.audit(t) {
			switch r.Type {
			case "action":
				actions[r.ActionID] = true
				if r.Agent != "gemini" || r.Session == "" {
					t.Errorf("action %s: agent %q session %q", r.ActionID, r.Agent, r.Session)
				}
			case "result":
				results[r.ActionID] = true
			}
		}
		if len(actions) != 3 || len(results) != 2 {
			t.Fatalf("%d actions, %d results", len(actions), len(results))
		}
		for id := range results {
			if !actions[id] {
				t.Errorf("result for %s, which is no recorded action", id)
			}
		}
	})
}
