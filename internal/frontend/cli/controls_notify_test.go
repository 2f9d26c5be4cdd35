package cli

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/action"
	"github.com/overseer-dev/overseer/internal/autorule"
	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/kernel"
)

// An anomaly reaches the channel its rule names, as a real webhook POST,
// and not the channel it does not name.
func TestAnomalyNotifiesNamedChannels(t *testing.T) {
	var mu sync.Mutex
	got := map[string][]string{}
	server := func(name string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			got[name] = append(got[name], string(b))
			mu.Unlock()
		}))
		t.Cleanup(s.Close)
		return s
	}
	pager, team := server("pager"), server("team")
	cfg, err := notify.Parse([]byte("channels:\n  - name: pager\n    type: webhook\n    url: " + pager.URL +
		"\n  - name: team\n    type: webhook\n    url: " + team.URL + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	n, err := notify.New(cfg, notify.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	k, err := kernel.Open(ctx, kernel.Config{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	if _, err := k.PutAnomalyRule(ctx, autorule.AnomalyRule{Name: "shell burst", Tool: "shell", ThresholdCount: 3, WindowSeconds: 60,
		Action: autorule.AnomalyStop, NotifyChannels: []string{"pager"}, Enabled: true}, "alice"); err != nil {
		t.Fatal(err)
	}
	go notifyControls(ctx, k, n, 20*time.Millisecond, io.Discard)
	time.Sleep(50 * time.Millisecond) // it starts from the trail's end
	for range 3 {
		if _, err := k.Submit(ctx, &action.Action{Agent: "nightly", Session: "s", Tool: "Bash", Args: map[string]any{"command": "ls"}}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		mu.Lock()
		n := len(got["pager"])
		mu.Unlock()
		if n > 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(got["pager"]) != 1 || !strings.Contains(got["pager"][0], "anomaly of nightly") || !strings.Contains(got["pager"][0], "the agent was stopped") {
		t.Fatalf("pager got %q", got["pager"])
	}
	if len(got["team"]) != 0 {
		t.Fatalf("a channel the rule does not name was told: %q", got["team"])
	}
}
