package policy

import (
	"strings"
	"testing"
)

func TestLimitSettings(t *testing.T) {
	p, err := Parse("l.yaml", []byte("settings:\n  limits:\n    stored_bytes: 8192\n    session: {actions_per_minute: 10}\n"+
		"    all: {actions_per_minute: -1, bytes_per_minute: -1}\n    database_alarm_bytes: -1\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	l, def := p.Settings.Limits, DefaultLimits()
	if l.StoredBytes != 8192 || l.Session.ActionsPerMinute != 10 || l.Session.Burst != def.Session.Burst ||
		l.Session.BytesPerMinute != def.Session.BytesPerMinute || l.Agent != def.Agent ||
		l.All.ActionsPerMinute != -1 || l.All.BytesPerMinute != -1 || l.All.Burst != def.All.Burst || l.DatabaseAlarmBytes != -1 {
		t.Fatalf("limits: %+v", l)
	}
	if b := Builtin().Settings.Limits; b != def {
		t.Fatalf("the built-in policy's limits %+v, want the defaults", b)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"settings:\n  limits:\n    stored_bytes: 100\n", ":3: settings.limits.stored_bytes: want -1 (no bound) or at least 4096"},
		{"settings:\n  limits:\n    agent:\n      burst: -2\n", ":4: settings.limits.agent.burst: want -1 (off) or more"},
		{"settings:\n  limits:\n    database_alarm_bytes: -5\n", ":3: settings.limits.database_alarm_bytes"},
		{"settings:\n  limits:\n    all: {per_minute: 5}\n", `unknown field "per_minute"`},
	} {
		_, err := Parse("l.yaml", []byte(tc.yaml), Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
