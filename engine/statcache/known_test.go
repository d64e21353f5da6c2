package statcache

import (
	"os"
	"path/filepath"
	"testing"
)

// Known takes regular files and real directories only, as LstatRaw saw
// them: a symlink (to a file or a directory) or a missing path is neither.
func TestKnown(t *testing.T) {
	dir := t.TempDir()
	file, sub := filepath.Join(dir, "f.md"), filepath.Join(dir, "sub")
	if err := os.WriteFile(file, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	linkFile, linkDir := filepath.Join(dir, "lf"), filepath.Join(dir, "ld")
	if err := os.Symlink(file, linkFile); err != nil {
		t.Skip("no symlinks")
	}
	if err := os.Symlink(sub, linkDir); err != nil {
		t.Fatal(err)
	}
	k := Known{}
	for _, p := range []string{file, sub, linkFile, linkDir, filepath.Join(dir, "missing")} {
		st, typ := LstatRaw(p)
		k[p] = KnownStat{Stat: st, Type: typ}
	}
	want, _ := Lstat(file)
	if st, ok := k.Regular(file); !ok || st != want {
		t.Errorf("Regular(file) = %+v %v, want %+v", st, ok, want)
	}
	if !k.SeenDir(sub) || k.SeenFile(sub) {
		t.Error("sub not seen as a directory")
	}
	for _, p := range []string{linkFile, linkDir, filepath.Join(dir, "missing"), filepath.Join(dir, "never stat'ed")} {
		if _, ok := k.Regular(p); ok || k.SeenDir(p) || k.SeenFile(p) {
			t.Errorf("%s taken as a regular file or a directory", filepath.Base(p))
		}
	}
	if _, ok := k.Regular(sub); ok || k.SeenDir(file) || !k.SeenFile(file) {
		t.Error("a directory taken as a file or a file as a directory")
	}
}
