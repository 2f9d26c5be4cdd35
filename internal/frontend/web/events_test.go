package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
	"github.com/overseer-dev/overseer/internal/kernel"
	"github.com/overseer-dev/overseer/internal/store"
)

type sseEvent struct {
	name, id, data string
}

// stream opens the live stream and returns its events.
func stream(t *testing.T, b *browser) <-chan sseEvent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", b.e.srv.URL+"/ui/events", nil)
	resp, err := b.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 100)
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); resp.Body.Close(); <-done })
	go func() { // owned by the test: ends when the body is closed
		defer close(done)
		defer close(out)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.name != "" {
					out <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				ev.data = line[6:]
			}
		}
	}()
	return out
}

// next returns the next event named name, nudging the clock while it waits.
func next(t *testing.T, e *env, evs <-chan sseEvent, name string, nudge bool) sseEvent {
	return nextWith(t, e, evs, name, "", nudge)
}

// nextWith returns the next event named name whose data holds want.
func nextWith(t *testing.T, e *env, evs <-chan sseEvent, name, want string, nudge bool) sseEvent {
	t.Helper()
	deadline := time.After(10 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-evs:
			if !ok {
				t.Fatalf("the stream ended before a %q event", name)
			}
			if ev.name == name && strings.Contains(ev.data, want) {
				return ev
			}
		case <-tick.C:
			if nudge {
				e.clk.Advance(time.Second)
			}
		case <-deadline:
			t.Fatalf("no %q event", name)
		}
	}
}

func pendingIDs(t *testing.T, ev sseEvent) []string {
	t.Helper()
	var snap struct {
		Pending []struct {
			ID string `json:"id"`
		} `json:"pending"`
	}
	if err := json.Unmarshal([]byte(ev.data), &snap); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, p := range snap.Pending {
		ids = append(ids, p.ID)
	}
	return ids
}

func TestLiveStream(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser().login()
	t.Run("needs a session", func(t *testing.T) {
		if st, _ := e.newBrowser().get("/ui/events"); st != http.StatusUnauthorized {
			t.Fatalf("%d", st)
		}
	})
	evs := stream(t, b)
	if ids := pendingIDs(t, next(t, e, evs, "queue", false)); len(ids) != 0 {
		t.Fatalf("initial queue %v", ids)
	}
	next(t, e, evs, "ready", false)

	// A request made in this process arrives through the gate's events.
	apr := e.submit("deploy", map[string]any{"target": "prod"})
	q := next(t, e, evs, "queue", false)
	if ids := pendingIDs(t, q); len(ids) != 1 || ids[0] != apr.ID {
		t.Fatalf("queue %v, want [%s]", ids, apr.ID)
	}
	a := nextWith(t, e, evs, "audit", `"type":"approval_request"`, true)
	if a.id == "" {
		t.Fatalf("audit event %+v", a)
	}

	// An answer written by another process sharing the database is found
	// by polling.
	k2, err := kernel.Open(context.Background(), kernel.Config{Home: e.home, Clock: clock.NewFake(t0)})
	if err != nil {
		t.Fatal(err)
	}
	defer k2.Close()
	if _, _, err := k2.Answer(context.Background(), apr.ID, store.Answer{Decision: "approve", Who: "bob", Channel: "cli"}); err != nil {
		t.Fatal(err)
	}
	q = next(t, e, evs, "queue", true)
	if ids := pendingIDs(t, q); len(ids) != 0 {
		t.Fatalf("queue after another process answered: %v", ids)
	}
	nextWith(t, e, evs, "audit", "approve by bob via cli", true)
}
