package cli

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/overseer-dev/overseer/internal/limits"
)

// TestAlarmRaisedBeforeLeadIsSent: the daemon measures its database as it
// starts, and an alarm raised before the instance leads the channels used
// to be dropped (its subscriber saw no lead, and nothing sent it later).
// It is sent when the instance comes to lead; each alarm once, and one
// raised again after it was cleared is sent again.
func TestAlarmRaisedBeforeLeadIsSent(t *testing.T) {
	var leading atomic.Bool
	al := limits.NewAlarms()
	var mu sync.Mutex
	var sent []string
	n := &alarmNotifier{alarms: al, leading: &leading, send: func(_ context.Context, a limits.Alarm) {
		mu.Lock()
		defer mu.Unlock()
		sent = append(sent, a.Name)
	}}
	got := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), sent...)
	}
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// Raised before the lead: not sent by the subscriber.
	al.CheckSize(8192, 4096, t0)
	n.raised(ctx, al.Active()[0])
	if s := got(); len(s) != 0 {
		t.Fatalf("sent without the lead: %v", s)
	}
	// The lead: sent once, however often the lead and the subscriber see it.
	leading.Store(true)
	n.led(ctx)
	n.raised(ctx, al.Active()[0])
	n.led(ctx)
	if s := got(); len(s) != 1 || s[0] != limits.AlarmDatabaseSize {
		t.Fatalf("sent %v, want the database alarm once", s)
	}
	// Cleared and raised again later: a new alarm, sent again.
	al.CheckSize(1024, 4096, t0.Add(time.Minute))
	al.CheckSize(8192, 4096, t0.Add(2*time.Minute))
	n.raised(ctx, al.Active()[0])
	if s := got(); len(s) != 2 {
		t.Fatalf("sent %v, want the alarm raised again sent again", s)
	}
}
