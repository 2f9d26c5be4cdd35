package watch_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/test/agents/modeltest"
)

// watchPolicy gives the test's commands known levels.
const watchPolicy = `version: 1
rules:
  - name: e2e-touch-auto
    kind: shell
    when: 'args.command.startsWith("touch ")'
    level: auto
    message: creating an empty file is harmless here
  - name: e2e-victim-approve
    kind: shell
    when: 'args.command.contains("victim")'
    level: approve
    message: the victim directory needs a person
  - name: e2e-risky-confirm
    kind: shell
    when: 'args.command.startsWith("mkdir ")'
    level: confirm
    message: a new directory needs a yes here
  - name: e2e-files-in-project
    kind: [file_write, file_edit]
    when: 'size(facts.paths) > 0 && facts.paths.all(p, p.in_cwd)'
    level: auto
    message: files inside the project are the agent's work
  - name: e2e-echo-auto
    kind: [mcp]
    when: 'tool == "mcp__everything__echo"'
    level: auto
    message: the echo tool is harmless
`

// watchEnv is an Overseer home with the test policy, a webhook standing in
// for a phone, a running daemon, a private tmux server and the watcher.
type watchEnv struct {
	home    string
	daemon  *overseertest.Daemon
	tm      *tmuxServer
	watcher *exec.Cmd
	log     *overseertest.SyncBuffer
	msgs    chan map[string]any
	dump    func() string
	seen    []map[string]any // the phone's messages read so far
}

func newWatchEnv(t *testing.T) *watchEnv {
	t.Helper()
	e := &watchEnv{home: filepath.Join(t.TempDir(), "overseer"), tm: newTmux(t), msgs: make(chan map[string]any, 32)}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var p map[string]any
		if json.NewDecoder(r.Body).Decode(&p) == nil && p["approval_id"] != nil && p["approval_id"] != "" {
			e.msgs <- p
		}
	}))
	t.Cleanup(hook.Close)
	if err := os.MkdirAll(e.home, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"policy.yaml": watchPolicy,
		"notify.yaml": "channels:\n  - type: webhook\n    name: phone\n    url: " + hook.URL + "\n"} {
		if err := os.WriteFile(filepath.Join(e.home, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	e.daemon = overseertest.StartDaemon(t, e.home)
	return e
}

// startWatcher runs `overseer watch tmux` on the test's tmux server.
func (e *watchEnv) startWatcher(t *testing.T, args ...string) {
	t.Helper()
	e.log = &overseertest.SyncBuffer{}
	e.watcher = exec.Command(overseertest.Binary(t), append([]string{"--home", e.home, "watch", "tmux", "-S", e.tm.sock}, args...)...)
	e.watcher.Env = append(os.Environ(), "OVERSEER_HOME="+e.home)
	e.watcher.Stdout, e.watcher.Stderr = e.log, e.log
	if err := e.watcher.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = e.watcher.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = e.watcher.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("watcher log:\n%s", e.log.String())
		}
	})
}

