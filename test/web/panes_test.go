package webe2e

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/overseertest"
)

// TestBrowserPanes: the Panes page shows the panes a running `overseer
// watch tmux` watches, in a real tmux server: one working (no prompt), one
// waiting for a person (a (y/n) prompt, which the watcher never answers
// alone) with a link to its request; the person follows the link, approves
// in the queue, the watcher types the yes, and the page shows the pane
// answered.
func TestBrowserPanes(t *testing.T) {
	needBrowser(t)
	tmux, err := exec.LookPath("tmux")
	need(t, "tmux", err == nil)
	d := overseertest.StartDaemon(t, newHome(t, map[string]string{}))
	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tm := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tmux, append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tmux %v: %v: %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	t.Cleanup(func() { _ = exec.Command(tmux, "-S", sock, "kill-server").Run() })
	working := tm("new-session", "-d", "-s", "agents", "-x", "100", "-y", "20", "-P", "-F", "#{pane_id}", "--",
		"sh", "-c", "echo building; exec sleep 600")
	waiting := tm("new-window", "-d", "-t", "=agents:", "-P", "-F", "#{pane_id}", "--",
		"sh", "-c", `printf 'Deploy to production? (y/n) '; read a; echo "got:$a"; exec sleep 600`)

	// A request someone else made in the pane's session (any local
	// program may submit calls): the page must not take it for the pane's.
	body, _ := json.Marshal(map[string]any{"tool": "deploy", "agent": "e2e-agent", "session": "tmux/agents/" + waiting,
		"cwd": "/srv", "args": map[string]any{"target": "decoy"}})
	go func() { // released when the daemon stops
		if resp, err := http.Post(d.URL("/api/v1/actions?wait=100s"), "application/json", bytes.NewReader(body)); err == nil {
			resp.Body.Close()
		}
	}()
	decoy := pendingID(t, d, "decoy")

	log := &overseertest.SyncBuffer{}
	w := exec.Command(overseertest.Binary(t), "--home", d.Home, "watch", "tmux", "-S", sock, "--interval", "2s")
	w.Env = append(os.Environ(), "OVERSEER_HOME="+d.Home)
	w.Stdout, w.Stderr = log, log
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = w.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = w.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("watcher log:\n%s", log.String())
		}
	})

	dr := startDriver(t, d)
	shot := filepath.Join(t.TempDir(), "panes.png")
	if *screenshots {
		shot = filepath.Join(shotDir(t), "panes.png")
	}
	dr.send("PANES " + waiting + " " + shot)
	dr.expect("SHOT")
	var got struct {
		Before []struct{ ID, State, Text string }
		Link   string
		After  []struct{ ID, State, Text string }
		// The approval the link named.
		Approval string
	}
	if err := json.Unmarshal([]byte(dr.expect("PANES")), &got); err != nil {
		t.Fatal(err)
	}
	state := func(rows []struct{ ID, State, Text string }, id string) (string, string) {
		for _, r := range rows {
			if r.ID == id {
				return r.State, r.Text
			}
		}
		return "", ""
	}
	if st, text := state(got.Before, working); st != "working" || strings.Contains(text, "(y/n)") {
		t.Errorf("the working pane is shown %q: %s", st, text)
	}
	if st, text := state(got.Before, waiting); st != "waiting" || !strings.Contains(text, "Deploy to production? (y/n)") ||
		!strings.Contains(text, "Answer the request") {
		t.Errorf("the waiting pane is shown %q: %s", st, text)
	}
	if !strings.HasPrefix(got.Approval, "apr_") || got.Link != "#/queue/"+got.Approval || got.Approval == decoy {
		t.Errorf("the waiting pane links to %q (approval %q; the decoy in its session is %s)", got.Link, got.Approval, decoy)
	}
	if st, text := state(got.After, waiting); st != "answered" || !strings.Contains(text, "answered yes") {
		t.Errorf("after the approval the pane is shown %q: %s", st, text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(tm("capture-pane", "-p", "-t", waiting), "got:y") {
		if time.Now().After(deadline) {
			t.Fatalf("the yes was not typed:\n%s", tm("capture-pane", "-p", "-t", waiting))
		}
		time.Sleep(100 * time.Millisecond)
	}
	// The approval is the person's, through the console.
	st, body := d.Do(t, "GET", "/api/v1/audit?type=answer", nil, true)
	if st != 200 || !strings.Contains(string(body), got.Approval) || !strings.Contains(string(body), "alice") {
		t.Errorf("the approval is not audited as alice's: %d %s", st, body)
	}
}
