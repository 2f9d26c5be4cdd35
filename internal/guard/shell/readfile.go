package shell

import (
	"errors"
	"io"
	"io/fs"

	"github.com/overseer-dev/overseer/internal/guard"
)

// openRegular opens the regular file at name (a path of the file system
// previews read, without its leading slash) without blocking on what is
// not one: a named pipe or a device put where a script, a patch or a
// program is expected would hold the judgement until a writer came. On
// the real file system the file is opened non-blocking and checked after
// the open (no window to swap it); an injected file system is asked first.
func (a *analyzer) openRegular(name string) (fs.File, fs.FileInfo, bool) {
	f, st, err := openRegularIn(a.env.FS, name)
	return f, st, err == nil
}

// readRegular reads the regular file at name (as openRegular) when it
// holds at most max bytes.
func (a *analyzer) readRegular(name string, max int64) ([]byte, bool) {
	b, err := readRegularIn(a.env.FS, name, max)
	return b, err == nil
}

// openRegularIn is openRegular on fsys (nil: the operating system's file
// system), with the error: fs.ErrNotExist for a missing file,
// guard.ErrNotRegular for what is not a regular file.
func openRegularIn(fsys fs.FS, name string) (fs.File, fs.FileInfo, error) {
	return guard.OpenRegularIn(fsys, "/"+name)
}

// errTooLarge: a file is larger than its reader reads.
var errTooLarge = errors.New("larger than the guard reads")

// readRegularIn reads the regular file at name of fsys (as openRegularIn)
// when it holds at most max bytes.
func readRegularIn(fsys fs.FS, name string, max int64) ([]byte, error) {
	f, st, err := openRegularIn(fsys, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > max {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, errTooLarge
	}
	return b, nil
}
