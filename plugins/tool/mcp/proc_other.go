//go:build !unix

package mcptool

import "os/exec"

// ownProcessGroup does nothing where process groups are not available: a
// server is stopped on its own.
func ownProcessGroup(*exec.Cmd) {}

// killGroup does nothing where process groups are not available.
func killGroup(int) {}
