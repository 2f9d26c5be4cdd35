package web

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/kernel"
)

func TestConsoleGrants(t *testing.T) {
	e := newEnv(t)
	// Without a session nothing is issued.
	anon := e.newBrowser()
	req := map[string]any{"subject": map[string]any{"agent": "claude-code", "subagent_type": "*"},
		"allow":  []any{map[string]any{"kinds": []string{"file_read"}, "under": []string{"/proj/docs"}, "read_only": true}},
		"budget": map[string]any{"steps": 5}, "ttl": "2h", "who": "mallory"}
	if st, _ := anon.send("POST", "/ui/api/grants", req, nil); st == http.StatusCreated {
		t.Fatal("issued without a session")
	}
	b := e.newBrowser().login()
	// Without the CSRF token nothing is issued either.
	if st, _ := b.send("POST", "/ui/api/grants", req, map[string]string{CSRFHeader: ""}); st == http.StatusCreated {
		t.Fatal("issued without the CSRF token")
	}
	st, body := b.send("POST", "/ui/api/grants", req, nil)
	var g kernel.Grant
	if st != http.StatusCreated || json.Unmarshal(body, &g) != nil || g.ID == "" {
		t.Fatalf("issue: %d %s", st, body)
	}
	// The signed-in person issued it, whatever the body says.
	if g.IssuedBy != "ann" || g.Channel != "web" || !g.Expires.Equal(t0.Add(2*3600e9)) {
		t.Fatalf("issued %+v", g)
	}
	// A spec that is not valid is refused with the reason.
	bad := map[string]any{"subject": map[string]any{"agent": "claude-code"}, "allow": []any{}, "ttl": "2h"}
	if st, body := b.send("POST", "/ui/api/grants", bad, nil); st != http.StatusUnprocessableEntity || !strings.Contains(string(body), "allow-list is empty") {
		t.Fatalf("bad spec: %d %s", st, body)
	}
	st, body = b.get("/ui/api/grants?active=1")
	var list []kernel.GrantView
	if st != 200 || json.Unmarshal(body, &list) != nil || len(list) != 1 || !list[0].Active {
		t.Fatalf("list: %d %s", st, body)
	}
	if st, body := b.send("POST", "/ui/api/grants/"+g.ID+"/revoke", map[string]any{"reason": "done"}, nil); st != 200 {
		t.Fatalf("revoke: %d %s", st, body)
	}
	st, body = b.get("/ui/api/grants?active=1")
	if st != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Fatalf("after revoking: %d %s", st, body)
	}
	v, err := e.k.GetGrant(t.Context(), g.ID)
	if err != nil || v.Revoked == nil || v.Revoked.By != "ann" {
		t.Fatalf("revoked: %+v %v", v, err)
	}
	for _, p := range []string{"/ui/api/conflicts", "/ui/api/mcp/upstreams"} {
		if st, body := b.get(p); st != 200 || !json.Valid(body) {
			t.Fatalf("%s: %d %s", p, st, body)
		}
	}
	// The page carries the Delegation page and its script.
	if st, body := b.get("/ui/"); st != 200 || !strings.Contains(string(body), `id="page-delegation"`) || !strings.Contains(string(body), "delegation.js") {
		t.Fatalf("page: %d", st)
	}
}
