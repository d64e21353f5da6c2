package staleness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// cacheRun is one run of the check as `stale` does it: Open, Scan (with
// --explain, so every reference's resolution is compared too), and, when
// save is set, SaveCache. It returns the report as JSON.
func cacheRun(t *testing.T, root string, mode Mode, cfg config.Staleness, log *manifest.Log, save bool) (string, *Checker) {
	t.Helper()
	c, err := Open(root, mode, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	opts := OptionsFor(cfg)
	opts.Explain = true
	rep, err := Scan(root, c, log, opts)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("checker error: %v", err)
	}
	if save {
		saveSkips(t, c)
		if err := c.SaveCache(); err != nil {
			t.Fatalf("SaveCache: %v", err)
		}
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), c
}

// saveSkips reports whether SaveCache would return without encoding the
// cache (cacheState.unchanged), and fails t when it would while the file
// read does not hold everything a save would write: the shortcut may
// leave entries this run no longer used (the next save that writes drops
// them), never miss one.
func saveSkips(t testing.TB, c *Checker) bool {
	t.Helper()
	hist := c.saveHistory()
	skip := c.cache.enabled && c.cache.unchanged(c.err == nil, hist)
	if skip {
		head := len(cacheHeader(c.cache.local))
		table, body := c.encodeCache(hist)
		would, err := decodeCacheFile(append(table, body...))
		if err != nil {
			t.Fatalf("the cache a save would write does not decode: %v", err)
		}
		data, err := os.ReadFile(c.cache.file)
		if err != nil || sha256.Sum256(data) != c.cache.oldSum {
			t.Fatalf("the cache file is not the one read (%v)", err)
		}
		read, err := decodeCacheFile(data[head:])
		if err != nil {
			t.Fatalf("the cache read does not decode: %v", err)
		}
		if why := covers(read, would); why != "" {
			t.Errorf("SaveCache would skip a save that changes the cache: %s", why)
		}
	}
	return skip
}

// covers says what the cache a save would write (would) holds that the
// file read does not ("" when nothing): the same options, history and
// sections, each extraction, outcome and line check of would in read with
// the same value.
func covers(read, would cacheFile) string {
	if read.Local != would.Local || read.Opts != would.Opts {
		return "other identity or options"
	}
	if fmt.Sprintf("%+v", read.History) != fmt.Sprintf("%+v", would.History) {
		return "another history record"
	}
	ext := map[[32]byte]string{}
	for _, e := range read.Extract {
		ext[e.Key] = fmt.Sprintf("%+v", e.Refs)
	}
	for _, e := range would.Extract {
		if got, ok := ext[e.Key]; !ok || got != fmt.Sprintf("%+v", e.Refs) {
			return fmt.Sprintf("extraction %x", e.Key[:4])
		}
	}
	if len(read.Trees) != len(would.Trees) {
		return "other sections"
	}
	for i, w := range would.Trees {
		r := read.Trees[i]
		if r.Mode != w.Mode || r.Tree != w.Tree || r.HasMD != w.HasMD ||
			fmt.Sprintf("%+v %q", r.Ignore, r.MD) != fmt.Sprintf("%+v %q", w.Ignore, w.MD) {
			return fmt.Sprintf("section of mode %d", w.Mode)
		}
		outs := map[string]bool{}
		for _, o := range r.Outcomes {
			outs[fmt.Sprintf("%+v", o)] = true
		}
		for _, o := range w.Outcomes {
			if !outs[fmt.Sprintf("%+v", o)] {
				return fmt.Sprintf("outcome %+v", o)
			}
		}
		eofs := map[cachedEOF]bool{}
		for _, e := range r.EOF {
			eofs[e] = true
		}
		for _, e := range w.EOF {
			if !eofs[e] {
				return fmt.Sprintf("line check %+v", e)
			}
		}
	}
	return ""
}

