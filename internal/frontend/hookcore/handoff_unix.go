//go:build unix

package hookcore

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ExecFull returns the Handoff of the lean hook: it runs the full binary at
// full in place of this process (exec), with the same environment. An
// event already read becomes its standard input through an anonymous
// in-memory file, sealed once written (an unlinked private temporary file
// where there is none): the event never lies under a name another process
// could open, and the in-memory file, which another process of the user
// can still open through /proc/PID/fd/0, cannot be changed there.
func ExecFull(full string) func(args []string, event []byte) error {
	return func(args []string, event []byte) error {
		if event != nil {
			f, err := eventFile(event)
			if err != nil {
				return fmt.Errorf("passing the event on: %w", err)
			}
			if err := unix.Dup2(int(f.Fd()), 0); err != nil {
				return fmt.Errorf("passing the event on: %w", err)
			}
		}
		return syscall.Exec(full, append([]string{full}, args...), os.Environ())
	}
}

// eventFile is a file holding event, read from its start.
func eventFile(event []byte) (*os.File, error) {
	var f *os.File
	sealed := false
	if fd, err := memfd(); err == nil {
		f, sealed = os.NewFile(uintptr(fd), "hook-event"), true
	} else {
		t, err := os.CreateTemp("", "overseer-hook-event-*")
		if err != nil {
			return nil, err
		}
		if err := os.Remove(t.Name()); err != nil {
			t.Close()
			return nil, err
		}
		f = t
	}
	if _, err := f.Write(event); err != nil {
		f.Close()
		return nil, err
	}
	if sealed {
		if err := seal(int(f.Fd())); err != nil {
			f.Close()
			return nil, err
		}
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
