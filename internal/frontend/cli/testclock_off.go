//go:build !overseer_testclock

package cli

import "github.com/overseer-dev/overseer/internal/clock"

// TestClockBuild reports whether this binary honours OVERSEER_TEST_CLOCK. A
// release binary does not: the code that reads it is not compiled in, so
// nobody (an agent least of all) can move a running daemon's time.
const TestClockBuild = false

// testClock is the kernel's clock: nil, the real one.
func testClock() (clock.Clock, error) { return nil, nil }
