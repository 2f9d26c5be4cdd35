package kernel

import "time"

// SetPauseRecheck sets how often kernels ask the store whether another
// process changed the pauses, for the test's duration.
func SetPauseRecheck(d time.Duration) (restore func()) {
	old := pauseRecheck
	pauseRecheck = d
	return func() { pauseRecheck = old }
}
