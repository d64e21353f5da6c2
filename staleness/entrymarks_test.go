package staleness

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
)

// marksRepo is a repository where src/old.go was deleted after a commit
// that had it, and the references of three entries: ADR-001 cites the
// deleted file (stale), ADR-002 a file that is there, PF-001 a bare name.
func marksRepo(t *testing.T) (*gitRepo, []string, map[string][]Ref) {
	t.Helper()
	r := newRepo(t)
	r.write("src/a.go", "package src\n")
	r.write("src/old.go", "package src\n")
	r.write("docs/b.md", "# b\n")
	r.commit("one")
	r.git("rm", "-q", "src/old.go")
	r.commit("two")
	// A memory directory: the cache is kept only in one (none is made).
	if err := os.MkdirAll(filepath.Join(r.dir, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	ids := []string{"ADR-001", "ADR-002", "PF-001"}
	refs := map[string][]Ref{
		"ADR-001": {{Path: "src/old.go", Raw: "src/old.go"}},
		"ADR-002": {{Path: "src/a.go", Raw: "src/a.go"}},
		"PF-001":  {{Path: "b.md", Raw: "b.md"}},
	}
	return r, ids, refs
}

func entryMarks(t *testing.T, dir string, cfg config.Staleness, ids []string, refs map[string][]Ref) map[string]string {
	t.Helper()
	m, cacheErr, err := EntryMarks(dir, cfg, ids, refs)
	if err != nil || cacheErr != nil {
		t.Fatal(err, cacheErr)
	}
	return m
}

// plant rewrites the cached answer (its key kept) so that a read of the
// cache shows: ADR-002 marked "planted".
func plant(t *testing.T, dir string) {
	t.Helper()
	f, ok := readEntryMarksFile(dir)
	if !ok {
		t.Fatal("no cache written")
	}
	f.Marks = map[string]string{"ADR-002": "planted"}
	if err := cachedir.WriteSealed(dir, EntryMarksFile, encodeEntryMarks(&f)); err != nil {
		t.Fatal(err)
	}
}

var wantMarks = map[string]string{"ADR-001": "src/old.go"}

// plantedMarksRepo is marksRepo with its marks computed (wantMarks) and
// cached, then the cached answer planted (plant): a read of the cache
// shows ADR-002 marked "planted".
func plantedMarksRepo(t *testing.T, cfg config.Staleness) (*gitRepo, []string, map[string][]Ref) {
	t.Helper()
	r, ids, refs := marksRepo(t)
	if got := entryMarks(t, r.dir, cfg, ids, refs); !reflect.DeepEqual(got, wantMarks) {
		t.Fatalf("marks %v, want %v", got, wantMarks)
	}
	plant(t, r.dir)
	return r, ids, refs
}

// The session-start index's marks are read from the cache while HEAD, the
// index, the references, the configuration, the ignore files and the
// checkout are those they were computed for; any of them changed, they are
// computed again (the planted answer is not believed).
func TestEntryMarksCache(t *testing.T) {
	cfg := config.Default().Staleness
	r, ids, refs := plantedMarksRepo(t, cfg)
	if got := entryMarks(t, r.dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("the cache is not read: %v", got)
	}

	cases := []struct {
		name string
		op   func(t *testing.T, r *gitRepo) (dir string, cfg config.Staleness, refs map[string][]Ref)
	}{
		{"HEAD moved (a commit)", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			r.git("commit", "-q", "--allow-empty", "-m", "three")
			return r.dir, cfg, refs
		}},
		{"the index changed (git add)", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			r.write("src/new.go", "package src\n")
			r.git("add", "src/new.go")
			return r.dir, cfg, refs
		}},
		{"an ignore file changed", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			f, _ := readEntryMarksFile(r.dir)
			if len(f.Ignore) == 0 {
				t.Fatal("no ignore file recorded")
			}
			for _, d := range f.Ignore {
				os.MkdirAll(filepath.Dir(d.Name), 0o755)
				fh, _ := os.OpenFile(d.Name, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
				fh.WriteString("# another line\n")
				fh.Close()
			}
			return r.dir, cfg, refs
		}},
		{"other references", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			other := map[string][]Ref{}
			for k, v := range refs {
				other[k] = v
			}
			other["ADR-002"] = []Ref{{Path: "src/a.go", Raw: "src/a.go", Line: 1}}
			return r.dir, cfg, other
		}},
		{"another ignore list", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			c := cfg
			c.Ignore = append([]string{"*.tmp"}, c.Ignore...)
			return r.dir, c, refs
		}},
		{"another configuration (the extensions)", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			c := cfg
			c.Extensions = append([]string{"zz"}, c.Extensions...)
			return r.dir, c, refs
		}},
		{"another clone (the directory copied, its cache with it)", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			dst := filepath.Join(t.TempDir(), "copy")
			if out, err := exec.Command("cp", "-a", r.dir, dst).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			return dst, cfg, refs
		}},
		{"the cache file corrupt", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			os.WriteFile(cachedir.Path(r.dir, EntryMarksFile), []byte(entryMarksMagic+"\x03\xff\x81"), 0o644)
			return r.dir, cfg, refs
		}},
		{"the cache file a symlink", func(t *testing.T, r *gitRepo) (string, config.Staleness, map[string][]Ref) {
			p := cachedir.Path(r.dir, EntryMarksFile)
			target := filepath.Join(t.TempDir(), "elsewhere")
			b, _ := os.ReadFile(p)
			os.WriteFile(target, b, 0o644)
			os.Remove(p)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			return r.dir, cfg, refs
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ids, refs := plantedMarksRepo(t, cfg)
			dir, cfg, refs := c.op(t, r)
			got, cacheErr, err := EntryMarks(dir, cfg, ids, refs)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, wantMarks) {
				t.Fatalf("%s: marks %v, want %v (the cached answer believed)", c.name, got, wantMarks)
			}
			// A symlink in the file's place is not written through, and
			// the caller hears of it (the index warns).
			if fi, err := os.Lstat(cachedir.Path(dir, EntryMarksFile)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				if cacheErr == nil || !strings.Contains(cacheErr.Error(), "symlink") {
					t.Errorf("%s: cache error %v, want the symlink refused", c.name, cacheErr)
				}
			} else if cacheErr != nil {
				t.Errorf("%s: %v", c.name, cacheErr)
			}
			// Computed again, and kept: the next call reads it (but
			// through a symlink, which is neither read nor written).
			if fi, err := os.Lstat(cachedir.Path(dir, EntryMarksFile)); err == nil && fi.Mode().IsRegular() {
				plant(t, dir)
				if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
					t.Errorf("%s: the new answer was not kept: %v", c.name, got)
				}
			}
		})
	}
}

