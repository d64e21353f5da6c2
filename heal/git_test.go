package heal

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/staleness"
)

// gitIn runs git in dir, failing the test on an error.
func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

const (
	cmdRel   = ".claude/commands/self-learning/lint.md"
	rendered = "# Lint\n\nRun the linter.\n"
	mine     = "# Lint\n\nRun the linter twice.\n"
	theirs   = "# Lint\n\nRun make lint.\n"

	adrRel = ".memory/knowledge/decisions.md"
	adrOne = "# Decisions\n\n## ADR-001: Use SQLite\n\n- **Status**: Accepted\n- **Decision**: one file.\n- **Source**: self-learning:obs_a\n\n## ADR-002: Keep logs\n\n- **Decision**: a week.\n"
	adrTwo = "# Decisions\n\n## ADR-001: Use SQLite\n\n- **Status**: Accepted\n- **Decision**: one file, WAL mode.\n- **Source**: self-learning:obs_a\n\n## ADR-002: Keep logs\n\n- **Decision**: a week.\n"
)

// sectionHash is the manifest's hash of section ADR-001 of src.
func sectionHash(t *testing.T, src string) string {
	t.Helper()
	s, ok := findAnchor(markdown.Sections([]byte(src)), "ADR-001", "obs_a")
	if !ok {
		t.Fatal("no ADR-001")
	}
	return manifest.Hash(markdown.SectionText([]byte(src), s))
}

// sectionText is ADR-001's text in the work tree's decisions file.
func sectionText(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, adrRel))
	if err != nil {
		t.Fatal(err)
	}
	s, ok := findAnchor(markdown.Sections(b), "ADR-001", "obs_a")
	if !ok {
		t.Fatal("no ADR-001 in the work tree")
	}
	return markdown.SectionText(b, s)
}

// An artifact present with other content than recorded is git's checkout
// only when the work tree holds HEAD's version, HEAD's line never had the
// recorded content since the render, and a branch tip or the stash has it.
func TestCheckedOut(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	// base: main has the rendered command and decisions; feat edits both
	// and commits; main is checked out again.
	base := func(t *testing.T) string {
		dir := t.TempDir()
		gitIn(t, dir, "init", "-q", "-b", "main")
		putFile(t, dir, cmdRel, rendered)
		putFile(t, dir, adrRel, adrOne)
		gitIn(t, dir, "add", "-A")
		gitIn(t, dir, "commit", "-q", "-m", "rendered")
		gitIn(t, dir, "checkout", "-q", "-b", "feat")
		putFile(t, dir, cmdRel, mine)
		putFile(t, dir, adrRel, adrTwo)
		gitIn(t, dir, "commit", "-q", "-am", "my edits")
		gitIn(t, dir, "checkout", "-q", "main")
		return dir
	}
	file := func(dir string) []byte {
		b, _ := os.ReadFile(filepath.Join(dir, cmdRel))
		return b
	}
	cases := []struct {
		name     string
		setup    func(t *testing.T, dir string)
		anchor   bool
		recorded string // the content whose hash the manifest holds
		want     bool
	}{
		{"another branch's version checked out", nil, false, mine, true},
		{"devflow's djb2 hash of it", nil, false, "djb2:" + mine, true},
		{"the person's uncommitted edit", func(t *testing.T, dir string) {
			putFile(t, dir, cmdRel, theirs)
		}, false, mine, false},
		{"the person's staged edit", func(t *testing.T, dir string) {
			putFile(t, dir, cmdRel, theirs)
			gitIn(t, dir, "add", cmdRel)
		}, false, mine, false},
		{"the person's edit, as another branch has it", func(t *testing.T, dir string) {
			putFile(t, dir, cmdRel, theirs)
			gitIn(t, dir, "branch", "theirs", "feat")
		}, false, mine, false},
		{"an edit committed on this line", func(t *testing.T, dir string) {
			gitIn(t, dir, "branch", "before-push") // still has the recorded content
			putFile(t, dir, cmdRel, theirs)
			gitIn(t, dir, "commit", "-q", "-am", "teammate")
		}, false, rendered, false},
		{"the recorded version on no branch", func(t *testing.T, dir string) {
			gitIn(t, dir, "branch", "-q", "-D", "feat")
		}, false, mine, false},
		{"the recorded version only in the stash", func(t *testing.T, dir string) {
			gitIn(t, dir, "branch", "-q", "-D", "feat")
			putFile(t, dir, cmdRel, theirs)
			gitIn(t, dir, "stash", "-q")
		}, false, theirs, true},
		{"a section of another branch's decisions", nil, true, adrTwo, true},
		{"that section, other sections edited", func(t *testing.T, dir string) {
			putFile(t, dir, adrRel, adrOne+"\n## ADR-003: New\n\n- **Decision**: mine.\n")
		}, true, adrTwo, true},
		{"the section edited by the person", func(t *testing.T, dir string) {
			putFile(t, dir, adrRel, strings.Replace(adrOne, "one file.", "one file, or two.", 1))
		}, true, adrTwo, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := base(t)
			if c.setup != nil {
				c.setup(t, dir)
			}
			for _, facts := range []bool{false, true} {
				g := viewOf(t, dir, facts)
				var got bool
				if c.anchor {
					got = g.checkedOut(adrRel, "ADR-001", "obs_a", sectionHash(t, c.recorded), sectionText(t, dir), since)
				} else {
					recorded := manifest.Hash([]byte(c.recorded))
					if rest, ok := strings.CutPrefix(c.recorded, "djb2:"); ok {
						recorded = manifest.DJB2([]byte(rest))
					}
					got = g.checkedOut(cmdRel, "", "obs_wf", recorded, file(dir), since)
				}
				if got != c.want {
					t.Fatalf("checkedOut = %v, want %v (the index's artifacts kept: %v)", got, c.want, facts)
				}
			}
		})
	}
	if (*gitView)(nil).checkedOut(cmdRel, "", "obs_wf", manifest.Hash([]byte(mine)), []byte(rendered), since) {
		t.Fatal("outside git, an artifact changed is the person's edit")
	}
}

