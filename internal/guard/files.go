package guard

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"
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

// OpenRegularIn is OpenRegular of the absolute path abs on fsys (nil: the
// operating system's file system), with the file's information. An
// injected file system is asked first, and the file checked again once
// open; on the real one the file is opened non-blocking and checked after
// the open. What is not a regular file is ErrNotRegular, a missing one
// fs.ErrNotExist.
func OpenRegularIn(fsys fs.FS, abs string) (fs.File, fs.FileInfo, error) {
	var f fs.File
	if fsys == nil {
		fh, err := OpenRegular(abs)
		if err != nil {
			return nil, nil, err
		}
		f = fh
	} else {
		name := strings.TrimPrefix(path.Clean(abs), "/")
		if name == "" {
			name = "."
		}
		st, err := fs.Stat(fsys, name)
		if err != nil {
			return nil, nil, err
		}
		if !st.Mode().IsRegular() {
			return nil, nil, ErrNotRegular
		}
		if f, err = fsys.Open(name); err != nil {
			return nil, nil, err
		}
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = ErrNotRegular
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}
