package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestRuleEndpoints drives both kinds of control rules over the API: each
// change needs the token and is audited as the body's "who"; an id in the
// body of a POST is not kept, a PUT replaces the rule of its path; a dry
// run saves nothing; a rule is deleted once.
func TestRuleEndpoints(t *testing.T) {
	for _, c := range []struct {
		base string
		rule map[string]any
	}{
		{"/api/v1/auto-rules", map[string]any{"name": "costly agent", "trigger": map[string]any{"type": "cost_threshold", "tool": "Bash",
			"agent": "claude-code", "usd": 1.5, "window_minutes": 60}, "action": map[string]any{"type": "block_tool"}}},
		{"/api/v1/anomaly/rules", map[string]any{"name": "write burst", "tool_name": "file_[we]*", "agent": "claude-code",
			"threshold_count": 5, "window_seconds": 300, "action": "stop_and_rollback", "rollback": 10}},
	} {
		t.Run(c.base, func(t *testing.T) {
			srv, _ := server(t)
			with := func(extra map[string]any) map[string]any {
				out := map[string]any{}
				for k, v := range c.rule {
					out[k] = v
				}
				for k, v := range extra {
					out[k] = v
				}
				return out
			}
			var rule struct{ ID, Name string }
			if code, _ := call(t, srv, "POST", c.base, with(nil), false); code != http.StatusUnauthorized {
				t.Fatalf("POST without the token: %d", code)
			}
			code, b := call(t, srv, "POST", c.base, with(map[string]any{"id": "mine", "who": "ann"}), true)
			if code != http.StatusCreated || json.Unmarshal(b, &rule) != nil || rule.ID == "" || rule.ID == "mine" {
				t.Fatalf("POST: %d %s", code, b)
			}
			if code, b := call(t, srv, "POST", c.base, map[string]any{"name": 7}, true); code != http.StatusUnprocessableEntity || !strings.Contains(string(b), "invalid_rule") {
				t.Fatalf("POST of a malformed rule: %d %s", code, b)
			}
			if code, b := call(t, srv, "POST", c.base, []any{c.rule}, true); code != http.StatusBadRequest || !strings.Contains(string(b), "not a JSON object") {
				t.Fatalf("POST of an array: %d %s", code, b)
			}
			code, b = call(t, srv, "PUT", c.base+"/"+rule.ID, with(map[string]any{"name": "renamed", "who": "bob"}), true)
			var put struct{ ID, Name string }
			if code != http.StatusOK || json.Unmarshal(b, &put) != nil || put.ID != rule.ID || put.Name != "renamed" {
				t.Fatalf("PUT: %d %s", code, b)
			}
			if code, b := call(t, srv, "GET", c.base+"/"+rule.ID, nil, true); code != http.StatusOK || !strings.Contains(string(b), `"renamed"`) {
				t.Fatalf("GET after the PUT: %d %s", code, b)
			}
			if code, _ := call(t, srv, "POST", c.base+"/test", map[string]any{"rule": c.rule, "days": 1}, false); code != http.StatusUnauthorized {
				t.Fatalf("a dry run without the token: %d", code)
			}
			code, b = call(t, srv, "POST", c.base+"/test", map[string]any{"rule": c.rule, "days": 1}, true)
			if code != http.StatusOK || !strings.Contains(string(b), `"days":1`) {
				t.Fatalf("dry run: %d %s", code, b)
			}
			if code, b := call(t, srv, "POST", c.base+"/test", map[string]any{"days": 1}, true); code != http.StatusBadRequest {
				t.Fatalf("a dry run without a rule: %d %s", code, b)
			}
			if code, b := call(t, srv, "GET", c.base, nil, true); code != http.StatusOK || strings.Count(string(b), `"id"`) != 1 {
				t.Fatalf("the list after the dry run: %d %s", code, b)
			}
			if code, _ := call(t, srv, "DELETE", c.base+"/"+rule.ID, nil, false); code != http.StatusUnauthorized {
				t.Fatalf("DELETE without the token: %d", code)
			}
			if code, b := call(t, srv, "DELETE", c.base+"/"+rule.ID, nil, true); code != http.StatusOK || !strings.Contains(string(b), `"deleted":"`+rule.ID+`"`) {
				t.Fatalf("DELETE: %d %s", code, b)
			}
			if code, _ := call(t, srv, "DELETE", c.base+"/"+rule.ID, nil, true); code != http.StatusNotFound {
				t.Fatalf("DELETE again: %d", code)
			}
			_, b = call(t, srv, "GET", "/api/v1/audit/export", nil, true)
			for _, who := range []string{`"who":"ann"`, `"who":"bob"`, `"who":"api"`} {
				if !strings.Contains(string(b), who) {
					t.Errorf("the audit log does not name %s:\n%s", who, b)
				}
			}
		})
	}
}
