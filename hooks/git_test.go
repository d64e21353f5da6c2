package hooks

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// gitEnv is the environment for git in tests: no user or system config, no
// variables of a surrounding git process, and a PATH without any installed
// learnwatch.
func gitEnv(t *testing.T, home string) []string {
	t.Helper()
	var dirs []string
	for _, tool := range []string{"git", "sh", "dirname"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not found", tool)
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	return []string{
		"PATH=" + strings.Join(dirs, string(os.PathListSeparator)),
		"HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
	}
}

// run runs git in dir and returns its combined output and exit code.
func run(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv(t, filepath.Dir(dir))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out), 0
}

func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, code := run(t, dir, args...)
	if code != 0 {
		t.Fatalf("git %v: exit %d\n%s", args, code, out)
	}
	return out
}

// newRepo makes a git repository with one commit in a temp dir. HOME for
// the git commands is its parent, so no user config applies.
func newRepo(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "repo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Dir(root)) // for git run by the package
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	mustGit(t, root, "init", "-q", "-b", "main")
	writeFile(t, filepath.Join(root, "a.txt"), "a\n", 0o644)
	mustGit(t, root, "add", "a.txt")
	mustGit(t, root, "commit", "-q", "-m", "first")
	return root
}

func writeFile(t *testing.T, path, content string, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), mode); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// fakeLearnwatch writes a learnwatch stand-in that appends its arguments to
// calls and exits with code.
func fakeLearnwatch(t *testing.T, code int) (bin, calls string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "learnwatch")
	calls = filepath.Join(dir, "calls")
	writeFile(t, bin, "#!/bin/sh\necho \"$*\" >> '"+calls+"'\necho fake-learnwatch-ran >&2\nexit "+strconv.Itoa(code)+"\n", 0o755)
	return bin, calls
}

func readCalls(t *testing.T, calls string) string {
	t.Helper()
	b, err := os.ReadFile(calls)
	if os.IsNotExist(err) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func states(st Status) map[string]State {
	m := map[string]State{}
	for _, h := range st.Hooks {
		m[h.Name] = h.State
	}
	return m
}

func TestInstallFreshRepo(t *testing.T) {
	root := newRepo(t)
	st, err := Install(root, Options{Binary: "/nonexistent/learnwatch"})
	if err != nil {
		t.Fatal(err)
	}
	wantDir := filepath.Join(root, ".git", "hooks")
	if st.Dir != wantDir {
		t.Errorf("Dir = %s, want %s", st.Dir, wantDir)
	}
	for _, name := range GitHooks {
		p := filepath.Join(wantDir, name)
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm()&0o111 == 0 {
			t.Errorf("%s not executable: %v", name, fi.Mode())
		}
		data, _ := os.ReadFile(p)
		if !bytes.Contains(data, []byte(Marker)) || !bytes.Contains(data, []byte("hook "+name+` "$@"`)) {
			t.Errorf("%s:\n%s", name, data)
		}
	}
	got, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range GitHooks {
		if states(got)[name] != Ours {
			t.Errorf("%s: state %s, want ours", name, states(got)[name])
		}
	}
}

func TestInstallTwiceChangesNothing(t *testing.T) {
	root := newRepo(t)
	writeFile(t, filepath.Join(root, ".git", "hooks", "post-merge"), "#!/bin/sh\nexit 0\n", 0o755)
	if _, err := Install(root, Options{Binary: "/opt/lw/learnwatch"}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, filepath.Join(root, ".git", "hooks"))
	st, err := Install(root, Options{Binary: "/opt/lw/learnwatch"})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range st.Hooks {
		if h.Changed {
			t.Errorf("second install changed %s", h.Name)
		}
	}
	if after := snapshot(t, filepath.Join(root, ".git", "hooks")); after != before {
		t.Errorf("hooks directory changed:\nbefore %s\nafter  %s", before, after)
	}
	if states(st)["post-merge"] != OursChained {
		t.Errorf("post-merge: %s", states(st)["post-merge"])
	}
}

// snapshot lists a directory's files with mode, size, mtime and content.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range ents {
		fi, err := os.Lstat(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		b.WriteString(e.Name() + " " + fi.Mode().String() + " " + fi.ModTime().String() + " " + string(data) + "\n")
	}
	return b.String()
}

