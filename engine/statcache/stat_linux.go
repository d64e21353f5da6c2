//go:build linux

package statcache

import (
	"io/fs"
	"syscall"
)

func ctimeIno(fi fs.FileInfo) (int64, uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ctim.Sec*1e9 + st.Ctim.Nsec, st.Ino
	}
	return 0, 0
}

// LstatRaw is lstat(2) without os.Lstat's FileInfo: the Stat and the file
// type bits with bit 0 set (0 when path does not exist or cannot be
// stat'ed). For callers that stat thousands of paths (the pass replay).
func LstatRaw(path string) (Stat, uint32) {
	var st syscall.Stat_t
	for {
		err := syscall.Lstat(path, &st)
		if err == nil {
			break
		}
		if err != syscall.EINTR {
			return Stat{}, 0
		}
	}
	return Stat{Size: st.Size, Mtime: st.Mtim.Sec*1e9 + st.Mtim.Nsec, Ctime: st.Ctim.Sec*1e9 + st.Ctim.Nsec, Ino: st.Ino},
		st.Mode&syscall.S_IFMT | 1
}

// The type bits LstatRaw returns for a regular file and a directory.
const (
	typeRegular = syscall.S_IFREG | 1
	typeDir     = syscall.S_IFDIR | 1
)
