//go:build unix

package safefs

import (
	"io/fs"
	"syscall"
)

// Inode is the file's inode number (0 where the platform has none).
func Inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}
