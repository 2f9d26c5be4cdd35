package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
)

// TestPauseResumeAgent: a person pauses an agent over the API (token
// required); the agent's submissions are refused with how to resume;
// the person resumes it.
func TestPauseResumeAgent(t *testing.T) {
	srv, k := server(t)
	for _, ep := range []string{"/api/v1/agents/codex/pause", "/api/v1/agents/codex/resume"} {
		if code, _ := call(t, srv, "POST", ep, nil, false); code != http.StatusUnauthorized {
			t.Fatalf("%s without the token: %d", ep, code)
		}
	}
	if code, _ := call(t, srv, "GET", "/api/v1/agents/paused", nil, false); code != http.StatusUnauthorized {
		t.Fatalf("list without the token: %d", code)
	}
	code, b := call(t, srv, "POST", "/api/v1/agents/codex/pause", map[string]any{"reason": "night", "who": "ann"}, true)
	if code != http.StatusOK {
		t.Fatalf("pause: %d %s", code, b)
	}
	if p, why := k.AgentPaused("codex"); !p || why != "night" {
		t.Fatalf("paused = %v %q", p, why)
	}
	act := map[string]any{"tool": "Read", "agent": "codex", "cwd": "/p", "session": "s", "args": map[string]any{"file_path": "/p/a"}}
	code, b = call(t, srv, "POST", "/api/v1/actions", act, false)
	var out struct {
		Decision string `json:"decision"`
		Reason   string `json:"reason"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Decision != "deny" || !strings.Contains(out.Reason, "overseer resume-agent codex") {
		t.Fatalf("a paused agent's call: %d %s", code, b)
	}
	code, b = call(t, srv, "GET", "/api/v1/agents/paused", nil, true)
	var list httpapi.PausedList
	if err := json.Unmarshal(b, &list); err != nil || code != 200 || len(list.Paused) != 1 || list.Paused[0].By != "ann" {
		t.Fatalf("list: %d %s", code, b)
	}
	if code, b := call(t, srv, "POST", "/api/v1/agents/codex/resume", map[string]any{"who": "bob"}, true); code != http.StatusOK {
		t.Fatalf("resume: %d %s", code, b)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/agents/codex/resume", nil, true); code != http.StatusNotFound {
		t.Fatalf("resume again: %d, want 404", code)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/agents/codex/pause", map[string]any{"bogus": 1}, true); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d, want 400", code)
	}
	if p, _ := k.AgentPaused("codex"); p {
		t.Fatal("still paused")
	}
}
