//go:build linux

package guard

import (
	"os"
	"syscall"
)

// Stamp is what identifies a file's content to a cache: its device,
// inode, size, and modification and change times (Unix nanoseconds).
type Stamp struct {
	Dev, Ino     uint64
	Size         int64
	Mtime, Ctime int64
}

func stampOf(fi os.FileInfo) (Stamp, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Stamp{}, false
	}
	return StampOfStat(st), true
}

// StampOfStat returns the stamp of the file st describes.
func StampOfStat(st *syscall.Stat_t) Stamp {
	return Stamp{Dev: uint64(st.Dev), Ino: uint64(st.Ino), Size: st.Size,
		Mtime: syscall.TimespecToNsec(st.Mtim), Ctime: syscall.TimespecToNsec(st.Ctim)}
}
