package cachedir

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The cache directory is ignored by git even in a repository whose own
// ignore rules say nothing about it.
func TestEnsureIsNeverCommitted(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	run := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q")
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir, err := Ensure(root)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "stat.cache"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := run("status", "--porcelain", "--untracked-files=all"); strings.Contains(out, ".cache") {
		t.Fatalf("git sees the cache:\n%s", out)
	}
	if _, err := Ensure(root); err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
}

func TestEnsureRefusesSymlink(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, Dir(root)); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(root); err == nil {
		t.Fatal("Ensure followed a symlinked cache directory")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatalf("wrote outside the root: %v", entries)
	}
}
