package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/store"
)

const scrapeToken = "scrape-0123456789abcdef0123456789"

func limitedServer(t *testing.T, cfg limits.Config) (*httptest.Server, *kernel.Kernel, *httpapi.Server) {
	t.Helper()
	k, err := kernel.Open(context.Background(), kernel.Config{Home: t.TempDir(), Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(k, httpapi.Options{Token: token, ScrapeToken: scrapeToken, Quotas: limits.NewQuotas(cfg, nil),
		MaxBody: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(func() { srv.Close(); k.Close() })
	return srv, k, api
}

func do(t *testing.T, method, url, bearer string, body []byte) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(method, url, bytes.NewReader(body))
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestQuotaRefusesWith429AndRetryAfter(t *testing.T) {
	srv, _, _ := limitedServer(t, limits.Config{Session: limits.Scope{Requests: limits.Rate{PerMinute: 60, Burst: 3}}})
	body := []byte(`{"tool":"Read","kind":"file_read","agent":"a","session":"s1","args":{"file_path":"/tmp/x"}}`)
	for i := range 3 {
		if resp := do(t, "POST", srv.URL+"/api/v1/actions", "", body); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d", i, resp.StatusCode)
		}
	}
	resp := do(t, "POST", srv.URL+"/api/v1/actions", "", body)
	var got struct {
		Error      struct{ Code, Message string }
		RetryAfter int `json:"retry_after"`
		Scope      string
	}
	_ = json.NewDecoder(resp.Body).Decode(&got)
	ra, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != http.StatusTooManyRequests || ra < 1 || got.Error.Code != "quota" || got.Scope != "session" || got.RetryAfter != ra {
		t.Fatalf("4th request: %d Retry-After %q %+v", resp.StatusCode, resp.Header.Get("Retry-After"), got)
	}
	// Results are a submission path too, and the same session's quota.
	if resp := do(t, "POST", srv.URL+"/api/v1/results", "", []byte(`{"action_id":"act_x","agent":"a","session":"s1","output":"x"}`)); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a result over the quota: %d", resp.StatusCode)
	}
	// Even the daemon's token does not lift an agent's quota.
	if resp := do(t, "POST", srv.URL+"/api/v1/actions", token, body); resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("with the token: %d", resp.StatusCode)
	}
	// Another session is served, and a person's calls never count.
	if resp := do(t, "POST", srv.URL+"/api/v1/actions", "", bytes.Replace(body, []byte("s1"), []byte("s2"), 1)); resp.StatusCode != 200 {
		t.Fatalf("another session: %d", resp.StatusCode)
	}
	for range 10 {
		if resp := do(t, "GET", srv.URL+"/api/v1/approvals", token, nil); resp.StatusCode != 200 {
			t.Fatalf("a person's call: %d", resp.StatusCode)
		}
	}
}

func TestOversizeBodyIs413(t *testing.T) {
	srv, _, _ := limitedServer(t, limits.Config{})
	big := `{"tool":"Write","args":{"content":"` + strings.Repeat("x", 3<<20) + `"}}`
	if resp := do(t, "POST", srv.URL+"/api/v1/actions", "", []byte(big)); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 3 MiB body over a 2 MiB cap: %d", resp.StatusCode)
	}
}

