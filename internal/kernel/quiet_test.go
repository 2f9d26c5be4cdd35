package kernel_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// project makes a working directory with a few files.
func project(t *testing.T) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.go", i)), []byte("package p\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func call(agent, session, cwd, tool string, args map[string]any) *action.Action {
	return &action.Action{Agent: agent, Session: session, Cwd: cwd, Tool: tool, Args: args}
}

// The agents' tool tables apply wherever the action names the agent: here
// through the kernel (eval, the HTTP API, the MCP gateway and explain all
// go through it), with no kind given by the caller.
func TestToolTablesEverywhere(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	proj := project(t)
	patch := "*** Begin Patch\n*** Update File: f01.go\n@@\n-package p\n+package q\n*** Add File: new.go\n+package q\n*** End Patch\n"
	tests := []struct {
		agent, tool string
		args        map[string]any
		kind        action.Kind
		level       action.Level
	}{
		{"claude-code", "Grep", map[string]any{"pattern": "TODO"}, action.KindFileRead, action.Auto},
		{"claude-code", "Glob", map[string]any{"pattern": "**/*.go"}, action.KindFileRead, action.Auto},
		{"claude-code", "Glob", map[string]any{"pattern": "/etc/**/*.conf"}, action.KindFileRead, action.Confirm},
		{"claude-code", "TodoWrite", map[string]any{"todos": []any{map[string]any{"content": "x", "status": "pending"}}}, action.KindOther, action.Auto},
		{"claude-code", "Task", map[string]any{"description": "explore", "prompt": "find the store", "subagent_type": "Explore"}, action.KindOther, action.Auto},
		{"claude-code", "Agent", map[string]any{"prompt": "review"}, action.KindOther, action.Auto},
		{"claude-code", "WebSearch", map[string]any{"query": "go 1.26 release notes"}, action.KindOther, action.Notify},
		{"claude-code", "ExitPlanMode", map[string]any{"plan": "1. edit"}, action.KindOther, action.Auto},
		{"claude-code", "TaskUpdate", map[string]any{"taskId": "1", "status": "completed"}, action.KindOther, action.Auto},
		{"claude-code", "ReadMcpResourceTool", map[string]any{"server": "docs", "uri": "docs://readme"}, action.KindOther, action.Auto},
		{"claude-code", "ReadMcpResourceTool", map[string]any{"server": "fs", "uri": "file:///root/.ssh/id_ed25519"}, action.KindOther, action.Approve},
		// Bookkeeping with effects is judged on them, not on its name.
		{"claude-code", "TodoWrite", map[string]any{"file_path": "/etc/cron.d/x", "content": "* * * * * sh"}, action.KindOther, action.Block},
		{"claude-code", "Task", map[string]any{"command": "rm -rf ~"}, action.KindOther, action.Block},
		{"codex", "apply_patch", map[string]any{"command": patch}, action.KindFileEdit, action.Notify},
		{"codex", "update_plan", map[string]any{"plan": []any{}}, action.KindOther, action.Auto},
		{"codex", "web_search", map[string]any{"query": "x"}, action.KindOther, action.Notify},
		{"gemini", "write_todos", map[string]any{"todos": []any{}}, action.KindOther, action.Auto},
		{"gemini", "glob", map[string]any{"pattern": "*.go"}, action.KindFileRead, action.Auto},
		// Without an agent the tool name means nothing special.
		{"", "TodoWrite", map[string]any{}, action.KindOther, action.Confirm},
	}
	// An MCP server's tool that happens to share a name with an agent's
	// tool (as the MCP gateway reports it, kind mcp) is not the agent's.
	mcpTool := call("claude-code", "s1", proj, "TodoWrite", map[string]any{})
	mcpTool.Kind = action.KindMCP
	if v := k.Evaluate(ctx, mcpTool); v.Level != action.Confirm {
		t.Fatalf("an MCP tool named TodoWrite: %s", v.Summary())
	}
	for _, tc := range tests {
		t.Run(tc.agent+"/"+tc.tool, func(t *testing.T) {
			a := call(tc.agent, "s1", proj, tc.tool, tc.args)
			v := k.Evaluate(ctx, a)
			if a.Kind != tc.kind || v.Level != tc.level {
				t.Fatalf("kind %q level %s (%s), want %q %s", a.Kind, v.Level, v.Summary(), tc.kind, tc.level)
			}
		})
	}
	// apply_patch: judged as the edits it makes, previewed as their diff.
	a := call("codex", "s1", proj, "apply_patch", map[string]any{"command": patch})
	v := k.Evaluate(ctx, a)
	if len(a.Facts.Paths) != 2 || v.Preview == nil || !strings.Contains(v.Preview.Diff, "+++ b/f01.go") ||
		v.Preview.Items[1] != "add new.go (+1)" {
		t.Fatalf("facts %+v preview %+v", a.Facts.Paths, v.Preview)
	}
	ex := k.Explain(ctx, call("claude-code", "s1", proj, "Grep", map[string]any{"pattern": "x"}))
	if ex.Verdict.Level != action.Auto || ex.Action.Kind != action.KindFileRead {
		t.Fatalf("explain: %s %s", ex.Verdict.Level, ex.Action.Kind)
	}
}