func TestChainedPreCommitStillFailsCommit(t *testing.T) {
	root := newRepo(t)
	hook := filepath.Join(root, ".git", "hooks", "pre-commit")
	original := "#!/bin/sh\n# someone else's hook\necho chained-hook-ran\nexit 1\n"
	writeFile(t, hook, original, 0o750)
	bin, calls := fakeLearnwatch(t, 0)

	st, err := Install(root, Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if states(st)["pre-commit"] != OursChained {
		t.Fatalf("pre-commit: %s", states(st)["pre-commit"])
	}
	writeFile(t, filepath.Join(root, "b.txt"), "b\n", 0o644)
	mustGit(t, root, "add", "b.txt")
	out, code := run(t, root, "commit", "-q", "-m", "second")
	if code == 0 {
		t.Fatalf("commit succeeded through a failing chained hook:\n%s", out)
	}
	if !strings.Contains(out, "chained-hook-ran") {
		t.Errorf("chained hook did not run:\n%s", out)
	}
	if c := readCalls(t, calls); c != "" {
		t.Errorf("learnwatch ran after the chained hook failed: %q", c)
	}

	// Once the chained hook passes, learnwatch runs with the hook's args.
	writeFile(t, hook+ChainedSuffix, "#!/bin/sh\necho chained-hook-ran\nexit 0\n", 0o750)
	out, code = run(t, root, "commit", "-q", "-m", "second")
	if code != 0 {
		t.Fatalf("commit failed: %s", out)
	}
	if c := readCalls(t, calls); c != "hook pre-commit\n" {
		t.Errorf("learnwatch calls = %q", c)
	}
	writeFile(t, hook+ChainedSuffix, original, 0o750)

	st, err = Uninstall(root)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(hook)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != original {
		t.Errorf("restored hook differs:\n%s", got)
	}
	fi, _ := os.Stat(hook)
	if fi.Mode().Perm() != 0o750 {
		t.Errorf("restored mode %v, want 0750", fi.Mode().Perm())
	}
	if _, err := os.Lstat(hook + ChainedSuffix); !os.IsNotExist(err) {
		t.Errorf("chained file left behind: %v", err)
	}
	for _, name := range []string{"post-checkout", "post-merge"} {
		if _, err := os.Lstat(filepath.Join(root, ".git", "hooks", name)); !os.IsNotExist(err) {
			t.Errorf("%s left behind", name)
		}
	}
	if states(st)["pre-commit"] != Foreign {
		t.Errorf("after uninstall pre-commit is %s", states(st)["pre-commit"])
	}
}

func TestPreCommitExitCodes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		lwCode   int
		noBinary bool
		wantFail bool
		wantErr  string
	}{
		{name: "clean", lwCode: 0},
		{name: "blocking", lwCode: 1, wantFail: true},
		{name: "learnwatch broke", lwCode: 3, wantErr: "not blocking"},
		{name: "binary gone", noBinary: true, wantErr: "binary not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := newRepo(t)
			bin, _ := fakeLearnwatch(t, tc.lwCode)
			if tc.noBinary {
				os.Remove(bin)
			}
			if _, err := Install(root, Options{Binary: bin}); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(root, "b.txt"), "b\n", 0o644)
			mustGit(t, root, "add", "b.txt")
			out, code := run(t, root, "commit", "-q", "-m", "second")
			if (code != 0) != tc.wantFail {
				t.Errorf("commit exit %d, want failure %v:\n%s", code, tc.wantFail, out)
			}
			if !strings.Contains(out, tc.wantErr) {
				t.Errorf("output lacks %q:\n%s", tc.wantErr, out)
			}
		})
	}
}

