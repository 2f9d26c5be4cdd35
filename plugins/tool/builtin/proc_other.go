//go:build !unix

package builtin

import "os/exec"

// ownProcessGroup is a no-op where process groups are not available; the
// command itself is still killed on cancellation.
func ownProcessGroup(*exec.Cmd) {}
