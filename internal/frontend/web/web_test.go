package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/audit"
	"github.com/overseer-dev/overseer/internal/limits"
	"github.com/overseer-dev/overseer/internal/store"
)

func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	links, err := e.con.Links(apr, e.srv.URL, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		status     int
	}{
		{"login page", "/ui/login", http.StatusSeeOther}, // signed in: sent on to the console
		{"console page", "/ui/", 200},
		{"static asset", "/ui/static/app.js", 200},
		{"api", "/ui/api/approvals", 200},
		{"chart", "/ui/charts/levels.svg", 200},
		{"approval link", strings.TrimPrefix(links.Approve, e.srv.URL), 200},
		{"unknown chart", "/ui/charts/nope.svg", 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", e.srv.URL+tc.path, nil)
			resp, _ := b.do(req)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			h := resp.Header
			for k, want := range map[string]string{
				"X-Content-Type-Options": "nosniff",
				"X-Frame-Options":        "DENY",
				"Referrer-Policy":        "no-referrer",
			} {
				if h.Get(k) != want {
					t.Errorf("%s = %q, want %q", k, h.Get(k), want)
				}
			}
			csp := h.Get("Content-Security-Policy")
			for _, part := range []string{"frame-ancestors 'none'", "script-src 'self'", "default-src 'none'"} {
				if !strings.Contains(csp, part) {
					t.Errorf("CSP %q lacks %q", csp, part)
				}
			}
			if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
				t.Errorf("CSP allows unsafe code: %q", csp)
			}
		})
	}
}

func TestLogin(t *testing.T) {
	e := newEnv(t)
	t.Run("console without a session goes to the login page", func(t *testing.T) {
		b := e.newBrowser()
		req, _ := http.NewRequest("GET", e.srv.URL+"/ui/", nil)
		resp, _ := b.do(req)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Fatalf("got %d to %q", resp.StatusCode, resp.Header.Get("Location"))
		}
		if st, _ := b.get("/ui/api/approvals"); st != http.StatusUnauthorized {
			t.Fatalf("api without a session: %d", st)
		}
	})
	for _, tc := range []struct {
		name   string
		form   url.Values
		status int
	}{
		{"wrong token", url.Values{"token": {"nope"}}, http.StatusUnauthorized},
		{"empty token", url.Values{"token": {""}}, http.StatusUnauthorized},
		{"token with a suffix", url.Values{"token": {testToken + "0"}}, http.StatusUnauthorized},
		{"name with a line break", url.Values{"token": {testToken}, "who": {"a\nb"}}, http.StatusBadRequest},
		{"the timeout's name", url.Values{"token": {testToken}, "who": {"timeout"}}, http.StatusBadRequest},
		{"right token", url.Values{"token": {testToken}, "who": {"ann"}}, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := e.newBrowser()
			resp := b.form("/ui/login", tc.form)
			if resp.StatusCode != tc.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.status)
			}
			var ck *http.Cookie
			for _, c := range resp.Cookies() {
				if c.Name == SessionCookie {
					ck = c
				}
			}
			if tc.status != http.StatusSeeOther {
				if ck != nil {
					t.Fatalf("a failed sign-in set a session cookie")
				}
				if st, _ := b.get("/ui/api/session"); st != http.StatusUnauthorized {
					t.Fatalf("session after a failed sign-in: %d", st)
				}
				return
			}
			if ck == nil || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui/" {
				t.Fatalf("session cookie %+v: want HttpOnly, SameSite=Strict, Path=/ui/", ck)
			}
			if st, body := b.get("/ui/api/session"); st != 200 || !strings.Contains(string(body), `"who":"ann"`) {
				t.Fatalf("session: %d %s", st, body)
			}
		})
	}
	t.Run("sessions expire", func(t *testing.T) {
		b := e.newBrowser().login()
		e.clk.Advance(DefaultSessionTTL + time.Second)
		if st, _ := b.get("/ui/api/session"); st != http.StatusUnauthorized {
			t.Fatalf("expired session: %d", st)
		}
	})
	t.Run("logout needs the CSRF token and ends the session", func(t *testing.T) {
		b := e.newBrowser().login()
		if resp := b.form("/ui/logout", url.Values{}); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("logout without CSRF: %d", resp.StatusCode)
		}
		if st, _ := b.get("/ui/api/session"); st != 200 {
			t.Fatal("a refused logout ended the session")
		}
		if resp := b.form("/ui/logout", url.Values{"csrf": {b.csrf}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %d", resp.StatusCode)
		}
		if st, _ := b.get("/ui/api/session"); st != http.StatusUnauthorized {
			t.Fatalf("session after logout: %d", st)
		}
	})
	t.Run("a new daemon token ends every session", func(t *testing.T) {
		b := e.newBrowser().login()
		con2, err := New(e.k, Options{Token: strings.Repeat("f", 64), Who: "tester"})
		if err != nil {
			t.Fatal(err)
		}
		old := e.srv.Config.Handler
		e.srv.Config.Handler = con2.Handler()
		defer func() { e.srv.Config.Handler = old }()
		if st, _ := b.get("/ui/api/session"); st != http.StatusUnauthorized {
			t.Fatalf("session of the old token: %d", st)
		}
	})
	t.Run("guessing is slowed down, the right token never", func(t *testing.T) {
		b := e.newBrowser()
		for i := 0; i < limits.DefaultFreeGuesses; i++ {
			if resp := b.form("/ui/login", url.Values{"token": {"guess"}}); resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("wrong guess %d: %d", i, resp.StatusCode)
			}
		}
		for i := 0; i < 50; i++ {
			resp := b.form("/ui/login", url.Values{"token": {"guess"}})
			if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
				t.Fatalf("wrong guess in the backoff: %d, Retry-After %q", resp.StatusCode, resp.Header.Get("Retry-After"))
			}
		}
		if resp := b.form("/ui/login", url.Values{"token": {testToken}}); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("the right token after 55 wrong ones: %d", resp.StatusCode)
		}
	})
}

