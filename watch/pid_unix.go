//go:build unix

package watch

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/learnwatch/learnwatch/safefs"
	"golang.org/x/sys/unix"
)

// fileID is a file's identity (device and inode): a directory removed and
// re-created at the same path has another one.
type fileID struct{ dev, ino uint64 }

func idOf(fi os.FileInfo) fileID {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return fileID{dev: uint64(st.Dev), ino: uint64(st.Ino)}
	}
	return fileID{}
}

// alive reports whether a process with pid exists.
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// pidLock is the held .memory/.watch.pid.
type pidLock struct {
	f    *os.File
	path string
	pid  int
}

// acquirePIDFile makes this process the repository's only watcher. The pid
// file is locked with flock, which the kernel releases when the process
// dies, so the file a killed watcher left behind is simply taken over;
// where flock is unavailable, the recorded pid's liveness decides.
func acquirePIDFile(memDir string) (*pidLock, error) {
	if err := safefs.MkdirAll(memDir); err != nil {
		return nil, fmt.Errorf("create %s: %w", memDir, err)
	}
	path := filepath.Join(memDir, pidFile)
	for attempt := 0; ; attempt++ {
		// Never through a symlink, never truncated before it is known to
		// be a regular file this process has locked.
		f, err := safefs.OpenLockFile(path)
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			pid, _ := readPID(path)
			return nil, &RunningError{PID: pid, Path: path}
		}
		if err != nil {
			// No flock on this file system: fall back to the pid check.
			if pid, ok := readPID(path); ok && pid != os.Getpid() && alive(pid) {
				f.Close()
				return nil, &RunningError{PID: pid, Path: path}
			}
		}
		// The previous owner may have removed the file between our open
		// and our lock: make sure we hold the file that is at path now.
		fi1, err1 := f.Stat()
		fi2, err2 := os.Lstat(path)
		if err1 != nil || err2 != nil || !os.SameFile(fi1, fi2) {
			f.Close()
			if attempt > 10 {
				return nil, fmt.Errorf("lock %s: the file keeps changing", path)
			}
			continue
		}
		if err := f.Truncate(0); err != nil {
			f.Close()
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
			f.Close()
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
		_ = f.Sync()
		return &pidLock{f: f, path: path, pid: os.Getpid()}, nil
	}
}

// release removes the pid file (still holding the lock, so no other
// watcher can be holding it) and unlocks.
func (l *pidLock) release() {
	_ = safefs.Remove(l.path)
	_ = l.f.Close()
}

// watcherHolds reports whether a watcher is running: it holds its flock on
// the pid file. A pid alone can mislead: a watcher killed by SIGKILL or
// SIGPIPE leaves its pid behind, and the kernel may give that pid to
// another process. The probe takes a shared lock without blocking and
// releases it at once; it never follows a link.
func watcherHolds(path string, pid int) bool {
	f, err := safefs.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	err = unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
	if err == nil {
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return false // nobody holds it: no watcher, whatever the pid says
	}
	if errors.Is(err, unix.EWOULDBLOCK) {
		return true
	}
	return alive(pid) // flock unsupported here: the pid's liveness decides
}
