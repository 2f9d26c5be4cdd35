//go:build unix

package cli

import (
	"io/fs"
	"syscall"
)

// sameOwner reports whether two files have the same owner.
func sameOwner(a, b fs.FileInfo) bool {
	sa, ok1 := a.Sys().(*syscall.Stat_t)
	sb, ok2 := b.Sys().(*syscall.Stat_t)
	return ok1 && ok2 && sa.Uid == sb.Uid
}