func TestAnswerNeedsCSRFAndSameOrigin(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	good := b.csrf
	for _, tc := range []struct {
		name   string
		csrf   string
		hdr    map[string]string
		status int
	}{
		{"no token", "", nil, http.StatusForbidden},
		{"wrong token", "AAAA" + good[4:], nil, http.StatusForbidden},
		{"another session's token", e.con.csrfToken("someone-else"), nil, http.StatusForbidden},
		{"cross-site fetch", good, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"foreign origin", good, map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"same origin", good, map[string]string{"Sec-Fetch-Site": "same-origin"}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apr := e.submit("deploy", map[string]any{"target": tc.name})
			b.csrf = tc.csrf
			st, body := b.send("POST", "/ui/api/approvals/"+apr.ID+"/approve", map[string]any{}, tc.hdr)
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, body)
			}
			got := e.approval(apr.ID)
			if tc.status != http.StatusOK {
				if got.Status != store.StatusPending {
					t.Fatalf("a refused request changed the approval: %s", got.Status)
				}
				return
			}
			if got.Status != store.StatusApproved || got.Answer.Who != "ann" || got.Answer.Channel != "web" {
				t.Fatalf("approval %s answer %+v", got.Status, got.Answer)
			}
		})
	}
}

func TestAnswers(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	for _, tc := range []struct {
		name     string
		decision string
		body     map[string]any
		status   int
		want     store.ApprovalStatus
		check    func(t *testing.T, apr *store.Approval)
	}{
		{name: "approve", decision: "approve", body: map[string]any{}, status: 200, want: store.StatusApproved},
		{name: "deny with an instruction", decision: "deny", body: map[string]any{"reason": "use ./build instead"},
			status: 200, want: store.StatusDenied, check: func(t *testing.T, apr *store.Approval) {
				if apr.Answer.Reason != "use ./build instead" {
					t.Fatalf("reason %q", apr.Answer.Reason)
				}
			}},
		{name: "abort", decision: "abort", body: map[string]any{}, status: 200, want: store.StatusAborted},
		{name: "remember an edited rule", decision: "approve", body: map[string]any{"remember": "rule",
			"rule": map[string]any{"name": "edited-deploy", "tool": []string{"deploy"}, "level": "notify"}},
			status: 200, want: store.StatusApproved, check: func(t *testing.T, apr *store.Approval) {
				rules, err := e.k.Store.ListUserRules(context.Background(), e.clk.Now())
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range rules {
					if r.ID == "edited-deploy" {
						return
					}
				}
				t.Fatalf("the edited rule was not saved: %+v", rules)
			}},
		{name: "unknown remember scope", decision: "approve", body: map[string]any{"remember": "forever"},
			status: 400, want: store.StatusPending},
		{name: "unknown field", decision: "approve", body: map[string]any{"remmber": "rule"},
			status: 400, want: store.StatusPending},
		{name: "unknown decision", decision: "maybe", body: map[string]any{}, status: 404, want: store.StatusPending},
	} {
		t.Run(tc.name, func(t *testing.T) {
			apr := e.submit("deploy", map[string]any{"target": tc.name})
			st, body := b.send("POST", "/ui/api/approvals/"+apr.ID+"/"+tc.decision, tc.body, nil)
			if st != tc.status {
				t.Fatalf("status %d, want %d: %s", st, tc.status, body)
			}
			got := e.approval(apr.ID)
			if got.Status != tc.want {
				t.Fatalf("status %s, want %s", got.Status, tc.want)
			}
			if tc.check != nil {
				tc.check(t, got)
			}
		})
	}
	t.Run("an unknown approval", func(t *testing.T) {
		if st, _ := b.send("POST", "/ui/api/approvals/apr_nope/approve", map[string]any{}, nil); st != 404 {
			t.Fatalf("status %d", st)
		}
	})
	t.Run("a second answer is recorded only", func(t *testing.T) {
		apr := e.submit("deploy", map[string]any{"target": "twice"})
		b.send("POST", "/ui/api/approvals/"+apr.ID+"/deny", map[string]any{}, nil)
		st, body := b.send("POST", "/ui/api/approvals/"+apr.ID+"/approve", map[string]any{}, nil)
		if st != 200 || !strings.Contains(string(body), `"applied":false`) {
			t.Fatalf("%d %s", st, body)
		}
		if got := e.approval(apr.ID); got.Status != store.StatusDenied {
			t.Fatalf("the late answer changed the outcome: %s", got.Status)
		}
	})
}

