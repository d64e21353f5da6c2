//go:build unix

package hooks

import "syscall"

// mkfifo makes a FIFO at name.
func mkfifo(name string, mode uint32) error { return syscall.Mkfifo(name, mode) }