func TestStoredActionIsBounded(t *testing.T) {
	srv, k, _ := limitedServer(t, limits.Config{})
	content := strings.Repeat("y", 1<<20)
	a := action.Action{Tool: "Write", Kind: action.KindFileWrite, Agent: "a", Session: "s", Cwd: "/p",
		Args: map[string]any{"file_path": "/p/big.txt", "content": content}}
	b, _ := json.Marshal(a)
	resp := do(t, "POST", srv.URL+"/api/v1/actions", "", b)
	var o httpapi.Outcome
	if err := json.NewDecoder(resp.Body).Decode(&o); err != nil || resp.StatusCode != 200 {
		t.Fatalf("submit: %d %v", resp.StatusCode, err)
	}
	if o.Verdict == nil || o.Verdict.ArgsHash != a.ArgsHash() {
		t.Fatalf("the verdict's hash is not that of the whole arguments: %+v", o.Verdict)
	}
	recs, err := k.Store.QueryAudit(context.Background(), store.AuditQuery{ActionID: o.ActionID})
	if err != nil || len(recs) < 2 {
		t.Fatalf("audit: %v %d", err, len(recs))
	}
	bound := k.Engine.Policy().Settings.Limits.StoredBytes
	for _, r := range recs {
		// An approval request holds the action and the verdict.
		if len(r.Data) > 2*bound+4096 {
			t.Fatalf("%s record is %d bytes, over the bound of %d", r.Type, len(r.Data), bound)
		}
		if r.Type == audit.TypeAction {
			var got action.Action
			if err := json.Unmarshal(r.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got.Cut == nil || got.Cut.Max != bound || got.Args["file_path"] != "/p/big.txt" ||
				!strings.Contains(got.Args["content"].(string), "1048576 bytes, sha256 ") {
				t.Fatalf("stored action: cut %+v", got.Cut)
			}
		}
	}
	if o.Approval != nil && o.Approval.ArgsHash != a.ArgsHash() {
		t.Fatal("the approval is not bound to the whole arguments")
	}
}

func TestCredentials(t *testing.T) {
	srv, _, _ := limitedServer(t, limits.Config{})
	if resp := do(t, "GET", srv.URL+"/metrics", scrapeToken, nil); resp.StatusCode != 200 {
		t.Fatalf("metrics with the scrape token: %d", resp.StatusCode)
	}
	if resp := do(t, "GET", srv.URL+"/healthz", "", nil); resp.StatusCode != 200 {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	// The scrape token reads the metrics and nothing else.
	for _, ep := range [][2]string{{"GET", "/api/v1/approvals"}, {"POST", "/api/v1/approvals/apr_x/approve"},
		{"GET", "/api/v1/actions/act_x"}, {"GET", "/api/v1/audit"}, {"POST", "/api/v1/policy/rules"}} {
		if resp := do(t, ep[0], srv.URL+ep[1], scrapeToken, nil); resp.StatusCode != 401 && resp.StatusCode != 429 {
			t.Fatalf("%s %s with the scrape token: %d", ep[0], ep[1], resp.StatusCode)
		}
	}
	// A status token reads its own action only.
	resp := do(t, "POST", srv.URL+"/api/v1/actions", "", []byte(`{"tool":"Read","kind":"file_read","args":{"file_path":"/tmp/a"}}`))
	var o1 httpapi.Outcome
	_ = json.NewDecoder(resp.Body).Decode(&o1)
	resp = do(t, "POST", srv.URL+"/api/v1/actions", "", []byte(`{"tool":"Read","kind":"file_read","args":{"file_path":"/tmp/b"}}`))
	var o2 httpapi.Outcome
	_ = json.NewDecoder(resp.Body).Decode(&o2)
	if resp := do(t, "GET", srv.URL+"/api/v1/actions/"+o1.ActionID, o1.StatusToken, nil); resp.StatusCode != 200 {
		t.Fatalf("own outcome: %d", resp.StatusCode)
	}
	if resp := do(t, "GET", srv.URL+"/api/v1/actions/"+o2.ActionID, o1.StatusToken, nil); resp.StatusCode == 200 {
		t.Fatal("a status token read another action")
	}
	if resp := do(t, "GET", srv.URL+"/api/v1/actions/"+o2.ActionID, token, nil); resp.StatusCode != 200 {
		t.Fatalf("the daemon's token: %d", resp.StatusCode)
	}
}

func TestWrongTokensThrottledRightOneNever(t *testing.T) {
	srv, _, _ := limitedServer(t, limits.Config{})
	var last *http.Response
	for range 50 {
		last = do(t, "GET", srv.URL+"/api/v1/approvals", "wrong-"+token, nil)
	}
	if last.StatusCode != http.StatusTooManyRequests || last.Header.Get("Retry-After") == "" {
		t.Fatalf("the 50th wrong token: %d", last.StatusCode)
	}
	start := time.Now()
	if resp := do(t, "GET", srv.URL+"/api/v1/approvals", token, nil); resp.StatusCode != 200 {
		t.Fatalf("the right token after 50 wrong ones: %d", resp.StatusCode)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the right token took %v", d)
	}
	// No credential at all is not a guess.
	if resp := do(t, "GET", srv.URL+"/api/v1/approvals", "", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no credential: %d", resp.StatusCode)
	}
}

func TestHealthzShowsAlarms(t *testing.T) {
	srv, _, api := limitedServer(t, limits.Config{})
	api.Alarms().Raise(limits.Alarm{Name: limits.AlarmDatabaseSize, Message: "big", Value: 2, Threshold: 1})
	resp := do(t, "GET", srv.URL+"/healthz", "", nil)
	var h struct {
		Status string
		Alarms []limits.Alarm
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Status != "ok" || len(h.Alarms) != 1 || h.Alarms[0].Name != "database_size" {
		t.Fatalf("healthz: %+v %v", h, err)
	}
}

func TestRoutesListEveryRouteWithItsAccess(t *testing.T) {
	srv, _, _ := limitedServer(t, limits.Config{})
	resp := do(t, "GET", srv.URL+"/api/v1/routes", token, nil)
	var routes []httpapi.Route
	if err := json.NewDecoder(resp.Body).Decode(&routes); err != nil {
		t.Fatal(err)
	}
	want := map[string]httpapi.Access{"GET /healthz": httpapi.AccessPublic, "GET /metrics": httpapi.AccessScrape,
		"POST /api/v1/actions": httpapi.AccessAgent, "GET /api/v1/actions/{id}": httpapi.AccessStatus,
		"POST /api/v1/approvals/{id}/approve": httpapi.AccessToken, "GET /api/v1/tasks": httpapi.AccessToken}
	got := map[string]httpapi.Access{}
	for _, r := range routes {
		got[r.Pattern] = r.Access
	}
	for p, a := range want {
		if got[p] != a {
			t.Errorf("%s: %q, want %q", p, got[p], a)
		}
	}
	if resp := do(t, "GET", srv.URL+"/api/v1/routes", "", nil); resp.StatusCode != 401 {
		t.Fatalf("routes without the token: %d", resp.StatusCode)
	}
}
