package main_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// route is one entry of GET /api/v1/routes.
type route struct {
	Pattern string `json:"pattern"`
	Access  string `json:"access"`
}

// probe sends one request to the daemon and returns its status and
// Retry-After. hdr sets headers; form, when set, is sent as a form body.
func probe(t *testing.T, d *overseertest.Daemon, method, path string, hdr map[string]string, form url.Values) (int, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, d.URL(path), body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After")
}

var wildcard = regexp.MustCompile(`\{[^}]*\}`)

// concrete turns a route pattern into the requests that exercise it:
// each method (GET and POST for a pattern without one) on a path whose
// wildcards are filled in.
func concrete(pattern string) (methods []string, path string) {
	method, p, ok := strings.Cut(pattern, " ")
	if !ok {
		method, p = "", pattern
	}
	p = strings.ReplaceAll(p, "{$}", "")
	p = wildcard.ReplaceAllString(p, "x1")
	if strings.HasSuffix(p, "/static/") {
		p += "style.css"
	}
	if method == "" {
		return []string{"GET", "POST"}, p
	}
	return []string{method}, p
}

func readSecret(t *testing.T, home, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, name))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// Every route the daemon serves is tried without a credential, with a
// wrong one, with the scrape token and with a forged session cookie. The
// routes come from the daemon itself (GET /api/v1/routes, built from the
// same router that serves them), so a new endpoint cannot be left out: it
// is registered with the access it needs, and an access this test does not
// know fails it.
func TestEveryRouteNeedsItsCredential(t *testing.T) {
	home := t.TempDir()
	d := overseertest.StartDaemon(t, home)
	scrape := readSecret(t, home, "metrics.token")
	if scrape == "" || scrape == d.Token {
		t.Fatalf("scrape token %q", scrape)
	}
	if fi, err := os.Stat(filepath.Join(home, "metrics.token")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("metrics.token: %v %v", fi.Mode(), err)
	}

	code, body := d.Do(t, "GET", "/api/v1/routes", nil, true)
	if code != 200 {
		t.Fatalf("routes: %d %s", code, body)
	}
	routes := decode[[]route](t, body)
	seen := map[string]string{}
	for _, r := range routes {
		seen[r.Pattern] = r.Access
	}
	for p, a := range map[string]string{"GET /healthz": "public", "GET /metrics": "scrape", "POST /api/v1/actions": "agent",
		"GET /api/v1/actions/{id}": "status", "POST /api/v1/approvals/{id}/approve": "token", "/mcp": "agent",
		"POST /ui/api/approvals/{id}/{decision}": "session", "POST /ui/login": "login", "GET /ui/a/{token}": "link"} {
		if seen[p] != a {
			t.Errorf("route %q: access %q, want %q", p, seen[p], a)
		}
	}
	if len(routes) < 40 {
		t.Fatalf("only %d routes listed", len(routes))
	}

	refused := func(code int, ra string) bool {
		return code == http.StatusUnauthorized || code == http.StatusTooManyRequests && ra != ""
	}
	creds := []struct {
		name string
		hdr  map[string]string
	}{
		{"no credential", nil},
		{"a wrong token", map[string]string{"Authorization": "Bearer wrong-" + d.Token}},
		{"the scrape token", map[string]string{"Authorization": "Bearer " + scrape}},
		{"a forged session", map[string]string{"Cookie": "overseer_session=forged-session-id"}},
	}
	for _, r := range routes {
		methods, path := concrete(r.Pattern)
		for _, m := range methods {
			for _, c := range creds {
				name := fmt.Sprintf("%s %s (%s) with %s", m, path, r.Access, c.name)
				var form url.Values
				if r.Access == "login" {
					form = url.Values{"token": {scrape}}
				}
				t0 := time.Now()
				code, ra := probe(t, d, m, path, c.hdr, form)
				if el := time.Since(t0); el > 200*time.Millisecond {
					t.Logf("%s took %v", name, el)
				}
				if code >= 500 {
					t.Errorf("%s: %d", name, code)
					continue
				}
				switch r.Access {
				case "public":
					if code == 401 || code == 403 || code == 429 {
						t.Errorf("%s: %d, want an answer", name, code)
					}
				case "agent":
					// Agents need no credential (and gain nothing by one).
					if code == 401 || code == 403 {
						t.Errorf("%s: %d", name, code)
					}
				case "scrape":
					want := refused(code, ra)
					if c.name == "the scrape token" {
						want = code == 200
					}
					if !want {
						t.Errorf("%s: %d", name, code)
					}
				case "token", "status", "login":
					if !refused(code, ra) {
						t.Errorf("%s: %d, want 401 (or 429 with Retry-After)", name, code)
					}
				case "session":
					// The console's page sends to the sign-in page instead.
					if !refused(code, ra) && !(code == http.StatusSeeOther && path == "/ui/") {
						t.Errorf("%s: %d, want 401", name, code)
					}
				case "link":
					if code < 400 {
						t.Errorf("%s: %d, want a refusal", name, code)
					}
				default:
					t.Errorf("route %s has access %q, which this test does not know: teach it", r.Pattern, r.Access)
				}
			}
		}
	}
	// The scrape token cannot answer a real request either.
	act := map[string]any{"tool": "Write", "agent": "e2e", "session": "s1", "cwd": "/tmp/proj",
		"args": map[string]any{"file_path": "/tmp/elsewhere/notes.txt", "content": "hi"}}
	code, body = d.Do(t, "POST", "/api/v1/actions", act, false)
	o := decode[outcome](t, body)
	if code != 200 || o.Approval == nil {
		t.Fatalf("submit: %d %s", code, body)
	}
	for _, dec := range []string{"approve", "deny", "abort", "reply"} {
		if code, ra := probe(t, d, "POST", "/api/v1/approvals/"+o.Approval.ID+"/"+dec,
			map[string]string{"Authorization": "Bearer " + scrape}, nil); !refused(code, ra) {
			t.Fatalf("%s with the scrape token: %d", dec, code)
		}
	}
	if code, body := d.Do(t, "GET", "/api/v1/approvals/"+o.Approval.ID, nil, true); code != 200 || !strings.Contains(string(body), `"status":"pending"`) {
		t.Fatalf("after the scrape token's tries: %d %.200s", code, body)
	}
	// The right credentials still work after all those wrong ones.
	if code, _ := probe(t, d, "GET", "/metrics", map[string]string{"Authorization": "Bearer " + d.Token}, nil); code != 200 {
		t.Fatalf("metrics with the daemon's token: %d", code)
	}
	if code, _ := probe(t, d, "GET", "/api/v1/approvals", map[string]string{"Authorization": "Bearer " + d.Token}, nil); code != 200 {
		t.Fatalf("approvals with the daemon's token: %d", code)
	}
}

