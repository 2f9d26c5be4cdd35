package hookcore

import "golang.org/x/sys/unix"

func memfd() (int, error) {
	return unix.MemfdCreate("overseer-hook-event", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
}

// seal makes the anonymous file fd unchangeable: another process of the
// user can open it again through /proc/PID/fd/0 of the full hook, but can
// no longer write, grow or shrink it.
func seal(fd int) error {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS,
		unix.F_SEAL_WRITE|unix.F_SEAL_GROW|unix.F_SEAL_SHRINK|unix.F_SEAL_SEAL)
	return err
}