// viewOf opens dir's repository for git's answers. With facts, the
// index's artifacts are kept first as a pass's staleness check keeps them
// (staleness.IndexIdentity), and the view must answer from them for a
// whole-file artifact (outside a sparse checkout); without, none are
// kept and the view asks the trees and the index (unless this process
// read an index with the same bytes: the same answers).
func viewOf(t *testing.T, dir string, facts bool) *gitView {
	t.Helper()
	if facts {
		if err := os.MkdirAll(filepath.Join(dir, ".memory"), 0o755); err != nil {
			t.Fatal(err)
		}
		staleness.IndexIdentity(dir, filepath.Join(dir, ".git", "index"), true)
	}
	g, _ := openGit(dir)
	if g == nil {
		t.Fatal("not a git repository")
	}
	// Without facts kept, the process may still hold an index with the
	// same bytes (an empty one): the view may answer from it.
	if got := g.artifactFacts(cmdRel, "") != nil; facts && got != !g.sparse {
		t.Fatalf("answers from the index's artifacts: %v, want %v", got, !g.sparse)
	}
	return g
}

// onSide commits deletedOther on a branch "side" and checks main out again.
func onSide(t *testing.T, dir string) {
	gitIn(t, dir, "checkout", "-q", "-b", "side")
	putFile(t, dir, deletedOther, mine)
	gitIn(t, dir, "add", deletedOther)
	gitIn(t, dir, "commit", "-q", "-m", "side")
	gitIn(t, dir, "checkout", "-q", "main")
}

const deletedOther = ".claude/commands/self-learning/other.md"

