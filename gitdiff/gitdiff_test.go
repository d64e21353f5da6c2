package gitdiff

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

func run(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestBranch(t *testing.T) {
	dir := t.TempDir()
	run(t, dir, "init", "-q", "-b", "main")
	write(t, dir, "a.go", "a")
	write(t, dir, "src/b.go", "b")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-qm", "base")

	// On the default branch: nothing.
	if got, err := Branch(dir); err != nil || got != nil {
		t.Fatalf("on main: %v %v", got, err)
	}

	run(t, dir, "checkout", "-qb", "feature")
	write(t, dir, "src/b.go", "b2")
	write(t, dir, "src/new.go", "n")
	run(t, dir, "mv", "a.go", "renamed.go")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-qm", "feature work")
	// main moves on: its own changes are not the branch's.
	run(t, dir, "checkout", "-q", "main")
	write(t, dir, "main-only.go", "m")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-qm", "main work")
	run(t, dir, "checkout", "-q", "feature")

	got, err := Branch(dir)
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	want := []string{"a.go", "renamed.go", "src/b.go", "src/new.go"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("Branch = %v, want %v", got, want)
	}
}

func TestBranchNotARepo(t *testing.T) {
	got, err := Branch(t.TempDir())
	if err != nil || got != nil {
		t.Fatalf("%v %v", got, err)
	}
}
