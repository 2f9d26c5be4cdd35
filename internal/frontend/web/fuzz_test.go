package web

import (
	"net/url"
	"testing"
)

// FuzzParseAuditQuery: the timeline's filters never panic, and what they
// accept is bounded.
func FuzzParseAuditQuery(f *testing.F) {
	for _, s := range []string{"", "type=answer", "level=confirm&source=human", "since=2026-01-02T15:04",
		"until=2026-01-02", "limit=5000", "limit=-3&after=12", "order=asc", "level=extreme", "since=yesterday",
		"q=%00&tool=*", "type=,,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := url.ParseQuery(raw)
		if err != nil {
			return
		}
		aq, fl, err := parseAuditQuery(q)
		if err != nil {
			return
		}
		if aq.Limit < 1 || aq.Limit > 1000 {
			t.Fatalf("limit %d from %q", aq.Limit, raw)
		}
		if fl.Level != 0 && !fl.Level.Valid() {
			t.Fatalf("level %v from %q", fl.Level, raw)
		}
	})
}
