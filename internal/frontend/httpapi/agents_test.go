package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/kernel"
)

func TestAgentsAndRollbackEndpoints(t *testing.T) {
	srv, k := server(t)
	ctx := context.Background()
	dir := t.TempDir()
	p := filepath.Join(dir, "a.txt")
	if err := os.WriteFile(p, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	a := &action.Action{Agent: "bot", Session: "s", Tool: "Write", Cwd: dir, Args: map[string]any{"file_path": p, "content": "new"}}
	out, err := k.IngestCall(ctx, a, kernel.IngestSource{Key: "k1", Format: "jsonl", File: "f.jsonl", Line: 1})
	if err != nil {
		t.Fatal(err)
	}
	old := "old"
	if _, _, err := k.IngestResult(ctx, kernel.IngestedResult{Source: kernel.IngestSource{Key: "k1"},
		Change: &kernel.FileChange{Path: p, Before: &old, After: "new"}}); err != nil {
		t.Fatal(err)
	}

	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/v1/agents"}, {"GET", "/api/v1/agents/bot"}, {"POST", "/api/v1/agents/bot/promote"},
		{"POST", "/api/v1/agents/bot/demote"}, {"GET", "/api/v1/ingested/" + out.ActionID + "/rollback"},
		{"POST", "/api/v1/ingested/" + out.ActionID + "/rollback"},
	} {
		if code, _ := call(t, srv, ep.method, ep.path, nil, false); code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d", ep.method, ep.path, code)
		}
	}
	if code, body := call(t, srv, "GET", "/api/v1/agents", nil, true); code != 200 || !strings.Contains(string(body), `"agent":"bot"`) {
		t.Fatalf("list: %d %s", code, body)
	}
	code, body := call(t, srv, "GET", "/api/v1/agents/bot", nil, true)
	var rec kernel.AgentRecord
	if code != 200 || json.Unmarshal(body, &rec) != nil || rec.Ingested != 1 || rec.Trust.Mode != kernel.ModeAudited {
		t.Fatalf("record: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/api/v1/agents/bot/promote", map[string]any{"to": "supervised", "tools": []string{"Write"}}, true); code != http.StatusConflict {
		t.Fatalf("skipping a step: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/api/v1/agents/bot/promote", map[string]any{"to": "delegated", "who": "alice", "reason": "ok"}, true); code != 200 || !strings.Contains(string(body), `"to":"delegated"`) {
		t.Fatalf("promote: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/api/v1/agents/bot/demote", map[string]any{"reason": "no"}, true); code != 200 || !strings.Contains(string(body), `"to":"audited"`) {
		t.Fatalf("demote: %d %s", code, body)
	}
	if code, body := call(t, srv, "POST", "/api/v1/agents/bot/promote", map[string]any{"to": "delegated", "nonsense": 1}, true); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", code, body)
	}

	if code, body := call(t, srv, "GET", "/api/v1/ingested/"+out.ActionID+"/rollback", nil, true); code != 200 || !strings.Contains(string(body), "-new") {
		t.Fatalf("plan: %d %s", code, body)
	}
	if b, _ := os.ReadFile(p); string(b) != "new" {
		t.Fatal("planning changed the file")
	}
	if code, body := call(t, srv, "POST", "/api/v1/ingested/"+out.ActionID+"/rollback", nil, true); code != 200 {
		t.Fatalf("rollback: %d %s", code, body)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("file is %q", b)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/ingested/"+out.ActionID+"/rollback", nil, true); code != http.StatusConflict {
		t.Fatalf("second rollback: %d", code)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/ingested/act_none/rollback", nil, true); code != http.StatusNotFound {
		t.Fatalf("unknown action: %d", code)
	}
}
