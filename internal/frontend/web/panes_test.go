package web

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/watch"
)

// TestPanesPage: the panes a watcher publishes are listed for a signed-in
// person, and not without a session.
func TestPanesPage(t *testing.T) {
	e := newEnv(t)
	if st, body := e.newBrowser().get("/ui/api/watch/panes"); st == http.StatusOK {
		t.Fatalf("without a session: %d %s", st, body)
	}
	b := e.newBrowser().login()
	if st, body := b.get("/ui/"); st != 200 || !strings.Contains(string(body), `id="page-panes"`) || !strings.Contains(string(body), "panes.js") {
		t.Fatalf("the console has no panes page: %d", st)
	}
	if st, body := b.get("/ui/static/panes.js"); st != 200 || !strings.Contains(string(body), "extraPages.panes") {
		t.Fatalf("panes.js: %d", st)
	}
	if st, body := b.get("/ui/api/watch/panes"); st != http.StatusOK || !strings.Contains(string(body), `"watchers":[]`) {
		t.Fatalf("no watcher: %d %s", st, body)
	}
	pub := &watch.Publisher{Home: e.home}
	t.Cleanup(pub.Close)
	now := time.Now()
	if err := pub.Publish([]watch.PaneView{{ID: "%4", Target: "agents:4.0", Agent: "codex", State: watch.StateWaiting,
		Prompt: "Would you like to run the following command?", Args: "rm -rf build", Since: now}}, now); err != nil {
		t.Fatal(err)
	}
	st, body := b.get("/ui/api/watch/panes")
	for _, want := range []string{`"id":"%4"`, `"agent":"codex"`, `"state":"waiting"`, `rm -rf build`} {
		if st != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("%d %s lacks %s", st, body, want)
		}
	}
}
