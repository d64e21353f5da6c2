package watch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/gitrepo"
)

// gitIn runs git in dir with a fixed identity, failing the test on error
// unless mayFail; it returns the combined output.
func gitIn(tb testing.TB, dir string, mayFail bool, args ...string) string {
	tb.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir, "GIT_EDITOR=true")
	out, err := cmd.CombinedOutput()
	if err != nil && !mayFail {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// While git is in the middle of a rebase (stopped on a conflict), the
// watcher runs no pass: the rebase has already written a command's new
// content, and a pass would count it as the person's edit and write the
// committed memory, which makes `git rebase --continue` refuse (it takes
// the modified memory for an unresolved conflict). The status says why;
// the pass runs once the rebase is done, and counts the edit the rebased
// commit carries, once.
func TestPassesHeldDuringARebase(t *testing.T) {
	root := fixture(t, 3, 0)
	notes := filepath.Join(root, "notes.txt")
	os.WriteFile(notes, []byte("base\n"), 0o644)
	// What `learnwatch init` has git ignore of a committed memory.
	os.WriteFile(filepath.Join(root, ".gitignore"), []byte(".memory/.learning.lock*\n.memory/.knowledge.lock*\n"+
		".memory/.watch.pid\n.memory/.watch-state.json\n.memory/.citation-offsets.json\n.memory/.kept-stamp.json\n"+
		".memory/*.corrupt-*\n.memory/.*.tmp-*\n"), 0o644)
	gitIn(t, root, false, "init", "-q", "-b", "main")
	gitIn(t, root, false, "add", "-A")
	gitIn(t, root, false, "commit", "-q", "-m", "memory and commands")
	gitIn(t, root, false, "checkout", "-q", "-b", "feat")
	edited := []byte("# command 0\n\nbody, with the team's flags\n")
	os.WriteFile(abs(root, cmdRel(0)), edited, 0o644)
	os.WriteFile(notes, []byte("feat\n"), 0o644)
	gitIn(t, root, false, "commit", "-q", "-am", "feat: the command and the notes")
	gitIn(t, root, false, "checkout", "-q", "main")
	os.WriteFile(notes, []byte("main\n"), 0o644)
	gitIn(t, root, false, "commit", "-q", "-am", "main: the notes")
	gitIn(t, root, false, "checkout", "-q", "feat")

	r := start(t, root, Options{Debounce: debounce}, nil)
	// What the first pass wrote (the usage file, the caches' ignore
	// file) is committed with the work, as the docs advise.
	gitIn(t, root, false, "add", "-A")
	gitIn(t, root, false, "commit", "-q", "--allow-empty", "-m", "feat: the memory after the first pass")
	if n := r.quiet(debounce + margin); n != 0 {
		t.Logf("%d passes after the commit", n)
	}
	out := gitIn(t, root, true, "rebase", "main")
	if !strings.Contains(out, "CONFLICT") {
		t.Fatalf("the rebase did not stop on the conflict:\n%s", out)
	}
	if b, _ := os.ReadFile(abs(root, cmdRel(0))); string(b) != string(edited) {
		t.Fatalf("the rebase has not written the command yet: %q", b)
	}
	if n := r.quiet(debounce + margin); n != 0 {
		t.Fatalf("%d passes ran during the rebase", n)
	}
	if st, _, _ := ReadState(root); st.HeldBy != "rebase" {
		t.Fatalf("state during the rebase: held by %q", st.HeldBy)
	}
	if out := gitIn(t, root, false, "status", "--porcelain", "--untracked-files=no", "--", ".memory"); out != "" {
		t.Fatalf("the memory was written during the rebase:\n%s", out)
	}
	os.WriteFile(notes, []byte("both\n"), 0o644)
	gitIn(t, root, false, "add", "notes.txt")
	gitIn(t, root, false, "rebase", "--continue")

	r.waitFor(holdPoll+debounce+margin, "the held pass", func() bool {
		_, edits := r.sum()
		return edits == 1
	})
	r.quiet(debounce + margin)
	if _, edits := r.sum(); edits != 1 {
		t.Fatalf("%d edits counted, want the rebased commit's one", edits)
	}
	if st, _, _ := ReadState(root); st.HeldBy != "" {
		t.Fatalf("still held by %q", st.HeldBy)
	}
}

// While git holds the index lock it may be writing the worktree (a
// checkout, a merge's files): the watcher's pass waits until the lock is
// gone, as it would read half of what git writes. A lock older than
// gitrepo.WritingFor (a `git commit` waiting in an editor, a git that was
// killed) holds nothing back.
func TestPassHeldWhileGitWritesTheWorktree(t *testing.T) {
	root := fixture(t, 3, 0)
	gitIn(t, root, false, "init", "-q", "-b", "main")
	r := start(t, root, Options{Debounce: debounce}, nil)
	r.quiet(debounce + margin)
	lock := filepath.Join(root, ".git", "index.lock")
	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(abs(root, cmdRel(0)), []byte("# command 0\n\nbody, edited\n"), 0o644)
	if n := r.quiet(debounce + margin); n != 0 {
		t.Fatalf("%d passes ran while git held its index lock", n)
	}
	os.Remove(lock)
	r.waitFor(indexPoll+debounce+margin, "the held pass", func() bool {
		_, edits := r.sum()
		return edits == 1
	})

	if err := os.WriteFile(lock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * gitrepo.WritingFor)
	os.Chtimes(lock, old, old)
	os.WriteFile(abs(root, cmdRel(1)), []byte("# command 1\n\nbody, edited\n"), 0o644)
	r.waitFor(debounce+margin, "the pass past an old lock", func() bool {
		_, edits := r.sum()
		return edits == 2
	})
}
