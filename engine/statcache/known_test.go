package statcache

import (
	"os"
	"path/filepath"
	"slices"
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
	paths := []string{file, sub, linkFile, linkDir, filepath.Join(dir, "missing")}
	slices.Sort(paths)
	var stats []KnownStat
	for _, p := range paths {
		st, typ := LstatRaw(p)
		stats = append(stats, KnownStat{Stat: st, Type: typ})
	}
	k := NewKnown(paths, stats)
	if k.Len() != len(paths) {
		t.Fatalf("%d paths known of %d", k.Len(), len(paths))
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

// NewKnown takes paths sorted and each once, with as many stats: anything
// else is the empty Known (the pass stats each path itself), never a stat
// given for another path.
func TestNewKnown(t *testing.T) {
	st := func(size int64) KnownStat { return KnownStat{Stat: Stat{Size: size}, Type: typeRegular} }
	for _, tc := range []struct {
		name  string
		paths []string
		stats []KnownStat
		want  int
	}{
		{"sorted", []string{"/a", "/b", "/c"}, []KnownStat{st(1), st(2), st(3)}, 3},
		{"none", nil, nil, 0},
		{"out of order", []string{"/b", "/a"}, []KnownStat{st(1), st(2)}, 0},
		{"repeated", []string{"/a", "/a"}, []KnownStat{st(1), st(2)}, 0},
		{"fewer stats", []string{"/a", "/b"}, []KnownStat{st(1)}, 0},
	} {
		k := NewKnown(tc.paths, tc.stats)
		if k.Len() != tc.want {
			t.Errorf("%s: %d paths known, want %d", tc.name, k.Len(), tc.want)
		}
		for i, p := range tc.paths {
			if s, ok := k.Regular(p); ok && (tc.want == 0 || s.Size != int64(i+1)) {
				t.Errorf("%s: %s has the stat %+v", tc.name, p, s)
			}
		}
	}
	k := NewKnown([]string{"/a", "/b", "/c"}, []KnownStat{st(1), st(2), st(3)})
	for i, p := range []string{"/a", "/b", "/c"} {
		if s, ok := k.Regular(p); !ok || s.Size != int64(i+1) {
			t.Errorf("%s: %+v %v", p, s, ok)
		}
	}
	if _, ok := k.Regular("/bb"); ok {
		t.Error("a path never stat'ed is known")
	}
}
