//go:build !unix

package watch

import (
	"fmt"
	"github.com/learnwatch/learnwatch/safefs"
	"os"
	"path/filepath"
	"strconv"
)

type fileID struct{ size, mtime int64 }

func idOf(fi os.FileInfo) fileID { return fileID{} }

// alive cannot probe a pid portably; a recorded pid counts as alive.
func alive(pid int) bool { return pid > 0 }

type pidLock struct {
	path string
	pid  int
}

// acquirePIDFile takes the pid file with O_EXCL; a leftover file must be
// removed by hand on these platforms.
func acquirePIDFile(memDir string) (*pidLock, error) {
	if err := safefs.MkdirAll(memDir); err != nil {
		return nil, fmt.Errorf("create %s: %w", memDir, err)
	}
	path := filepath.Join(memDir, pidFile)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if os.IsExist(err) {
		pid, _ := readPID(path)
		return nil, &RunningError{PID: pid, Path: path}
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	defer f.Close()
	if _, err := f.WriteString(strconv.Itoa(os.Getpid()) + "\n"); err != nil {
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return &pidLock{path: path, pid: os.Getpid()}, nil
}

func (l *pidLock) release() { _ = safefs.Remove(l.path) }

// watcherHolds falls back to the recorded pid on these platforms.
func watcherHolds(path string, pid int) bool { return alive(pid) }