// outsideTree is a working tree outside git whose every file and directory
// was last modified an hour ago (older than racyStamp): src/a.go of three
// lines, docs/b.md, an empty .memory; and the references of three entries:
// ADR-001 cites a file that is not there (stale), ADR-002 the second line of
// src/a.go, PF-001 a bare name.
func outsideTree(t *testing.T) (string, []string, map[string][]Ref) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	writeFile(t, filepath.Join(dir, "src/a.go"), "a\nb\nc\n")
	writeFile(t, filepath.Join(dir, "docs/b.md"), "# b\n")
	if err := os.MkdirAll(filepath.Join(dir, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	age(t, dir)
	ids := []string{"ADR-001", "ADR-002", "PF-001"}
	refs := map[string][]Ref{
		"ADR-001": {{Path: "src/gone.go", Raw: "src/gone.go"}},
		"ADR-002": {{Path: "src/a.go", Raw: "src/a.go:2", Line: 2}},
		"PF-001":  {{Path: "b.md", Raw: "b.md"}},
	}
	return dir, ids, refs
}

// age sets the mtime of everything below dir (dir too) an hour back.
func age(t *testing.T, dir string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	var paths []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			paths = append(paths, p)
		}
		return nil
	})
	// Deepest first: a directory's own mtime is set after its entries'.
	slices.Reverse(paths)
	for _, p := range paths {
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			// The link's own mtime (os.Chtimes would set its target's).
			if out, err := exec.Command("touch", "-h", "-d", old.Format(time.RFC3339), p).CombinedOutput(); err != nil {
				t.Skipf("touch -h: %v %s", err, out)
			}
			continue
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
}

