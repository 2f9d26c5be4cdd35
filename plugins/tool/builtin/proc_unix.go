//go:build unix

package builtin

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup makes the command the leader of a new process group and
// makes cancellation kill the whole group, so a command's children do not
// outlive its timeout.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		if cmd.Process == nil {
			return nil
		}
		return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
}