func TestPostCheckoutRunsOursAndKeepsChainedCode(t *testing.T) {
	root := newRepo(t)
	hook := filepath.Join(root, ".git", "hooks", "post-checkout")
	writeFile(t, hook, "#!/bin/sh\necho \"chained $*\"\nexit 3\n", 0o755)
	bin, calls := fakeLearnwatch(t, 2)
	if _, err := Install(root, Options{Binary: bin}); err != nil {
		t.Fatal(err)
	}
	out, code := run(t, root, "checkout", "-q", "-b", "topic")
	if code == 0 { // git reports a failed post-checkout hook as exit 1
		t.Errorf("checkout succeeded despite the chained hook's failure:\n%s", out)
	}
	if !strings.Contains(out, "chained ") || !strings.Contains(out, "failed (exit 2); ignored") {
		t.Errorf("output:\n%s", out)
	}
	c := readCalls(t, calls)
	if !strings.HasPrefix(c, "hook post-checkout ") || !strings.HasSuffix(c, " 1\n") {
		t.Errorf("learnwatch calls = %q, want hook post-checkout <old> <new> 1", c)
	}
	// The hook itself exits with the chained hook's code.
	cmd := exec.Command(hook, "x", "y", "1")
	cmd.Dir = root
	cmd.Env = gitEnv(t, filepath.Dir(root))
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 3 {
		t.Errorf("hook exit: %v, want exit status 3", err)
	}
}

func TestHooksPathRespected(t *testing.T) {
	root := newRepo(t)
	mustGit(t, root, "config", "core.hooksPath", ".husky")
	bin, calls := fakeLearnwatch(t, 0)
	// Installed from a subdirectory, the relative path still resolves
	// against the worktree root, as git does.
	sub := filepath.Join(root, "sub")
	os.Mkdir(sub, 0o755)
	writeFile(t, filepath.Join(root, ".husky", "pre-commit"), "#!/bin/sh\necho husky-ran\n", 0o755)
	st, err := Install(sub, Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, ".husky"); st.Dir != want {
		t.Errorf("Dir = %s, want %s", st.Dir, want)
	}
	if _, err := os.Lstat(filepath.Join(root, ".git", "hooks", "pre-commit")); !os.IsNotExist(err) {
		t.Errorf("hook written into .git/hooks despite core.hooksPath")
	}
	writeFile(t, filepath.Join(root, "b.txt"), "b\n", 0o644)
	mustGit(t, root, "add", "b.txt")
	out := mustGit(t, root, "commit", "-q", "-m", "second")
	if !strings.Contains(out, "husky-ran") {
		t.Errorf("chained husky hook did not run:\n%s", out)
	}
	if c := readCalls(t, calls); c != "hook pre-commit\n" {
		t.Errorf("learnwatch calls = %q", c)
	}

	// An absolute core.hooksPath is used as it is.
	abs := filepath.Join(t.TempDir(), "shared-hooks")
	mustGit(t, root, "config", "core.hooksPath", abs)
	if d, err := Dir(root); err != nil || d != abs {
		t.Errorf("Dir = %s, %v; want %s", d, err, abs)
	}
}

func TestWorktreeInstallsIntoCommonDir(t *testing.T) {
	root := newRepo(t)
	wt := filepath.Join(filepath.Dir(root), "wt")
	mustGit(t, root, "worktree", "add", "-q", wt)
	bin, calls := fakeLearnwatch(t, 0)
	st, err := Install(wt, Options{Binary: bin})
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, ".git", "hooks"); st.Dir != want {
		t.Errorf("Dir = %s, want %s", st.Dir, want)
	}
	if _, err := os.Stat(filepath.Join(root, ".git", "hooks", "pre-commit")); err != nil {
		t.Fatal(err)
	}
	// A commit in the worktree runs it.
	writeFile(t, filepath.Join(wt, "c.txt"), "c\n", 0o644)
	mustGit(t, wt, "add", "c.txt")
	mustGit(t, wt, "commit", "-q", "-m", "in worktree")
	if c := readCalls(t, calls); c != "hook pre-commit\n" {
		t.Errorf("learnwatch calls = %q", c)
	}
	main, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	if main.Dir != st.Dir || states(main)["pre-commit"] != Ours {
		t.Errorf("main worktree sees %+v", main)
	}
}

