//go:build linux

package paths

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"syscall"

	"github.com/overseer-dev/overseer/internal/guard"
)

// hashFileID hashes the regular file at p (as HashFile) and returns the
// identity of the file it read. The file is read with plain system calls:
// an *os.File would also try to register it with the runtime's poller,
// one more system call on every read recorded. It is opened without
// blocking (a FIFO put in its place would block the open) and refused
// unless regular.
func hashFileID(p string) (string, guard.Stamp, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return "", guard.Stamp{}, &os.PathError{Op: "open", Path: p, Err: err}
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return "", guard.Stamp{}, &os.PathError{Op: "stat", Path: p, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return "", guard.Stamp{}, &os.PathError{Op: "read", Path: p, Err: guard.ErrNotRegular}
	}
	h := sha256.New()
	pb := hashBufs.Get().(*[]byte)
	defer hashBufs.Put(pb)
	buf := *pb
	for {
		n, err := syscall.Read(fd, buf)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return "", guard.Stamp{}, &os.PathError{Op: "read", Path: p, Err: err}
		}
		if n <= 0 {
			break
		}
		h.Write(buf[:n])
	}
	return hex.EncodeToString(h.Sum(nil)), guard.StampOfStat(&st), nil
}
