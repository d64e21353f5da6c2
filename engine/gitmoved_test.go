package engine

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/gitrepo"
)

// A pass waits while git holds a young index.lock (it may be writing the
// worktree), not for an old one (an editor open on a commit message, a
// killed git), and not for the git command whose hook runs it.
func TestWaitForIndex(t *testing.T) {
	root := t.TempDir()
	gitDir := filepath.Join(root, ".git")
	if err := os.MkdirAll(gitDir, 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(gitDir, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644)
	lock := filepath.Join(gitDir, "index.lock")
	ctx := context.Background()
	exists := func() bool { _, err := os.Lstat(lock); return err == nil }

	// Young lock: the wait ends when git removes it.
	os.WriteFile(lock, nil, 0o644)
	go func() { time.Sleep(3 * indexPoll); os.Remove(lock) }()
	waitForIndex(ctx, root)
	if exists() {
		t.Fatal("returned while a young index.lock was there")
	}

	// The lock stays until later: a pass that waited would find it gone.
	removeLater := func() chan struct{} {
		done := make(chan struct{})
		go func() { time.Sleep(500 * time.Millisecond); os.Remove(lock); close(done) }()
		return done
	}

	// Under a hook of the command holding the lock: no wait.
	os.WriteFile(lock, nil, 0o644)
	t.Setenv("GIT_INDEX_FILE", lock)
	done := removeLater()
	waitForIndex(ctx, root)
	if !exists() {
		t.Fatal("waited for the git command whose hook runs the pass")
	}
	<-done
	t.Setenv("GIT_INDEX_FILE", "")

	// An old lock holds nothing back.
	os.WriteFile(lock, nil, 0o644)
	old := time.Now().Add(-2 * gitrepo.WritingFor)
	os.Chtimes(lock, old, old)
	done = removeLater()
	waitForIndex(ctx, root)
	if !exists() {
		t.Fatal("waited for an old index.lock")
	}
	<-done
}