// A missing artifact is the person's deletion when git's index or HEAD's
// tree has it, or HEAD's line had it since the render, or nothing has it;
// absent when only another branch has it.
func TestDeletedOrAbsent(t *testing.T) {
	since := time.Now().Add(-time.Hour)
	const other = deletedOther
	cases := []struct {
		name  string
		rel   string
		setup func(t *testing.T, dir string)
		want  bool
	}{
		{"committed, then removed", cmdRel, func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, cmdRel))
		}, true},
		{"committed on another branch only", other, onSide, false},
		{"staged here, removed, another branch has it", other, func(t *testing.T, dir string) {
			onSide(t, dir)
			putFile(t, dir, other, theirs)
			gitIn(t, dir, "add", other)
			os.Remove(filepath.Join(dir, other))
		}, true},
		{"never in git", other, func(t *testing.T, dir string) {}, true},
		{"committed, then removed with git rm", cmdRel, func(t *testing.T, dir string) {
			gitIn(t, dir, "rm", "-q", cmdRel)
		}, true},
		// HEAD's tree alone says so: HEAD's commit is older than the
		// render, its history since has no such file, another branch has
		// it, and the index no longer does.
		{"committed before the render, removed with git rm, another branch has it", other, func(t *testing.T, dir string) {
			old := time.Now().Add(-3 * time.Hour).Format(time.RFC3339)
			t.Setenv("GIT_AUTHOR_DATE", old)
			t.Setenv("GIT_COMMITTER_DATE", old)
			putFile(t, dir, other, rendered)
			gitIn(t, dir, "add", other)
			gitIn(t, dir, "commit", "-q", "-m", "old")
			gitIn(t, dir, "checkout", "-q", "-b", "keep")
			putFile(t, dir, "notes.txt", "keep")
			gitIn(t, dir, "add", "notes.txt")
			gitIn(t, dir, "commit", "-q", "-m", "keep")
			gitIn(t, dir, "checkout", "-q", "main")
			gitIn(t, dir, "rm", "-q", other)
		}, true},
		{"committed on another branch only, the index's tree not HEAD's", other, func(t *testing.T, dir string) {
			onSide(t, dir)
			putFile(t, dir, "notes.txt", "staged")
			gitIn(t, dir, "add", "notes.txt")
		}, false},
		// A sparse checkout keeps files out of the work tree: git's, not
		// the person's (the index holds them with the skip-worktree bit).
		{"left out by a sparse checkout", cmdRel, func(t *testing.T, dir string) {
			gitIn(t, dir, "sparse-checkout", "set", "--no-cone", "/*", "!/.claude/")
			if _, err := os.Stat(filepath.Join(dir, cmdRel)); err == nil {
				t.Fatal("sparse-checkout left the file in the work tree")
			}
		}, false},
		{"removed by the person in a sparse checkout", cmdRel, func(t *testing.T, dir string) {
			gitIn(t, dir, "sparse-checkout", "set", "--no-cone", "/*", "!/docs/")
			os.Remove(filepath.Join(dir, cmdRel))
		}, true},
		// sparse-checkout sets extensions.worktreeConfig, which go-git's
		// own open refused: the repository was then "not git", and a
		// branch switch a deletion.
		{"committed on another branch only, sparse-checkout configured", other, func(t *testing.T, dir string) {
			gitIn(t, dir, "sparse-checkout", "init", "--no-cone")
			gitIn(t, dir, "sparse-checkout", "set", "--no-cone", "/*")
			onSide(t, dir)
		}, false},
		{"committed on another branch only, a partial clone's format", other, func(t *testing.T, dir string) {
			gitIn(t, dir, "config", "core.repositoryformatversion", "1")
			gitIn(t, dir, "config", "extensions.partialClone", "origin")
			onSide(t, dir)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			gitIn(t, dir, "init", "-q", "-b", "main")
			putFile(t, dir, cmdRel, rendered)
			gitIn(t, dir, "add", "-A")
			gitIn(t, dir, "commit", "-q", "-m", "rendered")
			c.setup(t, dir)
			for _, facts := range []bool{false, true} {
				g := viewOf(t, dir, facts)
				if got := g.deleted(c.rel, "", since); got != c.want {
					t.Fatalf("deleted = %v, want %v (the index's artifacts kept: %v)", got, c.want, facts)
				}
			}
		})
	}
}

// find answers what go-git's Tree.FindEntry answers, through the view's
// decoded trees, for files, directories, missing names and a file taken
// for a directory, with the tree map started again when it is full.
func TestFindIsFindEntry(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	files := []string{"a.md", "x/b.md", "x/y/c.md", "x/y/z/d.md", ".claude/commands/self-learning/lint.md", "x/y/e.md"}
	for _, f := range files {
		putFile(t, dir, f, f)
	}
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "files")
	g, _ := openGit(dir)
	if g == nil || g.headTree == nil {
		t.Fatal("no HEAD tree")
	}
	paths := append(files, "x", "x/y", "x/y/z", "missing.md", "x/missing.md", "x/y/z/d.md/e", "a.md/b", "nope/a.md", ".claude/commands")
	for round := range 2 {
		for _, p := range paths {
			want, wantErr := g.headTree.FindEntry(p)
			got, err := g.find(g.headTree, p)
			if (err != nil) != (wantErr != nil) || (err == nil && (got.Hash != want.Hash || got.Mode != want.Mode || got.Name != want.Name)) {
				t.Fatalf("round %d, %s: find = %v, %v; FindEntry = %v, %v", round, p, got, err, want, wantErr)
			}
		}
		if round == 0 && len(g.trees) == 0 {
			t.Fatal("find kept no decoded tree")
		}
		for h := range treeLimit {
			g.trees[plumbing.Hash{byte(h), byte(h >> 8), 1}] = nil // fill it: the next find starts it again
		}
	}
}

