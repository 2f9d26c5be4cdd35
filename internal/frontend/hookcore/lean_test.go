package hookcore

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/apiauth"
)

// The lean entry's paths, each against a daemon a test scripts (an HTTP
// server in this process); the end-to-end tests with the real daemon and
// the real binaries are in lean_e2e_test.go.

const leanBash = `{"session_id":"s1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash",` +
	`"tool_input":{"command":"echo hi"},"tool_use_id":"t1"}`

const leanWrite = `{"session_id":"s1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Write",` +
	`"tool_input":{"file_path":"/tmp/x/a.txt","content":"x"},"tool_use_id":"t2"}`

// handoff records what the lean entry handed to the full hook.
type handoff struct {
	mu     sync.Mutex
	called bool
	args   []string
	event  []byte
}

func (h *handoff) fn(args []string, event []byte) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.called, h.args, h.event = true, args, event
	return errors.New("test: no exec")
}

type leanRun struct {
	code           int
	stdout, stderr string
	handoff        *handoff
}

// runLean runs the lean entry on home with the event; the deadline is
// short so that a daemon that never answers costs the test a second.
func runLean(t *testing.T, home, event string, extra ...string) leanRun {
	t.Helper()
	h := &handoff{}
	var out, errb bytes.Buffer
	l := &Lean{Args: append([]string{"--home", home, "hook", "claude-code", "--max-wait", "2s"}, extra...),
		Stdin: strings.NewReader(event), Stdout: &out, Stderr: &errb,
		Getenv: func(string) string { return "" }, Handoff: h.fn, Deadline: time.Second}
	code := l.Run(context.Background())
	return leanRun{code, out.String(), errb.String(), h}
}

// daemonAt names addr in home's address file.
func daemonAt(t *testing.T, home, addr string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"addr": addr, "pid": 1})
	if err := os.WriteFile(filepath.Join(home, AddrFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// fakeToken is the token of the scripted daemons' homes.
const fakeToken = "fake-daemon-token"

// fakeDaemon serves h, as a daemon holding the home's token does (it
// proves every signed request, package apiauth), and names it in a new
// home.
func fakeDaemon(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	var v apiauth.Verifier
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Del("X-Signed")
		if nonce, ok := v.Verify(fakeToken, r.Header.Get("Authorization"), r.Method, r.RequestURI, time.Now()); ok {
			w.Header().Set(apiauth.ProofHeader, apiauth.Proof(fakeToken, nonce))
			r.Header.Set("X-Signed", "yes") // for h: signed with the home's token
		}
		h(w, r)
	}))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	daemonAt(t, home, strings.TrimPrefix(srv.URL, "http://"))
	if err := os.WriteFile(filepath.Join(home, TokenFile), []byte(fakeToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

// TestLeanImpostor: a server at the daemon's address that does not hold
// the token (an agent's, listening where a killed daemon was) learns no
// token and its "allow" is not taken: the call goes to the full hook,
// which judges it in its process. Nor is a home without the token trusted.
func TestLeanImpostor(t *testing.T) {
	var auth []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		io.WriteString(w, allowShell)
	}))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	daemonAt(t, home, strings.TrimPrefix(srv.URL, "http://"))
	if err := os.WriteFile(filepath.Join(home, TokenFile), []byte(fakeToken), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runLean(t, home, leanBash)
	if !r.handoff.called || strings.Contains(r.stdout, `"allow"`) {
		t.Fatalf("the impostor's answer was taken: %+v", r)
	}
	mu.Lock()
	for _, a := range auth {
		if strings.Contains(a, fakeToken) || !apiauth.Signed(a) {
			t.Fatalf("the impostor was sent %q", a)
		}
	}
	n := len(auth)
	mu.Unlock()
	if n == 0 {
		t.Fatal("the impostor was never asked: the test proves nothing")
	}
	// The same address, with no token in the home: not used at all.
	if err := os.Remove(filepath.Join(home, TokenFile)); err != nil {
		t.Fatal(err)
	}
	r = runLean(t, home, leanBash)
	if !r.handoff.called || strings.Contains(r.stdout, `"allow"`) {
		t.Fatalf("without the token the server's answer was taken: %+v", r)
	}
}

// denied reports whether the run denied the call: exit 2 with a reason,
// or a deny in Claude Code's format — and never handed it on.
func denied(r leanRun) bool {
	if r.handoff.called {
		return false
	}
	return r.code == 2 && strings.HasPrefix(r.stderr, "Overseer: ") ||
		r.code == 0 && strings.Contains(r.stdout, `"permissionDecision":"deny"`)
}

const allowShell = `{"action_id":"act_1","decision":"allow","level":"auto","reason":"ok","facts":{"commands":[{"name":"echo","args":["hi"]}]}}`