// compareCached runs the check with the cache left by earlier runs, again
// with the cache just written, and without any cache, and wants the same
// report from all three. It leaves the cache as the first run wrote it.
func compareCached(t *testing.T, root string, mode Mode, cfg config.Staleness, log *manifest.Log, what string) {
	t.Helper()
	first, _ := cacheRun(t, root, mode, cfg, log, true)
	second, c := cacheRun(t, root, mode, cfg, log, false)
	if !c.cache.treeHit {
		t.Errorf("%s: mode %d: a second run on the same trees did not use the cached outcomes", what, mode)
	}
	if !saveSkips(t, c) {
		t.Errorf("%s: mode %d: a second run on the same trees would encode the cache again", what, mode)
	}
	if err := c.SaveCache(); err != nil {
		t.Fatal(err)
	}
	if mode == Staged && !c.idxLazy {
		t.Errorf("%s: a fully cached staged run decoded the index", what)
	}
	file := cachedir.Path(root, CacheName)
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: cache not written: %v", what, err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	fresh, _ := cacheRun(t, root, mode, cfg, log, false)
	if err := os.WriteFile(file, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if first != fresh {
		t.Errorf("%s: mode %d: with the previous cache\n%s\nwithout a cache\n%s", what, mode, first, fresh)
	}
	if second != fresh {
		t.Errorf("%s: mode %d: with its own cache\n%s\nwithout a cache\n%s", what, mode, second, fresh)
	}
}

// A random repository under random edits, commits, renames, staged
// changes, ignore-rule changes and knowledge edits: after every step the
// check with the cache (as earlier steps left it, and as this step wrote
// it) reports exactly what it reports without one, against HEAD and
// against the index.
func TestCacheNeverChangesAResult(t *testing.T) {
	seeds := []int64{1, 2, 3}
	steps := 14
	if testing.Short() {
		seeds, steps = seeds[:1], 8
	}
	for _, seed := range seeds {
		// The default depth, and one the history outgrows (truncated
		// walks, a cached walk extended past the depth).
		for _, depth := range []int{0, 3} {
			t.Run(fmt.Sprintf("%d/depth%d", seed, depth), func(t *testing.T) {
				cacheProperty(t, seed, steps, depth)
			})
		}
	}
}

func cacheProperty(t *testing.T, seed int64, steps, depth int) {
	rng := rand.New(rand.NewSource(seed))
	r := newRepo(t)
	dirs := []string{"src", "src/api", "lib", "cmd/tool", "docs"}
	exts := []string{"go", "ts", "md", "py"}
	var files []string
	lines := func() string {
		var b strings.Builder
		for i := 0; i < 1+rng.Intn(12); i++ {
			fmt.Fprintf(&b, "line %d\n", rng.Intn(1000))
		}
		return b.String()
	}
	newName := func() string {
		return fmt.Sprintf("%s/f%d.%s", dirs[rng.Intn(len(dirs))], rng.Intn(40), exts[rng.Intn(len(exts))])
	}
	for i := 0; i < 12; i++ {
		p := newName()
		r.write(p, lines())
		files = append(files, p)
	}
	// References: paths as they are now (full, bare, partial, with a
	// line), names that never were files, ignored build outputs.
	refText := func() string {
		var parts []string
		for i := 0; i < 1+rng.Intn(4); i++ {
			p := files[rng.Intn(len(files))]
			switch rng.Intn(6) {
			case 0:
				parts = append(parts, filepath.Base(p))
			case 1:
				parts = append(parts, p+fmt.Sprintf(":%d", 1+rng.Intn(14)))
			case 2:
				if i := strings.Index(p, "/"); i >= 0 {
					parts = append(parts, p[i+1:])
				}
			case 3:
				parts = append(parts, fmt.Sprintf("never%d.go", rng.Intn(5)))
			case 4:
				parts = append(parts, fmt.Sprintf("dist/out%d.js", rng.Intn(3)))
			default:
				parts = append(parts, "`"+p+"`")
			}
		}
		return "see " + strings.Join(parts, " and ")
	}
	knowledge := func() {
		var b strings.Builder
		b.WriteString("# Architectural Decisions\n\n")
		for i := 1; i <= 4; i++ {
			fmt.Fprintf(&b, "## ADR-%03d: Decision %d\n\n- **Status**: Accepted\n- **Context**: %s\n\n", i, i, refText())
		}
		r.write(".memory/knowledge/decisions.md", b.String())
		r.write("docs/KNOWLEDGE.md", "# Notes\n\n"+refText()+"\n\n## More\n\n"+refText()+"\n")
	}
	var obs []string
	addObs := func() {
		obs = append(obs, obsLine(fmt.Sprintf("obs_%d", len(obs)), "created", refText(), refText()))
	}
	for i := 0; i < 6; i++ {
		addObs()
	}
	r.write(".gitignore", "dist/\n")
	knowledge()
	r.commit("init")

	cfg := config.Default().Staleness
	if depth > 0 {
		cfg.RenameDepth = depth
	}
	for step := 0; step < steps; step++ {
		var what string
		switch op := rng.Intn(10); op {
		case 0: // rename and commit
			i := rng.Intn(len(files))
			to := newName()
			if _, err := os.Stat(filepath.Join(r.dir, to)); err == nil {
				continue
			}
			r.mv(files[i], to)
			r.commit("rename")
			what = "rename " + files[i] + " -> " + to
			files[i] = to
		case 1: // delete and commit
			if len(files) < 4 {
				continue
			}
			i := rng.Intn(len(files))
			r.git("rm", "-q", files[i])
			r.commit("delete")
			what = "delete " + files[i]
			files = append(files[:i], files[i+1:]...)
		case 2: // staged rename, not committed
			i := rng.Intn(len(files))
			to := newName()
			if _, err := os.Stat(filepath.Join(r.dir, to)); err == nil {
				continue
			}
			r.mv(files[i], to)
			what = "staged rename " + files[i] + " -> " + to
			files[i] = to
		case 3: // same size, other line count, staged
			i := rng.Intn(len(files))
			b, err := os.ReadFile(filepath.Join(r.dir, files[i]))
			if err != nil {
				t.Fatal(err)
			}
			nb := bytes.ReplaceAll(b, []byte("\n"), []byte(" "))
			nb[len(nb)-1] = '\n'
			r.write(files[i], string(nb))
			r.git("add", files[i])
			what = "staged same-size edit of " + files[i]
		case 4: // ignore rules change in the working tree only
			rules := []string{"dist/\n", "", "dist/\n*.py\n", "never*.go\n"}
			r.write(".gitignore", rules[rng.Intn(len(rules))])
			what = "edit .gitignore"
		case 5: // the knowledge changes
			knowledge()
			what = "edit knowledge"
		case 6: // observations come
			addObs()
			what = "add observation"
		case 7: // a branch renames, main deletes, merged
			i := rng.Intn(len(files))
			to := newName()
			if _, err := os.Stat(filepath.Join(r.dir, to)); err == nil {
				continue
			}
			r.commit("pending")
			r.git("checkout", "-q", "-b", fmt.Sprintf("b%d", step))
			r.mv(files[i], to)
			r.commit("branch rename")
			r.git("checkout", "-q", "main")
			r.write(fmt.Sprintf("lib/m%d.go", step), lines())
			files = append(files, fmt.Sprintf("lib/m%d.go", step))
			r.commit("main work")
			r.git("merge", "-q", "--no-edit", fmt.Sprintf("b%d", step))
			what = "merge of a branch renaming " + files[i]
			files[i] = to
		case 8: // a new file staged
			p := newName()
			r.write(p, lines())
			r.git("add", p)
			files = append(files, p)
			what = "stage new " + p
		case 9: // a file touched, git status: the index's stat data only
			p := files[rng.Intn(len(files))]
			later := time.Now().Add(time.Duration(1+step) * time.Second)
			if err := os.Chtimes(filepath.Join(r.dir, p), later, later); err != nil {
				continue // removed from the work tree by a step
			}
			r.git("status", "--porcelain")
			what = "touch " + p + ", git status"
		}
		log := manifest.ParseLog([]byte(strings.Join(obs, "\n") + "\n"))
		for _, mode := range []Mode{Auto, Staged} {
			compareCached(t, r.dir, mode, cfg, log, fmt.Sprintf("step %d (%s)", step, what))
		}
		comparePreCommit(t, r.dir, cfg, log, fmt.Sprintf("step %d (%s)", step, what))
	}
}

// comparePreCommit: the pre-commit check with the cache the other modes
// left (it takes the references extracted before) reports exactly what it
// reports without one, and leaves the cache as it was.
func comparePreCommit(t *testing.T, root string, cfg config.Staleness, log *manifest.Log, what string) {
	t.Helper()
	file := cachedir.Path(root, CacheName)
	saved, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%s: no cache: %v", what, err)
	}
	with, c := cacheRun(t, root, PreCommit, cfg, log, true)
	if len(c.cache.extOld.list) == 0 || c.cache.extNew {
		t.Errorf("%s: the pre-commit check extracted references the cache held", what)
	}
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, saved) {
		t.Errorf("%s: the pre-commit check changed the cache (%v)", what, err)
	}
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	without, _ := cacheRun(t, root, PreCommit, cfg, log, false)
	if err := os.WriteFile(file, saved, 0o644); err != nil {
		t.Fatal(err)
	}
	if with != without {
		t.Errorf("%s: pre-commit with the cache\n%s\nwithout\n%s", what, with, without)
	}
}

