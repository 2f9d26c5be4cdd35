package hooks

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

// TestDaemonAnswerCarriesFacts: the daemon's answer to a hook's shell call
// carries the facts it derived, so the hook keeps the files the command
// deletes without reading the action's record again (no read of the audit log), and the deletion stays undoable.
func TestDaemonAnswerCarriesFacts(t *testing.T) {
	home := t.TempDir()
	k := openKernel(t, home)
	api, err := httpapi.New(k, httpapi.Options{Token: "test-token-test-token-test-token-00"})
	if err != nil {
		t.Fatal(err)
	}
	var submits, others atomic.Int32 // submissions, reads of the audit log
	h := api.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.URL.Path == "/api/v1/actions" {
			if r.URL.Query().Get("facts") == "" {
				t.Errorf("the hook's submission does not ask for the facts: %s", r.URL)
			}
			submits.Add(1)
		} else if strings.HasPrefix(r.URL.Path, "/api/v1/audit") {
			others.Add(1) // the record of the action, read for its facts
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d := &Daemon{C: &client.Client{Base: srv.URL, Token: "test-token-test-token-test-token-00", HTTP: srv.Client()},
		OpenKernel: func(ctx context.Context) (*kernel.Kernel, error) {
			return kernel.Open(ctx, kernel.Config{Home: home, PolicyFile: k.PolicyFile})
		}}

	dir := t.TempDir()
	victim := filepath.Join(dir, "victim.txt")
	if err := os.WriteFile(victim, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	answerWhenPending(t, k, "approve", "") // in case the delete needs a person
	tab, _ := NewTable(nil)
	r := &Runner{Agent: ClaudeCode, Tools: tab, Home: t.TempDir(), MaxWait: 20 * time.Second,
		Connect: func(context.Context) (Backend, func(), error) { return d, func() {}, nil }}
	ev := `{"session_id":"s9","cwd":"` + dir + `","hook_event_name":"PreToolUse","tool_name":"Bash",` +
		`"tool_input":{"command":"rm victim.txt"},"tool_use_id":"del9"}`
	if got := run(r, ev); !strings.Contains(got.stdout, `"permissionDecision":"allow"`) {
		t.Fatalf("%+v", got)
	}
	if submits.Load() != 1 {
		t.Errorf("%d submissions, want 1", submits.Load())
	}
	if approvalAsked(k) {
		t.Error("the deletion was put to a person: the test wants one judged without")
	}
	if n := others.Load(); n != 0 {
		t.Errorf("the hook read the audit log %d times for facts it was given", n)
	}
	if err := os.Remove(victim); err != nil {
		t.Fatal(err)
	}
	parsed, _ := ParseEvent(ClaudeCode, []byte(ev))
	id := k.ActionByClientID(context.Background(), ClaudeCode, "s9", ActionID(parsed))
	if _, err := k.UndoAction(context.Background(), id, "ann"); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("after undo: %q", b)
	}
}

// approvalAsked reports whether a person was asked (the hook then polls
// for the answer, and reads the facts from the record).
func approvalAsked(k *kernel.Kernel) bool {
	list, err := k.Store.ListApprovals(context.Background(), store.ApprovalFilter{})
	return err == nil && len(list) > 0
}
