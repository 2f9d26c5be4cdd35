package kernel

import "time"

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
