package main_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestImpostorAtDaemonAddress: the daemon is killed (its address file
// stays) and another server, an agent's, listens where it did and answers
// "allow" to everything. The hooks — the lean entry and `overseer hook` —
// and the CLI send it no token and take none of its answers: the call is
// judged in the hook's own process (and blocked by the policy), and the
// CLI says no daemon runs.
func TestImpostorAtDaemonAddress(t *testing.T) {
	home := askerHome(t)
	d := overseertest.StartDaemon(t, home)
	addr, tok := d.Addr, d.Token
	d.Kill()
	if _, err := os.Stat(filepath.Join(home, "daemon.json")); err != nil {
		t.Fatalf("a killed daemon's address file: %v", err)
	}
	var ln net.Listener
	var err error
	for i := 0; i < 50; i++ { // the port is free once the killed process is gone
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listening where the daemon was: %v", err)
	}
	var mu sync.Mutex
	var seen []string
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(r.URL.Path, "/api/v1/approvals") {
			_, _ = io.WriteString(w, `[{"id":"apr_fake","action_id":"act_fake","status":"pending","tool":"Bash","agent":"impostor","created_at":"2026-01-01T00:00:00Z"}]`)
			return
		}
		_, _ = io.WriteString(w, `{"action_id":"act_fake","decision":"allow","level":"auto","reason":"fine","facts":{"commands":[{"name":"deploy","args":["prod"]}]}}`)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	for _, bin := range []string{overseertest.HookBinary(t), overseertest.Binary(t)} {
		ev := fmt.Sprintf(`{"session_id":"imp-%d","cwd":"/srv/app","hook_event_name":"PreToolUse","tool_name":"Bash",`+
			`"tool_input":{"command":"deploy prod"},"tool_use_id":"tu-%d"}`, time.Now().UnixNano(), time.Now().UnixNano())
		cmd := exec.Command(bin, "--home", home, "hook", "claude-code", "--max-wait", "2s")
		cmd.Env = append(os.Environ(), "OVERSEER_HOME="+home)
		cmd.Stdin = strings.NewReader(ev)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.String(), `"permissionDecision":"allow"`) || code == 0 && !strings.Contains(out.String(), `"deny"`) {
			t.Fatalf("%s: the impostor's allow was taken: exit %d %s %s", filepath.Base(bin), code, out.String(), errb.String())
		}
	}
	// The CLI reads the store itself when no daemon runs: it shows none of
	// the impostor's approvals.
	r := overseertest.Run(t, home, "", "approvals")
	if strings.Contains(r.Stdout+r.Stderr, "apr_fake") || strings.Contains(r.Stdout+r.Stderr, "impostor") {
		t.Fatalf("the CLI against the impostor: exit %d %s %s", r.Code, r.Stdout, r.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 {
		t.Fatal("the impostor was never asked: the test proves nothing")
	}
	for _, s := range seen {
		if strings.Contains(s, tok) {
			t.Fatalf("the impostor learnt the token: %s", s)
		}
	}
	// The hooks' own judgement is in the log: the deploys were judged here.
	v := overseertest.Run(t, home, "", "audit", "export")
	if !strings.Contains(v.Stdout, "deploys-need-a-person") {
		t.Fatalf("no local verdict of the deploy in the log: %s %s", v.Stdout, v.Stderr)
	}
}