// pending waits for a pending approval of agent whose call mentions want.
func (e *watchEnv) pending(t *testing.T, agent, want string, d time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(d)
	var res overseertest.Result
	for time.Now().Before(deadline) {
		res = overseertest.Run(t, e.home, "", "approvals", "--json")
		var list []struct {
			ID      string `json:"id"`
			Subject string `json:"subject"`
			Agent   string `json:"agent"`
		}
		if res.Code == 0 && json.Unmarshal([]byte(res.Stdout), &list) == nil {
			for _, a := range list {
				if a.Agent == agent && strings.Contains(a.Subject, want) {
					return a.ID
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("no pending approval for %q within %s\napprovals: %d %s %s\n%s", want, d, res.Code, res.Stdout, res.Stderr, e.dump())
	return ""
}

// link waits for the phone's message about approval id and returns its
// signed approve link.
func (e *watchEnv) link(t *testing.T, id string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case m := <-e.msgs:
			e.seen = append(e.seen, m)
		case <-deadline:
			t.Fatalf("no message for approval %s reached the phone", id)
			return ""
		case <-time.After(100 * time.Millisecond):
		}
		for _, m := range e.seen {
			if m["approval_id"] != id {
				continue
			}
			l, _ := m["links"].(map[string]any)
			a, _ := l["approve"].(string)
			if a == "" {
				t.Fatalf("message without an approve link: %v", m)
			}
			return a
		}
	}
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// eventually waits until ok holds.
func eventually(t *testing.T, d time.Duration, what string, ok func() bool, dump func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if ok() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s\n%s", what, d, dump())
}

// TestWatchAgents drives each agent CLI in its own pane of one tmux server,
// with its own permission prompts and no hook, under one watcher: a
// harmless command is answered yes and runs; a destructive one is held, a
// person refuses it with `overseer deny` and it does not run; a risky one
// is approved through the signed link of the phone's message and runs; a
// pane showing a prompt-like numbered list in ordinary output is left alone.
func TestWatchAgents(t *testing.T) {
	agents := []string{"claude", "codex", "gemini"}
	if a := os.Getenv("OVERSEER_WATCH_AGENTS"); a != "" {
		agents = strings.Split(a, ",")
	}
	e := newWatchEnv(t)
	type run struct {
		agent, proj string
		pane        *agentPane
	}
	var mu sync.Mutex
	runs := map[string]*run{}
	start := func(agent, name string, commands ...string) *run {
		proj := filepath.Join(t.TempDir(), name)
		if err := os.MkdirAll(filepath.Join(proj, "victim"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(proj, "victim", "keep.txt"), []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		var calls []modeltest.ToolCall
		for _, c := range commands {
			calls = append(calls, shellCall(agent, c))
		}
		r := &run{agent: agent, proj: proj, pane: startAgent(t, e.tm, "agents", agent, proj, modeltest.Steps(calls...))}
		mu.Lock()
		runs[agent+"/"+name] = r
		mu.Unlock()
		return r
	}
	// A pane whose ordinary output looks like a prompt: keys typed into it
	// would show (cat echoes them).
	fake := e.tm.start(t, "agents", t.TempDir(), "sh", "-c",
		`printf 'Choose:\n 1. Yes\n 2. No\nDo you want to proceed?\n ❯ 1. Yes\n   2. No\nEsc to cancel\n'; exec cat`)
	for _, agent := range agents {
		// One session runs the harmless command, then the risky one; the
		// refusal (which interrupts the agent's turn) has its own.
		start(agent, "harmless-then-risky", "touch made.txt", "mkdir risky-dir")
		start(agent, "destructive", "rm -rf victim")
	}
	e.startWatcher(t)
	fakeScreen := e.tm.waitFor(t, fake, "Esc to cancel", 10*time.Second)
	screens := func() string {
		var b strings.Builder
		for n, r := range runs {
			b.WriteString("== " + n + "\n" + e.tm.capture(t, r.pane.pane))
		}
		return b.String() + "\nwatcher:\n" + e.log.String()
	}
	e.dump = screens

	for _, agent := range agents {
		t.Run(agent, func(t *testing.T) {
			h, d := runs[agent+"/harmless-then-risky"], runs[agent+"/destructive"]
			r := h
			if agent == "gemini" {
				// Gemini CLI draws commands with control sequences removed,
				// so what it shows may not be what runs: even a harmless
				// command goes to a person (see recognisers.yaml).
				id := e.pending(t, cliVersions[agent], "touch made.txt", 90*time.Second)
				if res := overseertest.Run(t, e.home, "", "approve", id, "--reason", "fine"); res.Code != 0 {
					t.Fatalf("overseer approve: %d %s %s", res.Code, res.Stdout, res.Stderr)
				}
			}
			eventually(t, 90*time.Second, "the harmless command ran", func() bool { return exists(filepath.Join(h.proj, "made.txt")) }, screens)

			id := e.pending(t, cliVersions[agent], "victim", 90*time.Second)
			if res := overseertest.Run(t, e.home, "", "deny", id, "--reason", "not the victim"); res.Code != 0 {
				t.Fatalf("overseer deny: %d %s %s", res.Code, res.Stdout, res.Stderr)
			}
			eventually(t, 45*time.Second, "the refused prompt closed", func() bool {
				return !strings.Contains(e.tm.capture(t, d.pane.pane), "rm -rf victim") ||
					strings.Contains(e.log.String(), "answered no")
			}, screens)

			// The person's reason reaches the agent as what to do instead.
			eventually(t, 45*time.Second, "the refusal's reason reached the model", func() bool {
				for _, rq := range d.pane.srv.Requests() {
					if b, _ := json.Marshal(rq.Body); strings.Contains(string(b), "not the victim") {
						return true
					}
				}
				return false
			}, screens)

			id = e.pending(t, cliVersions[agent], "mkdir risky-dir", 90*time.Second)
			link := e.link(t, id)
			resp, err := http.PostForm(link, url.Values{"decision": {"approve"}})
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("approving through the link: %d %s", resp.StatusCode, body)
			}
			eventually(t, 45*time.Second, "the approved command ran", func() bool { return exists(filepath.Join(r.proj, "risky-dir")) }, screens)

			// The refused command never ran.
			time.Sleep(time.Second)
			if b, err := os.ReadFile(filepath.Join(d.proj, "victim", "keep.txt")); err != nil || string(b) != "precious" {
				t.Fatalf("the refused command ran: %v\n%s", err, screens())
			}
		})
	}

	if got := e.tm.capture(t, fake); got != fakeScreen {
		t.Errorf("keys were typed into the pane with a prompt-like list in ordinary output:\nbefore:\n%s\nafter:\n%s", fakeScreen, got)
	}
	// The panes view: every watched pane, its agent and state, from the CLI
	// and (with the token) the daemon's API.
	res := overseertest.Run(t, e.home, "", "watch", "panes", "--json")
	var sets []struct {
		Panes []struct {
			ID, Agent, State string
		} `json:"panes"`
	}
	if err := json.Unmarshal([]byte(res.Stdout), &sets); err != nil || len(sets) != 1 {
		t.Fatalf("overseer watch panes: %v %s %s", err, res.Stdout, res.Stderr)
	}
	if n := len(sets[0].Panes); n != 2*len(agents)+1 {
		t.Errorf("the panes view lists %d panes, want %d: %s", n, 2*len(agents)+1, res.Stdout)
	}
	for _, p := range sets[0].Panes {
		if p.ID == fake && (p.Agent != "" || p.State != "working") {
			t.Errorf("the pane with ordinary output is shown as %+v", p)
		}
	}
	if code, body := e.daemon.Do(t, "GET", "/api/v1/watch/panes", nil, true); code != 200 || !strings.Contains(string(body), `"state"`) {
		t.Errorf("GET /api/v1/watch/panes: %d %s", code, body)
	}
	if code, _ := e.daemon.Do(t, "GET", "/api/v1/watch/panes", nil, false); code != http.StatusUnauthorized {
		t.Errorf("GET /api/v1/watch/panes without the token: %d", code)
	}

	// Every answer is in the audit log with the pane, the screen and the keys.
	res = overseertest.Run(t, e.home, "", "audit", "export")
	for _, want := range []string{"overseer watch: answered yes", "overseer watch: answered no", `keys: [\"Enter\"]`, `keys: [\"Escape\" \"Overseer refused that call: denied by`, "screen:"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("the audit log has no %q", want)
		}
	}
}

// TestWatchWaitRunsOut: the watcher's wait for a person is bounded
// (--max-wait): when nobody answers in time, the request is withdrawn,
// nothing is typed — the prompt stays for the person at the terminal — the
// panes view says so, the audit log records it, and the same prompt is not
// put to a person again.
func TestWatchWaitRunsOut(t *testing.T) {
	e := newWatchEnv(t)
	pane := e.tm.start(t, "w", t.TempDir(), "sh", "-c", `printf 'Delete the old builds? (y/n) '; read a; echo "got:$a"; exec sleep 600`)
	e.tm.waitFor(t, pane, "(y/n)", 10*time.Second)
	e.startWatcher(t, "--max-wait", "3s", "--interval", "300ms")
	e.dump = func() string { return e.tm.capture(t, pane) + "\nwatcher:\n" + e.log.String() }
	id := e.pending(t, "terminal", "Delete the old builds", 30*time.Second)
	asked := time.Now()
	pendingIDs := func() string {
		res := overseertest.Run(t, e.home, "", "approvals", "--json")
		return res.Stdout
	}
	eventually(t, 30*time.Second, "the unanswered request was withdrawn", func() bool { return !strings.Contains(pendingIDs(), id) }, e.dump)
	if waited := time.Since(asked); waited > 20*time.Second {
		t.Errorf("the request stayed %s, the wait is 3s", waited)
	}
	eventually(t, 15*time.Second, "the panes view shows the prompt left for a person", func() bool {
		res := overseertest.Run(t, e.home, "", "watch", "panes", "--json")
		return strings.Contains(res.Stdout, `"state":"left for a person"`) && strings.Contains(res.Stdout, "no person answered in time")
	}, e.dump)
	// Nothing was typed, and the prompt is not put to a person again.
	time.Sleep(3 * time.Second)
	if sc := e.tm.capture(t, pane); strings.Contains(sc, "got:") || !strings.Contains(sc, "(y/n)") {
		t.Fatalf("keys were typed into the pane after the wait ran out:\n%s", sc)
	}
	if p := pendingIDs(); strings.Contains(p, "Delete the old builds") {
		t.Fatalf("the prompt was put to a person again: %s", p)
	}
	res := overseertest.Run(t, e.home, "", "audit", "export")
	for _, want := range []string{"overseer watch: left for a person at the terminal: denied: no person answered in time after 3s", "keys: []", "Delete the old builds? (y/n)"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("the audit log has no %q", want)
		}
	}
	// The person at the terminal still answers it.
	e.tm.cmd(t, "send-keys", "-t", pane, "n", "Enter")
	e.tm.waitFor(t, pane, "got:n", 10*time.Second)
}

// TestWatchFilesAndMCP: prompts about files and MCP tools, read from the
// screen and judged as the hooks' calls: Claude Code's write of a small file
// and Codex's patch inside the project are answered yes and made; Gemini
// CLI's and Codex's MCP echo (a rule allows it) are answered yes and run;
// Claude Code's MCP prompt, which does not name the tool, goes to a person,
// whose yes is typed.
func TestWatchFilesAndMCP(t *testing.T) {
	e := newWatchEnv(t)
	npm := overseertest.MCPPeers(t, "server-everything")
	js := filepath.Join(npm, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	type run struct {
		proj string
		pane *agentPane
	}
	var runs []*run
	start := func(agent string, o agentOpts, calls ...modeltest.ToolCall) *run {
		proj := filepath.Join(t.TempDir(), agent)
		if err := os.MkdirAll(proj, 0o755); err != nil {
			t.Fatal(err)
		}
		r := &run{proj: proj, pane: startAgentWith(t, e.tm, "agents", agent, proj, modeltest.Steps(calls...), o)}
		runs = append(runs, r)
		return r
	}
	cw := start("claude", agentOpts{}, modeltest.ToolCall{Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "hello\nworld\n"}})
	cm := start("claude", agentOpts{mcp: js}, modeltest.ToolCall{Name: "mcp__everything__echo", Input: map[string]any{"message": "from claude"}})
	xp := start("codex", agentOpts{}, shellCall("codex", "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: notes.txt\n+hello\n+world\n*** End Patch\nEOF\n"))
	xm := &run{proj: filepath.Join(t.TempDir(), "codex")}
	if err := os.MkdirAll(xm.proj, 0o755); err != nil {
		t.Fatal(err)
	}
	xm.pane = startAgentWith(t, e.tm, "agents", "codex", xm.proj, whenOffered("mcp__everything",
		modeltest.ToolCall{Namespace: "mcp__everything", Name: "echo", Input: map[string]any{"message": "from-codex"}}), agentOpts{mcp: js})
	runs = append(runs, xm)
	gm := start("gemini", agentOpts{mcp: js}, modeltest.ToolCall{Name: "mcp_everything_echo", Input: map[string]any{"message": "from gemini"}})
	e.startWatcher(t)
	e.dump = func() string {
		var b strings.Builder
		for _, r := range runs {
			b.WriteString("== " + r.proj + "\n" + e.tm.capture(t, r.pane.pane))
		}
		return b.String() + "\nwatcher:\n" + e.log.String()
	}
	echoed := func(r *run, want string) func() bool {
		return func() bool {
			for _, res := range r.pane.srv.Results() {
				if strings.Contains(res.Content, want) && !res.IsError {
					return true
				}
			}
			return false
		}
	}
	made := func(r *run) func() bool {
		return func() bool {
			b, err := os.ReadFile(filepath.Join(r.proj, "notes.txt"))
			return err == nil && string(b) == "hello\nworld\n"
		}
	}
	eventually(t, 120*time.Second, "Claude Code's write was answered and made", made(cw), e.dump)
	eventually(t, 120*time.Second, "Codex's patch was answered and made", made(xp), e.dump)
	eventually(t, 120*time.Second, "Gemini CLI's MCP call was answered and ran", echoed(gm, "from gemini"), e.dump)
	eventually(t, 120*time.Second, "Codex's MCP call was answered and ran", echoed(xm, "from-codex"), e.dump)
	id := e.pending(t, cliVersions["claude"], "everything", 120*time.Second)
	if res := overseertest.Run(t, e.home, "", "approve", id, "--reason", "fine"); res.Code != 0 {
		t.Fatalf("overseer approve: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	eventually(t, 60*time.Second, "Claude Code's MCP call was approved and ran", echoed(cm, "from claude"), e.dump)

	res := overseertest.Run(t, e.home, "", "audit", "export")
	for _, want := range []string{"recogniser: claude-code/permission", "recogniser: codex/patch", "recogniser: gemini/mcp", "recogniser: codex/mcp", "overseer watch: answered yes"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("the audit log has no %q", want)
		}
	}
}

// whenOffered makes call once the agent offers the tool (or namespace)
// named offered: Codex starts its MCP servers while the first turn runs and
// leaves out one not ready yet. Until then the model waits with a command
// Codex runs in its sandbox without asking; after the call it answers.
func whenOffered(offered string, call modeltest.ToolCall) modeltest.Script {
	var mu sync.Mutex
	called := false
	return func(r *modeltest.Request) modeltest.Reply {
		if !r.HasTools {
			return modeltest.Reply{Text: "ok"}
		}
		mu.Lock()
		defer mu.Unlock()
		tools, _ := r.Body["tools"].([]any)
		have := false
		for _, x := range tools {
			if m, _ := x.(map[string]any); m["name"] == offered {
				have = true
			}
		}
		switch {
		case called:
			return modeltest.Reply{Text: "done"}
		case have:
			called = true
			c := call
			return modeltest.Reply{Tool: &c}
		case len(r.Results) > 60:
			return modeltest.Reply{Text: "the tool was never offered"}
		}
		return modeltest.Reply{Tool: &modeltest.ToolCall{Name: "exec_command", Input: map[string]any{"cmd": "sleep 1"}}}
	}
}

// TestWatchPlanApproved: Claude Code's plan prompt (plan mode) goes to a
// person with the plan's text; the person's yes, given with `overseer
// approve`, is typed on "Yes, manually approve edits" — the watcher moves
// the selection off "auto-accept edits" first — and Claude Code proceeds.
func TestWatchPlanApproved(t *testing.T) {
	e := newWatchEnv(t)
	proj := filepath.Join(t.TempDir(), "plan")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	ap := startAgentWith(t, e.tm, "agents", "claude", proj, planScript("# Plan\n\n1. Create notes.txt\n2. Write hello in it\n"),
		agentOpts{args: []string{"--permission-mode", "plan"}})
	e.startWatcher(t)
	e.dump = func() string { return e.tm.capture(t, ap.pane) + "\nwatcher:\n" + e.log.String() }
	id := e.pending(t, cliVersions["claude"], "Create notes.txt", 120*time.Second)
	if res := overseertest.Run(t, e.home, "", "approve", id, "--reason", "good plan"); res.Code != 0 {
		t.Fatalf("overseer approve: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	eventually(t, 60*time.Second, "the watcher typed the person's yes", func() bool {
		return strings.Contains(e.log.String(), "answered yes")
	}, e.dump)
	// The plan file's Write, then ExitPlanMode's result: approved.
	results := func() string {
		var b strings.Builder
		for _, r := range ap.srv.Results() {
			fmt.Fprintf(&b, "%v %q\n", r.IsError, r.Content)
		}
		return b.String()
	}
	eventually(t, 60*time.Second, "Claude Code learned the plan was approved", func() bool {
		rs := ap.srv.Results()
		return len(rs) >= 2 && !rs[1].IsError && strings.Contains(strings.ToLower(rs[1].Content), "approved")
	}, func() string { return results() + e.dump() })
	res := overseertest.Run(t, e.home, "", "audit", "export")
	if !strings.Contains(res.Stdout, `keys: [\"Down\" \"Enter\"]`) || !strings.Contains(res.Stdout, "recogniser: claude-code/plan") {
		t.Errorf("the audit log has no answer of the plan prompt with the moved selection:\n%s", res.Stdout)
	}
	if strings.Contains(e.tm.capture(t, ap.pane), "accept edits on") {
		t.Errorf("Claude Code switched to accepting edits:\n%s", e.tm.capture(t, ap.pane))
	}
}

// TestWatchGeminiPlanApproved: Gemini CLI's plan prompt (plan mode,
// exit_plan_mode) goes to a person with the plan file's text; the person's
// yes is typed on "Yes, manually accept edits" — the watcher moves the
// selection off "automatically accept edits" first — and Gemini CLI leaves
// plan mode for its default mode, where it still asks for each tool.
func TestWatchGeminiPlanApproved(t *testing.T) {
	e := newWatchEnv(t)
	proj := filepath.Join(t.TempDir(), "plan")
	if err := os.MkdirAll(filepath.Join(proj, "plans"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "plans", "plan.md"), []byte("# Plan\n\n1. Create notes.txt\n2. Write hello in it\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ap := startAgentWith(t, e.tm, "agents", "gemini", proj,
		modeltest.Steps(modeltest.ToolCall{Name: "exit_plan_mode", Input: map[string]any{"plan_filename": "plan.md"}}),
		agentOpts{args: []string{"--approval-mode", "plan"}, plans: "plans"})
	e.startWatcher(t)
	e.dump = func() string { return e.tm.capture(t, ap.pane) + "\nwatcher:\n" + e.log.String() }
	id := e.pending(t, cliVersions["gemini"], "Create notes.txt", 120*time.Second)
	if res := overseertest.Run(t, e.home, "", "approve", id, "--reason", "good plan"); res.Code != 0 {
		t.Fatalf("overseer approve: %d %s %s", res.Code, res.Stdout, res.Stderr)
	}
	results := func() string {
		var b strings.Builder
		for _, r := range ap.srv.Results() {
			fmt.Fprintf(&b, "%v %q\n", r.IsError, r.Content)
		}
		return b.String()
	}
	eventually(t, 60*time.Second, "Gemini CLI learned the plan was approved, for its default mode", func() bool {
		rs := ap.srv.Results()
		return len(rs) >= 1 && !rs[0].IsError && strings.Contains(rs[0].Content, "Plan approved") &&
			strings.Contains(rs[0].Content, "Default")
	}, func() string { return results() + e.dump() })
	res := overseertest.Run(t, e.home, "", "audit", "export")
	if !strings.Contains(res.Stdout, `keys: [\"Down\" \"Enter\"]`) || !strings.Contains(res.Stdout, "recogniser: gemini/plan") {
		t.Errorf("the audit log has no answer of the plan prompt with the moved selection:\n%s", res.Stdout)
	}
}

// TestWatchCodexPlan: Codex's plan prompt (Plan mode) goes to a person
// with the plan read from above it. The person's no is typed (Esc): the
// prompt closes, Codex stays in Plan mode and does not start implementing.
// The person's yes is typed on "Yes, implement this plan": Codex asks the
// model to implement it, in Default mode.
func TestWatchCodexPlan(t *testing.T) {
	for _, approve := range []bool{false, true} {
		name := map[bool]string{false: "refused", true: "approved"}[approve]
		t.Run(name, func(t *testing.T) {
			e := newWatchEnv(t)
			proj := filepath.Join(t.TempDir(), "plan")
			if err := os.MkdirAll(proj, 0o755); err != nil {
				t.Fatal(err)
			}
			ap := startAgentWith(t, e.tm, "agents", "codex", proj, codexPlanScript("# Plan\n\n1. Create notes.txt\n2. Write hello in it\n"), agentOpts{})
			e.dump = func() string { return e.tm.capture(t, ap.pane) + "\nwatcher:\n" + e.log.String() }
			codexPlanTurn(t, e.tm, ap.pane, "Plan the change.")
			e.startWatcher(t)
			id := e.pending(t, cliVersions["codex"], "Create notes.txt", 120*time.Second)
			requests := len(ap.srv.Requests())
			if !approve {
				if res := overseertest.Run(t, e.home, "", "deny", id, "--reason", "not this plan"); res.Code != 0 {
					t.Fatalf("overseer deny: %d %s %s", res.Code, res.Stdout, res.Stderr)
				}
				eventually(t, 60*time.Second, "the refused plan prompt closed", func() bool {
					return strings.Contains(e.log.String(), "answered no") && !strings.Contains(e.tm.capture(t, ap.pane), "Implement this plan?")
				}, e.dump)
				time.Sleep(2 * time.Second)
				if n := len(ap.srv.Requests()); n != requests {
					t.Errorf("Codex asked the model %d more times after the plan was refused:\n%s", n-requests, e.dump())
				}
				if !strings.Contains(e.tm.capture(t, ap.pane), "Plan mode") {
					t.Errorf("Codex left Plan mode after the refusal:\n%s", e.dump())
				}
				return
			}
			if res := overseertest.Run(t, e.home, "", "approve", id, "--reason", "good plan"); res.Code != 0 {
				t.Fatalf("overseer approve: %d %s %s", res.Code, res.Stdout, res.Stderr)
			}
			// Any request after the answer: Codex may ask the model for more
			// than the turn (under load they can come in either order).
			since := func() []string {
				var out []string
				for _, r := range ap.srv.Requests()[requests:] {
					b, _ := json.Marshal(r.Body)
					out = append(out, string(b))
				}
				return out
			}
			eventually(t, 60*time.Second, "Codex asked the model to implement the plan, in Default mode", func() bool {
				for _, b := range since() {
					if strings.Contains(b, "Implement the plan") && strings.Contains(b, "Collaboration Mode: Default") {
						return true
					}
				}
				return false
			}, func() string {
				var b strings.Builder
				for i, r := range since() {
					fmt.Fprintf(&b, "request %d after the answer: implement %v, default mode %v, plan mode %v\n", i+1,
						strings.Contains(r, "Implement the plan"), strings.Contains(r, "Collaboration Mode: Default"),
						strings.Contains(r, "Collaboration Mode: Plan"))
				}
				return b.String() + e.dump()
			})
			res := overseertest.Run(t, e.home, "", "audit", "export")
			if !strings.Contains(res.Stdout, `keys: [\"Enter\"]`) || !strings.Contains(res.Stdout, "recogniser: codex/plan") {
				t.Errorf("the audit log has no answer of the plan prompt:\n%s", res.Stdout)
			}
		})
	}
}
