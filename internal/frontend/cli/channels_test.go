package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/overseer-dev/overseer/internal/frontend/notify"
	"github.com/overseer-dev/overseer/internal/limits"
)

// A two-way channel that loses its connection raises an alarm (shown by
// /healthz and the console's banner) until it is connected again.
func TestChannelDownIsAnAlarm(t *testing.T) {
	alarms := limits.NewAlarms()
	var opts notify.Options
	twoWayOptions(&opts, nil, alarms, nil)
	opts.Status("telegram", errors.New("dial tcp: connection refused"))
	al := alarms.Active()
	if len(al) != 1 || al[0].Name != "channel_telegram_down" || !strings.Contains(al[0].Message, "connection refused") {
		t.Fatalf("alarms %+v", al)
	}
	opts.Status("telegram", nil)
	if al := alarms.Active(); len(al) != 0 {
		t.Fatalf("alarms after reconnecting %+v", al)
	}
}
