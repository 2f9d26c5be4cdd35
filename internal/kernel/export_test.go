package kernel

import (
	"strconv"
	"strings"
	"time"

	"github.com/overseer-dev/overseer/internal/perception"
	"github.com/overseer-dev/overseer/internal/store"
)

// SetPauseRecheck sets how often kernels ask the store whether another
// process changed the pauses, for the test's duration.
func SetPauseRecheck(d time.Duration) (restore func()) {
	old := pauseRecheck
	pauseRecheck = d
	return func() { pauseRecheck = old }
}

// SetSpendReread sets how often the stored spend is read again.
func SetSpendReread(d time.Duration) (restore func()) {
	old := spendReread
	spendReread = d
	return func() { spendReread = old }
}

// SetFlushInterval sets how often the counts are written behind, for the
// kernels opened during the test.
func SetFlushInterval(d time.Duration) (restore func()) {
	old := flushInterval
	flushInterval = d
	return func() { flushInterval = old }
}

// PublishSamples publishes n samples (sessions "s0"… in order) as an
// instance named id does at its tick, through pub.
func PublishSamples(pub store.Publisher, id string, n int) {
	s := &sampleShare{pub: pub, id: id}
	for i := range n {
		s.buf = append(s.buf, sharedSample{Session: "s" + strconv.Itoa(i),
			ActionSample: perception.ActionSample{Tool: "Read", ArgsHash: strings.Repeat("5d41", 16), Time: time.Unix(int64(i), 0).UTC()}})
	}
	s.publish()
}

// DBTargetForTest is where a database URL connects (storeguard.go).
type DBTargetForTest struct {
	Hosts []string
	Port  int
	DB    string
}

// ParseDBURLForTest reads a database URL as the store guard does.
func ParseDBURLForTest(s string) (DBTargetForTest, bool) {
	t, ok := parseDBURL(s)
	return DBTargetForTest{Hosts: t.hosts, Port: t.port, DB: t.db}, ok
}
