package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
	"github.com/overseer-dev/overseer/internal/usage"
)

func TestRateLimitEndpoints(t *testing.T) {
	srv, k := server(t)
	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/v1/rate-limits"}, {"POST", "/api/v1/rate-limits"}, {"PUT", "/api/v1/rate-limits/x"},
		{"DELETE", "/api/v1/rate-limits/x"}, {"GET", "/api/v1/rate-limits/usage"}, {"GET", "/api/v1/budget"},
		{"POST", "/api/v1/budget/caps"}, {"PUT", "/api/v1/budget/caps/x"}, {"GET", "/api/v1/budget/usage"},
		{"GET", "/api/v1/budget/usage/codex"}, {"PUT", "/api/v1/budget/prices"},
	} {
		if code, _ := call(t, srv, ep.method, ep.path, map[string]any{}, false); code != http.StatusUnauthorized {
			t.Errorf("%s %s without the token: %d", ep.method, ep.path, code)
		}
	}
	code, b := call(t, srv, "POST", "/api/v1/rate-limits", map[string]any{"agent": "codex", "max_calls": 1, "window_seconds": 60,
		"action_on_limit": "block", "who": "ann"}, true)
	var l usage.RateLimit
	if err := json.Unmarshal(b, &l); code != http.StatusCreated || err != nil || l.ID == "" || !l.Enabled {
		t.Fatalf("create: %d %s", code, b)
	}
	if code, b := call(t, srv, "POST", "/api/v1/rate-limits", map[string]any{"max_calls": 1, "window_seconds": 60, "bogus": 1}, true); code != http.StatusBadRequest {
		t.Fatalf("unknown field: %d %s", code, b)
	}
	if code, b := call(t, srv, "POST", "/api/v1/rate-limits", map[string]any{"max_calls": 0, "window_seconds": 60}, true); code != http.StatusBadRequest || !strings.Contains(string(b), "max_calls") {
		t.Fatalf("invalid: %d %s", code, b)
	}
	act := map[string]any{"tool": "Read", "agent": "codex", "cwd": "/p", "session": "s", "args": map[string]any{"file_path": "/p/a"}}
	call(t, srv, "POST", "/api/v1/actions", act, false)
	code, b = call(t, srv, "GET", "/api/v1/rate-limits/usage", nil, true)
	if code != 200 || !strings.Contains(string(b), `"count":1`) {
		t.Fatalf("usage: %d %s", code, b)
	}
	act["args"] = map[string]any{"file_path": "/p/b"}
	_, b = call(t, srv, "POST", "/api/v1/actions", act, false)
	if !strings.Contains(string(b), `"decision":"deny"`) || !strings.Contains(string(b), "rate limit "+l.ID) {
		t.Fatalf("over the limit: %s", b)
	}
	if code, b := call(t, srv, "PUT", "/api/v1/rate-limits/"+l.ID, map[string]any{"agent": "codex", "max_calls": 10, "window_seconds": 60, "action_on_limit": "block"}, true); code != 200 {
		t.Fatalf("change: %d %s", code, b)
	}
	if code, _ := call(t, srv, "PUT", "/api/v1/rate-limits/nope", map[string]any{"max_calls": 10, "window_seconds": 60}, true); code != http.StatusNotFound {
		t.Fatalf("change a missing limit: %d", code)
	}
	if code, _ := call(t, srv, "DELETE", "/api/v1/rate-limits/"+l.ID, nil, true); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if code, _ := call(t, srv, "DELETE", "/api/v1/rate-limits/"+l.ID, nil, true); code != http.StatusNotFound {
		t.Fatalf("delete again: %d", code)
	}
	// Every change is an audit record naming who.
	recs, _ := k.Store.QueryAudit(t.Context(), store.AuditQuery{Types: []string{kernel.TypeControlChange}})
	var ops []string
	for _, r := range recs {
		var ch kernel.ControlChange
		_ = json.Unmarshal(r.Data, &ch)
		ops = append(ops, ch.Op+":"+ch.Who)
	}
	if strings.Join(ops, ",") != "add:ann,change:api,remove:api" {
		t.Fatalf("records %v", ops)
	}
}

func TestBudgetEndpoints(t *testing.T) {
	srv, _ := server(t)
	if code, b := call(t, srv, "PUT", "/api/v1/budget/prices", map[string]any{"prices": map[string]any{"m": map[string]any{"input_per_mtok": 10, "output_per_mtok": 10}}}, true); code != 200 {
		t.Fatalf("prices: %d %s", code, b)
	}
	code, b := call(t, srv, "POST", "/api/v1/budget/caps", map[string]any{"scope": "agent", "scope_id": "codex", "max_cost_usd": 1,
		"period": "daily", "action_on_limit": "stop"}, true)
	var cp usage.BudgetCap
	if err := json.Unmarshal(b, &cp); code != http.StatusCreated || err != nil || cp.ID == "" {
		t.Fatalf("create: %d %s", code, b)
	}
	// The hook reports Codex's token counts (cumulative): $0.9, then $0.9 again (nothing new).
	rep := map[string]any{"agent": "codex", "session": "s1", "model": "m", "input_tokens": 90000, "output_tokens": 0, "cumulative": true}
	for i := 0; i < 2; i++ {
		if code, b := call(t, srv, "POST", "/api/v1/usage", rep, false); code != 200 {
			t.Fatalf("report: %d %s", code, b)
		}
	}
	code, b = call(t, srv, "GET", "/api/v1/budget", nil, true)
	var st httpapi.BudgetStatus
	if err := json.Unmarshal(b, &st); code != 200 || err != nil || len(st.Alerts) != 1 || st.Today < 0.89 || st.Today > 0.91 {
		t.Fatalf("budget: %d %s", code, b)
	}
	code, b = call(t, srv, "GET", "/api/v1/budget/usage/codex?days=7", nil, true)
	var tl httpapi.Timeline
	if err := json.Unmarshal(b, &tl); code != 200 || err != nil || len(tl.Days) != 7 || tl.Days[6].Cost < 0.89 || len(tl.Weeks) != 1 || len(tl.Months) != 1 {
		t.Fatalf("timeline: %d %s", code, b)
	}
	if code, _ := call(t, srv, "GET", "/api/v1/budget/usage?days=0", nil, true); code != http.StatusBadRequest {
		t.Fatalf("days=0: %d", code)
	}
	rep["input_tokens"] = 110000
	call(t, srv, "POST", "/api/v1/usage", rep, false)
	act := map[string]any{"tool": "Read", "agent": "codex", "cwd": "/p", "session": "s1", "args": map[string]any{"file_path": "/p/a"}}
	if _, b := call(t, srv, "POST", "/api/v1/actions", act, false); !strings.Contains(string(b), "budget cap "+cp.ID) {
		t.Fatalf("over the cap: %s", b)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/usage", map[string]any{"agent": "codex", "input_tokens": -5}, false); code != http.StatusBadRequest {
		t.Fatalf("a negative report: %d", code)
	}
	if code, b := call(t, srv, "PUT", "/api/v1/budget/caps/"+cp.ID, map[string]any{"scope": "agent", "scope_id": "codex", "max_cost_usd": 5,
		"period": "daily", "action_on_limit": "stop", "who": "ann"}, true); code != 200 {
		t.Fatalf("raise: %d %s", code, b)
	}
	if _, b := call(t, srv, "POST", "/api/v1/actions", act, false); strings.Contains(string(b), "budget cap") {
		t.Fatalf("after raising the cap: %s", b)
	}
}
