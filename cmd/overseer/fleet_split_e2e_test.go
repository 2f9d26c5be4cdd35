package main_test

// What one instance of a fleet learns or is told holds on the others at
// once, with the policy docs/deploy.md shows (the built-in one and the
// store): a pause, and a secret a session read.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// defaultFleet starts n daemons with the built-in policy and the store
// only.
func defaultFleet(t *testing.T, n int) *fleet {
	t.Helper()
	return startFleetPolicy(t, n, func(url string) string {
		return "version: 1\nextends: builtin\nsettings:\n  store: '" + url + "'\n"
	}, nil)
}

// An agent paused through one instance is refused by the next, at once
// (the pause is announced; before, the other instance let the agent's
// calls run until its periodic read a second later).
func TestFleetPauseHoldsAtOnce(t *testing.T) {
	f := defaultFleet(t, 2)
	a, b := f.daemons[0], f.daemons[1]
	n := 0
	call := func() outcome {
		n++
		act := map[string]any{"tool": "Read", "kind": "file_read", "agent": "codex", "session": "p", "cwd": f.dir,
			"args": map[string]any{"file_path": fmt.Sprintf("f%d.md", n)}}
		code, body := b.Do(t, "POST", "/api/v1/actions", act, false)
		if code != 200 {
			t.Fatalf("call %d: %d %s", n, code, body)
		}
		return decode[outcome](t, body)
	}
	if o := call(); o.Decision != "allow" {
		t.Fatalf("before the pause: %+v", o)
	}
	start := time.Now()
	if code, body := a.Do(t, "POST", "/api/v1/agents/codex/pause", map[string]any{"who": "ann", "reason": "stop"}, true); code != 200 {
		t.Fatalf("pause: %d %s", code, body)
	}
	for o := call(); o.Decision == "allow"; o = call() {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the other instance never refused the paused agent")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if d := time.Since(start); d > 700*time.Millisecond {
		t.Errorf("the other instance refused the paused agent after %v", d)
	}
}

// A secret a session read through one instance is found in what it sends
// through another, to a known host the flow rule lets through: the
// instances fingerprint with the one egress key (copied as deploy.md says).
func TestFleetSecretReadSentElsewhere(t *testing.T) {
	f := defaultFleet(t, 2)
	const value = "qT7vK2pX9mR4wL8nB3cF6hJ1dS5gA0zE"
	ops := filepath.Join(t.TempDir(), "ops")
	if err := os.MkdirAll(ops, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ops, ".env"), []byte("DEPLOY_TOKEN="+value+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	send := func(i int, session string) outcome {
		act := map[string]any{"tool": "WebFetch", "agent": "claude-code", "session": session, "cwd": f.dir,
			"args": map[string]any{"url": "https://github.com/search?q=" + value, "prompt": "summarise"}}
		code, body := f.daemons[i].Do(t, "POST", "/api/v1/actions", act, false)
		if code != 200 {
			t.Fatalf("send on %d: %d %s", i, code, body)
		}
		return decode[outcome](t, body)
	}
	if o := send(1, "fresh"); o.Decision != "allow" {
		t.Fatalf("the send without a secret read: %+v", o)
	}
	read := map[string]any{"tool": "Read", "agent": "claude-code", "session": "eg", "cwd": f.dir,
		"args": map[string]any{"file_path": filepath.Join(ops, ".env")}}
	if code, body := f.daemons[0].Do(t, "POST", "/api/v1/actions", read, false); code != 200 {
		t.Fatalf("the read: %d %s", code, body)
	}
	o := send(1, "eg")
	if o.Decision == "allow" {
		t.Fatalf("the other instance let the session send the secret it read: %+v", o)
	}
	t.Logf("the send after the read: %s %s", o.Level, o.Reason)
}
