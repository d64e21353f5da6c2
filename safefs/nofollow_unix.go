//go:build unix

package safefs

import (
	"io/fs"
	"os"
	"syscall"
)

// noFollow makes an open refuse a symlink as its last component and never
// block on a FIFO.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK

// nonBlock makes an open that may follow a symlink never block on a FIFO.
const nonBlock = syscall.O_NONBLOCK

// ownedByMe reports whether fi belongs to the current user.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Getuid()
}
