package guard

import (
	"errors"
	"os"
	"syscall"
)

// ErrNotRegular: a file a guard reads must be a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenRegular opens the regular file at p for reading without blocking on
// what is not one: opening a named pipe for reading waits for a writer, so
// a pipe an agent puts where a guard reads a file (a script, a patch, a
// file it sends or reads) would hold the judgement, and the agent, until
// one came. The file is checked after the open, so nothing can be swapped
// in between; anything but a regular file is ErrNotRegular.
func OpenRegular(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = ErrNotRegular
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
