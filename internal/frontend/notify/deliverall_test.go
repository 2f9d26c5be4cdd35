package notify

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/audit"
)

// TestEveryChannelAtOnce: Notify, Alert and PublishHead deliver to each
// channel and join the channels' errors, each naming its channel;
// PublishHead leaves the desktop out (it keeps nothing).
func TestEveryChannelAtOnce(t *testing.T) {
	a, b := newReceiver(t), newReceiver(t)
	missing := filepath.Join(t.TempDir(), "no-notify-send")
	n := notifier(t, "channels:\n  - type: webhook\n    name: a\n    url: "+a.URL+"\n  - type: webhook\n    name: b\n    url: "+b.URL+
		"\n  - type: desktop\n    name: screen\n    command: "+missing+"\n", &fixedLinker{})
	ctx := context.Background()
	want := 0
	check := func(what string, err error, desktopFails bool, body string) {
		t.Helper()
		if desktopFails {
			if !errors.Is(err, ErrUnavailable) || !strings.HasPrefix(err.Error(), "screen: ") {
				t.Fatalf("%s: the desktop's error %v", what, err)
			}
		} else if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		want++
		for name, r := range map[string]*receiver{"a": a, "b": b} {
			if r.count() != want {
				t.Fatalf("%s: channel %s got %d messages, want %d", what, name, r.count(), want)
			}
			if h := <-r.got; !strings.Contains(string(h.Body), body) {
				t.Fatalf("%s: channel %s got %s", what, name, h.Body)
			}
		}
	}
	check("Notify", n.Notify(ctx, testApproval()), true, "apr_test1")
	check("Alert", n.Alert(ctx, AlertMessage("test_alarm", "Overseer: a test alarm", "ring", t0)), true, "test_alarm")
	check("PublishHead", n.PublishHead(ctx, audit.Head{Seq: 41, Hash: "feedface", Time: t0}), false, "feedface")
}
