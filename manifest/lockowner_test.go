package manifest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/safefs"
)

// A lock left by a killed learnwatch (owner file naming a dead pid and the
// lock's inode) is taken over at once; a lock created later by another tool
// is not, even with the stale owner file still there.
func TestLockDeadOwnerTakenOver(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, ".learning.lock")
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	// A process that has exited: its pid is free.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid
	fi, _ := os.Stat(lock)
	host, _ := os.Hostname()
	if err := os.WriteFile(ownerPath(lock), []byte(sprintf("%d %s %d\n", dead, host, safefs.Inode(fi))), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l, err := AcquireLock(context.Background(), lock, 2*time.Second)
	if err != nil {
		t.Fatalf("dead owner's lock not taken over: %v", err)
	}
	if time.Since(start) > time.Second {
		t.Fatalf("takeover took %v", time.Since(start))
	}
	l.Release()
	if _, err := os.Stat(ownerPath(lock)); !os.IsNotExist(err) {
		t.Fatalf("owner file left behind: %v", err)
	}

	// Another tool's fresh lock with a stale owner file from before.
	if err := os.WriteFile(ownerPath(lock), []byte(sprintf("%d %s %d\n", dead, host, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Minute)
	os.Chtimes(ownerPath(lock), old, old)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	fi, _ = os.Stat(lock)
	os.WriteFile(ownerPath(lock), []byte(sprintf("%d %s %d\n", dead, host, safefs.Inode(fi))), 0o644)
	os.Chtimes(ownerPath(lock), old, old)
	if _, err := AcquireLock(context.Background(), lock, 300*time.Millisecond); err == nil {
		t.Fatal("took over a lock directory newer than its owner file")
	}
}

var sprintf = fmt.Sprintf
