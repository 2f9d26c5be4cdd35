package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

const token = "0123456789abcdef0123456789abcdef"

func server(t *testing.T) (*httptest.Server, *kernel.Kernel) {
	t.Helper()
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir(), Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(k, httpapi.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { srv.Close(); k.Close() })
	return srv, k
}

func call(t *testing.T, srv *httptest.Server, method, path string, body any, auth bool) (int, []byte) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, srv.URL+path, rd)
	if auth {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestPeopleEndpointsNeedToken(t *testing.T) {
	srv, _ := server(t)
	for _, ep := range []struct{ method, path string }{
		{"GET", "/api/v1/approvals"},
		{"GET", "/api/v1/approvals/apr_x"},
		{"POST", "/api/v1/approvals/apr_x/approve"},
		{"POST", "/api/v1/approvals/apr_x/deny"},
		{"GET", "/api/v1/audit"},
		{"GET", "/api/v1/audit/verify"},
		{"GET", "/api/v1/audit/export"},
		{"GET", "/api/v1/policy"},
		{"POST", "/api/v1/policy/rules"},
		{"DELETE", "/api/v1/policy/rules/x"},
		{"GET", "/api/v1/policy/history"},
	} {
		t.Run(ep.method+" "+ep.path, func(t *testing.T) {
			code, _ := call(t, srv, ep.method, ep.path, nil, false)
			if code != http.StatusUnauthorized {
				t.Fatalf("without token: %d", code)
			}
			req, _ := http.NewRequest(ep.method, srv.URL+ep.path, nil)
			req.Header.Set("Authorization", "Bearer wrong"+token)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			// Wrong tokens are throttled per client after a few: refused
			// either way.
			if resp.StatusCode != http.StatusUnauthorized &&
				(resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "") {
				t.Fatalf("with a wrong token: %d", resp.StatusCode)
			}
		})
	}
}

func TestSubmitWaitApprove(t *testing.T) {
	srv, _ := server(t)
	act := map[string]any{"tool": "Write", "cwd": "/p", "session": "s", "args": map[string]any{"file_path": "/etc/hosts"}}

	code, b := call(t, srv, "POST", "/api/v1/actions?dry_run=1", act, false)
	var o httpapi.Outcome
	if err := json.Unmarshal(b, &o); err != nil || code != 200 || o.Level.String() != "confirm" || o.Approval != nil {
		t.Fatalf("dry run: %d %s", code, b)
	}
	code, b = call(t, srv, "GET", "/api/v1/approvals", nil, true)
	if code != 200 || strings.TrimSpace(string(b)) != "[]" {
		t.Fatalf("a dry run opened an approval: %s", b)
	}

	code, b = call(t, srv, "POST", "/api/v1/actions", act, false)
	if err := json.Unmarshal(b, &o); err != nil || code != 200 || o.Decision != "pending" || o.Approval == nil {
		t.Fatalf("submit: %d %s", code, b)
	}
	id := o.Approval.ID
	released := make(chan httpapi.Outcome, 1)
	if code, _ := call(t, srv, "GET", "/api/v1/actions/"+o.ActionID, nil, false); code != http.StatusUnauthorized {
		t.Fatalf("an outcome read without a credential: %d", code)
	}
	statusTok := o.StatusToken
	if statusTok == "" {
		t.Fatalf("no status token: %s", b)
	}
	go func() {
		req, _ := http.NewRequest("GET", srv.URL+"/api/v1/actions/"+o.ActionID+"?wait=20s", nil)
		req.Header.Set("Authorization", "Bearer "+statusTok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			released <- httpapi.Outcome{Reason: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		var got httpapi.Outcome
		_ = json.Unmarshal(b, &got)
		released <- got
	}()
	time.Sleep(100 * time.Millisecond)
	code, b = call(t, srv, "POST", "/api/v1/approvals/"+id+"/deny", map[string]any{"who": "ann", "reason": "use ./build instead"}, true)
	if code != 200 || !strings.Contains(string(b), `"applied":true`) {
		t.Fatalf("deny: %d %s", code, b)
	}
	select {
	case got := <-released:
		if got.Decision != "deny" || !strings.Contains(got.Reason, "use ./build instead") {
			t.Fatalf("released: %+v", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting caller was not released")
	}
	code, b = call(t, srv, "POST", "/api/v1/approvals/"+id+"/approve", nil, true)
	if code != 200 || !strings.Contains(string(b), `"applied":false`) {
		t.Fatalf("late approve: %d %s", code, b)
	}
	code, _ = call(t, srv, "POST", "/api/v1/approvals/apr_nope/approve", nil, true)
	if code != http.StatusNotFound {
		t.Fatalf("unknown approval: %d", code)
	}
	code, b = call(t, srv, "GET", "/api/v1/audit/verify", nil, true)
	if code != 200 || !strings.Contains(string(b), `"OK":true`) && !strings.Contains(string(b), `"ok":true`) {
		t.Fatalf("verify: %d %s", code, b)
	}
}

func TestSubmitLongPollTimesOutPending(t *testing.T) {
	srv, _ := server(t)
	act := map[string]any{"tool": "Write", "args": map[string]any{"file_path": "/etc/x"}}
	start := time.Now()
	_, b := call(t, srv, "POST", "/api/v1/actions?wait=200ms", act, false)
	var o httpapi.Outcome
	if err := json.Unmarshal(b, &o); err != nil || o.Decision != "pending" {
		t.Fatalf("long poll: %s", b)
	}
	if time.Since(start) < 150*time.Millisecond {
		t.Fatal("the long poll did not wait")
	}
}

func TestBadRequests(t *testing.T) {
	srv, _ := server(t)
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/actions", strings.NewReader("{nope"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("bad JSON: %d", resp.StatusCode)
	}
	code, _ := call(t, srv, "POST", "/api/v1/actions?wait=soon", map[string]any{"tool": "Read", "args": map[string]any{}}, false)
	if code != http.StatusBadRequest {
		t.Fatalf("bad wait: %d", code)
	}
	code, b := call(t, srv, "POST", "/api/v1/policy/rules", map[string]any{"rule": map[string]any{"name": "x", "level": "maybe"}}, true)
	if code != http.StatusBadRequest {
		t.Fatalf("bad rule: %d %s", code, b)
	}
}

func TestPolicyRulesAndMetrics(t *testing.T) {
	srv, _ := server(t)
	rule := map[string]any{"rule": map[string]any{"name": "no-deploys", "tool": []string{"deploy"}, "level": "block"}, "who": "ann"}
	code, b := call(t, srv, "POST", "/api/v1/policy/rules", rule, true)
	if code != http.StatusCreated {
		t.Fatalf("add rule: %d %s", code, b)
	}
	code, b = call(t, srv, "POST", "/api/v1/actions", map[string]any{"tool": "deploy", "args": map[string]any{}}, false)
	if code != 200 || !strings.Contains(string(b), `"level":"block"`) || !strings.Contains(string(b), `"decision":"deny"`) {
		t.Fatalf("after the rule: %s", b)
	}
	code, b = call(t, srv, "GET", "/api/v1/policy/history", nil, true)
	if code != 200 || !strings.Contains(string(b), "no-deploys") {
		t.Fatalf("history: %s", b)
	}
	code, _ = call(t, srv, "DELETE", "/api/v1/policy/rules/no-deploys", nil, true)
	if code != http.StatusNoContent {
		t.Fatalf("delete rule: %d", code)
	}
	if code, _ = call(t, srv, "GET", "/metrics", nil, false); code != http.StatusUnauthorized {
		t.Fatalf("metrics without a credential: %d", code)
	}
	_, b = call(t, srv, "GET", "/metrics", nil, true)
	if !strings.Contains(string(b), `overseer_actions_total{level="block"} 1`) || !strings.Contains(string(b), "overseer_approvals_pending") {
		t.Fatalf("metrics:\n%s", b)
	}
}

func TestKeepThenUndo(t *testing.T) {
	srv, k := server(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	act := map[string]any{"id": "act_keep1", "tool": "Write", "cwd": dir, "session": "s",
		"args": map[string]any{"file_path": "notes.txt", "content": "after"}}
	code, b := call(t, srv, "POST", "/api/v1/actions", act, false)
	if code != 200 || !strings.Contains(string(b), `"decision":"allow"`) {
		t.Fatalf("submit: %d %s", code, b)
	}
	var o httpapi.Outcome
	if err := json.Unmarshal(b, &o); err != nil || o.ActionID == "" || o.ActionID == "act_keep1" || o.ClientID != "act_keep1" {
		t.Fatalf("submit: the id must be minted, the caller's kept as client_id: %s", b)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/actions/act_keep1/keep", nil, true); code != http.StatusNotFound {
		t.Fatalf("keep by the caller's id: %d", code)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/actions/"+o.ActionID+"/keep", nil, false); code != http.StatusUnauthorized {
		t.Fatalf("keep without token: %d", code)
	}
	if code, b := call(t, srv, "POST", "/api/v1/actions/"+o.ActionID+"/keep", nil, true); code != http.StatusNoContent {
		t.Fatalf("keep: %d %s", code, b)
	}
	if code, _ := call(t, srv, "POST", "/api/v1/actions/act_nope/keep", nil, true); code != http.StatusNotFound {
		t.Fatalf("keep of an unknown action: %d", code)
	}
	if err := os.WriteFile(file, []byte("after"), 0o644); err != nil { // the agent writes
		t.Fatal(err)
	}
	if _, err := k.UndoAction(context.Background(), o.ActionID, "ann"); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(file); string(got) != "before" {
		t.Fatalf("after undo: %q", got)
	}
}

// Action ids are minted by Overseer: a caller that sends the id of an
// existing action, or the same id twice, gets new ids; its id is kept as
// client_id, and a result can name the action by it.
func TestCallerIDIsOnlyACorrelation(t *testing.T) {
	srv, k := server(t)
	act := map[string]any{"id": "mine-1", "tool": "Read", "session": "s9", "agent": "a", "args": map[string]any{"file_path": "/p/x"}}
	ids := map[string]bool{}
	for i := 0; i < 2; i++ {
		code, b := call(t, srv, "POST", "/api/v1/actions", act, false)
		var o httpapi.Outcome
		if err := json.Unmarshal(b, &o); code != 200 || err != nil {
			t.Fatalf("submit: %d %s", code, b)
		}
		if o.ActionID == "mine-1" || o.ClientID != "mine-1" || ids[o.ActionID] {
			t.Fatalf("submit %d: action_id %q client_id %q (ids so far %v)", i, o.ActionID, o.ClientID, ids)
		}
		ids[o.ActionID] = true
		act["id"] = o.ActionID // reusing an existing action's id does not reach its record either
		act["client_id"] = "mine-1"
	}
	code, b := call(t, srv, "POST", "/api/v1/actions?dry_run=1", map[string]any{"id": "x", "tool": "Read", "args": map[string]any{"file_path": "/p"}}, false)
	if code != 200 || strings.Contains(string(b), `"action_id":"x"`) || !strings.Contains(string(b), `"client_id":"x"`) {
		t.Fatalf("dry run: %d %s", code, b)
	}
	code, b = call(t, srv, "POST", "/api/v1/results", map[string]any{"client_id": "mine-1", "agent": "a", "session": "s9", "output": "ok"}, false)
	if code != 200 {
		t.Fatalf("result by client_id: %d %s", code, b)
	}
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{Types: []string{"result"}, Session: "s9"})
	if err != nil || len(recs) != 1 || !ids[recs[0].ActionID] {
		t.Fatalf("result records %+v %v: want one naming a minted id", recs, err)
	}
}

// Facts are derived, never taken from the caller: a forged in-tree path
// must not turn a write to /etc into a notify.
func TestForgedFactsAreIgnored(t *testing.T) {
	srv, _ := server(t)
	act := map[string]any{"tool": "Write", "cwd": "/p", "args": map[string]any{"file_path": "/etc/hosts"},
		"facts": map[string]any{"paths": []map[string]any{{"path": "/p/x", "intent": "write", "in_cwd": true}}}}
	_, b := call(t, srv, "POST", "/api/v1/actions?dry_run=1", act, false)
	var o httpapi.Outcome
	if err := json.Unmarshal(b, &o); err != nil || o.Level.String() != "confirm" {
		t.Fatalf("forged facts: %s", b)
	}
}

func TestFreeTextReply(t *testing.T) {
	srv, _ := server(t)
	n := 0
	submit := func() string {
		// One session per reply: a call a person refused is not asked
		// again in its session.
		n++
		_, b := call(t, srv, "POST", "/api/v1/actions", map[string]any{"tool": "Write", "session": fmt.Sprint("s", n),
			"args": map[string]any{"file_path": "/etc/x"}}, false)
		var o httpapi.Outcome
		if err := json.Unmarshal(b, &o); err != nil || o.Approval == nil {
			t.Fatalf("submit: %s", b)
		}
		return o.Approval.ID
	}
	for _, tc := range []struct{ text, status string }{
		{"好的，可以", "approved"},
		{"不要执行", "denied"},
		{"don't do it", "denied"},
		{"ok, go ahead", "approved"},
		{"停止", "aborted"},
	} {
		id := submit()
		code, b := call(t, srv, "POST", "/api/v1/approvals/"+id+"/reply", map[string]any{"text": tc.text, "who": "ann"}, true)
		if code != 200 || !strings.Contains(string(b), `"status":"`+tc.status+`"`) {
			t.Errorf("reply %q: %d %s", tc.text, code, b)
		}
	}
	id := submit()
	code, _ := call(t, srv, "POST", "/api/v1/approvals/"+id+"/reply", map[string]any{"text": "hmm, what does it do?"}, true)
	if code != http.StatusUnprocessableEntity {
		t.Fatalf("unclear reply: %d", code)
	}
	_, b := call(t, srv, "GET", "/api/v1/approvals/"+id, nil, true)
	if !strings.Contains(string(b), `"status":"pending"`) {
		t.Fatalf("an unclear reply answered the approval: %s", b)
	}
}

// A web page in the person's browser cannot reach the agents' endpoints,
// which need no credential and take a plain-text body as JSON (no
// preflight): neither cross-origin nor through a DNS name rebound to
// 127.0.0.1. Nothing is recorded for either. Overseer's own clients,
// hooks and curl (no Origin, no Sec-Fetch-Site) and the console's own
// same-origin requests are served as before.
func TestBrowserRequestsFromOtherOriginsRefused(t *testing.T) {
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir(), Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(k, httpapi.Options{Token: token, LoopbackHost: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { srv.Close(); k.Close() })
	body := `{"tool":"Bash","agent":"claude-code","session":"s","args":{"command":"git push --force origin main"}}`
	post := func(path, host string, hdr map[string]string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "text/plain")
		if host != "" {
			req.Host = host
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	pending := func() int {
		aps, err := k.Gate.Pending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return len(aps)
	}
	for _, c := range []struct {
		name string
		host string
		hdr  map[string]string
	}{
		{"cross-site fetch", "", map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}},
		{"cross-site form, older browser", "", map[string]string{"Origin": "https://evil.example"}},
		{"rebound DNS name", "evil.example:7777", map[string]string{"Origin": "http://evil.example:7777", "Sec-Fetch-Site": "same-origin"}},
		{"rebound DNS name, no browser headers", "rebind.evil.example", nil},
	} {
		if code := post("/api/v1/actions", c.host, c.hdr); code != http.StatusForbidden && code != http.StatusMisdirectedRequest {
			t.Errorf("%s: %d", c.name, code)
		}
		if code := post("/api/v1/usage", c.host, c.hdr); code != http.StatusForbidden && code != http.StatusMisdirectedRequest {
			t.Errorf("%s: usage: %d", c.name, code)
		}
	}
	if n := pending(); n != 0 {
		t.Fatalf("%d requests were opened by foreign pages", n)
	}
	u, _ := url.Parse(srv.URL)
	_, port, _ := net.SplitHostPort(u.Host)
	for _, c := range []struct {
		name string
		host string
		hdr  map[string]string
	}{
		{"a hook", "", nil},
		{"localhost", "localhost:" + port, nil},
		{"::1", "[::1]:" + port, nil},
		{"the console's own page", "", map[string]string{"Origin": srv.URL, "Sec-Fetch-Site": "same-origin"}},
	} {
		if code := post("/api/v1/actions", c.host, c.hdr); code != http.StatusOK {
			t.Errorf("%s: %d", c.name, code)
		}
	}
	if n := pending(); n != 4 {
		t.Fatalf("%d requests opened, want 4", n)
	}
}
