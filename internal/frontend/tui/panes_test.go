package tui

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/client"
	"github.com/overseer-dev/overseer/internal/frontend/httpapi"
	"github.com/overseer-dev/overseer/internal/frontend/watch"
)

// TestPanesView: the panes a watcher publishes reach the panes view (w)
// through the daemon's API: each pane's agent, last prompt and state, and
// the request a waiting pane waits on (by the call the watcher submitted).
func TestPanesView(t *testing.T) {
	d := newDaemon(t)
	api, err := httpapi.New(d.k, httpapi.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	api.WatchPanes(func() (any, error) { return watch.ReadPanes(d.k.Home, time.Now()) })
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)
	d.api = ClientAPI{C: &client.Client{Base: srv.URL, Token: token, HTTP: srv.Client()}}

	// The pane waits on this request; another in its session is not it.
	decoy := d.submit(t, "decoy")
	apr := d.submit(t, "prod")
	pub := &watch.Publisher{Home: d.k.Home}
	t.Cleanup(pub.Close)
	now := time.Now()
	if err := pub.Publish([]watch.PaneView{
		{ID: "%1", Target: "agents:1.0", Agent: "claude-code", State: watch.StateWaiting, Prompt: "Do you want to proceed?",
			Tool: "Bash", Args: "rm -rf build", Since: now, Session: "s-9", ActionID: apr.ActionID},
		{ID: "%2", Target: "agents:2.0", State: watch.StateWorking, Since: now},
	}, now); err != nil {
		t.Fatal(err)
	}
	m := newModel(t, d)
	m = run(t, m, key("w"))
	s := screen(m)
	for _, want := range []string{"Panes watched by overseer watch", "%1", "agents:1.0", "claude-code", "waiting", "rm -rf build", "%2", "working",
		"waiting on request " + apr.ID} {
		if !strings.Contains(s, want) {
			t.Fatalf("screen lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, decoy.ID) {
		t.Fatalf("the panes view names the decoy request:\n%s", s)
	}
	m = run(t, m, key("esc"))
	if s := screen(m); !strings.Contains(s, "Waiting for you") {
		t.Fatalf("back to the queue:\n%s", s)
	}
}
