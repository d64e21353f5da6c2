//go:build unix

package staleness

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO where a referenced file was expected is not read: its lines are
// unknown, nothing is reported, and the check returns. The open blocked
// before (no writer ever comes), and SIGTERM could not stop the command.
func TestCheckWorktreeFIFO(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/a.go"), body)
	if err := syscall.Mkfifo(filepath.Join(dir, "src/pipe.go"), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan string, 1)
	go func() { done <- check(t, open(t, dir, Auto), "src/pipe.go:40 src/a.go:11") }()
	select {
	case got := <-done:
		if got != "src/a.go:11 line-past-eof" {
			t.Errorf("got %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the check blocked on the FIFO")
	}
}
