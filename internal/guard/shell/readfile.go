package shell

import (
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
	var f fs.File
	if a.env.FS == nil {
		fh, err := guard.OpenRegular("/" + name)
		if err != nil {
			return nil, nil, false
		}
		f = fh
	} else {
		st, err := fs.Stat(a.fileSystem(), name)
		if err != nil || !st.Mode().IsRegular() {
			return nil, nil, false
		}
		if f, err = a.fileSystem().Open(name); err != nil {
			return nil, nil, false
		}
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, false
	}
	return f, st, true
}

// readRegular reads the regular file at name (as openRegular) when it
// holds at most max bytes.
func (a *analyzer) readRegular(name string, max int64) ([]byte, bool) {
	f, st, ok := a.openRegular(name)
	if !ok {
		return nil, false
	}
	defer f.Close()
	if st.Size() > max {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil || int64(len(b)) > max {
		return nil, false
	}
	return b, true
}