func TestQueueShowsPreviewAndProposedRules(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	st, body := b.get("/ui/api/approvals")
	if st != 200 {
		t.Fatalf("%d %s", st, body)
	}
	var snap struct {
		Now     time.Time
		Pending []struct {
			ID       string                     `json:"id"`
			Summary  string                     `json:"summary"`
			Proposed map[string]json.RawMessage `json:"proposed_rules"`
		}
	}
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	if !snap.Now.Equal(t0) || len(snap.Pending) != 1 || snap.Pending[0].ID != apr.ID {
		t.Fatalf("snapshot %+v", snap)
	}
	p := snap.Pending[0]
	if !strings.Contains(p.Summary, "Deploys need a person") {
		t.Fatalf("summary %q", p.Summary)
	}
	for _, d := range []string{"approve", "deny"} {
		if !strings.Contains(string(p.Proposed[d]), apr.ArgsHash) {
			t.Fatalf("proposed %s rule %s is not bound to the arguments", d, p.Proposed[d])
		}
	}
	if !strings.Contains(string(p.Proposed["deny"]), `"block"`) || !strings.Contains(string(p.Proposed["approve"]), `"notify"`) {
		t.Fatalf("proposed rules %s", p.Proposed)
	}
}

func TestAuditView(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	e.clk.Advance(3 * time.Second)
	b.send("POST", "/ui/api/approvals/"+apr.ID+"/deny", map[string]any{"reason": "not today"}, nil)
	e.submit("ask", map[string]any{"q": "x"})

	type rec struct {
		Type, Level, Source, Summary string
	}
	query := func(t *testing.T, q string) []rec {
		t.Helper()
		st, body := b.get("/ui/api/audit?" + q)
		if st != 200 {
			t.Fatalf("%s: %d %s", q, st, body)
		}
		var r struct{ Records []rec }
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatal(err)
		}
		return r.Records
	}
	for _, tc := range []struct {
		name  string
		query string
		want  []string // types, newest first
	}{
		{"everything", "", []string{"approval_request", "verdict", "action", "answer", "approval_request", "verdict", "action"}},
		{"by type", "type=answer", []string{"answer"}},
		{"by tool", "tool=ask", []string{"approval_request", "verdict", "action"}},
		{"by level", "level=confirm", []string{"approval_request", "verdict"}},
		{"by decision source", "source=human", []string{"answer"}},
		{"by rule source", "source=rule&type=verdict", []string{"verdict", "verdict"}},
		{"by text", "q=not%20today", []string{"answer"}},
		{"oldest first", "order=asc&limit=2", []string{"seal_start", "action"}},
		{"until before anything", "until=2020-01-01T00:00:00Z", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := query(t, tc.query)
			var types []string
			for _, r := range got {
				if r.Type == audit.TypeSeal || r.Type == audit.TypeSealStart && tc.query == "" {
					continue // the log's own records (its seal)
				}
				types = append(types, r.Type)
			}
			if strings.Join(types, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("types %v, want %v", types, tc.want)
			}
		})
	}
	t.Run("bad filters are refused", func(t *testing.T) {
		for _, q := range []string{"since=yesterday", "level=extreme"} {
			if st, _ := b.get("/ui/api/audit?" + q); st != 400 {
				t.Errorf("%s: %d", q, st)
			}
		}
	})
	t.Run("answers read as sentences", func(t *testing.T) {
		got := query(t, "type=answer")
		if got[0].Summary != "deny by ann via web: not today" || got[0].Source != "human" {
			t.Fatalf("%+v", got[0])
		}
	})
	t.Run("verify and export", func(t *testing.T) {
		st, body := b.get("/ui/api/audit/verify")
		if st != 200 || !strings.Contains(string(body), `"ok":true`) {
			t.Fatalf("verify: %d %s", st, body)
		}
		st, body = b.get("/ui/api/audit/export")
		if st != 200 {
			t.Fatalf("export: %d", st)
		}
		rep, err := audit.VerifyJSONL(context.Background(), strings.NewReader(string(body)))
		if err != nil || !rep.OK || rep.Records < 7 {
			t.Fatalf("the export does not verify: %+v %v", rep, err)
		}
	})
}

