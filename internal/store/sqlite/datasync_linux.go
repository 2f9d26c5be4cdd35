package sqlite

import (
	"os"
	"syscall"
)

// dataSync writes f's data to disk, with the metadata needed to read it
// back (its size), as SQLite's own sync does on Linux (fdatasync): not
// its times, which would cost the file system a journal commit per sync.
func dataSync(f *os.File) error {
	for {
		err := syscall.Fdatasync(int(f.Fd()))
		if err != syscall.EINTR {
			return err
		}
	}
}
