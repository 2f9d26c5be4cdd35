//go:build unix

package mcpshared

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes a stdio server the leader of a new process group,
// so that what it starts can be stopped with it.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// KillGroup kills what is left of the process group led by pid (a server
// started with TransportOptions.ProcessGroup); pid <= 0 does nothing. Call
// it right after the leader's connection ended: the group's ID cannot be
// reused while any of its processes lives.
func KillGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