func TestUndoFromTheAuditView(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("before\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	apr := e.submit("deploy", map[string]any{"file_path": file})
	act := apr.Action
	if err := e.k.Snapshot(ctx, withWrite(act, file)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte("after\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	st, body := b.get("/ui/api/audit?type=action")
	if st != 200 || !strings.Contains(string(body), `"undo":{"kept":true,"restored":false}`) {
		t.Fatalf("the action's undo data is not shown: %s", body)
	}
	st, body = b.get("/ui/api/undo/" + act.ID)
	if st != 200 || !strings.Contains(string(body), "-after") || !strings.Contains(string(body), "+before") {
		t.Fatalf("undo diff: %d %s", st, body)
	}
	b2 := e.newBrowser() // no session
	if st, _ := b2.send("POST", "/ui/api/undo/"+act.ID, nil, nil); st != http.StatusUnauthorized {
		t.Fatalf("undo without a session: %d", st)
	}
	csrf := b.csrf
	b.csrf = ""
	if st, _ := b.send("POST", "/ui/api/undo/"+act.ID, nil, nil); st != http.StatusForbidden {
		t.Fatalf("undo without CSRF: %d", st)
	}
	if got, _ := os.ReadFile(file); string(got) != "after\n" {
		t.Fatal("a refused undo changed the file")
	}
	b.csrf = csrf
	if st, body := b.send("POST", "/ui/api/undo/"+act.ID, nil, nil); st != 200 {
		t.Fatalf("undo: %d %s", st, body)
	}
	if got, _ := os.ReadFile(file); string(got) != "before\n" {
		t.Fatalf("the file is %q after undo", got)
	}
	if st, _ := b.send("POST", "/ui/api/undo/"+act.ID, nil, nil); st != http.StatusConflict {
		t.Fatalf("second undo: %d", st)
	}
	if st, _ := b.get("/ui/api/undo/act_unknown"); st != 404 {
		t.Fatalf("undo of an unknown action: %d", st)
	}
}

func TestPolicyView(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	st, body := b.get("/ui/api/policy")
	if st != 200 || !strings.Contains(string(body), "test-deploy") || !strings.Contains(string(body), `"adaptive":[]`) {
		t.Fatalf("%d %s", st, body)
	}
	for _, tc := range []struct {
		name   string
		body   any
		status int
		want   string
	}{
		{"explains a pasted action", map[string]any{"tool": "deploy", "args": map[string]any{"target": "prod"}}, 200, `"rule":"test-deploy"`},
		{"a typo is an error", map[string]any{"tool": "deploy", "argz": map[string]any{}}, 400, "unknown field"},
		{"a tool is needed", map[string]any{"args": map[string]any{}}, 400, "tool"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, body := b.send("POST", "/ui/api/policy/explain", tc.body, nil)
			if st != tc.status || !strings.Contains(string(body), tc.want) {
				t.Fatalf("%d %s", st, body)
			}
		})
	}
	t.Run("removing a user rule is recorded", func(t *testing.T) {
		apr := e.submit("deploy", map[string]any{"target": "rule"})
		b.send("POST", "/ui/api/approvals/"+apr.ID+"/approve", map[string]any{"remember": "rule"}, nil)
		rules, _ := e.k.Store.ListUserRules(context.Background(), e.clk.Now())
		if len(rules) != 1 {
			t.Fatalf("rules %+v", rules)
		}
		if st, _ := b.send("DELETE", "/ui/api/policy/rules/"+rules[0].ID, nil, nil); st != http.StatusNoContent {
			t.Fatalf("delete: %d", st)
		}
		st, body := b.get("/ui/api/policy")
		if st != 200 || !strings.Contains(string(body), "rule removed by ann") {
			t.Fatalf("history lacks the removal: %s", body)
		}
		if st, _ := b.send("DELETE", "/ui/api/policy/rules/"+rules[0].ID, nil, nil); st != 404 {
			t.Fatalf("second delete: %d", st)
		}
	})
}

func TestKeyFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "web.key")
	k1, err := LoadKey(p)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(p)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v %v", fi.Mode(), err)
	}
	k2, err := LoadKey(p)
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("reloading the key: %v", err)
	}
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadKey(p); !errors.Is(err, ErrKeyPermissions) {
		t.Fatalf("a readable key: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("not hex"), 0o600)
	if _, err := LoadKey(bad); err == nil {
		t.Fatal("a garbled key was accepted")
	}
}

func TestNewNeedsAToken(t *testing.T) {
	e := newEnv(t)
	if _, err := New(e.k, Options{Token: "  "}); !errors.Is(err, ErrNoToken) {
		t.Fatalf("%v", err)
	}
}

// TestUnauditedBanner: a rule written to the database behind Overseer's
// back is refused, and the console says so on every page.
func TestUnauditedBanner(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	if _, body := b.get("/ui/"); strings.Contains(string(body), "unaudited-banner") {
		t.Fatal("a banner with nothing unaudited")
	}
	if err := e.k.Raw().PutUserRule(context.Background(), &store.UserRule{ID: "sneaky", Rule: json.RawMessage(`{"name":"sneaky","level":"auto"}`),
		Origin: "human", CreatedAt: e.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	_, body := b.get("/ui/")
	if !strings.Contains(string(body), "unaudited-banner") || !strings.Contains(string(body), "rule sneaky") {
		t.Fatalf("no banner for the unaudited rule:\n%s", body)
	}
}
