//go:build overseer_testclock

package cli

import (
	"fmt"
	"os"
	"time"

	"github.com/overseer-dev/overseer/internal/clock"
)

// TestClockBuild reports whether this binary honours TestClockEnv: this
// one, built with the overseer_testclock tag for end-to-end tests, does.
// Never ship it (see docs/threat-model.md).
const TestClockBuild = true

// TestClockEnv names the variable this build reads its starting time
// from. (It is defined in this file only: release binaries do not even
// carry the name.)
const TestClockEnv = "OVERSEER_TEST_CLOCK"

// testClock starts the kernel's clock at the RFC 3339 time in TestClockEnv
// (then running at the real pace); unset: the real clock. An unreadable
// value is an error, not the real clock: a test that asked for a time must
// not run at another.
func testClock() (clock.Clock, error) {
	v := os.Getenv(TestClockEnv)
	if v == "" {
		return nil, nil
	}
	at, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", TestClockEnv, err)
	}
	fmt.Fprintf(os.Stderr, "overseer: TEST BUILD: the clock starts at %s (%s); never run this binary for real\n", at.Format(time.RFC3339), TestClockEnv)
	return clock.StartingAt(at), nil
}