// An agent guessing the token from the person's own address is slowed
// down, and the person's right token still answers at once: on the API and
// at the console's sign-in.
func TestWrongGuessesNeverLockOutThePerson(t *testing.T) {
	home := t.TempDir()
	d := overseertest.StartDaemon(t, home)
	auth := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	throttled := 0
	for i := range 50 {
		code, ra := probe(t, d, "GET", "/api/v1/approvals", auth(fmt.Sprintf("guess-%d", i)), nil)
		switch {
		case code == http.StatusTooManyRequests && ra != "":
			throttled++
		case code != http.StatusUnauthorized:
			t.Fatalf("wrong guess %d: %d", i, code)
		}
	}
	if throttled < 40 {
		t.Fatalf("only %d of 50 wrong guesses were slowed down", throttled)
	}
	start := time.Now()
	if code, _ := probe(t, d, "GET", "/api/v1/approvals", auth(d.Token), nil); code != 200 {
		t.Fatalf("the right token after 50 wrong ones: %d", code)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("the right token took %v", el)
	}

	for i := range 50 {
		code, _ := probe(t, d, "POST", "/ui/login", nil, url.Values{"token": {fmt.Sprintf("guess-%d", i)}})
		if code != http.StatusUnauthorized && code != http.StatusTooManyRequests {
			t.Fatalf("wrong sign-in %d: %d", i, code)
		}
	}
	if code, ra := probe(t, d, "POST", "/ui/login", nil, url.Values{"token": {"one-more"}}); code != http.StatusTooManyRequests || ra == "" {
		t.Fatalf("a wrong sign-in in the backoff: %d %q", code, ra)
	}
	start = time.Now()
	if code, _ := probe(t, d, "POST", "/ui/login", nil, url.Values{"token": {d.Token}}); code != http.StatusSeeOther {
		t.Fatalf("signing in with the right token after 50 wrong ones: %d", code)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("signing in took %v", el)
	}
}