// Outside git the marks are kept with the stats of the working tree they
// were read from, and believed while every directory listed keeps its
// names and every file looked up its stat: a change that could change a
// mark has them computed again; the learning lock taken and released in a
// listed directory does not.
func TestEntryMarksCacheOutsideGit(t *testing.T) {
	if localIdentity(t.TempDir()) == "" {
		t.Skip("no inode numbers: nothing is cached here")
	}
	cfg := config.Default().Staleness
	dir, ids, refs := outsideTree(t)
	want := map[string]string{"ADR-001": "src/gone.go"}
	if got := entryMarks(t, dir, cfg, ids, refs); !reflect.DeepEqual(got, want) {
		t.Fatalf("marks %v, want %v", got, want)
	}
	plant(t, dir)
	if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("the cache is not read: %v", got)
	}
	// The lock taken and released: .memory's mtime moves, its names do not.
	lock := filepath.Join(dir, ".memory", ".learning.lock")
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, lock+".owner", "1\n")
	if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("held lock: the cache is not read: %v", got)
	}
	os.Remove(lock + ".owner")
	os.Remove(lock)
	if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("released lock: the cache is not read: %v", got)
	}

	cases := []struct {
		name string
		op   func(t *testing.T, dir string) string
	}{
		{"the missing file created", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, "src/gone.go"), "package src\n")
			return dir
		}},
		{"a cited file removed", func(t *testing.T, dir string) string {
			os.Remove(filepath.Join(dir, "src/a.go"))
			return dir
		}},
		{"the bare name's file moved deeper", func(t *testing.T, dir string) string {
			os.MkdirAll(filepath.Join(dir, "docs/old"), 0o755)
			os.Rename(filepath.Join(dir, "docs/b.md"), filepath.Join(dir, "docs/old/c.md"))
			return dir
		}},
		{"a directory renamed", func(t *testing.T, dir string) string {
			os.Rename(filepath.Join(dir, "src"), filepath.Join(dir, "lib"))
			return dir
		}},
		{"a file added to .memory", func(t *testing.T, dir string) string {
			writeFile(t, filepath.Join(dir, ".memory/b.md"), "# another b\n")
			return dir
		}},
		{"a cited file rewritten at the same size, its mtime put back", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "src/a.go")
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte("abcde\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
			if runtime.GOOS != "linux" {
				t.Skip("the inode's change time is read on Linux only")
			}
			return dir
		}},
		{"a directory swapped for a symlink to a copy", func(t *testing.T, dir string) string {
			cp := filepath.Join(filepath.Dir(dir), "src-copy")
			if out, err := exec.Command("cp", "-a", filepath.Join(dir, "src"), cp).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			os.RemoveAll(filepath.Join(dir, "src"))
			os.Symlink(cp, filepath.Join(dir, "src"))
			return dir
		}},
		{"another copy (the tree copied, its cache with it)", func(t *testing.T, dir string) string {
			dst := filepath.Join(t.TempDir(), "copy")
			if out, err := exec.Command("cp", "-a", dir, dst).CombinedOutput(); err != nil {
				t.Fatalf("cp: %v %s", err, out)
			}
			return dst
		}},
		{"a git repository created at the root", func(t *testing.T, dir string) string {
			cmd := exec.Command("git", "init", "-q")
			cmd.Dir, cmd.Env = dir, append(gitEnv(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Skipf("git init: %v %s", err, out)
			}
			return dir
		}},
		{"the cache file corrupt", func(t *testing.T, dir string) string {
			os.WriteFile(cachedir.Path(dir, EntryMarksFile), []byte(entryMarksMagic+"\x03\xff\x81"), 0o644)
			return dir
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, ids, refs := outsideTree(t)
			entryMarks(t, dir, cfg, ids, refs)
			plant(t, dir)
			dir = c.op(t, dir)
			got := entryMarks(t, dir, cfg, ids, refs)
			// What a session without the cache finds.
			os.Remove(cachedir.Path(dir, EntryMarksFile))
			want := entryMarks(t, dir, cfg, ids, refs)
			if got["ADR-002"] == "planted" || !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: marks %v, want %v (the cached answer believed)", c.name, got, want)
			}
		})
	}
}

