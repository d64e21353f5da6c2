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

// A cache written by WriteGob reads back; another magic, bytes that do not
// decode, a missing file and a file over the bound read as no cache.
func TestGobRoundTrip(t *testing.T) {
	root := t.TempDir()
	type rec struct {
		N  int
		Is map[string]float64
	}
	want := rec{N: 3, Is: map[string]float64{"obs_a": 0.5}}
	if err := WriteGob(root, "x.cache", "x 1\n", want); err != nil {
		t.Fatal(err)
	}
	var got rec
	if !ReadGob(root, "x.cache", "x 1\n", 1<<20, &got) || got.N != want.N || got.Is["obs_a"] != 0.5 {
		t.Fatalf("round trip: %v %+v", ReadGob(root, "x.cache", "x 1\n", 1<<20, &got), got)
	}
	if ReadGob(root, "x.cache", "x 2\n", 1<<20, &got) {
		t.Error("another version was read")
	}
	if ReadGob(root, "x.cache", "x 1\n", 8, &got) {
		t.Error("a file over the bound was read")
	}
	if ReadGob(root, "none.cache", "x 1\n", 1<<20, &got) {
		t.Error("a missing file was read")
	}
	os.WriteFile(Path(root, "x.cache"), []byte("x 1\ngarbage"), 0o644)
	if ReadGob(root, "x.cache", "x 1\n", 1<<20, &got) {
		t.Error("garbage decoded")
	}
}