// A view names what its answers read: HEAD, ORIG_HEAD, the index, each
// reference and the refs directories; a repository with more references
// than the bound is not named whole, and its refs directory is read no
// further than the bound.
func TestGitInputs(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644)
	gitIn(t, dir, "add", "a.txt")
	gitIn(t, dir, "commit", "-q", "-m", "one")
	gitIn(t, dir, "branch", "feature/x")
	g, _ := openGit(dir)
	if g == nil {
		t.Fatal("no view")
	}
	in := g.inputs()
	gd := filepath.Join(dir, ".git")
	if !in.Complete || in.Head == "" {
		t.Fatalf("incomplete: %+v", in)
	}
	for _, f := range []string{"HEAD", "ORIG_HEAD", "index", "packed-refs", "refs/heads/main", "refs/heads/feature/x"} {
		if !slices.Contains(in.Files, filepath.Join(gd, filepath.FromSlash(f))) {
			t.Errorf("%s not among the inputs %v", f, in.Files)
		}
	}
	for _, d := range []string{"refs", "refs/heads", "refs/heads/feature"} {
		if !slices.Contains(in.Dirs, filepath.Join(gd, filepath.FromSlash(d))) {
			t.Errorf("directory %s not listed: %v", d, in.Dirs)
		}
	}
	// More loose references than the bound: not complete.
	head, _ := os.ReadFile(filepath.Join(gd, "refs", "heads", "main"))
	many := filepath.Join(gd, "refs", "heads", "many")
	os.MkdirAll(many, 0o755)
	for i := range gitRefLimit {
		os.WriteFile(filepath.Join(many, fmt.Sprintf("b%05d", i)), head, 0o644)
	}
	g, _ = openGit(dir)
	if in := g.inputs(); in.Complete || len(in.Files)+len(in.Dirs) > gitRefLimit+1 {
		t.Fatalf("past the bound: complete %v with %d names", in.Complete, len(in.Files)+len(in.Dirs))
	}
}

// In a linked worktree the view names the worktree's own HEAD, index and
// ORIG_HEAD, the shared references, and the .git file that points at its
// git directory.
func TestGitInputsLinkedWorktree(t *testing.T) {
	dir := t.TempDir()
	main := filepath.Join(dir, "main")
	os.MkdirAll(main, 0o755)
	gitIn(t, main, "init", "-q", "-b", "main")
	os.WriteFile(filepath.Join(main, "a.txt"), []byte("a\n"), 0o644)
	gitIn(t, main, "add", "a.txt")
	gitIn(t, main, "commit", "-q", "-m", "one")
	wt := filepath.Join(dir, "wt")
	gitIn(t, main, "worktree", "add", "-q", "-b", "side", wt)
	g, _ := openGit(wt)
	if g == nil {
		t.Fatal("no view")
	}
	in := g.inputs()
	own := filepath.Join(main, ".git", "worktrees", "wt")
	for _, f := range []string{filepath.Join(wt, ".git"), filepath.Join(own, "HEAD"), filepath.Join(own, "index"), filepath.Join(own, "ORIG_HEAD"), filepath.Join(main, ".git", "refs", "heads", "side")} {
		if !slices.Contains(in.Files, f) {
			t.Errorf("%s not among the inputs %v", f, in.Files)
		}
	}
	if !in.Complete {
		t.Fatal("not complete")
	}
}

// Tracked answers whether the index holds a file, from the index's
// artifacts the staleness check kept for a memory file, and from the
// index itself otherwise or once the index changed.
func TestTracked(t *testing.T) {
	dir := t.TempDir()
	gitIn(t, dir, "init", "-q", "-b", "main")
	log := filepath.Join(dir, ".memory", "learning-log.jsonl")
	putFile(t, dir, ".memory/learning-log.jsonl", "{}\n")
	putFile(t, dir, "src/a.go", "package src\n")
	gitIn(t, dir, "add", "-A")
	gitIn(t, dir, "commit", "-q", "-m", "memory")
	putFile(t, dir, ".memory/feedback.jsonl", "{}\n")
	putFile(t, dir, "src/b.go", "package src\n")
	want := map[string]bool{
		log: true, filepath.Join(dir, ".memory", "feedback.jsonl"): false,
		filepath.Join(dir, "src", "a.go"): true, filepath.Join(dir, "src", "b.go"): false,
	}
	check := func(what string) {
		t.Helper()
		for path, w := range want {
			if got := Tracked(dir, path); got != w {
				t.Errorf("%s: Tracked(%s) = %v, want %v", what, path, got, w)
			}
		}
	}
	check("nothing kept")
	staleness.IndexIdentity(dir, filepath.Join(dir, ".git", "index"), true)
	if _, ok := staleness.IndexArtifacts(dir, filepath.Join(dir, ".git", "index")); !ok {
		t.Fatal("the index's artifacts were not kept: the test proves nothing")
	}
	check("the index's artifacts kept")
	gitIn(t, dir, "rm", "-q", "--cached", ".memory/learning-log.jsonl")
	want[log] = false
	check("after git rm --cached")
}