// TestLeanFailsClosed: whatever a daemon that was reached does wrong, the
// call is denied, never allowed and never judged again elsewhere (the
// daemon may have recorded it).
func TestLeanFailsClosed(t *testing.T) {
	for name, tc := range map[string]struct {
		h     http.HandlerFunc
		event string
	}{
		"garbage answer": {func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("<html>allow</html>")) }, leanBash},
		"empty answer":   {func(w http.ResponseWriter, r *http.Request) {}, leanBash},
		"server error": {func(w http.ResponseWriter, r *http.Request) {
			http.Error(w, `{"error":{"code":"store","message":"disk full"}}`, 500)
		}, leanBash},
		"unknown decision": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"action_id":"act_1","decision":"maybe","level":"auto"}`))
		}, leanBash},
		"never answers": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body) // then the server notices the hook hang up
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		}, leanBash},
		"gone mid-request": {func(w http.ResponseWriter, r *http.Request) {
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}, leanBash},
		"pending, then garbage": {func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				_, _ = w.Write([]byte(`{"action_id":"act_1","decision":"pending","level":"approve"}`))
				return
			}
			_, _ = w.Write([]byte(`{"decision":`))
		}, leanBash},
		"pending, then gone": {func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && !strings.HasSuffix(r.URL.Path, "/withdraw") {
				_, _ = w.Write([]byte(`{"action_id":"act_1","decision":"pending","level":"approve"}`))
				return
			}
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
		}, leanBash},
		"allowed shell without analysis": {func(w http.ResponseWriter, r *http.Request) {
			_, _ = w.Write([]byte(`{"action_id":"act_1","decision":"allow","level":"auto"}`))
		}, leanBash},
		"allowed write not kept": {func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/keep") {
				http.Error(w, `{"error":{"code":"not_kept","message":"disk full"}}`, 500)
				return
			}
			_, _ = w.Write([]byte(`{"action_id":"act_2","decision":"allow","level":"auto"}`))
		}, leanWrite},
	} {
		t.Run(name, func(t *testing.T) {
			home := fakeDaemon(t, tc.h)
			r := runLean(t, home, tc.event)
			if !denied(r) {
				t.Fatalf("exit %d stdout %q stderr %q handed off %v", r.code, r.stdout, r.stderr, r.handoff.called)
			}
		})
	}
}

// TestLeanAnswers: the daemon's verdicts in the agent's format, and the
// previous content of a written file kept through the daemon.
func TestLeanAnswers(t *testing.T) {
	var mu sync.Mutex
	var kept []string
	var submitted map[string]any
	home := fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case strings.HasSuffix(r.URL.Path, "/keep"):
			kept = append(kept, r.URL.Path)
			w.WriteHeader(http.StatusNoContent)
		case r.URL.Path == "/api/v1/actions":
			if r.Header.Get("X-Signed") != "yes" {
				http.Error(w, `{"error":{"code":"auth","message":"no token"}}`, 401)
				return
			}
			_ = json.NewDecoder(r.Body).Decode(&submitted)
			switch submitted["tool"] {
			case "Write":
				_, _ = w.Write([]byte(`{"action_id":"act_2","decision":"allow","level":"notify","reason":"ok"}`))
			case "Bash":
				if strings.Contains(submitted["args"].(map[string]any)["command"].(string), "rm") {
					_, _ = w.Write([]byte(`{"action_id":"act_3","decision":"deny","level":"block","verdict":{"level":"block","stop":true,"reasons":[{"layer":"L3","name":"r","level":"block","message":"no"}]}}`))
					return
				}
				if strings.HasPrefix(submitted["args"].(map[string]any)["command"].(string), "X=") {
					_, _ = w.Write([]byte(`{"action_id":"act_4","decision":"allow","level":"auto","facts":{}}`))
					return
				}
				_, _ = w.Write([]byte(allowShell))
			}
		default:
			http.NotFound(w, r)
		}
	})
	r := runLean(t, home, leanBash)
	if r.code != 0 || !strings.Contains(r.stdout, `"permissionDecision":"allow"`) || r.handoff.called {
		t.Fatalf("echo: %+v", r)
	}
	asker, _ := submitted["asker"].(map[string]any)
	if asker["kind"] != "hook" || asker["key"] == "" || asker["pid"] == nil {
		t.Fatalf("the hook did not say who holds the call: %v", submitted)
	}
	r = runLean(t, home, strings.Replace(leanBash, "echo hi", "rm -rf x", 1))
	if r.code != 0 || !strings.Contains(r.stdout, `"permissionDecision":"deny"`) || !strings.Contains(r.stdout, `"continue":false`) {
		t.Fatalf("rm: %+v", r)
	}
	// A command in which the daemon's analysis found nothing (an assignment)
	// is let through: the analysis was made.
	bare := strings.Replace(leanBash, "echo hi", "X=1", 1)
	if r := runLean(t, home, bare); r.code != 0 || !strings.Contains(r.stdout, `"permissionDecision":"allow"`) {
		t.Fatalf("X=1: %+v", r)
	}
	r = runLean(t, home, leanWrite)
	if r.code != 0 || !strings.Contains(r.stdout, `"permissionDecision":"allow"`) || len(kept) != 1 || kept[0] != "/api/v1/actions/act_2/keep" {
		t.Fatalf("write: %+v, kept %v", r, kept)
	}
}

// TestLeanHandsOff: what the lean entry leaves to the full hook, with the
// event when it has read it.
func TestLeanHandsOff(t *testing.T) {
	// Nothing listens on a port just closed: connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := ln.Addr().String()
	ln.Close()
	answering := func(t *testing.T) string {
		return fakeDaemon(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(allowShell)) })
	}
	for name, tc := range map[string]struct {
		home      func(t *testing.T) string
		event     string
		extra     []string
		withEvent bool
	}{
		"no daemon": {func(t *testing.T) string { return t.TempDir() }, leanBash, nil, false},
		"daemon not listening": {func(t *testing.T) string {
			h := t.TempDir()
			daemonAt(t, h, closed)
			if err := os.WriteFile(filepath.Join(h, TokenFile), []byte(fakeToken), 0o600); err != nil {
				t.Fatal(err)
			}
			return h
		}, leanBash, nil, true},
		"no token in the home": {func(t *testing.T) string { h := t.TempDir(); daemonAt(t, h, closed); return h }, leanBash, nil, false},
		"post event":           {answering, strings.Replace(leanBash, "PreToolUse", "PostToolUse", 1), nil, true},
		"unknown flag":         {answering, leanBash, []string{"--fast"}, false},
		"bad max wait":         {answering, leanBash, []string{"--max-wait", "-1s"}, false},
		"bad configuration": {func(t *testing.T) string {
			h := answering(t)
			if err := os.WriteFile(filepath.Join(h, ConfigFile), []byte("confirm: maybe\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			return h
		}, leanBash, nil, false},
		"daemon serving TLS": {func(t *testing.T) string {
			h := t.TempDir()
			if err := os.WriteFile(filepath.Join(h, AddrFile), []byte(`{"addr":"127.0.0.1:1","tls":true}`), 0o600); err != nil {
				t.Fatal(err)
			}
			return h
		}, leanBash, nil, false},
	} {
		t.Run(name, func(t *testing.T) {
			home := tc.home(t)
			r := runLean(t, home, tc.event, tc.extra...)
			if !r.handoff.called {
				t.Fatalf("not handed to the full hook: %+v", r)
			}
			want := append([]string{"--home", home, "hook", "claude-code", "--max-wait", "2s"}, tc.extra...)
			if strings.Join(r.handoff.args, " ") != strings.Join(want, " ") {
				t.Fatalf("handed %q, want %q", r.handoff.args, want)
			}
			if tc.withEvent != (r.handoff.event != nil) || tc.withEvent && string(r.handoff.event) != tc.event {
				t.Fatalf("handed the event %q (want it: %v)", r.handoff.event, tc.withEvent)
			}
			// The handoff failed here (no exec in a test): the call is denied.
			if r.code != 2 || !strings.Contains(r.stderr, "could not run the full Overseer") {
				t.Fatalf("a failed handoff: exit %d %q", r.code, r.stderr)
			}
		})
	}
}

func TestParseLeanArgs(t *testing.T) {
	for _, tc := range []struct {
		args string
		ok   bool
		want leanArgs
	}{
		{"hook claude-code", true, leanArgs{agent: "claude-code"}},
		{"--home /h hook codex --max-wait 10m0s", true, leanArgs{home: "/h", agent: "codex", maxWait: 10 * time.Minute, maxWaitSet: true}},
		{"--home=/h --policy /p hook gemini --max-wait=1s --confirm ask", true,
			leanArgs{home: "/h", policy: true, agent: "gemini", maxWait: time.Second, maxWaitSet: true, confirm: ConfirmAsk, confirmSet: true}},
		{"hook", false, leanArgs{}},
		{"hook cursor", false, leanArgs{}},
		{"--home hook claude-code", false, leanArgs{}},
		{"--home= hook claude-code", false, leanArgs{}},
		{"serve", false, leanArgs{}},
		{"hook claude-code extra", false, leanArgs{}},
		{"hook claude-code --max-wait", false, leanArgs{}},
		{"hook claude-code --max-wait 0s", false, leanArgs{}},
		{"hook claude-code --confirm allow", false, leanArgs{}},
		{"--verbose hook claude-code", false, leanArgs{}},
	} {
		got, ok := parseLeanArgs(strings.Fields(tc.args))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("%q: %+v %v, want %+v %v", tc.args, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseLeanArgs: any command line is taken as is or handed on, never
// half-read into an unknown agent or a wait that is not positive.
func FuzzParseLeanArgs(f *testing.F) {
	f.Add("--home /h hook claude-code --max-wait 10m --confirm ask")
	f.Add("hook codex --max-wait=1s")
	f.Fuzz(func(t *testing.T, s string) {
		la, ok := parseLeanArgs(strings.Fields(s))
		if !ok {
			return
		}
		if !KnownAgent(la.agent) || la.maxWaitSet && la.maxWait <= 0 || la.confirmSet && la.confirm != ConfirmHold && la.confirm != ConfirmAsk {
			t.Fatalf("%q: %+v", s, la)
		}
	})
}
