package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// testPolicy makes two tools always need a person, whatever the guards say.
const testPolicy = `version: 1
extends: builtin
rules:
  - name: test-deploy
    tool: [deploy]
    level: approve
    message: Deploys need a person.
  - name: test-ask
    tool: [ask]
    level: confirm
    message: Asked in tests.
`

var t0 = time.Date(2026, 3, 4, 10, 0, 0, 0, time.UTC)

// env is a console over a real kernel (SQLite in a temp dir) with a fake
// clock, served by httptest.
type env struct {
	t    testing.TB
	home string
	clk  *clock.Fake
	k    *kernel.Kernel
	con  *Console
	srv  *httptest.Server
}

func newEnv(t *testing.T) *env { return newEnvTB(t) }

func newEnvTB(t testing.TB) *env {
	t.Helper()
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, kernel.PolicyName), []byte(testPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(t0)
	k, err := kernel.Open(context.Background(), kernel.Config{Home: home, Clock: clk, Poll: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { k.Close() })
	con, err := New(k, Options{Token: testToken, Who: "tester", Poll: time.Second, Heartbeat: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(con.Handler())
	t.Cleanup(srv.Close)
	return &env{t: t, home: home, clk: clk, k: k, con: con, srv: srv}
}

// submit submits an action needing a person and returns its approval.
func (e *env) submit(tool string, args map[string]any) *store.Approval {
	e.t.Helper()
	a := &action.Action{Tool: tool, Agent: "agent-x", Session: "s-1", Cwd: "/home/agent/proj", Args: args}
	sub, err := e.k.Submit(context.Background(), a)
	if err != nil {
		e.t.Fatal(err)
	}
	if sub.Approval == nil {
		e.t.Fatalf("%s %v did not need a person: %s", tool, args, sub.Verdict.Summary())
	}
	return sub.Approval
}

func (e *env) approval(id string) *store.Approval {
	e.t.Helper()
	apr, err := e.k.Gate.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return apr
}

// browser is an HTTP client with a cookie jar, like a browser tab.
type browser struct {
	e    *env
	c    *http.Client
	csrf string
}

func (e *env) newBrowser() *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}}
}

// login signs in and reads the CSRF token.
func (b *browser) login() *browser {
	b.e.t.Helper()
	resp := b.form("/ui/login", url.Values{"token": {testToken}, "who": {"ann"}})
	if resp.StatusCode != http.StatusSeeOther {
		b.e.t.Fatalf("login: %d", resp.StatusCode)
	}
	st, body := b.get("/ui/api/session")
	if st != 200 {
		b.e.t.Fatalf("session: %d %s", st, body)
	}
	var s struct{ CSRF string }
	if err := json.Unmarshal(body, &s); err != nil {
		b.e.t.Fatal(err)
	}
	b.csrf = s.CSRF
	return b
}

func (b *browser) do(req *http.Request) (*http.Response, []byte) {
	b.e.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp, body
}

func (b *browser) get(path string) (int, []byte) {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, b.e.srv.URL+path, nil)
	resp, body := b.do(req)
	return resp.StatusCode, body
}

func (b *browser) form(path string, v url.Values) *http.Response {
	b.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, b.e.srv.URL+path, strings.NewReader(v.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, _ := b.do(req)
	return resp
}

// send makes a JSON request with the CSRF token (when set) and extra headers.
func (b *browser) send(method, path string, body any, hdr map[string]string) (int, []byte) {
	b.e.t.Helper()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			b.e.t.Fatal(err)
		}
		rd = strings.NewReader(string(raw))
	}
	req, _ := http.NewRequest(method, b.e.srv.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if b.csrf != "" {
		req.Header.Set(CSRFHeader, b.csrf)
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, out := b.do(req)
	return resp.StatusCode, out
}

// withWrite returns a copy of a with path as a file it writes.
func withWrite(a action.Action, path string) *action.Action {
	a.Facts.Paths = []action.PathFact{{Path: path, Intent: action.PathWrite}}
	return &a
}
