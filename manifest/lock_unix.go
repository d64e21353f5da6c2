//go:build unix

package manifest

import (
	"errors"
	"syscall"
)

// processAlive reports whether pid exists (signal 0; EPERM means it exists
// but belongs to someone else).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
