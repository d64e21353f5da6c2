package staleness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/config"
)

// gitRepo is a real git repository in a temp dir.
type gitRepo struct {
	t   *testing.T
	dir string
}

func newRepo(t *testing.T) *gitRepo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	r := &gitRepo{t: t, dir: t.TempDir()}
	r.git("init", "-q", "-b", "main")
	return r
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	cmd.Env = append(gitEnv(),
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// gitEnv is the environment without the GIT_* variables a surrounding
// hook may have set (GIT_DIR, GIT_INDEX_FILE).
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GIT_") {
			env = append(env, kv)
		}
	}
	return env
}

func (r *gitRepo) write(name, content string) {
	r.t.Helper()
	writeFile(r.t, filepath.Join(r.dir, name), content)
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mv is "git mv", creating the target directory.
func (r *gitRepo) mv(from, to string) {
	r.t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(r.dir, to)), 0o755); err != nil {
		r.t.Fatal(err)
	}
	r.git("mv", from, to)
}

func (r *gitRepo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("commit", "-q", "--allow-empty", "-m", msg)
}

func open(t *testing.T, root string, mode Mode) *Checker {
	t.Helper()
	c, err := Open(root, mode, config.Default().Staleness)
	if err != nil {
		t.Fatalf("Open(%s, %d): %v", root, mode, err)
	}
	return c
}

// check extracts refs from text and renders findings as
// "ref reason [-> renamed_to]".
func check(t *testing.T, c *Checker, text string) string {
	t.Helper()
	var out []string
	for _, f := range c.Check(ExtractText(text, Options{})) {
		s := f.Ref + " " + f.Reason
		if f.RenamedTo != "" {
			s += " -> " + f.RenamedTo
		}
		if f.Truncated {
			s += fmt.Sprintf(" searched %d truncated", f.Searched)
		}
		out = append(out, s)
	}
	if err := c.Err(); err != nil {
		t.Errorf("checker error: %v", err)
	}
	return strings.Join(out, "; ")
}

const body = "package x\n\n// a\n// b\n// c\n// d\n// e\n// f\n// g\n// h\n"

func TestCheckMissingAndLines(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)                  // 10 lines
	r.write("src/short.go", "one\ntwo\nthree") // 3 lines, no final newline
	r.write("src/empty.go", "")                // 0 lines
	r.commit("init")
	c := open(t, r.dir, Auto)
	if c.Source() != "HEAD" {
		t.Fatalf("source = %q", c.Source())
	}
	got := check(t, c, "src/a.go src/a.go:10 src/a.go:11 src/short.go:3 src/short.go:4 src/empty.go src/empty.go:1 src/nope.go src/nope.go:3 src")
	// src/nope.go never existed: not reported.
	want := "src/a.go:11 line-past-eof; src/short.go:4 line-past-eof; src/empty.go:1 line-past-eof"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCheckHeadIgnoresWorktree(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)
	r.commit("init")
	r.write("src/new.go", body) // untracked
	if err := os.Remove(filepath.Join(r.dir, "src/a.go")); err != nil {
		t.Fatal(err)
	}
	// src/new.go was never committed: not a reference to HEAD's code.
	if got := check(t, open(t, r.dir, Auto), "src/a.go src/new.go"); got != "" {
		t.Errorf("HEAD: %s", got)
	}
	if got := check(t, open(t, r.dir, Worktree), "src/a.go src/new.go"); got != "src/a.go missing" {
		t.Errorf("worktree: %s", got)
	}
}

