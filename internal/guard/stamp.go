package guard

import (
	"os"
	"time"
)

// RacyWindow is how long after a file's last change what was read of it
// is not remembered by its Stamp: more than any file system's clock tick
// (FAT's is two seconds; Linux stamps files from a clock that advances a
// few milliseconds at a time). Two writes within one tick can leave a
// file's stat as it was: git's "racily clean" entries.
const RacyWindow = 3 * time.Second

// Settled reports whether what was read of a file whose stat is s, with
// the read beginning at start, may be remembered by s: its last change
// (content or metadata) is older than RacyWindow. Any later change of the
// content changes the change time to the current time (no user can set
// it), and so the stamp.
func (s Stamp) Settled(start time.Time) bool {
	return start.Sub(time.Unix(0, s.Ctime)) > RacyWindow && start.Sub(time.Unix(0, s.Mtime)) > RacyWindow
}

// StampOf returns the stamp of the regular file fi describes: what
// identifies its content to a cache of what was read of it. ok is false
// for anything but a regular file and on systems whose stat does not give
// a file's inode and change time (nothing may be remembered there).
func StampOf(fi os.FileInfo) (s Stamp, ok bool) {
	if fi == nil || !fi.Mode().IsRegular() {
		return Stamp{}, false
	}
	return stampOf(fi)
}
