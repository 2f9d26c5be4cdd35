package hookcore

import "golang.org/x/sys/unix"

func memfd() (int, error) { return unix.MemfdCreate("overseer-hook-event", unix.MFD_CLOEXEC) }
