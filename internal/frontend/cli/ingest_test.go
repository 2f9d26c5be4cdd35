package cli

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// `overseer audit ingest` on the generic format: calls are judged and
// recorded once, a violation reaches a real webhook receiver, an unreadable
// line is reported with its file and line and makes the exit status 1, and
// the agent's record and promotion are there on the command line.
func TestAuditIngestCommand(t *testing.T) {
	e := newCLIEnv(t)
	ctx := context.Background()
	var mu sync.Mutex
	var alerts []map[string]any
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		alerts = append(alerts, m)
		mu.Unlock()
	}))
	defer recv.Close()
	if err := os.WriteFile(filepath.Join(e.home, "notify.yaml"), []byte("channels:\n  - type: webhook\n    url: "+recv.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(e.proj, "VERSION")
	if err := os.WriteFile(file, []byte("1.3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	lines := []string{
		`{"agent":"bot","session":"s1","id":"c1","tool":"bash","args":{"command":"ls"},"cwd":"` + e.proj + `"}`,
		`{"agent":"bot","session":"s1","id":"c2","tool":"bash","args":{"command":"echo x > .git/hooks/pre-commit"},"cwd":"` + e.proj + `"}`,
		`{"agent":"bot","session":"s1","id":"c3","tool":"file_write","kind":"file_write","args":{"file_path":"` + file + `","content":"1.3\n"},"change":{"path":"` + file + `","before":"1.2\n","after":"1.3\n"}}`,
		`{"agent":"bot","tool":"bash","args":{"command":"ls"},"colour":"red"}`,
	}
	transcript := filepath.Join(e.other, "run.jsonl")
	if err := os.WriteFile(transcript, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := e.run(t, ctx, "audit", "ingest", "--json", transcript)
	if code != 1 || !strings.Contains(errOut, "run.jsonl:4") || !strings.Contains(errOut, "1 line(s) could not be read") {
		t.Fatalf("exit %d, want 1 for the unreadable line 4:\n%s\n%s", code, out, errOut)
	}
	var rep struct {
		New        int
		Violations []struct{ Tool string }
		Undoable   []struct {
			ActionID string `json:"action_id"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.New != 3 || len(rep.Violations) != 1 || len(rep.Undoable) != 1 {
		t.Fatalf("report %s (%v)", out, err)
	}
	mu.Lock()
	n := len(alerts)
	var alert map[string]any
	if n > 0 {
		alert = alerts[0]
	}
	mu.Unlock()
	if n != 1 || alert["alert"] != "ingest_violation" || alert["event"] != "alarm" || !strings.Contains(alert["text"].(string), "run.jsonl:2") {
		t.Fatalf("alerts %v", alerts)
	}
	// Again: nothing new, no second alert.
	if code, out, _ := e.run(t, ctx, "audit", "ingest", transcript); code != 1 || !strings.Contains(out, "0 new, 3 already ingested") {
		t.Fatalf("second ingest: %d %s", code, out)
	}
	mu.Lock()
	n = len(alerts)
	mu.Unlock()
	if n != 1 {
		t.Fatalf("%d alerts after the second ingest", n)
	}
	// Rollback: the diff first, then the change.
	id := rep.Undoable[0].ActionID
	if code, out, _ := e.run(t, ctx, "audit", "rollback", id); code != 0 || !strings.Contains(out, "+1.2") || !strings.Contains(out, "--yes") {
		t.Fatalf("plan: %d %s", code, out)
	}
	if code, out, errOut := e.run(t, ctx, "audit", "rollback", id, "--yes"); code != 0 || !strings.Contains(out, "restored") {
		t.Fatalf("rollback: %d %s %s", code, out, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != "1.2\n" {
		t.Fatalf("VERSION is %q", b)
	}
	// The record, and the way up.
	if code, out, _ := e.run(t, ctx, "agent", "show", "bot"); code != 0 || !strings.Contains(out, "violations: 1") || !strings.Contains(out, "3 ingested") {
		t.Fatalf("agent show: %d %s", code, out)
	}
	if code, _, errOut := e.run(t, ctx, "agent", "promote", "bot", "--to", "delegated"); code != 1 || !strings.Contains(errOut, "violation") {
		t.Fatalf("promotion over a violation: %d %s", code, errOut)
	}
	if code, out, errOut := e.run(t, ctx, "agent", "promote", "bot", "--to", "delegated", "--accept-violations"); code != 0 || !strings.Contains(out, "promoted from audited to delegated") {
		t.Fatalf("promote: %d %s %s", code, out, errOut)
	}
	if code, out, _ := e.run(t, ctx, "agent", "list"); code != 0 || !strings.Contains(out, "delegated") {
		t.Fatalf("agent list: %d %s", code, out)
	}
	if code, out, _ := e.run(t, ctx, "agent", "demote", "bot", "--reason", "test"); code != 0 || !strings.Contains(out, "demoted from delegated to audited") {
		t.Fatalf("demote: %d %s", code, out)
	}
}

func TestTermSafe(t *testing.T) {
	if got := termSafe("bot\x1b]0;owned\x07\u009b2J ok ü"); strings.ContainsAny(got, "\x1b\x07\u009b") || !strings.HasSuffix(got, " ok ü") {
		t.Fatalf("%q", got)
	}
}
