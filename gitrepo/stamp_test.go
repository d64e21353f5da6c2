package gitrepo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Every change git makes when it writes the worktree changes the stamp:
// the lock taken, written, renamed over the index, HEAD moved. Nothing
// else in the git directory does.
func TestStampSeesGitWrite(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("HEAD", "ref: refs/heads/main\n")
	write("index", "DIRC one")
	for _, tc := range []struct {
		name    string
		do      func()
		changed bool
	}{
		{"nothing", func() {}, false},
		{"another file of the git directory", func() { write("ORIG_HEAD", "x") }, false},
		{"lock taken", func() { write("index.lock", "") }, true},
		{"lock written", func() { write("index.lock", "DIRC two, longer") }, true},
		{"lock renamed over the index", func() {
			os.Rename(filepath.Join(dir, "index.lock"), filepath.Join(dir, "index"))
		}, true},
		{"HEAD moved", func() { write("HEAD", "ref: refs/heads/feat\n") }, true},
		{"index of the same size rewritten", func() {
			write("index.new", "DIRC two, LONGER")
			os.Rename(filepath.Join(dir, "index.new"), filepath.Join(dir, "index"))
		}, true},
	} {
		before := StampOf(dir)
		tc.do()
		if got := StampOf(dir) != before; got != tc.changed {
			t.Errorf("%s: stamp changed %v, want %v", tc.name, got, tc.changed)
		}
	}
	if StampOf("") != (Stamp{}) {
		t.Error("outside git: the stamp is not the zero one")
	}
}

func TestStampWriting(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	if StampOf(dir).Writing(now) {
		t.Fatal("no lock: writing")
	}
	lock := filepath.Join(dir, "index.lock")
	os.WriteFile(lock, nil, 0o644)
	if !StampOf(dir).Writing(time.Now()) {
		t.Fatal("a fresh lock: not writing")
	}
	old := now.Add(-WritingFor - time.Second)
	os.Chtimes(lock, old, old)
	if StampOf(dir).Writing(time.Now()) {
		t.Fatal("a lock older than WritingFor: writing")
	}
}