// writePolicy writes home/policy.yaml with the given settings.limits.
func writePolicy(t *testing.T, home, limits string) {
	t.Helper()
	p := "version: 1\nextends: builtin\nsettings:\n  limits:\n" + limits
	if err := os.WriteFile(filepath.Join(home, "policy.yaml"), []byte(p), 0o600); err != nil {
		t.Fatal(err)
	}
}

func post(t *testing.T, d *overseertest.Daemon, path string, body []byte) (int, http.Header, []byte) {
	t.Helper()
	resp, err := http.Post(d.URL(path), "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

// The quotas in the policy's settings.limits hold per session, per agent
// and for everyone: a request over one is refused with 429 and Retry-After,
// and nothing of it is recorded.
func TestQuotasAnswer429WithRetryAfter(t *testing.T) {
	home := t.TempDir()
	// A tenth of a request a second: nothing refills during the test.
	writePolicy(t, home, `    session: {actions_per_minute: 6, burst: 5}
    agent: {actions_per_minute: 6, burst: 8}
    all: {actions_per_minute: 6, burst: 12}
`)
	d := overseertest.StartDaemon(t, home)
	act := func(agent, session string) []byte {
		return []byte(fmt.Sprintf(`{"tool":"Read","kind":"file_read","agent":%q,"session":%q,"cwd":"/tmp","args":{"file_path":"/tmp/x"}}`, agent, session))
	}
	for i := range 5 {
		if code, _, b := post(t, d, "/api/v1/actions", act("a", "s1")); code != 200 {
			t.Fatalf("request %d: %d %s", i, code, b)
		}
	}
	code, hdr, b := post(t, d, "/api/v1/actions", act("a", "s1"))
	ra, _ := strconv.Atoi(hdr.Get("Retry-After"))
	if code != http.StatusTooManyRequests || ra < 1 || !strings.Contains(string(b), `"scope":"session"`) {
		t.Fatalf("6th request of the session: %d Retry-After %q %s", code, hdr.Get("Retry-After"), b)
	}
	// The agent's other sessions share the agent's quota of 8.
	n := 0
	for i := range 10 {
		if code, _, _ := post(t, d, "/api/v1/actions", act("a", fmt.Sprintf("t%d", i))); code == 200 {
			n++
		}
	}
	if n != 3 {
		t.Fatalf("%d more requests of agent a served, want 3 (its quota of 8)", n)
	}
	// Agents name themselves: everyone together gets 12.
	n = 0
	for i := range 10 {
		if code, _, _ := post(t, d, "/api/v1/actions", act(fmt.Sprintf("b%d", i), "s")); code == 200 {
			n++
		}
	}
	if n != 4 {
		t.Fatalf("%d requests of other agents served, want 4 (the quota of all of 12)", n)
	}
	// What was refused was not recorded: 12 actions in the audit log.
	code, body := d.Do(t, "GET", "/api/v1/audit?type=action&limit=100", nil, true)
	if code != 200 {
		t.Fatalf("audit: %d", code)
	}
	if recs := decode[[]json.RawMessage](t, body); len(recs) != 12 {
		t.Fatalf("%d actions recorded, want 12", len(recs))
	}
	// The person is never under a quota.
	for range 20 {
		if code, _ := d.Do(t, "GET", "/api/v1/approvals", nil, true); code != 200 {
			t.Fatalf("a person's call: %d", code)
		}
	}
}

// dbSize is the size of the daemon's database with its WAL.
func dbSize(t *testing.T, home string) int64 {
	t.Helper()
	var n int64
	for _, f := range []string{"overseer.db", "overseer.db-wal", "overseer.db-shm"} {
		if fi, err := os.Stat(filepath.Join(home, f)); err == nil {
			n += fi.Size()
		}
	}
	return n
}

// The case: 30 actions of 1 MB each. What is stored of each is
// bounded (settings.limits.stored_bytes, 32 KiB by default), so the
// database grows by a small multiple of that, not by the 135 MB it grew
// before; the actions are still judged whole and the audit chain verifies.
func TestStoredActionsAreBounded(t *testing.T) {
	home := t.TempDir()
	d := overseertest.StartDaemon(t, home)
	before := dbSize(t, home)
	big := strings.Repeat("A", 1<<20)
	for i := range 30 {
		// One agent each: the agent quota is 16 MiB a minute, all agents 32.
		b, _ := json.Marshal(map[string]any{"tool": "Write", "kind": "file_write", "agent": fmt.Sprintf("big%d", i), "session": "s",
			"cwd": "/tmp/proj", "args": map[string]any{"file_path": "/tmp/proj/big.txt", "content": big + strconv.Itoa(i)}})
		code, _, body := post(t, d, "/api/v1/actions", b)
		if code != 200 {
			t.Fatalf("action %d: %d %s", i, code, body)
		}
	}
	grown := dbSize(t, home) - before
	// Per action: the action and its verdict (the verdict of a write is
	// small: its preview is capped), and the approval's row and request
	// record holding both again; SQLite's write-ahead log may hold a second
	// copy of each page until it is checkpointed.
	bound := int64(30 * 2 * (4*32<<10 + 8<<10))
	t.Logf("30 × 1 MB actions grew the database by %d bytes (bound %d)", grown, bound)
	if grown > bound {
		t.Fatalf("the database grew by %d bytes, over %d", grown, bound)
	}
	code, body := d.Do(t, "GET", "/api/v1/audit?type=action&limit=100", nil, true)
	if code != 200 {
		t.Fatalf("audit: %d", code)
	}
	for _, raw := range decode[[]json.RawMessage](t, body) {
		var rec struct {
			Data struct {
				Cut *struct {
					Bytes  int    `json:"bytes"`
					SHA256 string `json:"sha256"`
				} `json:"cut"`
			} `json:"data"`
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Data.Cut == nil || rec.Data.Cut.Bytes < 1<<20 || len(rec.Data.Cut.SHA256) != 64 {
			t.Fatalf("a stored action does not say it was cut: %.300s", raw)
		}
	}
	if r := overseertest.Run(t, home, "", "audit", "verify"); r.Code != 0 {
		t.Fatalf("audit verify: %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
}

// Over settings.limits.database_alarm_bytes the daemon raises an alarm: in
// its log, through the configured notification channels, on /healthz and
// on the console.
func TestDatabaseAlarm(t *testing.T) {
	home := t.TempDir()
	writePolicy(t, home, "    database_alarm_bytes: 4096\n")
	got := make(chan map[string]any, 16)
	hook := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m map[string]any
		_ = json.NewDecoder(r.Body).Decode(&m)
		select {
		case got <- m:
		default: // the test is no longer reading
		}
	})}
	ln := listenLoopback(t)
	go func() { _ = hook.Serve(ln) }()
	t.Cleanup(func() { hook.Close() })
	cfg := fmt.Sprintf("channels:\n  - type: webhook\n    url: http://%s/hook\n", ln.Addr())
	if err := os.WriteFile(filepath.Join(home, "notify.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	d := overseertest.StartDaemon(t, home)

	// The channel also receives other messages (the audit log's published
	// heads): wait for the alarm among them.
	timeout := time.After(20 * time.Second)
	for alarmed := false; !alarmed; {
		select {
		case m := <-got:
			if m["event"] != "alarm" {
				continue
			}
			if m["alert"] != "database_size" || !strings.Contains(fmt.Sprint(m["text"]), "alarm threshold") {
				t.Fatalf("notification: %v", m)
			}
			alarmed = true
		case <-timeout:
			t.Fatalf("no notification of the alarm; daemon log:\n%s", d.Log())
		}
	}
	code, body := d.Do(t, "GET", "/healthz", nil, false)
	if code != 200 || !strings.Contains(string(body), `"database_size"`) {
		t.Fatalf("healthz: %d %s", code, body)
	}
	if !strings.Contains(d.Log(), "ALARM") {
		t.Fatalf("the daemon's log does not say it:\n%s", d.Log())
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(d.URL("/ui/login"), url.Values{"token": {d.Token}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Get(d.URL("/ui/api/health"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "database_size") {
		t.Fatalf("console health: %d %s", resp.StatusCode, b)
	}
}

// listenLoopback listens on a free port of 127.0.0.1.
func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}
