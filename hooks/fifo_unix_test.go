//go:build unix

package hooks

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO where git records the branch being rebased is not read: the
// merge driver's label is unknown instead of the driver hanging.
func TestIncomingLabelFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "rebase-merge"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "rebase-merge/head-name"), 0o644); err != nil {
		t.Skip(err)
	}
	done := make(chan string, 1)
	go func() { done <- IncomingLabel(dir, nil) }()
	select {
	case got := <-done:
		if got != "" {
			t.Errorf("label %q, want none", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("blocked on the FIFO")
	}
}
