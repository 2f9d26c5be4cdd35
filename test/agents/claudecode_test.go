package agents

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// claude runs `claude -p` in the project with the scripted model and
// returns its final JSON and the model server.
func (e *env) claude(t *testing.T, bin string, script modeltest.Script, extra ...string) (map[string]any, *modeltest.Server, string) {
	t.Helper()
	srv := modeltest.Anthropic(t, script)
	environ := append(baseEnv(e.userHome),
		"ANTHROPIC_BASE_URL="+srv.URL,
		"ANTHROPIC_API_KEY=sk-ant-test",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"DISABLE_TELEMETRY=1",
		"DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1",
		"IS_SANDBOX=1",
	)
	args := append([]string{"-p", "Run the command you are asked to run.", "--output-format", "json",
		"--model", "claude-sonnet-4-5"}, extra...)
	out, code := runCLI(t, e.proj, environ, 90*time.Second, bin, args...)
	var res map[string]any
	// The JSON result is the last line.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("claude exited %d without a JSON result: %v\n%s", code, err, out)
	}
	return res, srv, out
}

func TestClaudeCode(t *testing.T) {
	bin, e := newClaudeEnv(t)

	t.Run("harmless command runs", func(t *testing.T) {
		res, srv, out := e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo hello-overseer"}))
		rs := srv.Results()
		if len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "hello-overseer") {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
		if res["is_error"] == true {
			t.Fatalf("result %v", res)
		}
	})

	t.Run("everyday tools run without a person", func(t *testing.T) {
		// Claude Code 2.1.328's own bookkeeping, as it offers it headless:
		// a deferred tool loaded through ToolSearch, its task list, its
		// list of agents.
		_, srv, out := e.claude(t, bin, modeltest.Steps(
			modeltest.ToolCall{Name: "ToolSearch", Input: map[string]any{"query": "select:TaskCreate,TaskUpdate", "max_results": 5}},
			modeltest.ToolCall{Name: "TaskCreate", Input: map[string]any{"subject": "Look around", "description": "Read the project", "activeForm": "Looking around"}},
			modeltest.ToolCall{Name: "TaskUpdate", Input: map[string]any{"taskId": "1", "status": "in_progress"}},
			modeltest.ToolCall{Name: "ListAgents", Input: map[string]any{}},
		))
		rs := srv.Results()
		if len(rs) != 4 {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
		for i, r := range rs {
			if r.IsError {
				t.Errorf("call %d: %s", i, r.Content)
			}
		}
		r := e.overseer(t, "approvals", "--json")
		if s := strings.TrimSpace(r.Stdout); s != "[]" && s != "null" {
			t.Fatalf("a person was asked: %s", r.Stdout)
		}
		r = e.overseer(t, "audit", "export")
		for _, tool := range []string{"ToolSearch", "TaskCreate", "TaskUpdate", "ListAgents"} {
			if !strings.Contains(r.Stdout, `"tool":"`+tool+`"`) {
				t.Errorf("no audit record of %s", tool)
			}
		}
	})

	t.Run("rm -rf of a protected path is denied and the victim survives", func(t *testing.T) {
		victim, keep := e.victim(t)
		res, srv, out := e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "rm -rf " + victim}))
		survived(t, keep, out)
		// The denial reaches the model as the tool's error.
		rs := srv.Results()
		if len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "victim directory is protected") {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
		if d, _ := res["permission_denials"].([]any); len(d) == 0 {
			t.Fatalf("no permission_denials in %v", res)
		}
	})

	t.Run("confirm waits for overseer approve, then runs", func(t *testing.T) {
		marker := filepath.Join(e.proj, "approved.txt")
		var srv *modeltest.Server
		var out string
		e.whileApproving(t, func() string {
			_, srv, out = e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "touch " + marker}))
			return out
		})
		if _, err := os.Stat(marker); err != nil {
			t.Fatalf("the approved command did not run: %v\n%s", err, out)
		}
		if rs := srv.Results(); len(rs) != 1 || rs[0].IsError {
			t.Fatalf("tool results %+v", rs)
		}
	})

	t.Run("an edit keeps the previous content for overseer undo", func(t *testing.T) {
		notes := filepath.Join(e.proj, "notes.txt")
		if err := os.WriteFile(notes, []byte("version 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		res, srv, out := e.claude(t, bin, modeltest.Steps(
			modeltest.ToolCall{Name: "Read", Input: map[string]any{"file_path": notes}},
			modeltest.ToolCall{Name: "Write", Input: map[string]any{"file_path": notes, "content": "version 2\n"}},
		))
		if b, _ := os.ReadFile(notes); string(b) != "version 2\n" {
			t.Fatalf("the write did not happen: %q (results %+v)\n%s", b, srv.Results(), out)
		}
		sid, _ := res["session_id"].(string)
		if r := e.overseer(t, "undo", "--session", sid, "--last", "1"); r.Code != 0 {
			t.Fatalf("undo: %d %s %s", r.Code, r.Stdout, r.Stderr)
		}
		if b, _ := os.ReadFile(notes); string(b) != "version 1\n" {
			t.Fatalf("after undo: %q", b)
		}
	})

	t.Run("audit names agent, session, tool-use id and provenance", func(t *testing.T) {
		var sawBlock, sawHuman, sawResult bool
		for _, r := range e.audit(t) {
			if r.Type == "" || r.ActionID == "" {
				continue
			}
			if r.Agent != "claude-code" || r.Session == "" {
				t.Errorf("record %d (%s) names agent %q session %q", r.Seq, r.Type, r.Agent, r.Session)
			}
			var data map[string]any
			_ = json.Unmarshal(r.Data, &data)
			switch r.Type {
			case "action":
				if id, _ := data["tool_use_id"].(string); id == "" {
					t.Errorf("action %s has no tool_use_id: %s", r.ActionID, r.Data)
				}
			case "verdict":
				dec, _ := data["decider"].(map[string]any)
				if dec["name"] == "e2e-protect-victims" && data["level"] == "block" {
					sawBlock = true
				}
			case "answer":
				ans, _ := data["answer"].(map[string]any)
				if ans["channel"] == "cli" && ans["who"] != "" && ans["decision"] == "approve" {
					sawHuman = true
				}
			case "result":
				sawResult = true
			}
		}
		if !sawBlock || !sawHuman || !sawResult {
			t.Fatalf("block by rule %v, human answer %v, result %v", sawBlock, sawHuman, sawResult)
		}
	})
}

