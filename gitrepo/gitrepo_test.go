package gitrepo

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// git runs git in dir with a configuration of its own.
func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	out, err := gitCmd(dir, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

// gitCmd is the command git runs as in dir.
func gitCmd(dir string, args ...string) *exec.Cmd {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	return cmd
}

// repo makes a repository with one commit of a.txt and sub/b.txt.
func repo(t testing.TB, args ...string) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, append([]string{"init", "-q", "-b", "main"}, args...)...)
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.txt", "sub/b.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(f+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "one")
	return dir
}

// linkedWorktree adds a linked worktree of dir on a new branch feat.
func linkedWorktree(t *testing.T, dir string) string {
	t.Helper()
	git(t, dir, "branch", "feat")
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, dir, "worktree", "add", "-q", wt, "feat")
	return wt
}

// configure sets each "key=value" in dir's repository configuration
// (written to the file: git may refuse to run in what it makes).
func configure(t *testing.T, dir string, kvs ...string) {
	t.Helper()
	for _, kv := range kvs {
		k, v, _ := strings.Cut(kv, "=")
		git(t, dir, "config", "--file", filepath.Join(dir, ".git", "config"), k, v)
	}
}

// head checks that r's HEAD is the commit git names and that its tree and
// index can be read.
func head(t *testing.T, r *Repo, dir string) {
	t.Helper()
	ref, err := r.Head()
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	if want := git(t, dir, "rev-parse", "HEAD"); ref.Hash().String() != want {
		t.Fatalf("HEAD %s, git says %s", ref.Hash(), want)
	}
	c, err := r.CommitObject(ref.Hash())
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tree.FindEntry("sub/b.txt"); err != nil {
		t.Fatalf("HEAD's tree: %v", err)
	}
	idx, err := r.Index()
	if err != nil {
		t.Fatalf("index: %v", err)
	}
	if len(idx.Entries) != 2 {
		t.Fatalf("index holds %d entries, want 2", len(idx.Entries))
	}
}

