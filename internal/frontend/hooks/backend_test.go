package hooks

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// openKernel opens a real kernel on a temporary home with the tests' policy.
func openKernel(t *testing.T, home string) *kernel.Kernel {
	t.Helper()
	pol, err := filepath.Abs(filepath.Join("testdata", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	k, err := kernel.Open(context.Background(), kernel.Config{Home: home, PolicyFile: pol, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k.Close() })
	return k
}

// daemon serves the real HTTP API over a real kernel.
func daemon(t *testing.T) (*Daemon, *kernel.Kernel, *httptest.Server) {
	t.Helper()
	home := t.TempDir()
	k := openKernel(t, home)
	api, err := httpapi.New(k, httpapi.Options{Token: "test-token-test-token-test-token-00"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	c := &client.Client{Base: srv.URL, Token: "test-token-test-token-test-token-00", HTTP: srv.Client()}
	d := &Daemon{C: c, OpenKernel: func(ctx context.Context) (*kernel.Kernel, error) {
		return kernel.Open(ctx, kernel.Config{Home: home, PolicyFile: k.PolicyFile})
	}}
	return d, k, srv
}

func shellAction(cmd string) *action.Action {
	return &action.Action{Agent: ClaudeCode, Session: "s1", ToolUseID: "t-" + cmd, Tool: "Bash",
		Kind: action.KindShell, Args: map[string]any{"command": cmd}, Cwd: "/tmp"}
}

// answerWhenPending answers the first pending approval as a person would.
func answerWhenPending(t *testing.T, k *kernel.Kernel, decision, reason string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			list, err := k.Store.ListApprovals(ctx, store.ApprovalFilter{Status: store.StatusPending})
			if err == nil && len(list) > 0 {
				_, _, err := k.Answer(context.Background(), list[0].ID, store.Answer{Decision: decision, Who: "ann", Channel: "cli", Reason: reason})
				if err != nil {
					t.Errorf("answer: %v", err)
				}
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
}

func TestDaemonDecide(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		answer   string // a person's answer, if one is asked
		ask      bool
		outcome  Outcome
		level    action.Level
		inReason string
	}{
		{name: "auto", cmd: "echo hi", outcome: Allow, level: action.Auto},
		{name: "notify allows", cmd: "date", outcome: Allow, level: action.Notify},
		{name: "block", cmd: "rm -rf /tmp/x", outcome: Deny, level: action.Block, inReason: "test-rm-block"},
		{name: "confirm approved", cmd: "make all", answer: "approve", outcome: Allow, level: action.Confirm, inReason: "approved by ann via cli"},
		{name: "confirm denied with the person's reason", cmd: "make clean", answer: "deny", outcome: Deny,
			level: action.Confirm, inReason: "not now"},
		{name: "approve approved", cmd: "deploy prod", answer: "approve", outcome: Allow, level: action.Approve},
		{name: "confirm handed to the agent's prompt", cmd: "make install", ask: true, outcome: Ask, level: action.Confirm},
		{name: "approve is held even in ask mode", cmd: "deploy staging", ask: true, answer: "deny", outcome: Deny, level: action.Approve},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, k, _ := daemon(t)
			if tc.answer != "" {
				answerWhenPending(t, k, tc.answer, "not now")
			}
			a := shellAction(tc.cmd)
			got, err := d.Decide(context.Background(), a, DecideOptions{MaxWait: 20 * time.Second, AskConfirm: tc.ask})
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != tc.outcome || got.Level != tc.level || !strings.Contains(got.Reason, tc.inReason) {
				t.Fatalf("got %+v, want %v at %v with %q", got, tc.outcome, tc.level, tc.inReason)
			}
			if got.ActionID == "" || got.ActionID != a.ID {
				t.Fatalf("action id %q / %q", got.ActionID, a.ID)
			}
		})
	}
}

func TestDaemonNoAnswerInTimeDenies(t *testing.T) {
	d, _, _ := daemon(t)
	got, err := d.Decide(context.Background(), shellAction("make slow"), DecideOptions{MaxWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != Deny || !strings.Contains(got.Reason, "no person answered") {
		t.Fatalf("%+v", got)
	}
}

func TestDaemonUnreachableMidCallDenies(t *testing.T) {
	d, k, srv := daemon(t)
	go func() {
		for {
			list, _ := k.Store.ListApprovals(context.Background(), store.ApprovalFilter{Status: store.StatusPending})
			if len(list) > 0 {
				srv.CloseClientConnections()
				srv.Config.Close()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	tab, _ := NewTable(nil)
	r := &Runner{Agent: Codex, Tools: tab, Home: t.TempDir(), MaxWait: 20 * time.Second,
		Connect: func(context.Context) (Backend, func(), error) { return d, func() {}, nil }}
	got := run(r, `{"session_id":"s","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"make x"},"tool_use_id":"u1"}`)
	if got.code != 2 || !isDeny(got) {
		t.Fatalf("%+v", got)
	}
}

func TestDaemonKeepsPreviousContentAndRecordsResult(t *testing.T) {
	d, k, _ := daemon(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	tab, _ := NewTable(nil)
	r := &Runner{Agent: ClaudeCode, Tools: tab, Home: t.TempDir(), MaxWait: 20 * time.Second,
		Connect: func(context.Context) (Backend, func(), error) { return d, func() {}, nil }}
	ev := `{"session_id":"s7","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Write",` +
		`"tool_input":{"file_path":"victim.txt","content":"overwritten"},"tool_use_id":"w1"}`
	got := run(r, ev)
	if !strings.Contains(got.stdout, `"permissionDecision":"allow"`) {
		t.Fatalf("%+v", got)
	}
	// The agent writes the file; undo brings the previous content back.
	if err := os.WriteFile(victim, []byte("overwritten"), 0o600); err != nil {
		t.Fatal(err)
	}
	post := strings.Replace(ev, "PreToolUse", "PostToolUse", 1)
	post = strings.Replace(post, `"tool_use_id"`, `"tool_response":{"type":"update","filePath":"victim.txt"},"tool_use_id"`, 1)
	if got := run(r, post); got.code != 0 {
		t.Fatalf("post %+v", got)
	}
	ev2, _ := ParseEvent(ClaudeCode, []byte(ev))
	// The action's id is Overseer's; the call id is its client_id.
	id := k.ActionByClientID(context.Background(), ClaudeCode, "s7", ActionID(ev2))
	if id == "" || id == ActionID(ev2) {
		t.Fatalf("action of call %s: %q", ActionID(ev2), id)
	}
	if _, err := k.UndoAction(context.Background(), id, "ann"); err != nil {
		t.Fatalf("undo %s: %v", id, err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("after undo: %q", b)
	}
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{ActionID: id})
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]bool{}
	for _, rec := range recs {
		types[rec.Type] = true
		if rec.Agent != ClaudeCode || rec.Session != "s7" {
			t.Errorf("record %s names agent %q session %q", rec.Type, rec.Agent, rec.Session)
		}
	}
	for _, want := range []string{audit.TypeAction, audit.TypeVerdict, audit.TypeResult} {
		if !types[want] {
			t.Errorf("no %s record for %s (have %v)", want, id, types)
		}
	}
	for _, rec := range recs {
		if rec.Type == audit.TypeAction {
			var a action.Action
			if err := json.Unmarshal(rec.Data, &a); err != nil || a.ToolUseID != "w1" {
				t.Errorf("recorded action %s: tool_use_id %q (%v)", rec.Data, a.ToolUseID, err)
			}
		}
	}
}

func TestInProcessDecide(t *testing.T) {
	tests := []struct {
		name     string
		cmd      string
		ask      bool
		outcome  Outcome
		inReason string
	}{
		{"auto", "echo hi", false, Allow, "auto"},
		{"notify", "date -u", false, Allow, "notify"},
		{"block", "rm -rf /tmp/y", false, Deny, "test-rm-block"},
		{"needs a person: start the daemon", "make all", false, Deny, "overseer serve"},
		{"approve needs a person too", "deploy prod", true, Deny, "overseer serve"},
		{"confirm to the agent's prompt", "make all", true, Ask, "confirm"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &InProcess{K: openKernel(t, t.TempDir())}
			got, err := p.Decide(context.Background(), shellAction(tc.cmd), DecideOptions{MaxWait: time.Second, AskConfirm: tc.ask})
			if err != nil {
				t.Fatal(err)
			}
			if got.Outcome != tc.outcome || !strings.Contains(got.Reason, tc.inReason) {
				t.Fatalf("got %+v, want %v with %q", got, tc.outcome, tc.inReason)
			}
		})
	}
}

func TestDaemonShellDeleteIsUndoable(t *testing.T) {
	d, k, _ := daemon(t)
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	answerWhenPending(t, k, "approve", "") // in case the delete needs a person
	tab, _ := NewTable(nil)
	r := &Runner{Agent: ClaudeCode, Tools: tab, Home: t.TempDir(), MaxWait: 20 * time.Second,
		Connect: func(context.Context) (Backend, func(), error) { return d, func() {}, nil }}
	ev := `{"session_id":"s8","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"rm victim.txt"},"tool_use_id":"del1"}`
	if got := run(r, ev); !strings.Contains(got.stdout, `"permissionDecision":"allow"`) {
		t.Fatalf("%+v", got)
	}
	// The agent runs the command; undo brings the file back.
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	parsed, _ := ParseEvent(ClaudeCode, []byte(ev))
	id := k.ActionByClientID(context.Background(), ClaudeCode, "s8", ActionID(parsed))
	if _, err := k.UndoAction(context.Background(), id, "ann"); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("after undo: %q", b)
	}
}

func TestDaemonErrorAnswerDenies(t *testing.T) {
	for _, status := range []int{500, 400, 401} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(status)
				_, _ = w.Write([]byte(`{"action_id":"act_x","decision":"allow","level":"auto"}`))
			}))
			defer srv.Close()
			d := &Daemon{C: &client.Client{Base: srv.URL, HTTP: srv.Client()}}
			tab, _ := NewTable(nil)
			r := &Runner{Agent: Codex, Tools: tab, Home: t.TempDir(), MaxWait: time.Second,
				Connect: func(context.Context) (Backend, func(), error) { return d, func() {}, nil }}
			if got := run(r, bashPre); got.code != 2 || !isDeny(got) {
				t.Fatalf("%+v", got)
			}
		})
	}
}

func TestDaemonUnknownDecisionDenies(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"action_id":"act_x","decision":"maybe","level":"auto"}`))
	}))
	defer srv.Close()
	d := &Daemon{C: &client.Client{Base: srv.URL, HTTP: srv.Client()}}
	got, err := d.Decide(context.Background(), shellAction("echo hi"), DecideOptions{MaxWait: time.Second})
	if err != nil || got.Outcome != Deny || !strings.Contains(got.Reason, "maybe") {
		t.Fatalf("%+v %v", got, err)
	}
}

func TestDaemonAbortStopsTheTask(t *testing.T) {
	d, k, _ := daemon(t)
	answerWhenPending(t, k, "abort", "stop everything")
	got, err := d.Decide(context.Background(), shellAction("make release"), DecideOptions{MaxWait: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if got.Outcome != Deny || !got.Stop || !strings.Contains(got.Reason, "stop everything") {
		t.Fatalf("%+v", got)
	}
}