// hooks.yaml's tools section extends the table at every entry point; an
// unreadable one puts every action to a person.
func TestToolTableFromHooksFile(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, kernel.HooksFile), []byte("confirm: hold\ntools:\n  claude-code:\n    Deploy: {kind: shell, alias: {command: script}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := kernel.Open(ctx, kernel.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	a := call("claude-code", "s", "/proj", "Deploy", map[string]any{"script": "ls"})
	if v := k.Evaluate(ctx, a); a.Kind != action.KindShell || v.Level != action.Auto {
		t.Fatalf("configured tool: %s %s", a.Kind, v.Summary())
	}
	k.Close()
	if err := os.WriteFile(filepath.Join(home, kernel.HooksFile), []byte("tools:\n  claude-code:\n    Deploy: {kind: deploy}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err = kernel.Open(ctx, kernel.Config{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if v := k.Evaluate(ctx, call("claude-code", "s", "/proj", "Read", map[string]any{"file_path": "/proj/a"})); v.Level != action.Approve {
		t.Fatalf("with a broken tool table: %s", v.Summary())
	}
}

// L2's counting applies to actions with effects: reading many different
// files never trips it, writing many does, identical repeats do unless a
// file changed in between.
func TestLoopLimitsByEffect(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	proj := project(t)
	submit := func(a *action.Action) *kernel.Submission {
		t.Helper()
		sub, err := k.Submit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		return sub
	}
	for i := 0; i < 30; i++ {
		for _, a := range []*action.Action{
			call("claude-code", "reads", proj, "Read", map[string]any{"file_path": fmt.Sprintf("%s/f%02d.go", proj, i)}),
			call("mcp-client", "reads", proj, "fs__read_file", map[string]any{"path": fmt.Sprintf("%s/f%02d.go", proj, i)}),
			call("claude-code", "reads", proj, "Bash", map[string]any{"command": fmt.Sprintf("cat f%02d.go", i)}),
			call("claude-code", "reads", proj, "TodoWrite", map[string]any{"todos": []any{i}}),
		} {
			if a.Tool == "fs__read_file" {
				a.Kind = action.KindMCP
			}
			sub := submit(a)
			for _, r := range sub.Verdict.Reasons {
				if r.Layer == "L2" {
					t.Fatalf("read %d (%s): %s", i, a.Tool, r.Message)
				}
			}
			if a.Kind != action.KindMCP && sub.Verdict.Level.NeedsPerson() {
				t.Fatalf("read %d (%s): %s", i, a.Tool, sub.Verdict.Summary())
			}
		}
	}
	// Writes of different files: the 20th within the window is asked.
	var asked *kernel.Submission
	for i := 0; i < 20; i++ {
		sub := submit(call("claude-code", "writes", proj, "Edit", map[string]any{"file_path": fmt.Sprintf("%s/f%02d.go", proj, i),
			"old_string": "p", "new_string": "q"}))
		if sub.Verdict.Level.NeedsPerson() {
			asked = sub
			if i != 19 {
				t.Fatalf("edit %d asked: %s", i, sub.Verdict.Summary())
			}
		}
	}
	if asked == nil || asked.Verdict.Decider.Name != "same-tool" {
		t.Fatalf("the 20th edit within 5m was not asked about")
	}
	// Once a person has looked and let the run go on, counting starts
	// again, and the session's limit for the tool doubles: the next call
	// asked about is the 40th after the approval, then the 80th.
	for _, limit := range []int{40, 80} {
		if _, _, err := k.Answer(ctx, asked.Approval.ID, store.Answer{Decision: "approve", Who: "ann", Channel: "test"}); err != nil {
			t.Fatal(err)
		}
		asked = nil
		for i := 1; i <= limit; i++ {
			sub := submit(call("claude-code", "writes", proj, "Edit", map[string]any{"file_path": fmt.Sprintf("%s/g%03d.go", proj, i),
				"old_string": "p", "new_string": "q"}))
			if sub.Verdict.Level.NeedsPerson() {
				if i != limit || sub.Verdict.Decider.Name != "same-tool" {
					t.Fatalf("edit %d after the approval (limit %d): %s", i, limit, sub.Verdict.Summary())
				}
				asked = sub
			}
		}
		if asked == nil {
			t.Fatalf("the %dth edit after the approval was not asked about", limit)
		}
	}
	// Another session's limit is its own.
	for i := 0; i < 20; i++ {
		sub := submit(call("claude-code", "other", proj, "Edit", map[string]any{"file_path": fmt.Sprintf("%s/h%02d.go", proj, i),
			"old_string": "p", "new_string": "q"}))
		if got := sub.Verdict.Level.NeedsPerson(); got != (i == 19) {
			t.Fatalf("other session, edit %d: %s", i, sub.Verdict.Summary())
		}
	}
	// Identical repeats with nothing changed in between trip the limit...
	status := func(s string) *kernel.Submission {
		return submit(call("claude-code", s, proj, "Bash", map[string]any{"command": "git status"}))
	}
	status("loop")
	status("loop")
	if sub := status("loop"); sub.Verdict.Level != action.Confirm || sub.Verdict.Decider.Name != "same-args" {
		t.Fatalf("third identical call: %s", sub.Verdict.Summary())
	}
	// ...but a test run after each edit is a retry, not a loop.
	for i := 0; i < 6; i++ {
		submit(call("claude-code", "fix", proj, "Edit", map[string]any{"file_path": proj + "/f00.go", "old_string": "p", "new_string": fmt.Sprint("p", i)}))
		if sub := submit(call("claude-code", "fix", proj, "Bash", map[string]any{"command": "go test ./..."})); sub.Verdict.Level.NeedsPerson() {
			t.Fatalf("test run %d after an edit: %s", i, sub.Verdict.Summary())
		}
	}
}

// same_tool judges by effects: a session's mix of ordinary commands and a
// test run after each edit are progress however many there are, while a
// run of one program's calls with nothing changed by other work in between
// (a loop that varies only its arguments) still reaches a person.
func TestLoopLimitsByShape(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	proj := project(t)
	submit := func(session string, args map[string]any, tool string) *kernel.Submission {
		t.Helper()
		sub, err := k.Submit(ctx, call("claude-code", session, proj, tool, args))
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		return sub
	}
	bash := func(session, cmd string) *kernel.Submission {
		return submit(session, map[string]any{"command": cmd}, "Bash")
	}
	// Forty edit-and-test cycles within the window: each test run follows
	// an edit, so none is a loop.
	for i := 0; i < 40; i++ {
		submit("tdd", map[string]any{"file_path": fmt.Sprintf("%s/f%02d.go", proj, i%30), "old_string": "p", "new_string": fmt.Sprint("p", i)}, "Edit")
		if sub := bash("tdd", "go test ./..."); sub.Verdict.Level.NeedsPerson() {
			t.Fatalf("test run %d after an edit: %s", i, sub.Verdict.Summary())
		}
	}
	// A busy session's mix: builds, branches, installs, runs of the
	// project's code; 45 effectful Bash calls, no two shapes alike more
	// than 15 times, no file written between them.
	mix := []string{"go build -tags t%d ./...", "git checkout -b feat/x%d", "go run ./cmd/app -n %d"}
	for i := 0; i < 15; i++ {
		for _, m := range mix {
			cmd := m
			if strings.Contains(m, "%d") {
				cmd = fmt.Sprintf(m, i)
			}
			if sub := bash("mix", cmd); sub.Verdict.Level.NeedsPerson() && sub.Verdict.Decider != nil && sub.Verdict.Decider.Source == action.SourceLoop {
				t.Fatalf("%q (%d): %s", cmd, i, sub.Verdict.Summary())
			}
		}
	}
	// The twin: one program run again and again with other arguments and
	// nothing changed in between is asked about at the 20th call.
	var asked int
	for i := 1; i <= 20; i++ {
		sub := bash("flood", fmt.Sprintf("go run ./cmd/app -n %d", i))
		if sub.Verdict.Level.NeedsPerson() {
			if sub.Verdict.Decider == nil || sub.Verdict.Decider.Name != "same-tool" {
				t.Fatalf("run %d: %s", i, sub.Verdict.Summary())
			}
			asked = i
		}
	}
	if asked != 20 {
		t.Fatalf("a run of 20 calls of one program with nothing changed was asked about at call %d, want 20", asked)
	}
	// A true loop, the same call three times with nothing changed, is
	// asked about.
	bash("still", "go run ./cmd/app -n 1")
	bash("still", "go run ./cmd/app -n 1")
	if sub := bash("still", "go run ./cmd/app -n 1"); sub.Verdict.Decider == nil || sub.Verdict.Decider.Name != "same-args" {
		t.Fatalf("third identical call: %s", sub.Verdict.Summary())
	}
}

// A status polled until it changes is progress: the same call repeated
// with nothing written in between is a loop only when its result is the
// same each time (when results are reported).
func TestLoopLimitsByResult(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	proj := project(t)
	poll := func(session, out string) *kernel.Submission {
		t.Helper()
		a := call("claude-code", session, proj, "Bash", map[string]any{"command": "git status --short"})
		sub, err := k.Submit(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		if out != "" && !sub.Verdict.Level.NeedsPerson() {
			if _, err := k.RecordResult(ctx, kernel.Result{ActionID: sub.Action.ID, Agent: a.Agent, Session: a.Session,
				Tool: a.Tool, Output: out}); err != nil {
				t.Fatal(err)
			}
		}
		return sub
	}
	// Ten polls whose result changes each time: none is a loop.
	for i := 0; i < 10; i++ {
		if sub := poll("progress", fmt.Sprintf(" M f%02d.go\n", i)); sub.Verdict.Level.NeedsPerson() {
			t.Fatalf("poll %d with a new result: %s", i, sub.Verdict.Summary())
		}
	}
	// The twin: the same result twice, then the third call, is a loop.
	poll("stuck", " M f01.go\n")
	poll("stuck", " M f01.go\n")
	if sub := poll("stuck", ""); sub.Verdict.Decider == nil || sub.Verdict.Decider.Name != "same-args" {
		t.Fatalf("a third poll after two identical results: %s", sub.Verdict.Summary())
	}
	// A result that changed, then stayed: counting starts at the change.
	poll("settled", "a\n")
	poll("settled", "b\n")
	if sub := poll("settled", "b\n"); sub.Verdict.Level.NeedsPerson() {
		t.Fatalf("the second run since the result changed: %s", sub.Verdict.Summary())
	}
	if sub := poll("settled", ""); sub.Verdict.Decider == nil || sub.Verdict.Decider.Name != "same-args" {
		t.Fatalf("the third run with the same result: %s", sub.Verdict.Summary())
	}
}

// A call a person refused is refused again at once, with their words, and
// a session that keeps repeating it is stopped; other sessions are asked.
func TestRefusalsAreRemembered(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	rm := func(session string) *action.Action {
		return call("claude-code", session, "/proj", "Bash", map[string]any{"command": "rm -rf /var/tmp/shared-cache"})
	}
	first, err := k.Submit(ctx, rm("s1"))
	if err != nil || first.Approval == nil {
		t.Fatalf("first call: %v %+v", err, first)
	}
	if _, _, err := k.Answer(ctx, first.Approval.ID, store.Answer{Decision: "deny", Who: "ann", Channel: "web", Reason: "other jobs use that cache"}); err != nil {
		t.Fatal(err)
	}
	again, err := k.Submit(ctx, rm("s1"))
	if err != nil {
		t.Fatal(err)
	}
	v := again.Verdict
	if v.Level != action.Block || again.Approval != nil || v.Stop || !strings.Contains(v.Decider.Message, "other jobs use that cache") ||
		!strings.Contains(v.Decider.Message, "ann via web") {
		t.Fatalf("repeat: %s stop=%v approval=%v", v.Summary(), v.Stop, again.Approval)
	}
	third, _ := k.Submit(ctx, rm("s1"))
	if third.Verdict.Level != action.Block || !third.Verdict.Stop || third.Verdict.Decider.Name != "refused-repeated" {
		t.Fatalf("second repeat: %s stop=%v", third.Verdict.Summary(), third.Verdict.Stop)
	}
	if other, _ := k.Submit(ctx, rm("s2")); other.Approval == nil {
		t.Fatalf("another session is asked: %s", other.Verdict.Summary())
	}
	// A different call in the same session is asked as usual.
	diff := call("claude-code", "s1", "/proj", "Bash", map[string]any{"command": "rm -rf /var/tmp/other-cache"})
	if sub, _ := k.Submit(ctx, diff); sub.Approval == nil {
		t.Fatalf("a different call: %s", sub.Verdict.Summary())
	}
	// A request that timed out is not a person's refusal.
	late, _ := k.Submit(ctx, rm("s3"))
	if _, _, err := k.Gate.Withdraw(ctx, late.Approval.ID, "the agent gave up"); err != nil {
		t.Fatal(err)
	}
	if sub, _ := k.Submit(ctx, rm("s3")); sub.Approval == nil {
		t.Fatalf("after a withdrawal: %s", sub.Verdict.Summary())
	}
}

// A scratch directory the session created may be removed without a
// person; the same removal in another session is asked.
func TestScratchCreatedInSession(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	proj := project(t)
	scratch, err := os.MkdirTemp("", "quiet-scratch-")
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(scratch)
	defer os.RemoveAll(scratch)
	mk, err := k.Submit(ctx, call("claude-code", "s1", proj, "Bash", map[string]any{"command": "mkdir -p " + scratch + "/cache"}))
	if err != nil || mk.Verdict.Level.NeedsPerson() {
		t.Fatalf("mkdir: %v %s", err, mk.Verdict.Summary())
	}
	if err := os.MkdirAll(scratch+"/cache", 0o755); err != nil { // as the agent would
		t.Fatal(err)
	}
	rm := func(s string) action.Verdict {
		sub, err := k.Submit(ctx, call("claude-code", s, proj, "Bash", map[string]any{"command": "rm -rf " + scratch}))
		if err != nil {
			t.Fatal(err)
		}
		return sub.Verdict
	}
	if v := rm("s1"); v.Level != action.Notify {
		t.Fatalf("removing the session's own scratch: %s", v.Summary())
	}
	if v := rm("s2"); v.Level != action.Approve {
		t.Fatalf("another session removing it: %s", v.Summary())
	}
}

// The refusal is the person's answer in the approvals store: a retry that
// arrives before the answer's bookkeeping (or from a process that never
// ran it) is refused too; a timeout is not a refusal.
func TestRefusalReadFromTheApprovals(t *testing.T) {
	ctx := context.Background()
	k := open(t, nil, "")
	rm := call("codex", "s1", "/proj", "Bash", map[string]any{"command": "rm -rf /var/tmp/shared-cache"})
	first, err := k.Submit(ctx, rm)
	if err != nil || first.Approval == nil {
		t.Fatal(err)
	}
	// Answers go through the kernel: a row changed in the database alone is
	// unaudited and reads as Overseer's own refusal (evidence.go).
	if _, _, err := k.Answer(ctx, first.Approval.ID,
		store.Answer{Decision: "deny", Who: "ann", Channel: "cli", Reason: "no", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	again, _ := k.Submit(ctx, call("codex", "s1", "/proj", "Bash", map[string]any{"command": "rm -rf /var/tmp/shared-cache"}))
	if again.Verdict.Level != action.Block || again.Approval != nil {
		t.Fatalf("repeat: %s", again.Verdict.Summary())
	}
	// That a timeout is not a refusal is refusalOf's rule (TimeoutActor),
	// checked with the gate's own timeouts in the gate's and hooks' tests.
}

// Evasions of TestLoopLimitsByShape's counting: a damaging run of one
// shape with a trivial write slipped between its calls (each write would
// start the run again for ever), and a run of rm over the project's
// directories named as plain words (each taken for a subcommand, a shape
// of its own).
func TestLoopEvasions(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	k := open(t, clk, "")
	proj := project(t)
	submit := func(session string, args map[string]any, tool string) *kernel.Submission {
		t.Helper()
		sub, err := k.Submit(ctx, call("claude-code", session, proj, tool, args))
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
		return sub
	}
	bash := func(session, cmd string) *kernel.Submission {
		return submit(session, map[string]any{"command": cmd}, "Bash")
	}
	// A run of one program, each call after a scratch write by the Write
	// tool: asked about at three times same_tool (60), not never.
	asked := 0
	for i := 1; i <= 60 && asked == 0; i++ {
		submit("slip", map[string]any{"file_path": proj + "/scratch.txt", "content": fmt.Sprint(i)}, "Write")
		sub := bash("slip", fmt.Sprintf("go run ./cmd/app -n %d", i))
		if sub.Verdict.Level.NeedsPerson() {
			if sub.Verdict.Decider == nil || sub.Verdict.Decider.Name != "same-tool" {
				t.Fatalf("run %d: %s", i, sub.Verdict.Summary())
			}
			asked = i
		}
	}
	if asked != 60 {
		t.Fatalf("a run of one program with a write slipped between its calls was asked about at call %d, want 60", asked)
	}
	// rm -rf over directories with plain names: one shape, rm.
	asked = 0
	for i := 1; i <= 20 && asked == 0; i++ {
		dir := "dir" + string(rune('a'+i)) + "x"
		if err := os.MkdirAll(filepath.Join(proj, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		sub := bash("rmloop", "rm -rf "+dir)
		if sub.Verdict.Level.NeedsPerson() {
			if sub.Verdict.Decider == nil || sub.Verdict.Decider.Source != action.SourceLoop {
				t.Fatalf("rm %d: %s", i, sub.Verdict.Summary())
			}
			asked = i
		}
	}
	if asked != 20 {
		t.Fatalf("rm over 20 directories with plain names was asked about at call %d, want 20", asked)
	}
	// The same program dressed differently each time (a no-op before it,
	// a pipe into cat, a shell's command string, URL spellings of one
	// server): one shape.
	dress := []string{"go run ./cmd/app -n %d", "true; go run ./cmd/app -n %d", "go run ./cmd/app -n %d | cat",
		"sh -c 'go run ./cmd/app -n %d'", "bash -c 'go run ./cmd/app -n %d' && echo done"}
	asked = 0
	for i := 1; i <= 20 && asked == 0; i++ {
		sub := bash("dressed", fmt.Sprintf(dress[i%len(dress)], i))
		if sub.Verdict.Level.NeedsPerson() {
			if sub.Verdict.Decider == nil || sub.Verdict.Decider.Source != action.SourceLoop {
				t.Fatalf("dressed run %d: %s", i, sub.Verdict.Summary())
			}
			asked = i
		}
	}
	if asked != 20 {
		t.Fatalf("a run of one program dressed five ways was asked about at call %d, want 20", asked)
	}
}
