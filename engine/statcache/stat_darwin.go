//go:build darwin

package statcache

import (
	"io/fs"
	"os"
	"syscall"
)

func ctimeIno(fi fs.FileInfo) (int64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctimespec.Sec*1e9 + st.Ctimespec.Nsec, st.Ino
	}
	return 0, 0
}

// LstatRaw returns path's Stat and its file type bits with bit 0 set (0
// when path does not exist or cannot be stat'ed).
func LstatRaw(path string) (Stat, uint32) {
	fi, err := os.Lstat(path)
	if err != nil {
		return Stat{}, 0
	}
	return StatOf(fi), uint32(fi.Mode().Type()>>20) | 1
}

// The type bits LstatRaw returns for a regular file and a directory.
const (
	typeRegular = 1
	typeDir     = uint32(fs.ModeDir>>20) | 1
)