func TestClaudeCodeWithoutDaemon(t *testing.T) {
	bin := findCLI(t, "claude")
	e := newEnv(t, false)
	if r := e.overseer(t, "init", "claude-code", "--project", e.proj); r.Code != 0 {
		t.Fatalf("init: %s %s", r.Stdout, r.Stderr)
	}
	t.Run("auto still runs", func(t *testing.T) {
		_, srv, out := e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo no-daemon-needed"}))
		if rs := srv.Results(); len(rs) != 1 || rs[0].IsError || !strings.Contains(rs[0].Content, "no-daemon-needed") {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
	})
	t.Run("a call that needs a person is denied with how to start the daemon", func(t *testing.T) {
		marker := filepath.Join(e.proj, "never.txt")
		_, srv, out := e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "touch " + marker}))
		if _, err := os.Stat(marker); err == nil {
			t.Fatalf("the command ran\n%s", out)
		}
		if rs := srv.Results(); len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "overseer serve") {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
	})
	t.Run("a broken hook configuration denies", func(t *testing.T) {
		if err := os.WriteFile(filepath.Join(e.home, "hooks.yaml"), []byte("confirm: sometimes\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(filepath.Join(e.home, "hooks.yaml"))
		_, srv, out := e.claude(t, bin, modeltest.OneCall("Bash", map[string]any{"command": "echo should-not-run"}))
		if rs := srv.Results(); len(rs) != 1 || !rs[0].IsError || !strings.Contains(rs[0].Content, "invalid hooks configuration") {
			t.Fatalf("tool results %+v\n%s", rs, out)
		}
	})
}
