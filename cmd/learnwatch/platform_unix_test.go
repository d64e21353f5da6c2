//go:build unix

package main

import (
	"os"
	"syscall"
)

// mkfifo makes a FIFO at name.
func mkfifo(name string, mode uint32) error { return syscall.Mkfifo(name, mode) }

// inodeOf is fi's inode number.
func inodeOf(fi os.FileInfo) uint64 {
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Ino)
	}
	return 0
}
