package staleness

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/config"
)

// lines returns n numbered lines with a tag, so that two versions share
// exactly the lines they have in common.
func lines(tag string, from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d %s\n", i, tag)
	}
	return b.String()
}

// A file renamed (R100) on a branch, while main rewrote most of it; the
// merge resolves to a version too different from main's for rename
// detection at the merge (first parent: under 50 % similar). The rename is
// found on the branch, and a later rename on main continues the chain to
// the current path.
func TestRenameThroughMerge(t *testing.T) {
	r := newRepo(t)
	r.write("src/auth.go", lines("orig", 1, 20))
	r.write("README.md", "# x\n")
	r.commit("init")
	r.git("checkout", "-q", "-b", "feature")
	r.mv("src/auth.go", "src/login.go")
	r.commit("rename auth.go to login.go")
	r.git("checkout", "-q", "main")
	r.write("src/auth.go", lines("main", 1, 12)+lines("orig", 13, 20))
	r.commit("rewrite the top of auth.go")
	// The merge: git would carry main's edit to login.go; resolve it to
	// a version that shares little with main's auth.go.
	r.git("merge", "-q", "--no-commit", "feature")
	r.write("src/login.go", lines("merged", 1, 16)+lines("orig", 17, 20))
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "merge feature")
	if got := check(t, open(t, r.dir, Auto), "src/auth.go:7 auth.go"); got != "src/auth.go:7 missing -> src/login.go:7; auth.go missing -> src/login.go" {
		t.Errorf("after merge: %s", got)
	}

	// A later rename on main: the chain ends at the current path.
	r.mv("src/login.go", "internal/signin.go")
	r.commit("move login.go")
	if got := check(t, open(t, r.dir, Auto), "src/auth.go src/login.go"); got != "src/auth.go missing -> internal/signin.go; src/login.go missing -> internal/signin.go" {
		t.Errorf("chain: %s", got)
	}
	// The same, staged: the chain ends in the index.
	r.mv("internal/signin.go", "internal/session.go")
	if got := check(t, open(t, r.dir, Staged), "src/auth.go"); got != "src/auth.go missing -> internal/session.go" {
		t.Errorf("chain into the index: %s", got)
	}
}

// The old first-parent walk would not have found it: check that the
// merge really defeats rename detection on the first parent.
func TestMergeDefeatsFirstParentDetection(t *testing.T) {
	r := newRepo(t)
	r.write("a.go", lines("orig", 1, 20))
	r.commit("init")
	r.git("checkout", "-q", "-b", "b")
	r.mv("a.go", "b.go")
	r.commit("rename")
	r.git("checkout", "-q", "main")
	r.write("a.go", lines("main", 1, 12)+lines("orig", 13, 20))
	r.commit("edit")
	r.git("merge", "-q", "--no-commit", "b")
	r.write("b.go", lines("merged", 1, 16)+lines("orig", 17, 20))
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "merge")
	out := r.git("diff", "-M50%", "--name-status", "HEAD^1", "HEAD")
	if strings.HasPrefix(out, "R") {
		t.Fatalf("git detects the rename at the merge, the test proves nothing: %s", out)
	}
	if got := check(t, open(t, r.dir, Auto), "a.go"); got != "a.go missing -> b.go" {
		t.Errorf("got %s", got)
	}
}

// A walk cut short by rename_depth says so; a deeper one finds the rename.
func TestTruncatedWalk(t *testing.T) {
	r := newRepo(t)
	r.write("src/old.go", body)
	r.commit("init")
	r.mv("src/old.go", "src/new.go")
	r.commit("rename")
	for i := 0; i < 5; i++ {
		r.write(fmt.Sprintf("n%d.txt", i), "x\n")
		r.commit(fmt.Sprintf("noise %d", i))
	}
	c, err := Open(r.dir, Auto, config.Staleness{RenameDepth: 3})
	if err != nil {
		t.Fatal(err)
	}
	fs := c.Check(ExtractText("src/old.go:4 old.go", Options{}))
	if len(fs) != 1 || fs[0].Ref != "src/old.go:4" || fs[0].Reason != Missing || !fs[0].Truncated || fs[0].Searched != 3 || fs[0].RenamedTo != "" {
		t.Errorf("depth 3: %+v", fs)
	}
	// The bare name is not reported on a truncated walk: nothing showed a
	// file of that name.
	res := c.Explain(ExtractText("old.go", Options{}))
	if len(res) != 1 || res[0].Reason != NeverTracked || !res[0].Truncated {
		t.Errorf("bare name, depth 3: %+v", res)
	}
	c = open(t, r.dir, Auto)
	if got := check(t, c, "src/old.go:4 old.go"); got != "src/old.go:4 missing -> src/new.go:4; old.go missing -> src/new.go" {
		t.Errorf("default depth: %s", got)
	}
}

// Ignored paths are build outputs, not references: the root .gitignore,
// a nested one (for paths below it only), and .git/info/exclude all count;
// a tracked file that an ignore rule matches (added with -f) still
// resolves, and is reported when the commit removes it.
func TestGitignoredRefs(t *testing.T) {
	r := newRepo(t)
	r.write(".gitignore", "dist/\n*.gen.ts\n")
	r.write("web/.gitignore", "cache/\n")
	r.write("web/app.ts", "x\n")
	r.write(".git/info/exclude", "local.json\n")
	r.write("forced/api.gen.ts", "x\n")
	r.commit("init")
	r.git("add", "-f", "forced/api.gen.ts")
	r.commit("force-add a generated file")
	c := open(t, r.dir, Auto)
	res := c.Explain(ExtractText("dist/index.js web/cache/x.json local.json other.gen.ts forced/api.gen.ts cache/y.json", Options{}))
	var got []string
	for _, x := range res {
		got = append(got, x.Ref+" "+x.Reason+x.How)
	}
	want := "dist/index.js gitignored; web/cache/x.json gitignored; local.json gitignored; other.gen.ts gitignored; forced/api.gen.ts path; cache/y.json never-tracked"
	if s := strings.Join(got, "; "); s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
	r.git("rm", "-q", "forced/api.gen.ts")
	if got := check(t, open(t, r.dir, PreCommit), "forced/api.gen.ts api.gen.ts"); got != "forced/api.gen.ts missing; api.gen.ts missing" {
		t.Errorf("pre-commit: %s", got)
	}
}

// In a linked worktree git reads info/exclude from the common git
// directory (the worktree's own has none that counts): a path it
// excludes is not a reference there either.
func TestGitignoredRefsInLinkedWorktree(t *testing.T) {
	r := newRepo(t)
	r.write("web/app.ts", "x\n")
	r.write(".git/info/exclude", "local.json\n")
	r.commit("init")
	wt := filepath.Join(t.TempDir(), "wt")
	r.git("worktree", "add", "-q", wt, "-b", "side")
	res := open(t, wt, Auto).Explain(ExtractText("local.json web/app.ts", Options{}))
	var got []string
	for _, x := range res {
		got = append(got, x.Ref+" "+x.Reason+x.How)
	}
	if s, want := strings.Join(got, "; "), "local.json gitignored; web/app.ts path"; s != want {
		t.Errorf("got  %s\nwant %s", s, want)
	}
}
