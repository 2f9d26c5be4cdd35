//go:build !linux

package paths

import (
	"errors"
	"os"
)

// fileID is what identifies a file's content to HashCache; this system's
// stat does not give it, so nothing is remembered.
type fileID struct{ mtime, ctime int64 }

func idOf(os.FileInfo) (fileID, bool) { return fileID{}, false }

func hashFileID(string) (string, fileID, error) {
	return "", fileID{}, errors.New("paths: no file identity on this system")
}
