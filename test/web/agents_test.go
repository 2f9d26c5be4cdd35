package webe2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestBrowserAgents: calls read by `overseer audit ingest` show on the
// Agents page; a person promotes and demotes the agent by clicking (both
// audited, as the person signed in); an agent name made of markup shows as
// text; an ingested write is rolled back from the audit view.
func TestBrowserAgents(t *testing.T) {
	needBrowser(t)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	dir := t.TempDir()
	file := filepath.Join(dir, "app.txt")
	if err := os.WriteFile(file, []byte("new\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	agent := `<img src=x onerror="window.__pwned=3">bot`
	var lines []string
	for _, l := range []map[string]any{
		{"agent": agent, "session": "s1", "id": "c1", "tool": "deploy_app", "args": map[string]any{"target": "staging"}},
		{"agent": agent, "session": "s1", "id": "c2", "tool": "Write", "args": map[string]any{"file_path": file, "content": "new\n"},
			"change": map[string]any{"path": file, "before": "old\n", "after": "new\n"}},
	} {
		b, _ := json.Marshal(l)
		lines = append(lines, string(b))
	}
	transcript := filepath.Join(dir, "run.jsonl")
	if err := os.WriteFile(transcript, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := overseertest.Run(t, d.Home, "", "audit", "ingest", transcript); r.Code != 0 {
		t.Fatalf("ingest: %s %s", r.Stdout, r.Stderr)
	}

	dr := startDriver(t, d)
	dr.send("AGENTS")
	var got struct {
		Name, First, Promoted, Demoted string
		Pwned                          int
	}
	if err := json.Unmarshal([]byte(dr.expect("AGENTS")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Name != agent || got.First != "audited" || got.Pwned != 0 || !strings.Contains(got.Promoted, "promote audited → delegated by alice") {
		t.Fatalf("the Agents page: %+v", got)
	}
	st, body := d.Do(t, "GET", "/api/v1/audit?type=trust", nil, true)
	if st != 200 || strings.Count(string(body), `"who":"alice"`) != 2 {
		t.Fatalf("trust records: %d %s", st, body)
	}

	dr.send("ROLLBACK")
	dr.expect("ROLLEDBACK")
	if b, _ := os.ReadFile(file); string(b) != "old\n" {
		t.Fatalf("the file is %q after the rollback", b)
	}
	st, body = d.Do(t, "GET", "/api/v1/audit?type=rollback", nil, true)
	if st != 200 || !strings.Contains(string(body), `"channel":"web"`) || !strings.Contains(string(body), `"who":"alice"`) {
		t.Fatalf("rollback record: %d %s", st, body)
	}
}