// Whether an answer outside git is kept does not depend on the clock (a
// tree just written is kept like an old one), and a cited line's file is
// counted again at every read: a rewrite its stat cannot show — the same
// size within the same tick, or through a symlink whose target changed —
// still has the marks computed again.
func TestEntryMarksOutsideGitRecounts(t *testing.T) {
	if localIdentity(t.TempDir()) == "" {
		t.Skip("no inode numbers: nothing is cached here")
	}
	cfg := config.Default().Staleness
	kept := func(dir string) bool {
		_, err := os.Lstat(cachedir.Path(dir, EntryMarksFile))
		return err == nil
	}
	for _, link := range []bool{false, true} {
		dir, ids, refs := outsideTree(t)
		cited := filepath.Join(dir, "src/a.go")
		if link {
			os.Rename(cited, filepath.Join(dir, "src/real.go"))
			os.Symlink("real.go", cited)
			cited = filepath.Join(dir, "src/real.go")
		}
		writeFile(t, cited, "a\nb\nc\n") // just now
		entryMarks(t, dir, cfg, ids, refs)
		if !kept(dir) {
			t.Fatalf("link %v: the answer is not kept", link)
		}
		plant(t, dir)
		fi, _ := os.Stat(cited)
		if err := os.WriteFile(cited, []byte("abcde\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(cited, fi.ModTime(), fi.ModTime())
		got := entryMarks(t, dir, cfg, ids, refs)
		want := map[string]string{"ADR-001": "src/gone.go", "ADR-002": "src/a.go:2"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("link %v: marks %v, want %v (the cached answer believed)", link, got, want)
		}
	}
}

// A cited line's file that cannot be counted (a symlink that leaves the
// root counts -1, as a missing file does) and is then removed, in a
// directory the listing skips (node_modules: only the way to it is
// recorded): the marks are computed again, since it was there and is not.
func TestEntryMarksOutsideGitUncountedRemoved(t *testing.T) {
	if localIdentity(t.TempDir()) == "" {
		t.Skip("no inode numbers: nothing is cached here")
	}
	cfg := config.Default().Staleness
	dir, ids, refs := outsideTree(t)
	refs["ADR-002"] = []Ref{{Path: "node_modules/pkg/a.go", Raw: "node_modules/pkg/a.go:2", Line: 2}}
	outside := filepath.Join(t.TempDir(), "a.go")
	writeFile(t, outside, "a\nb\nc\n")
	cited := filepath.Join(dir, "node_modules/pkg/a.go")
	os.MkdirAll(filepath.Dir(cited), 0o755)
	if err := os.Symlink(outside, cited); err != nil {
		t.Fatal(err)
	}
	age(t, dir)
	entryMarks(t, dir, cfg, ids, refs)
	plant(t, dir)
	os.Remove(cited)
	got := entryMarks(t, dir, cfg, ids, refs)
	os.Remove(cachedir.Path(dir, EntryMarksFile))
	if want := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] == "planted" || !reflect.DeepEqual(got, want) {
		t.Fatalf("marks %v, want %v (the cached answer believed)", got, want)
	}
}

// An answer outside git computed while the tree was new keeps its
// directories as racy (their stat too recent to vouch for their names):
// they are listed at the next read, and once their names are found the
// same with a stat old enough, kept with it — the read after that stats
// them instead of listing them (git refreshes its index's racily clean
// entries the same way). A directory changed after that is still seen.
func TestEntryMarksOutsideGitSettlesRacyDirectories(t *testing.T) {
	if localIdentity(t.TempDir()) == "" {
		t.Skip("no inode numbers: nothing is cached here")
	}
	cfg := config.Default().Staleness
	dir, ids, refs := outsideTree(t)
	src := filepath.Join(dir, "src")
	stamps := func() map[string]pathStamp {
		t.Helper()
		f, ok := readEntryMarksFile(dir)
		if !ok {
			t.Fatal("no cache written")
		}
		out := map[string]pathStamp{}
		for _, s := range f.Tree {
			if s.Kind == stampList {
				out[s.Path] = s
			}
		}
		return out
	}
	// The tree just written, as a copy or an unpacked archive is.
	now := time.Now()
	for _, p := range []string{src, filepath.Join(dir, "docs"), dir} {
		os.Chtimes(p, now, now)
	}
	entryMarks(t, dir, cfg, ids, refs)
	if s, ok := stamps()[src]; !ok || !s.Racy {
		t.Fatalf("src's stamp %+v: want it listed and racy", s)
	}
	plant(t, dir)
	// Read again within the racy window: listed, still racy.
	if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("the cache is not read: %v", got)
	}
	if s := stamps()[src]; !s.Racy {
		t.Fatalf("src kept as settled within the racy window: %+v", s)
	}
	age(t, dir) // as it is a session later
	if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("the cache is not read: %v", got)
	}
	for p, s := range stamps() {
		if s.Racy || s.Stat != stampOf(p) {
			t.Errorf("%s: stamp %+v after a read with its names the same and an old stat: want it settled, with the stat now %+v", p, s, stampOf(p))
		}
	}
	if got := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("the settled cache is not read: %v", got)
	}
	writeFile(t, filepath.Join(dir, "src/gone.go"), "package src\n")
	got := entryMarks(t, dir, cfg, ids, refs)
	os.Remove(cachedir.Path(dir, EntryMarksFile))
	if want := entryMarks(t, dir, cfg, ids, refs); got["ADR-002"] == "planted" || !reflect.DeepEqual(got, want) {
		t.Fatalf("marks %v, want %v (the settled answer believed after src changed)", got, want)
	}
}