func TestForeignHookWithChainedFileIsRefused(t *testing.T) {
	root := newRepo(t)
	dir := filepath.Join(root, ".git", "hooks")
	writeFile(t, filepath.Join(dir, "pre-commit"), "#!/bin/sh\necho new\n", 0o755)
	writeFile(t, filepath.Join(dir, "pre-commit"+ChainedSuffix), "#!/bin/sh\necho old\n", 0o755)
	before := snapshot(t, dir)
	if _, err := Install(root, Options{}); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("err = %v", err)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("hooks changed:\n%s", after)
	}
	// Uninstall leaves a foreign hook and its neighbour alone.
	if _, err := Uninstall(root); err != nil {
		t.Fatal(err)
	}
	if after := snapshot(t, dir); after != before {
		t.Errorf("uninstall changed foreign hooks:\n%s", after)
	}
}

func TestSymlinkHookRestoredAsSymlink(t *testing.T) {
	root := newRepo(t)
	dir := filepath.Join(root, ".git", "hooks")
	writeFile(t, filepath.Join(root, "tools", "hook.sh"), "#!/bin/sh\nexit 0\n", 0o755)
	link := filepath.Join(dir, "post-merge")
	os.MkdirAll(dir, 0o755)
	if err := os.Symlink("../../tools/hook.sh", link); err != nil {
		t.Fatal(err)
	}
	st, err := Install(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if states(st)["post-merge"] != OursChained {
		t.Errorf("post-merge: %s", states(st)["post-merge"])
	}
	if _, err := Uninstall(root); err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(link)
	if err != nil || target != "../../tools/hook.sh" {
		t.Errorf("restored link = %q, %v", target, err)
	}
}

// A hook file too large to be a script of ours (or a framework's) is
// neither, and is not read whole: it is chained like any foreign hook and
// put back by uninstall byte for byte.
func TestLargeHookIsForeign(t *testing.T) {
	root := newRepo(t)
	big := "#!/bin/sh\n" + Marker + "\n" + strings.Repeat("#", maxHookBytes) + "\nexit 0\n"
	path := filepath.Join(root, ".git", "hooks", "post-merge")
	writeFile(t, path, big, 0o755)
	st, err := Install(root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if states(st)["post-merge"] != OursChained {
		t.Fatalf("post-merge: %s", states(st)["post-merge"])
	}
	if b, err := os.ReadFile(path + ChainedSuffix); err != nil || string(b) != big {
		t.Fatalf("the large hook was not kept aside as it was (%d bytes, %v)", len(b), err)
	}
	if _, err := Uninstall(root); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != big {
		t.Fatalf("uninstall did not put the large hook back (%d bytes, %v)", len(b), err)
	}
}

func TestUninstallAfterInterruptedInstall(t *testing.T) {
	root := newRepo(t)
	dir := filepath.Join(root, ".git", "hooks")
	// An install killed between moving the original aside and writing ours.
	writeFile(t, filepath.Join(dir, "pre-commit"+ChainedSuffix), "#!/bin/sh\nexit 0\n", 0o700)
	st, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	if h := st.Hooks[0]; h.State != Missing || h.Chained == "" {
		t.Errorf("status %+v", h)
	}
	if _, err := Uninstall(root); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, "pre-commit"))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("original not restored: %v %v", fi, err)
	}
}

func TestNotARepository(t *testing.T) {
	t.Setenv("GIT_CEILING_DIRECTORIES", os.TempDir())
	dir := t.TempDir()
	if _, err := Install(dir, Options{}); err == nil || !strings.Contains(err.Error(), "not a git worktree") {
		t.Errorf("err = %v", err)
	}
}

func TestScriptQuotesBinary(t *testing.T) {
	s := string(Script("post-merge", "/opt/it's here/learnwatch"))
	if !strings.Contains(s, `lw='/opt/it'\''s here/learnwatch'`) {
		t.Errorf("script:\n%s", s)
	}
	cmd := exec.Command("sh", "-n")
	cmd.Stdin = strings.NewReader(s)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sh -n: %v\n%s", err, out)
	}
}