func TestCheckRenames(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)
	r.write("src/gone.go", body+"// gone\n")
	r.write("src/chain1.go", body+"// chain\n")
	r.write("src/edited.go", body+"// edit\n")
	r.write("src/dead.go", body+"// dead\n")
	r.commit("init")
	r.mv("src/a.go", "lib/a.go")
	r.mv("src/chain1.go", "src/chain2.go")
	r.git("rm", "-q", "src/gone.go")
	r.mv("src/dead.go", "src/dead2.go")
	r.commit("move")
	r.mv("src/chain2.go", "pkg/chain3.go")
	r.mv("src/edited.go", "src/edited2.go")
	r.write("src/edited2.go", body+"// edit\n// and more\n")
	r.git("rm", "-q", "src/dead2.go")
	r.commit("move again")
	r.write("other.go", "x\n")
	r.commit("unrelated")

	got := check(t, open(t, r.dir, Auto), "src/a.go:3 src/gone.go src/chain1.go src/chain2.go src/edited.go src/dead.go")
	want := "src/a.go:3 missing -> lib/a.go:3; src/gone.go missing; src/chain1.go missing -> pkg/chain3.go; " +
		"src/chain2.go missing -> pkg/chain3.go; src/edited.go missing -> src/edited2.go; src/dead.go missing"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// The walk is bounded: with depth 1 only the newest commit is read.
	c, err := Open(r.dir, Auto, config.Staleness{RenameDepth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got := check(t, c, "src/a.go src/chain2.go"); got != "src/a.go missing searched 1 truncated; src/chain2.go missing searched 1 truncated" {
		t.Errorf("depth 1: %s", got)
	}
}

// A Checker reuses the history it has read: a second Check resolves a path
// removed in a commit the first one already walked past.
func TestCheckHistoryReuse(t *testing.T) {
	r := newRepo(t)
	r.write("a.go", body+"// a\n")
	r.write("b.go", body+"// b\n")
	r.commit("init")
	r.mv("a.go", "a2.go")
	r.commit("a")
	r.mv("b.go", "b2.go")
	r.commit("b")
	c := open(t, r.dir, Auto)
	if got := check(t, c, "a.go nothere.go"); got != "a.go missing -> a2.go" {
		t.Errorf("first: %s", got)
	}
	if got := check(t, c, "b.go"); got != "b.go missing -> b2.go" {
		t.Errorf("second: %s", got)
	}
}

func TestCheckStaged(t *testing.T) {
	r := newRepo(t)
	r.write("src/del.go", body+"// del\n")
	r.write("src/mv.go", body+"// mv\n")
	r.write("src/keep.go", body)
	r.write("src/empty.go", "")
	r.write("lib/pkg.tsx/index.js", body) // a directory named like a file
	r.commit("init")
	r.git("rm", "-q", "src/del.go")
	r.mv("src/mv.go", "src/moved.go")
	r.git("rm", "-q", "src/empty.go")
	r.write("src/other_empty.go", "")
	r.write("src/keep.go", "short\n")
	r.git("add", "-A")

	refs := "src/del.go src/mv.go src/keep.go:5 src/empty.go lib/pkg.tsx lib/pkg.ts"
	if got := check(t, open(t, r.dir, Auto), refs); got != "" {
		t.Errorf("HEAD sees staged changes: %s", got)
	}
	c := open(t, r.dir, Staged)
	if c.Source() != "index" {
		t.Fatalf("source = %q", c.Source())
	}
	want := "src/del.go missing; src/mv.go missing -> src/moved.go; src/keep.go:5 line-past-eof; src/empty.go missing"
	if got := check(t, c, refs); got != want {
		t.Errorf("staged:\n got %s\nwant %s", got, want)
	}
	// Deleted on disk but still staged: not missing from the index.
	if err := os.Remove(filepath.Join(r.dir, "src/moved.go")); err != nil {
		t.Fatal(err)
	}
	if got := check(t, open(t, r.dir, Staged), "src/moved.go"); got != "" {
		t.Errorf("unstaged deletion reported: %s", got)
	}
}

func TestCheckPreCommit(t *testing.T) {
	r := newRepo(t)
	r.write("src/del.go", body+"// del\n")
	r.write("src/mv.go", body+"// mv\n")
	r.write("src/keep.go", body)
	r.commit("init")
	r.git("rm", "-q", "src/del.go")
	r.mv("src/mv.go", "src/moved.go")
	r.write("src/keep.go", "short\n")
	r.git("add", "-A")
	// Already missing before this commit, and line refs: not the commit's doing.
	got := check(t, open(t, r.dir, PreCommit), "src/del.go src/mv.go src/keep.go:5 src/never.go")
	if want := "src/del.go missing; src/mv.go missing -> src/moved.go"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestCheckGitIndexFile(t *testing.T) {
	r := newRepo(t)
	r.write("a.go", body)
	r.commit("init")
	// A temporary index without a.go, the way "git commit -a" hands one
	// to the pre-commit hook.
	tmp := filepath.Join(r.dir, ".git", "tmp-index")
	cmd := exec.Command("git", "rm", "-q", "--cached", "a.go")
	cmd.Dir = r.dir
	cmd.Env = append(gitEnv(), "GIT_INDEX_FILE="+tmp)
	if err := exec.Command("cp", filepath.Join(r.dir, ".git", "index"), tmp).Run(); err != nil {
		t.Fatal(err)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := check(t, open(t, r.dir, Staged), "a.go"); got != "" {
		t.Errorf("default index: %s", got)
	}
	t.Setenv("GIT_INDEX_FILE", tmp)
	if got := check(t, open(t, r.dir, Staged), "a.go"); got != "a.go missing" {
		t.Errorf("GIT_INDEX_FILE: %q", got)
	}
}

func TestCheckNotGit(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/a.go"), body)
	c := open(t, dir, Auto)
	if c.Source() != "working tree" {
		t.Fatalf("source = %q", c.Source())
	}
	if got := check(t, c, "src/a.go src/a.go:10 src/a.go:11 src/b.go"); got != "src/a.go:11 line-past-eof; src/b.go missing" {
		t.Errorf("got %s", got)
	}
	for _, m := range []Mode{Staged, PreCommit} {
		if _, err := Open(dir, m, config.Staleness{}); !errors.Is(err, ErrNotGit) {
			t.Errorf("mode %d outside git: err = %v, want ErrNotGit", m, err)
		}
	}
}

func TestCheckWorktreeSymlinkOutside(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.go"), "a\n")
	if err := os.Symlink(filepath.Join(outside, "secret.go"), filepath.Join(dir, "link.go")); err != nil {
		t.Skip(err)
	}
	// It exists, but its lines are not read through the symlink.
	if got := check(t, open(t, dir, Auto), "link.go:5"); got != "" {
		t.Errorf("got %s", got)
	}
}

func TestCheckUnbornHead(t *testing.T) {
	r := newRepo(t)
	r.write("a.go", body)
	r.write("b.go", body)
	r.git("add", "a.go")
	c := open(t, r.dir, Auto)
	if c.Source() != "working tree" {
		t.Fatalf("source = %q", c.Source())
	}
	if got := check(t, c, "a.go b.go c.go src/c.go"); got != "src/c.go missing" {
		t.Errorf("auto: %s", got)
	}
	if got := check(t, open(t, r.dir, Staged), "a.go b.go c.go src/b.go"); got != "src/b.go missing" {
		t.Errorf("staged: %s", got)
	}
	if got := check(t, open(t, r.dir, PreCommit), "a.go b.go c.go"); got != "" {
		t.Errorf("pre-commit: %s", got)
	}
}

func TestCheckSubdirRoot(t *testing.T) {
	r := newRepo(t)
	r.write("proj/src/a.go", body+"// a\n")
	r.write("top.go", body)
	r.commit("init")
	r.mv("proj/src/a.go", "proj/lib/a.go")
	r.commit("mv")
	root := filepath.Join(r.dir, "proj")
	if got := check(t, open(t, root, Auto), "src/a.go lib/a.go top.go"); got != "src/a.go missing -> lib/a.go" {
		t.Errorf("auto: %s", got)
	}
	r.mv("proj/lib/a.go", "proj/a.go")
	if got := check(t, open(t, root, Staged), "lib/a.go"); got != "lib/a.go missing -> a.go" {
		t.Errorf("staged: %s", got)
	}
}

// relaxGC nests and restores the setting found before the first use.
func TestRelaxGC(t *testing.T) {
	prev := debug.SetGCPercent(150)
	defer debug.SetGCPercent(prev)
	a := relaxGC()
	b := relaxGC()
	a()
	if got := debug.SetGCPercent(400); got != 400 {
		t.Errorf("after one of two releases: GOGC %d, want 400", got)
	}
	b()
	if got := debug.SetGCPercent(150); got != 150 {
		t.Errorf("after both: GOGC %d, want 150", got)
	}
}

// In HEAD mode a file only staged is not in the tree, also when the first
// lookup of its name is the first read of the listing.
func TestHeadModeStagedFileIsNotInHead(t *testing.T) {
	r := newRepo(t)
	r.write("src/a.go", body)
	r.commit("init")
	r.write("lib/staged.go", body)
	r.git("add", "lib/staged.go")
	c := open(t, r.dir, Auto)
	res := c.Explain(ExtractText("see staged.go and lib/staged.go", Options{}))
	for _, x := range res {
		if x.ResolvedAs != "" {
			t.Errorf("%s resolved as %s (%s) against HEAD, which lacks it", x.Ref, x.ResolvedAs, x.How)
		}
	}
}

// resolveAll hands back each reference's outcome in order (the one the
// map holds, so repeated references share it) and marks what it looked
// up as used: a save writes the outcomes a run asked for and no other.
func TestResolveAllOutcomesInOrder(t *testing.T) {
	r := newRepo(t)
	r.write("src/cache.go", "package src\n")
	r.write("src/store.go", "package src\n")
	r.write("src/gone.go", "package src\n")
	r.commit("initial")
	r.git("rm", "-q", "src/gone.go")
	r.git("commit", "-q", "-m", "remove gone.go")
	c, err := Open(r.dir, Auto, config.Default().Staleness)
	if err != nil {
		t.Fatal(err)
	}
	refs := []Ref{
		{Raw: "src/cache.go", Path: "src/cache.go"},
		{Raw: "src/gone.go", Path: "src/gone.go"},
		{Raw: "src/cache.go", Path: "src/cache.go"},
		{Raw: "src/store.go", Path: "src/store.go"},
	}
	outs := c.resolveAll(refs[:2])
	again := c.resolveAll(refs) // two decided before, one repeated, one new
	for i, o := range again {
		if want := c.outcomes[keyOf(refs[i])]; o == nil || o != want {
			t.Fatalf("ref %d: outcome %p, the map holds %p", i, o, want)
		}
		if !o.used {
			t.Errorf("ref %d: not marked used", i)
		}
	}
	if outs[0] != again[0] || again[0] != again[2] || outs[1] != again[1] {
		t.Error("a reference decided twice, or repeated, has another outcome")
	}
	if again[0].found != "src/cache.go" || !again[1].missing || again[3].found != "src/store.go" {
		t.Fatalf("outcomes: %+v %+v %+v", *again[0], *again[1], *again[3])
	}
	stale := c.appendChecked(nil, refs, again)
	if len(stale) != 1 || stale[0].Ref != "src/gone.go" {
		t.Fatalf("findings: %+v", stale)
	}
	// An outcome nobody asked for (loaded from a cache file, say) is not
	// written by the next save.
	c.outcomes[outcomeKey{path: "src/old.go"}] = &outcome{found: "src/old.go"}
	if table, body := c.encodeCache(nil); bytes.Contains(append(table, body...), []byte("src/old.go")) {
		t.Error("an outcome no run used is written")
	}
}