// The entry marks' cache is read from a file anyone with write access to
// the clone can plant: whatever its bytes, EntryMarks never panics and
// never fails for them (a file that does not decode, or holds another
// checkout's or another key's answer, is computed again).
func FuzzEntryMarksCache(f *testing.F) {
	f.Add([]byte(entryMarksMagic + "garbage"))
	f.Add([]byte(entryMarksMagic + "\x03\xff\x81"))
	f.Add([]byte{})
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("git not installed")
	}
	dir := f.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"-c", "user.email=t@x", "-c", "user.name=t", "commit", "-q", "--allow-empty", "-m", "one"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir, cmd.Env = dir, append(gitEnv(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	os.MkdirAll(filepath.Join(dir, ".memory"), 0o755)
	cfg := config.Default().Staleness
	ids := []string{"ADR-001"}
	refs := map[string][]Ref{"ADR-001": {{Path: "src/gone.go", Raw: "src/gone.go"}}}
	if _, _, err := EntryMarks(dir, cfg, ids, refs); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(cachedir.Path(dir, EntryMarksFile)); err == nil {
		f.Add(b)
	}
	// Outside git, where the file also names the paths to stat and the
	// directories to list.
	tree := filepath.Join(f.TempDir(), "tree")
	os.MkdirAll(filepath.Join(tree, "src"), 0o755)
	os.MkdirAll(filepath.Join(tree, ".memory"), 0o755)
	os.WriteFile(filepath.Join(tree, "src", "a.go"), []byte("package src\n"), 0o644)
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{filepath.Join(tree, "src", "a.go"), filepath.Join(tree, "src"), tree} {
		os.Chtimes(p, old, old)
	}
	if _, _, err := EntryMarks(tree, cfg, ids, refs); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(cachedir.Path(tree, EntryMarksFile)); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, d := range []string{dir, tree} {
			os.WriteFile(cachedir.Path(d, EntryMarksFile), data, 0o644)
			if _, _, err := EntryMarks(d, cfg, ids, refs); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// The entry marks' file reads back as written, in git (no tree) and
// outside it (a tree, even an empty one); a kind no version wrote, a
// line count out of range or an id written twice is refused.
func TestEntryMarksCodec(t *testing.T) {
	stamp := pathStamp{Path: "/r/src", Kind: stampList, Stat: statStamp{Stat: statcache.Stat{Size: 4096, Mtime: 1, Ctime: -2, Ino: 1 << 40}, Type: 0o40001},
		Names: [32]byte{7}, Racy: true}
	for _, want := range []entryMarksCache{
		{Local: "dev:ino", Key: "k", Marks: map[string]string{}},
		{Local: "l", Key: "k", Ignore: []ignoreDep{{Name: "/r/.gitignore", Present: true, Sum: [32]byte{1}}, {Name: "/r/.git/info/exclude"}},
			Marks: map[string]string{"ADR-001": "src/old.go", "PF-002": "docs/x.md:3"}},
		{Local: "l", Key: "k", Marks: map[string]string{}, Tree: []pathStamp{}},
		{Local: "l", Key: "k", Marks: map[string]string{"ADR-001": "a.go"}, Tree: []pathStamp{stamp,
			{Path: "/r/src/a.go", Kind: stampLines, Rel: "src/a.go", Lines: 120}, {Path: "/r", Kind: stampWay}, {Path: "/r/b.go", Kind: stampPresence}}},
	} {
		body, ok := codec.Unseal(encodeEntryMarks(&want), entryMarksMagic)
		if !ok {
			t.Fatal("the file as written is refused")
		}
		got, ok := decodeEntryMarks(body)
		if !ok || !reflect.DeepEqual(got, want) {
			t.Fatalf("read back\n%+v\nwant\n%+v", got, want)
		}
	}
	for name, bad := range map[string]entryMarksCache{
		"kind":  {Marks: map[string]string{}, Tree: []pathStamp{{Path: "/r", Kind: stampList + 1}}},
		"lines": {Marks: map[string]string{}, Tree: []pathStamp{{Path: "/r", Kind: stampLines, Lines: 1 << 40}}},
	} {
		body, _ := codec.Unseal(encodeEntryMarks(&bad), entryMarksMagic)
		if _, ok := decodeEntryMarks(body); ok {
			t.Fatalf("a stamp with a bad %s is read", name)
		}
	}
	e := codec.NewEncoder(entryMarksMagic, 0)
	e.String("l")
	e.String("k")
	e.Uvarint(0)
	e.Uvarint(2)
	for range 2 {
		e.String("ADR-001")
		e.String("a.go")
	}
	e.Bool(false)
	e.Uvarint(0)
	body, _ := codec.Unseal(e.Sealed(), entryMarksMagic)
	if _, ok := decodeEntryMarks(body); ok {
		t.Fatal("an id written twice is read")
	}
}
