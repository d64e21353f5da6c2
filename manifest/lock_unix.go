//go:build unix

package manifest

import (
	"errors"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// processAlive reports whether pid exists (signal 0; EPERM means it exists
// but belongs to someone else).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// flock takes f's flock, shared or exclusive, trying until wait has
// passed. held is false when it was not taken: the file system has no
// flock, or another process held it all that time.
func flock(f *os.File, exclusive bool, wait time.Duration) (held bool) {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for end := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
		err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
		switch {
		case err == nil:
			return true
		case errors.Is(err, unix.EINTR):
			continue
		case !errors.Is(err, unix.EWOULDBLOCK) || !time.Now().Before(end):
			return false
		}
	}
}

// funlock lets f's flock go.
func funlock(f *os.File) { _ = unix.Flock(int(f.Fd()), unix.LOCK_UN) }
