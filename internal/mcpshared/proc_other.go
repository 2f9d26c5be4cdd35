//go:build !unix

package mcpshared

import "os/exec"

// ownProcessGroup does nothing where process groups are not available: a
// server is stopped on its own.
func ownProcessGroup(*exec.Cmd) {}

// KillGroup does nothing where process groups are not available.
func KillGroup(int) {}
