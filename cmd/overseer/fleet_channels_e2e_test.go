package main_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/frontend/notify/notifytest"
	"github.com/overseer-dev/overseer/internal/overseertest"
	"github.com/overseer-dev/overseer/internal/store"
)

// leads is the line a daemon logs when it takes the lead of the channels.
const leads = "this instance now listens to the notification channels"

// leader waits until exactly one of the live daemons has led the channels
// more often than counted in before (one per daemon), and returns it.
func leader(t *testing.T, live []*overseertest.Daemon, before map[*overseertest.Daemon]int) *overseertest.Daemon {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var got []*overseertest.Daemon
		for _, d := range live {
			if strings.Count(d.Log(), leads) > before[d] {
				got = append(got, d)
			}
		}
		if len(got) > 1 {
			t.Fatalf("%d instances lead the channels at once", len(got))
		}
		if len(got) == 1 {
			return got[0]
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no instance leads the notification channels")
	return nil
}

// count is how many messages the bot sent whose text contains substr.
func count(tg *notifytest.Telegram, substr string) int {
	n := 0
	for _, m := range tg.Messages() {
		if strings.Contains(m.Text, substr) {
			n++
		}
	}
	return n
}

// TestFleetTelegramOneListener: three daemons on one database, each with
// the same Telegram bot in notify.yaml (a scripted Bot API). One of them
// listens and announces; a request opened on another is announced once.
// The listener is killed (kill -9): another takes over, and the person's
// press on the message the dead one sent answers the request, which the
// asker waiting on a third instance gets. A request opened after the
// failover is announced once too. Every instance measures the shared
// database: its size is on /metrics, and over the alarm threshold the
// alarm is on every /healthz.
func TestFleetTelegramOneListener(t *testing.T) {
	tg := notifytest.NewTelegram(t, "123456:FLEET-token")
	yaml := fmt.Sprintf("channels:\n  - type: telegram\n    bot_token: \"123456:FLEET-token\"\n    chat_id: \"4242\"\n    api_url: %s\n    allow: [\"42\"]\n", tg.URL())
	f := startFleetWith(t, 3, "    database_alarm_bytes: 4096\n", func(home string) {
		if err := os.WriteFile(filepath.Join(home, "notify.yaml"), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
	})
	first := leader(t, f.daemons, nil)
	var others []*overseertest.Daemon
	for _, d := range f.daemons {
		if d != first {
			others = append(others, d)
		}
	}
	// The channels' state: the listener is connected, the others stand by.
	state := func(d *overseertest.Daemon) string {
		code, body := d.Do(t, "GET", "/api/v1/notify/channels", nil, true)
		var hs []struct{ State string }
		if code != 200 || json.Unmarshal(body, &hs) != nil || len(hs) != 1 {
			t.Fatalf("channels: %d %s", code, body)
		}
		return hs[0].State
	}
	for _, d := range others {
		if s := state(d); s != "standby" {
			t.Fatalf("an instance that does not listen says %q", s)
		}
	}
	for deadline := time.Now().Add(30 * time.Second); state(first) != "connected"; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the listener says %q", state(first))
		}
	}
	// A request opened on an instance that does not listen.
	code, body := others[0].Do(t, "POST", "/api/v1/actions", f.askingAction("one.txt"), false)
	if code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	o := decode[outcome](t, body)
	if o.Approval == nil {
		t.Fatalf("no approval: %+v", o)
	}
	m := tg.WaitMessage("one.txt", 30*time.Second)
	time.Sleep(3 * time.Second) // more than the notifier's re-read of the queue (2 s)
	if n := count(tg, "one.txt"); n != 1 {
		t.Fatalf("the request was announced %d times", n)
	}
	var approve string
	for _, row := range m.Buttons {
		for _, b := range row {
			if b.Text == "Approve" {
				approve = b.Data
			}
		}
	}
	if approve == "" {
		t.Fatalf("buttons %+v", m.Buttons)
	}

	// The listener dies; another instance takes over.
	counts := map[*overseertest.Daemon]int{}
	for _, d := range others {
		counts[d] = strings.Count(d.Log(), leads)
	}
	first.Kill()
	next := leader(t, others, counts)
	var third *overseertest.Daemon
	for _, d := range others {
		if d != next {
			third = d
		}
	}
	// The asker waits on the instance that neither listens nor opened it
	// (when that is the one that opened it, any will do).
	got := make(chan outcome, 1)
	go func() {
		c, b := third.Do(t, "GET", "/api/v1/actions/"+o.ActionID+"?wait=30s", nil, true)
		var w outcome
		if c != 200 || json.Unmarshal(b, &w) != nil {
			t.Errorf("wait: %d %s", c, b)
		}
		got <- w
	}()
	tg.Press(42, "ann", m.ID, approve)
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body := third.Do(t, "GET", "/api/v1/approvals/"+o.Approval.ID, nil, true)
		var ap store.Approval
		if code == 200 && json.Unmarshal(body, &ap) == nil && ap.Status == store.StatusApproved {
			if !strings.Contains(ap.Answer.Who, "telegram:42") || ap.Answer.Channel != "telegram" {
				t.Fatalf("answered by %+v", ap.Answer)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the press was not taken after the failover: %d %s\nnew listener:\n%s", code, body, next.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if w := <-got; w.Decision != "allow" {
		t.Fatalf("the asker got %+v", w)
	}

	// A request opened after the failover, on the instance that does not
	// listen, is announced once by the new listener.
	code, body = third.Do(t, "POST", "/api/v1/actions", f.askingAction("two.txt"), false)
	if code != 200 {
		t.Fatalf("submit: %d %s", code, body)
	}
	tg.WaitMessage("two.txt", 30*time.Second)
	time.Sleep(3 * time.Second)
	if n, n1 := count(tg, "two.txt"), count(tg, "one.txt"); n != 1 || n1 != 1 {
		t.Fatalf("announced %d times (and the first request %d times after the failover)", n, n1)
	}

	// The database's size, measured by every instance.
	for _, d := range others {
		code, body := d.Do(t, "GET", "/healthz", nil, false)
		var h struct {
			Alarms []struct {
				Name  string
				Value int64
			}
		}
		if code != 200 || json.Unmarshal(body, &h) != nil || len(h.Alarms) == 0 || h.Alarms[0].Name != "database_size" || h.Alarms[0].Value <= 4096 {
			t.Fatalf("healthz: %d %s", code, body)
		}
		code, body = d.Do(t, "GET", "/metrics", nil, true)
		if code != 200 || !strings.Contains(string(body), "overseer_database_bytes ") || strings.Contains(string(body), "overseer_database_bytes -1") {
			t.Fatalf("metrics: %d %.300s", code, body)
		}
	}
}
