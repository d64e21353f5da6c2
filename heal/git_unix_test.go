//go:build unix

package heal

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A refs directory that is not one (a FIFO in a crafted repository) is
// never opened: the view's inputs are incomplete at once, not blocked.
func TestGitInputsRefsNotADirectory(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	g, _ := openGit(dir)
	if g == nil {
		t.Fatal("no view")
	}
	refs := filepath.Join(dir, ".git", "refs")
	os.RemoveAll(refs)
	if err := syscall.Mkfifo(refs, 0o644); err != nil {
		t.Skip("no FIFO:", err)
	}
	done := make(chan GitInputs, 1)
	go func() { done <- g.inputs() }()
	select {
	case in := <-done:
		if in.Complete {
			t.Fatal("a FIFO for refs: complete")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("inputs blocked on a FIFO")
	}
}
