package staleness

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
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
	m, err := EntryMarks(dir, cfg, ids, refs)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// plant rewrites the cached answer (its key kept) so that a read of the
// cache shows: ADR-002 marked "planted".
func plant(t *testing.T, dir string) {
	t.Helper()
	var f entryMarksCache
	if !cachedir.ReadGob(dir, EntryMarksFile, entryMarksMagic, maxEntryMarks, &f) {
		t.Fatal("no cache written")
	}
	f.Marks = map[string]string{"ADR-002": "planted"}
	if err := cachedir.WriteGob(dir, EntryMarksFile, entryMarksMagic, &f); err != nil {
		t.Fatal(err)
	}
}

var wantMarks = map[string]string{"ADR-001": "src/old.go"}

// The session-start index's marks are read from the cache while HEAD, the
// index, the references, the configuration, the ignore files and the
// checkout are those they were computed for; any of them changed, they are
// computed again (the planted answer is not believed).
func TestEntryMarksCache(t *testing.T) {
	cfg := config.Default().Staleness
	r, ids, refs := marksRepo(t)
	if got := entryMarks(t, r.dir, cfg, ids, refs); !reflect.DeepEqual(got, wantMarks) {
		t.Fatalf("marks %v, want %v", got, wantMarks)
	}
	plant(t, r.dir)
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
			var f entryMarksCache
			cachedir.ReadGob(r.dir, EntryMarksFile, entryMarksMagic, maxEntryMarks, &f)
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
			r, ids, refs := marksRepo(t)
			entryMarks(t, r.dir, cfg, ids, refs)
			plant(t, r.dir)
			dir, cfg, refs := c.op(t, r)
			got := entryMarks(t, dir, cfg, ids, refs)
			if !reflect.DeepEqual(got, wantMarks) {
				t.Fatalf("%s: marks %v, want %v (the cached answer believed)", c.name, got, wantMarks)
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

// Outside git nothing is cached: the working tree, which the answer then
// depends on, has no key.
func TestEntryMarksNotCachedOutsideGit(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/a.go"), "package src\n")
	refs := map[string][]Ref{"ADR-001": {{Path: "src/gone.go", Raw: "src/gone.go"}}, "ADR-002": {{Path: "src/a.go", Raw: "src/a.go"}}}
	got := entryMarks(t, dir, config.Default().Staleness, []string{"ADR-001", "ADR-002"}, refs)
	if got["ADR-001"] != "src/gone.go" || got["ADR-002"] != "" {
		t.Fatalf("marks %v", got)
	}
	if _, err := os.Lstat(cachedir.Path(dir, EntryMarksFile)); err == nil {
		t.Fatal("a cache written outside git")
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
	cfg := config.Default().Staleness
	ids := []string{"ADR-001"}
	refs := map[string][]Ref{"ADR-001": {{Path: "src/gone.go", Raw: "src/gone.go"}}}
	if _, err := EntryMarks(dir, cfg, ids, refs); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(cachedir.Path(dir, EntryMarksFile)); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		os.WriteFile(cachedir.Path(dir, EntryMarksFile), data, 0o644)
		if _, err := EntryMarks(dir, cfg, ids, refs); err != nil {
			t.Fatal(err)
		}
	})
}