// A cache that is corrupt, truncated, from another version or not a
// regular file is ignored: the report is the one of a run without it.
func TestCacheDamagedIsIgnored(t *testing.T) {
	r, log := scanRepo(t)
	cfg := config.Default().Staleness
	want, _ := cacheRun(t, r.dir, Auto, cfg, log, true)
	file := cachedir.Path(r.dir, CacheName)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		"truncated":     good[:len(good)/2],
		"garbage":       append([]byte(cacheHeader(localIdentity(r.dir, filepath.Join(r.dir, ".git")))), bytes.Repeat([]byte{0xff}, 200)...),
		"other version": append([]byte("learnwatch staleness cache 1\n"), good[len(cacheMagic):]...),
		"other clone":   append([]byte(cacheHeader("1:2;3:4;")), good[len(cacheHeader(localIdentity(r.dir, filepath.Join(r.dir, ".git")))):]...),
		"empty":         nil,
	} {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, c := cacheRun(t, r.dir, Auto, cfg, log, true)
		if got != want {
			t.Errorf("%s cache: got\n%s\nwant\n%s", name, got, want)
		}
		if c.cache.treeHit {
			t.Errorf("%s cache: outcomes taken from it", name)
		}
		if now, _ := os.ReadFile(file); !bytes.Equal(now, good) {
			t.Errorf("%s cache: not rewritten as a full run writes it", name)
		}
	}
	// A symlink where the cache should be is not followed.
	elsewhere := filepath.Join(t.TempDir(), "x")
	if err := os.WriteFile(elsewhere, good, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(file)
	if err := os.Symlink(elsewhere, file); err != nil {
		t.Skip("no symlinks")
	}
	c, err := Open(r.dir, Auto, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.cache.treeHit || c.cache.oldRead {
		t.Error("the cache was read through a symlink")
	}
}

// statFile stats file, which must be there.
func statFile(t *testing.T, file string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// rewritten reports whether now is not the file was as before: another
// file, or the same one written since.
func rewritten(was, now os.FileInfo) bool {
	return !os.SameFile(was, now) || !was.ModTime().Equal(now.ModTime())
}

// A run where nothing changed writes nothing; one whose cache was used
// but whose trees changed rewrites it.
func TestCacheUnchangedRunWritesNothing(t *testing.T) {
	r, log := scanRepo(t)
	cfg := config.Default().Staleness
	cacheRun(t, r.dir, Auto, cfg, log, true)
	file := cachedir.Path(r.dir, CacheName)
	fi1 := statFile(t, file)
	if gi, err := os.ReadFile(filepath.Join(cachedir.Dir(r.dir), ".gitignore")); err != nil || !strings.Contains(string(gi), "*") {
		t.Fatalf("cache directory without its .gitignore: %q %v", gi, err)
	}
	if out := r.git("status", "--porcelain", "--ignored=no", ".memory/.cache"); out != "" {
		t.Fatalf("git sees the cache: %s", out)
	}
	cacheRun(t, r.dir, Auto, cfg, log, true)
	fi2 := statFile(t, file)
	if rewritten(fi1, fi2) {
		t.Error("an unchanged run rewrote the cache")
	}
	r.write("src/new.go", "x\n")
	r.commit("new")
	_, c := cacheRun(t, r.dir, Auto, cfg, log, true)
	if c.cache.treeHit {
		t.Error("outcomes of the previous HEAD were used")
	}
	fi3 := statFile(t, file)
	if os.SameFile(fi1, fi3) {
		t.Error("a run on a new HEAD did not rewrite the cache")
	}
}

// A save that cannot tell from what the run did that the file holds it
// all (cacheState.unchanged) encodes the file and writes nothing when the
// bytes are the file's, as read or as last written: the bytes are compared
// through their sum, not held.
func TestCacheSameBytesWritesNothing(t *testing.T) {
	r, log := scanRepo(t)
	cfg := config.Default().Staleness
	cacheRun(t, r.dir, Auto, cfg, log, true)
	file := cachedir.Path(r.dir, CacheName)
	fi1 := statFile(t, file)
	_, c := cacheRun(t, r.dir, Auto, cfg, log, false)
	for i, what := range []string{"as read", "as written"} {
		c.cache.computed = true // as if an outcome had been worked out anew
		if c.cache.unchanged(c.err == nil, c.saveHistory()) {
			t.Fatal("the save is still skipped without an encode")
		}
		if err := c.SaveCache(); err != nil {
			t.Fatal(err)
		}
		fi2 := statFile(t, file)
		if rewritten(fi1, fi2) {
			t.Fatalf("a save of the same bytes (the file %s) rewrote the cache", what)
		}
		if i == 0 {
			// Written once more (another file, the same bytes), it is the
			// file last written that is compared.
			c.cache.oldSum[0]++
			if err := c.SaveCache(); err != nil {
				t.Fatal(err)
			}
			if fi1 = statFile(t, file); os.SameFile(fi1, fi2) {
				t.Fatal("a save of other bytes than the file's wrote nothing")
			}
		}
	}
}

// The pre-commit hook neither reads nor writes the cache.
func TestCachePreCommitWritesNothing(t *testing.T) {
	r, log := scanRepo(t)
	cfg := config.Default().Staleness
	c, err := Open(r.dir, PreCommit, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(r.dir, c, log, OptionsFor(cfg)); err != nil {
		t.Fatal(err)
	}
	if err := c.SaveCache(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(cachedir.Dir(r.dir)); err == nil {
		t.Error("the pre-commit check created the cache directory")
	}
}

// In a linked worktree the index is the worktree's own: staging there
// changes what a cached run reports, and the cache lives in that
// worktree's .memory.
func TestCacheLinkedWorktree(t *testing.T) {
	r, log := scanRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	r.git("worktree", "add", "-q", "-b", "side", wt)
	cfg := config.Default().Staleness
	side := &gitRepo{t: t, dir: wt}
	compareCached(t, wt, Staged, cfg, log, "fresh worktree")
	before, _ := cacheRun(t, wt, Staged, cfg, log, true)
	side.git("rm", "-q", "src/auth/login.go")
	compareCached(t, wt, Staged, cfg, log, "deletion staged in the worktree")
	after, _ := cacheRun(t, wt, Staged, cfg, log, true)
	if before == after || !strings.Contains(after, `"ref":"src/auth/login.go","reason":"missing"`) {
		t.Errorf("the worktree's staged deletion is not reported:\n%s", after)
	}
	if _, err := os.Stat(cachedir.Path(wt, CacheName)); err != nil {
		t.Errorf("no cache in the worktree: %v", err)
	}
}

// ScanTreeCached reports what ScanTree reports and leaves the cache a
// second run uses; the session-start marks never read it.
func TestScanTreeCached(t *testing.T) {
	r, log := scanRepo(t)
	cfg := config.Default().Staleness
	want, err := ScanTree(r.dir, Auto, cfg, log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(cachedir.Path(r.dir, CacheName)); err == nil {
		t.Fatal("ScanTree wrote the cache")
	}
	for i := 0; i < 2; i++ {
		got, cacheErr, err := ScanTreeCached(context.Background(), r.dir, Auto, cfg, log)
		if err != nil || cacheErr != nil {
			t.Fatal(err, cacheErr)
		}
		if g, w := fmt.Sprint(got), fmt.Sprint(want); g != w {
			t.Errorf("run %d: %s, want %s", i, g, w)
		}
	}
	c, err := Open(r.dir, Auto, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !c.cache.treeHit {
		t.Error("ScanTreeCached left no usable cache")
	}
	c, err = openChecker(r.dir, Auto, cfg, false)
	if err != nil {
		t.Fatal(err)
	}
	if c.cache.enabled || len(c.outcomes) > 0 {
		t.Error("a checker without the cache read it")
	}
}

// A cloned repository may carry a committed .memory/.cache: a cache
// written for another clone is never used, whatever it says about the
// same HEAD.
func TestCacheFromAnotherCloneIsIgnored(t *testing.T) {
	r, log := scanRepo(t)
	cfg := config.Default().Staleness
	cacheRun(t, r.dir, Auto, cfg, log, true)
	if _, c := cacheRun(t, r.dir, Auto, cfg, log, false); !c.cache.treeHit || c.cache.history == nil && c.hist.done {
		t.Fatal("the cache is not used where it was written")
	}
	r.git("add", "-f", ".memory/.cache")
	r.commit("commit the cache")
	cacheRun(t, r.dir, Auto, cfg, log, true) // the cache of the new HEAD
	r.commit("again")
	cacheRun(t, r.dir, Auto, cfg, log, true) // for the HEAD the clone gets
	clone := filepath.Join(t.TempDir(), "clone")
	r.git("clone", "-q", r.dir, clone)
	src, err := os.ReadFile(cachedir.Path(r.dir, CacheName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cachedir.Path(clone, CacheName), src, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Open(clone, Auto, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if c.cache.treeHit || c.cache.history != nil || c.cache.extOld.list != nil {
		t.Error("a cache copied from another clone was used")
	}
}

// FuzzCacheFile feeds the cache decoder arbitrary files — as found, and
// re-encoded as if this clone had written them, so the checks after
// decoding (history steps out of range, outcomes of other trees) are
// reached. The check must neither panic nor fail; a file as found (not
// this clone's) must not change the report.
func FuzzCacheFile(f *testing.F) {
	if _, err := exec.LookPath("git"); err != nil {
		f.Skip("git not installed")
	}
	dir := f.TempDir()
	gitIn := func(args ...string) {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(gitEnv(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			f.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q", "-b", "main")
	for name, content := range map[string]string{
		"src/a.go": body, "src/old.go": body, ".gitignore": "dist/\n",
		".memory/knowledge/decisions.md": "# D\n\n## ADR-001: A\n\n- **Status**: Accepted\n- **Context**: src/a.go:3, src/old.go, never.go, dist/x.js\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	gitIn("add", "-A")
	gitIn("commit", "-q", "-m", "init")
	gitIn("mv", "src/old.go", "src/new.go")
	gitIn("commit", "-q", "-m", "rename")
	cfg := config.Default().Staleness
	run := func(t testing.TB, save bool) string {
		c, err := Open(dir, Auto, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Scan(dir, c, nil, Options{Explain: true})
		if err != nil {
			t.Fatal(err)
		}
		if save {
			_ = c.SaveCache()
		}
		b, _ := json.Marshal(rep)
		return string(b)
	}
	file := cachedir.Path(dir, CacheName)
	os.Remove(file)
	want := run(f, true)
	good, err := os.ReadFile(file)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:len(good)/3])
	f.Add([]byte(cacheMagic))
	// The encoded cacheFile of the good file, for the re-headed runs.
	f.Add(good[bytes.IndexByte(good[len(cacheMagic):], '\n')+len(cacheMagic)+1:])
	local := localIdentity(dir, filepath.Join(dir, ".git"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(file, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if got := run(t, false); got != want {
			t.Errorf("a cache file not written here changed the report:\n%s\nwant\n%s", got, want)
		}
		// The same bytes after this clone's header: the decoder and the
		// checks after it are reached.
		head := cacheHeader(local)
		if err := os.WriteFile(file, append([]byte(head), data...), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, false)
		cf, err := decodeCacheFile(data)
		if err != nil {
			return
		}
		cf.Local = local
		if err := os.WriteFile(file, appendCacheFile([]byte(head), &cf), 0o644); err != nil {
			t.Fatal(err)
		}
		run(t, true) // must not panic
	})
}

// Ignore rules rewritten at the same size with the old mtime put back
// (cp -p, touch -r), and a knowledge file edited the same way: the cache
// is keyed on content, so the next run sees both.
func TestCacheSameSizeSameMtime(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)
	r.write(".gitignore", "dist/\n")
	r.write(".memory/knowledge/decisions.md", "# D\n\n## ADR-001: A\n\n- **Status**: Accepted\n- **Context**: dist/x.js and src/a.go:10\n")
	r.commit("init")
	cfg := config.Default().Staleness
	before, _ := cacheRun(t, r.dir, Auto, cfg, nil, true)
	if !strings.Contains(before, `"reason":"gitignored"`) {
		t.Fatalf("setup: %s", before)
	}
	rewrite := func(name, content string) {
		p := filepath.Join(r.dir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(content)) != fi.Size() {
			t.Fatalf("%s: not the same size", name)
		}
		writeFile(t, p, content)
		if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
			t.Fatal(err)
		}
	}
	rewrite(".gitignore", "dust/\n")
	rewrite(".memory/knowledge/decisions.md", "# D\n\n## ADR-001: A\n\n- **Status**: Accepted\n- **Context**: dist/x.js and src/a.go:11\n")
	compareCached(t, r.dir, Auto, cfg, nil, "same size, same mtime")
	after, _ := cacheRun(t, r.dir, Auto, cfg, nil, true)
	if strings.Contains(after, `"reason":"gitignored"`) || !strings.Contains(after, `"ref":"src/a.go:11","reason":"line-past-eof"`) {
		t.Errorf("the rewritten files were not seen:\n%s", after)
	}
}

// References that went away leave the cache: it holds what the last run
// used, not everything ever seen on these trees.
func TestCacheDropsWhatIsNoLongerUsed(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)
	r.write(".memory/knowledge/decisions.md", "# D\n\n## ADR-001: A\n\n- **Status**: Accepted\n- **Context**: src/a.go:3 and gone.go\n")
	r.commit("init")
	cfg := config.Default().Staleness
	cacheRun(t, r.dir, Auto, cfg, nil, true)
	r.write(".memory/knowledge/decisions.md", "# D\n\n## ADR-001: A\n\n- **Status**: Accepted\n- **Context**: src/a.go\n")
	cacheRun(t, r.dir, Auto, cfg, nil, true)
	_, c := cacheRun(t, r.dir, Auto, cfg, nil, false)
	if !c.cache.treeHit {
		t.Fatal("the cache was not used")
	}
	var keys []string
	for k := range c.outcomes {
		keys = append(keys, k.path)
	}
	if len(keys) != 1 || keys[0] != "src/a.go" || len(c.cache.eof) != 0 || len(c.cache.extOld.list) != 1 {
		t.Errorf("the cache holds outcomes %v, %d line checks, %d extractions; want src/a.go only", keys, len(c.cache.eof), len(c.cache.extOld.list))
	}
}

// Outside git only the extractions are cached, and no outcome is ever
// taken from the cache: a run that extracted nothing new returns from
// SaveCache without encoding; one that did, or whose options changed
// (even with nothing to extract), writes.
func TestCacheOutsideGitSkipsUnchangedSave(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/a.go"), body)
	writeFile(t, filepath.Join(dir, ".memory/knowledge/decisions.md"), decisions)
	obs := []string{obsLine("obs_a", "created", "see src/a.go:3 and src/gone.go")}
	log := func() *manifest.Log { return manifest.ParseLog([]byte(strings.Join(obs, "\n") + "\n")) }
	cfg := config.Default().Staleness
	file := cachedir.Path(dir, CacheName)
	run := func(cfg config.Staleness, wantSkip bool, what string) {
		t.Helper()
		_, c := cacheRun(t, dir, Auto, cfg, log(), false)
		if c.repo != nil {
			t.Fatal("the temp dir is inside a git repository")
		}
		if got := saveSkips(t, c); got != wantSkip {
			t.Errorf("%s: SaveCache skips encoding: %v, want %v", what, got, wantSkip)
		}
		before, _ := os.ReadFile(file)
		if err := c.SaveCache(); err != nil {
			t.Fatal(err)
		}
		after, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if wantSkip != bytes.Equal(before, after) {
			t.Errorf("%s: the cache was rewritten: %v, want %v", what, !bytes.Equal(before, after), !wantSkip)
		}
	}
	// extracted reports whether the cache file holds an extraction with a
	// reference to path.
	extracted := func(path string) bool {
		t.Helper()
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		_, c := cacheRun(t, dir, Auto, cfg, nil, false)
		cf, err := decodeCacheFile(data[len(cacheHeader(c.cache.local)):])
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range cf.Extract {
			for _, r := range e.Refs {
				if r.Path == path {
					return true
				}
			}
		}
		return false
	}
	run(cfg, false, "first run")
	run(cfg, true, "second run")
	obs = append(obs, obsLine("obs_b", "created", "lib/b.go"))
	run(cfg, false, "new observation")
	run(cfg, true, "again")
	obs = obs[:1]
	// What the file holds beyond what a run used is left until a save
	// has something to add.
	run(cfg, true, "observation gone")
	if !extracted("lib/b.go") {
		t.Error("observation gone: its extraction left the cache before a save had anything to add")
	}
	obs = append(obs, obsLine("obs_c", "created", "lib/c.go"))
	run(cfg, false, "another observation")
	if extracted("lib/b.go") || !extracted("lib/c.go") {
		t.Error("another observation: the save kept the extraction of an observation gone, or not the new one")
	}
	run(cfg, true, "again")
	other := cfg
	other.Extensions = []string{"go"}
	run(other, false, "other extensions")
	run(other, true, "again")

	// Nothing to extract at all: the options alone change the file.
	obs = nil
	os.Remove(filepath.Join(dir, ".memory/knowledge/decisions.md"))
	run(cfg, false, "empty memory")
	run(other, false, "empty memory, other extensions")
	run(other, true, "again")

	// A file in another order than a save writes is written again.
	_, c := cacheRun(t, dir, Auto, cfg, nil, false)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := decodeCacheFile(data[len(cacheHeader(c.cache.local)):])
	if err != nil {
		t.Fatal(err)
	}
	cf.Trees = []treeSection{{Mode: 5}, {Mode: 4}}
	if err := os.WriteFile(file, appendCacheFile([]byte(cacheHeader(c.cache.local)), &cf), 0o644); err != nil {
		t.Fatal(err)
	}
	run(cfg, false, "trees out of order")
	run(cfg, true, "again")

	// Extractions in another order than a save writes, or one twice: the
	// file is written again (taking them in order in memory must not make
	// the file read look canonical).
	obs = []string{obsLine("obs_a", "created", "lib/a.go"), obsLine("obs_b", "created", "lib/b.go"), obsLine("obs_c", "created", "lib/c.go")}
	run(cfg, false, "three observations")
	run(cfg, true, "again")
	for _, what := range []string{"extractions out of order", "an extraction twice"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := decodeCacheFile(data[len(cacheHeader(c.cache.local)):])
		if err != nil || len(cf.Extract) < 3 {
			t.Fatalf("%d extractions (%v), want 3", len(cf.Extract), err)
		}
		if what == "an extraction twice" {
			cf.Extract = append(cf.Extract, cf.Extract[1])
		} else {
			slices.Reverse(cf.Extract)
		}
		if err := os.WriteFile(file, appendCacheFile([]byte(cacheHeader(c.cache.local)), &cf), 0o644); err != nil {
			t.Fatal(err)
		}
		run(cfg, false, what)
		run(cfg, true, "again")
	}
}

// In git, a change of the extraction options alone (which the tree key
// does not hold) is saved even when nothing was extracted.
func TestCacheOptionsChangeSaved(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)
	r.commit("init")
	cfg := config.Default().Staleness
	cacheRun(t, r.dir, Auto, cfg, nil, true)
	other := cfg
	other.Extensions = []string{"go"}
	_, c := cacheRun(t, r.dir, Auto, other, nil, false)
	if !c.cache.treeHit {
		t.Fatal("the outcomes were not taken from the cache")
	}
	if saveSkips(t, c) {
		t.Error("SaveCache would keep the previous options")
	}
	if err := c.SaveCache(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cachedir.Path(r.dir, CacheName))
	if err != nil {
		t.Fatal(err)
	}
	cf, err := decodeCacheFile(data[len(cacheHeader(c.cache.local)):])
	if err != nil {
		t.Fatal(err)
	}
	if want := optionsKey(OptionsFor(other)); cf.Opts != want {
		t.Errorf("options saved %q, want %q", cf.Opts, want)
	}
	if _, c := cacheRun(t, r.dir, Auto, other, nil, false); !saveSkips(t, c) {
		t.Error("a run after it would encode the cache again")
	}
}

// newExtracts finds every key it was given and no other, keys that share
// their first eight bytes included (found by the whole key), and keeps
// them in the order given.
func TestNewExtracts(t *testing.T) {
	var e newExtracts
	key := func(prefix uint64, rest byte) [32]byte {
		var k [32]byte
		binary.BigEndian.PutUint64(k[:8], prefix)
		k[31] = rest
		return k
	}
	keys := [][32]byte{key(1, 1), key(1, 2), key(2, 1), key(1, 3), key(3, 0)}
	for i, k := range keys {
		if _, ok := e.find(k); ok {
			t.Fatalf("key %d found before it was added", i)
		}
		e.add(k, []Ref{{Path: fmt.Sprint(i)}})
	}
	for i, k := range keys {
		refs, ok := e.find(k)
		if !ok || len(refs) != 1 || refs[0].Path != fmt.Sprint(i) {
			t.Errorf("key %d: %v %v", i, refs, ok)
		}
		if e.list[i].Key != k {
			t.Errorf("entry %d is not the %dth added", i, i)
		}
	}
	for _, k := range [][32]byte{key(1, 4), key(2, 2), key(4, 1)} {
		if refs, ok := e.find(k); ok {
			t.Errorf("%x: found %v, never added", k[:8], refs)
		}
	}
}
