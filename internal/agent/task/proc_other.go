//go:build !unix

package task

// processAlive cannot tell on this system; a runner counts as alive until
// its heartbeat is stale.
func processAlive(pid int) bool { return true }