func real(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestOpenFindsTheRepository(t *testing.T) {
	dir := repo(t)
	r, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Top != dir || r.GitDir != filepath.Join(dir, ".git") || r.CommonDir != r.GitDir {
		t.Fatalf("top %s gitdir %s common %s", r.Top, r.GitDir, r.CommonDir)
	}
	head(t, r, dir)

	// From a subdirectory: only when asked to look up.
	if _, err := Open(filepath.Join(dir, "sub"), Options{}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("subdirectory without Up: %v, want ErrNotExist", err)
	}
	r, err = Open(filepath.Join(dir, "sub"), Options{Up: true})
	if err != nil || r.Top != dir {
		t.Fatalf("subdirectory with Up: %v, top %v", err, r)
	}

	// Not in git at all.
	if _, err := Open(t.TempDir(), Options{Up: true}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("outside git: %v, want ErrNotExist", err)
	}
	// A .git directory without HEAD is not a repository.
	empty := t.TempDir()
	if err := os.Mkdir(filepath.Join(empty, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(empty, Options{}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("a .git without HEAD: %v, want ErrNotExist", err)
	}
}

// A linked worktree's .git is a file naming its own git directory, whose
// commondir names the repository's: HEAD and the index are the worktree's,
// objects and branches the repository's.
func TestOpenLinkedWorktree(t *testing.T) {
	dir := repo(t)
	wt := linkedWorktree(t, dir)
	if err := os.WriteFile(filepath.Join(wt, "c.txt"), []byte("c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, wt, "add", "c.txt")
	git(t, wt, "commit", "-qm", "two")

	r, err := Open(filepath.Join(wt, "sub"), Options{Up: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Top != wt || real(t, r.GitDir) != real(t, filepath.Join(dir, ".git", "worktrees", "wt")) || real(t, r.CommonDir) != real(t, filepath.Join(dir, ".git")) {
		t.Fatalf("top %s gitdir %s common %s", r.Top, r.GitDir, r.CommonDir)
	}
	ref, err := r.Head()
	if err != nil || ref.Hash().String() != git(t, wt, "rev-parse", "HEAD") {
		t.Fatalf("worktree HEAD %v %v", ref, err)
	}
	idx, err := r.Index()
	if err != nil || len(idx.Entries) != 3 {
		t.Fatalf("worktree index: %v (%d entries, want 3)", err, len(idx.Entries))
	}
	if main, err := r.Reference(plumbing.NewBranchReferenceName("main"), true); err != nil || main.Hash().String() != git(t, dir, "rev-parse", "main") {
		t.Fatalf("the common directory's branch main: %v %v", main, err)
	}
}

// The extensions git sets in ordinary repositories: sparse-checkout's
// worktreeConfig (format 0), a partial clone's partialClone (format 1).
// go-git's own PlainOpen refused both.
func TestOpenReadsOrdinaryExtensions(t *testing.T) {
	sparse := repo(t)
	git(t, sparse, "sparse-checkout", "init", "--no-cone")
	if got := git(t, sparse, "config", "--get", "extensions.worktreeConfig"); got != "true" {
		t.Skipf("this git's sparse-checkout does not set extensions.worktreeConfig (%q)", got)
	}
	r, err := Open(sparse, Options{})
	if err != nil {
		t.Fatalf("a sparse checkout: %v", err)
	}
	head(t, r, sparse)
	if !r.Sparse() {
		t.Fatal("Sparse() is false in a sparse checkout")
	}

	for _, cfg := range [][2]string{
		{"core.repositoryformatversion=1", "extensions.worktreeConfig=true"},
		{"core.repositoryformatversion=1", "extensions.partialClone=origin"},
		{"core.repositoryformatversion=1", "extensions.objectFormat=sha1"},
		{"core.repositoryformatversion=0", "extensions.preciousObjects=true"},
		{"core.repositoryformatversion=0", "extensions.someFutureThing=x"}, // git ignores it in format 0
	} {
		dir := repo(t)
		configure(t, dir, cfg[:]...)
		git(t, dir, "status", "--short") // git reads it too
		r, err := Open(dir, Options{})
		if err != nil {
			t.Fatalf("%v: %v", cfg, err)
		}
		head(t, r, dir)
		if r.Sparse() {
			t.Fatalf("%v: Sparse() without a sparse-checkout", cfg)
		}
	}
}

// A repository go-git cannot read is refused with an error naming why,
// never read wrongly.
func TestOpenRefusesWhatGoGitCannotRead(t *testing.T) {
	sha256 := t.TempDir()
	if out, err := exec.Command("git", "init", "-q", "--object-format=sha256", sha256).CombinedOutput(); err != nil {
		t.Logf("no SHA-256 repositories in this git: %s", out)
	} else {
		_, err := Open(sha256, Options{})
		var u *UnreadableError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), "extensions.objectformat = sha256") {
			t.Fatalf("a SHA-256 repository: %v", err)
		}
	}
	for cfg, want := range map[[2]string]string{
		{"core.repositoryformatversion=1", "extensions.refStorage=reftable"}:  "extensions.refstorage = reftable",
		{"core.repositoryformatversion=1", "extensions.someFutureThing=x"}:    "extensions.somefuturething (unknown)",
		{"core.repositoryformatversion=0", "extensions.objectFormat=sha1"}:    "extensions.objectformat in a format-0 repository",
		{"core.repositoryformatversion=2", "extensions.worktreeConfig=true"}:  `core.repositoryformatversion "2"`,
		{"core.repositoryformatversion=0", "extensions.relativeWorktrees=on"}: "extensions.relativeworktrees in a format-0",
	} {
		dir := repo(t)
		configure(t, dir, cfg[:]...)
		_, err := Open(dir, Options{})
		var u *UnreadableError
		if !errors.As(err, &u) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%v: %v, want an UnreadableError naming %q", cfg, err, want)
		}
		if errors.Is(err, ErrNotExist) {
			t.Fatalf("%v: an unreadable repository is not a missing one", cfg)
		}
	}
}

func TestUnreadable(t *testing.T) {
	for _, c := range []struct {
		version string
		exts    []Extension
		ok      bool
	}{
		{"", nil, true},
		{"0", []Extension{{"worktreeConfig", "true"}}, true},
		{"0", []Extension{{"WORKTREECONFIG", "true"}, {"partialclone", "origin"}, {"noop", ""}}, true},
		{"0", []Extension{{"unknownOne", "1"}}, true},
		{"0", []Extension{{"noop-v1", ""}}, false},
		{"0", []Extension{{"refStorage", "files"}}, false},
		{"1", []Extension{{"noop-v1", ""}, {"relativeWorktrees", "true"}}, true},
		{"1", []Extension{{"objectFormat", "SHA1"}, {"refStorage", "files"}}, true},
		{"1", []Extension{{"objectFormat", "sha256"}}, false},
		{"1", []Extension{{"compatObjectFormat", "sha256"}}, false},
		{"1", []Extension{{"unknownOne", "1"}}, false},
		{"2", nil, false},
		{"x", nil, false},
	} {
		if got := unreadable(c.version, c.exts) == ""; got != c.ok {
			t.Errorf("version %q %v: readable %v, want %v (%s)", c.version, c.exts, got, c.ok, unreadable(c.version, c.exts))
		}
	}
}

func TestParseGitFile(t *testing.T) {
	for in, want := range map[string]string{
		"gitdir: /abs/.git/worktrees/x\n":  "/abs/.git/worktrees/x",
		"gitdir: ../.git/modules/m":        "../.git/modules/m",
		"gitdir: rel/dir  \r\nmore\n":      "rel/dir",
		"gitdir:/no/space\n":               "",
		"GITDIR: x\n":                      "",
		"gitdir: \n":                       "",
		"":                                 "",
		"gitdir: a\x00b\n":                 "",
		"\ngitdir: on the second line\n":   "",
		"gitdir: with spaces inside/ok \n": "with spaces inside/ok",
	} {
		got, err := ParseGitFile([]byte(in))
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ParseGitFile(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// A .git file with a relative gitdir (a submodule's, a worktree made with
// relative paths) resolves against the directory holding it.
func TestOpenRelativeGitFile(t *testing.T) {
	dir := repo(t)
	outer := t.TempDir()
	if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(outer, "moved.git")); err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(dir, filepath.Join(outer, "moved.git"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".git"), []byte("gitdir: "+rel+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := Open(filepath.Join(dir, "sub"), Options{Up: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.GitDir != filepath.Join(outer, "moved.git") {
		t.Fatalf("gitdir %s", r.GitDir)
	}
	head(t, r, dir)

	// A .git file naming nothing, or something that is not a directory.
	for _, body := range []string{"not a git file\n", "gitdir: does/not/exist\n"} {
		if err := os.WriteFile(filepath.Join(dir, ".git"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := Open(dir, Options{}); err == nil {
			t.Fatalf(".git file %q opened", body)
		}
	}
}

func FuzzParseGitFile(f *testing.F) {
	for _, s := range []string{"gitdir: /a/b\n", "gitdir: ../x", "gitdir: \n", "x", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir, err := ParseGitFile(b)
		if err != nil {
			return
		}
		if dir == "" || strings.ContainsAny(dir, "\n\x00") || dir != strings.TrimSpace(dir) {
			t.Fatalf("ParseGitFile(%q) = %q", b, dir)
		}
		if !strings.HasPrefix(string(b), "gitdir: ") {
			t.Fatalf("ParseGitFile(%q) accepted a file without the prefix", b)
		}
	})
}

// A hostile .git: a FIFO (which would block a read) or a file naming a
// directory that is no repository is refused, quickly.
func TestOpenHostileDotGit(t *testing.T) {
	dir := t.TempDir()
	if err := mkfifo(filepath.Join(dir, ".git"), 0o644); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := Open(dir, Options{}); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("a FIFO .git: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Open blocked on a FIFO .git")
	}

	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, ".git"), []byte("gitdir: "+t.TempDir()+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(other, Options{}); !errors.Is(err, ErrNotExist) {
		t.Fatalf("a .git naming an empty directory: %v, want ErrNotExist", err)
	}
}

// GitDir answers what `git rev-parse --git-dir` answers, without a git
// process: from the top, a subdirectory, a linked worktree; ErrNotExist
// outside git.
func TestGitDirIsGits(t *testing.T) {
	dir := repo(t)
	wt := linkedWorktree(t, dir)
	for _, d := range []string{dir, filepath.Join(dir, "sub"), wt, filepath.Join(wt, "sub")} {
		got, err := GitDir(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		if want := git(t, d, "rev-parse", "--path-format=absolute", "--git-dir"); real(t, got) != real(t, want) {
			t.Fatalf("%s: GitDir %s, git says %s", d, got, want)
		}
	}
	if _, err := GitDir(t.TempDir()); !errors.Is(err, ErrNotExist) {
		t.Fatalf("outside git: %v", err)
	}
}

// A submodule's .git is a file naming ../.git/modules/NAME, relative to
// the submodule: it opens as the submodule's own repository.
func TestOpenSubmodule(t *testing.T) {
	sub := repo(t)
	super := repo(t)
	git(t, super, "-c", "protocol.file.allow=always", "submodule", "add", "-q", sub, "mod")
	git(t, super, "commit", "-qm", "add mod")
	mod := filepath.Join(super, "mod")
	b, err := os.ReadFile(filepath.Join(mod, ".git"))
	if err != nil || !strings.HasPrefix(string(b), "gitdir: ../.git/modules/") {
		t.Fatalf("the submodule's .git: %q %v", b, err)
	}
	r, err := Open(filepath.Join(mod, "sub"), Options{Up: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Top != mod || real(t, r.GitDir) != real(t, filepath.Join(super, ".git", "modules", "mod")) {
		t.Fatalf("top %s gitdir %s", r.Top, r.GitDir)
	}
	head(t, r, mod)
	if d, err := GitDir(mod); err != nil || real(t, d) != real(t, git(t, mod, "rev-parse", "--path-format=absolute", "--git-dir")) {
		t.Fatalf("GitDir %s %v", d, err)
	}
}

// Prefix is a path relative to the work tree's top in git's form: "" at
// the top, "sub/dir/" below it, also when the path is reached through a
// symlink to the repository; a path outside it is an error.
func TestPrefix(t *testing.T) {
	dir := repo(t)
	if err := os.MkdirAll(filepath.Join(dir, "sub", "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	r, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		path, want string
		bad        bool
	}{
		{path: dir, want: ""},
		{path: filepath.Join(dir, "sub", "dir"), want: "sub/dir/"},
		{path: filepath.Join(link, "sub"), want: "sub/"},
		{path: t.TempDir(), bad: true},
		{path: filepath.Dir(dir), bad: true},
	} {
		got, err := r.Prefix(tc.path)
		if tc.bad {
			if err == nil {
				t.Errorf("%s: %q, want an error", tc.path, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
}
