//go:build !unix

package hookcore

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
)

// ExecFull returns the Handoff of the lean hook where a process cannot be
// replaced: the full binary runs as a child with the same standard streams
// (the event, when already read, as its input), and this process exits
// with its status.
func ExecFull(full string) func(args []string, event []byte) error {
	return func(args []string, event []byte) error {
		cmd := exec.Command(full, args...)
		cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
		if event != nil {
			cmd.Stdin = bytes.NewReader(event)
		}
		err := cmd.Run()
		var ee *exec.ExitError
		if err == nil || errors.As(err, &ee) && ee.ExitCode() == 2 {
			os.Exit(cmd.ProcessState.ExitCode())
		}
		return err
	}
}
