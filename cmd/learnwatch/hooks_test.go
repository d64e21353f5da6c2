package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func init() {
	// wantexit N prog args...: run prog (like exec) and require exit code N.
	scriptCmds["wantexit"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) < 2 {
			ts.Fatalf("usage: wantexit N prog args...")
		}
		want, err := strconv.Atoi(args[0])
		if err != nil {
			ts.Fatalf("wantexit: bad code %q", args[0])
		}
		got := 0
		if err := ts.Exec(args[1], args[2:]...); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				ts.Fatalf("wantexit: %v", err)
			}
			got = ee.ExitCode()
		}
		if got != want {
			ts.Fatalf("%s exited %d, want %d", args[1], got, want)
		}
	}
	// filemode PERM file: require the file's permission bits (octal).
	scriptCmds["filemode"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if len(args) != 2 {
			ts.Fatalf("usage: filemode PERM file")
		}
		want, err := strconv.ParseUint(args[0], 8, 32)
		if err != nil {
			ts.Fatalf("filemode: bad mode %q", args[0])
		}
		fi, err := os.Stat(ts.MkAbs(args[1]))
		ts.Check(err)
		if (uint64(fi.Mode().Perm()) == want) == neg {
			ts.Fatalf("%s has mode %#o (want %s%#o)", args[1], fi.Mode().Perm(), map[bool]string{true: "not ", false: ""}[neg], want)
		}
	}
	// expandenv files...: replace $VAR in the files with the script's
	// environment (hook input needs absolute paths of $WORK).
	scriptCmds["expandenv"] = func(ts *testscript.TestScript, neg bool, args []string) {
		if neg || len(args) == 0 {
			ts.Fatalf("usage: expandenv files...")
		}
		for _, f := range args {
			s := os.Expand(ts.ReadFile(f), ts.Getenv)
			ts.Check(os.WriteFile(ts.MkAbs(f), []byte(s), 0o644))
		}
	}
}

// toolEnv is an environment for building with Go and running git in a
// sandbox: HOME is home, Go's caches are the real ones (no rebuild, no
// network), git ignores user and system config.
func toolEnv(t *testing.T, home string, extra ...string) []string {
	t.Helper()
	env := []string{"HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "GOTOOLCHAIN=local", "GOPROXY=off", "GOFLAGS=-mod=mod",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com"}
	for _, k := range []string{"GOCACHE", "GOMODCACHE"} {
		out, err := exec.Command("go", "env", k).Output()
		if err != nil {
			t.Skipf("go env %s: %v", k, err)
		}
		env = append(env, k+"="+strings.TrimSpace(string(out)))
	}
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); k == "TMPDIR" || k == "LANG" {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

type result struct {
	out  string
	code int
}

func runIn(t *testing.T, dir string, env []string, name string, args ...string) result {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		return result{b.String(), ee.ExitCode()}
	case err != nil:
		t.Fatalf("%s %v: %v", name, args, err)
	}
	return result{b.String(), 0}
}

func sourceDir(t *testing.T) string {
	t.Helper()
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(src, "install.sh")); err != nil {
		t.Fatalf("install.sh not found: %v", err)
	}
	return src
}

// pathOf is a PATH holding the directories of the given tools only.
func pathOf(t *testing.T, tools ...string) string {
	t.Helper()
	var dirs []string
	for _, tool := range tools {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Skipf("%s not found", tool)
		}
		dirs = append(dirs, filepath.Dir(p))
	}
	return strings.Join(dirs, string(os.PathListSeparator))
}

// TestInstallScript runs install.sh as a user would, in a sandbox HOME.
func TestInstallScript(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	src := sourceDir(t)
	script := filepath.Join(src, "install.sh")
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	repo := filepath.Join(tmp, "repo")
	for _, d := range []string{home, repo} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	path := pathOf(t, "go", "git", "bash", "sed", "awk", "dirname", "rm", "mkdir")
	env := toolEnv(t, home, "PATH="+path)
	if r := runIn(t, repo, env, "git", "init", "-q"); r.code != 0 {
		t.Fatal(r.out)
	}

	r := runIn(t, repo, env, "bash", script, "--help")
	if r.code != 0 || !strings.Contains(r.out, "Usage: install.sh") {
		t.Errorf("--help: %d\n%s", r.code, r.out)
	}
	r = runIn(t, repo, env, "bash", script, "--bogus")
	if r.code != 2 || !strings.Contains(r.out, "unknown option --bogus") {
		t.Errorf("--bogus: %d\n%s", r.code, r.out)
	}

	// Default: ~/.local/bin, not on PATH, with --hooks.
	bin := filepath.Join(home, ".local", "bin", "learnwatch")
	r = runIn(t, repo, env, "bash", script, "--hooks")
	if r.code != 0 {
		t.Fatalf("install.sh --hooks: exit %d\n%s", r.code, r.out)
	}
	if fi, err := os.Stat(bin); err != nil || fi.Mode().Perm()&0o100 == 0 {
		t.Fatalf("binary not installed: %v", err)
	}
	if !strings.Contains(r.out, "is not on your PATH") || !strings.Contains(r.out, `export PATH="`+filepath.Dir(bin)) {
		t.Errorf("no PATH advice:\n%s", r.out)
	}
	hook := filepath.Join(repo, ".git", "hooks", "pre-commit")
	first, err := os.ReadFile(hook)
	if err != nil || !bytes.Contains(first, []byte("lw='"+bin+"'")) {
		t.Fatalf("pre-commit hook does not call %s: %v\n%s", bin, err, first)
	}
	settings := filepath.Join(repo, ".claude", "settings.json")
	firstSettings, err := os.ReadFile(settings)
	if err != nil || !bytes.Contains(firstSettings, []byte("learnwatch hook session-start")) {
		t.Fatalf("settings.json: %v\n%s", err, firstSettings)
	}

	// Again: same result, nothing rewritten.
	r = runIn(t, repo, env, "bash", script, "--hooks")
	if r.code != 0 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.out)
	}
	if again, _ := os.ReadFile(hook); !bytes.Equal(again, first) {
		t.Error("second run changed the hook")
	}
	if again, _ := os.ReadFile(settings); !bytes.Equal(again, firstSettings) {
		t.Error("second run changed settings.json")
	}
	if strings.Contains(r.out, "[changed]") {
		t.Errorf("second run reports changes:\n%s", r.out)
	}

	// Uninstall: hooks and binary go; twice is fine.
	r = runIn(t, repo, env, "bash", script, "--uninstall")
	if r.code != 0 {
		t.Fatalf("--uninstall: exit %d\n%s", r.code, r.out)
	}
	for _, p := range []string{bin, hook, settings} {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s left after --uninstall", p)
		}
	}
	r = runIn(t, repo, env, "bash", script, "--uninstall")
	if r.code != 0 || !strings.Contains(r.out, "nothing to remove") {
		t.Errorf("second --uninstall: %d\n%s", r.code, r.out)
	}

	// GOBIN wins, and a GOBIN on PATH gets no advice.
	gobin := filepath.Join(tmp, "gobin")
	r = runIn(t, repo, toolEnv(t, home, "GOBIN="+gobin, "PATH="+gobin+string(os.PathListSeparator)+path), "bash", script)
	if r.code != 0 || strings.Contains(r.out, "not on your PATH") {
		t.Errorf("GOBIN install: %d\n%s", r.code, r.out)
	}
	if _, err := os.Stat(filepath.Join(gobin, "learnwatch")); err != nil {
		t.Error(err)
	}

	// --hooks outside a repository is refused before building.
	r = runIn(t, home, toolEnv(t, home, "PATH="+path, "GIT_CEILING_DIRECTORIES="+tmp), "bash", script, "--hooks")
	if r.code == 0 || !strings.Contains(r.out, "is not in one") {
		t.Errorf("--hooks outside a repo: %d\n%s", r.code, r.out)
	}

	// Without Go: a clear message.
	noGo := pathOf(t, "git", "bash", "sed", "dirname")
	for _, d := range filepath.SplitList(noGo) {
		if _, err := os.Stat(filepath.Join(d, "go")); err == nil {
			t.Logf("go lives next to git (%s); not testing a missing Go", d)
			return
		}
	}
	r = runIn(t, repo, toolEnv(t, home, "PATH="+noGo), "bash", script)
	if r.code == 0 || !strings.Contains(r.out, "Go is not installed") {
		t.Errorf("without Go: %d\n%s", r.code, r.out)
	}
}

// TestPreCommitFramework checks .pre-commit-hooks.yaml with the real
// pre-commit tool: a repository using learnwatch as a pre-commit hook
// builds it (language: golang) and runs `learnwatch hook pre-commit` on a
// commit.
func TestPreCommitFramework(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	if _, err := exec.LookPath("pre-commit"); err != nil {
		t.Skip("pre-commit is not installed")
	}
	src := sourceDir(t)
	tmp := t.TempDir()
	home := filepath.Join(tmp, "home")
	hookRepo := filepath.Join(tmp, "learnwatch")
	repo := filepath.Join(tmp, "repo")
	env := toolEnv(t, home, "PATH="+os.Getenv("PATH"), "PRE_COMMIT_HOME="+filepath.Join(tmp, "pre-commit-cache"))

	// The hook repository: this source tree (without tests) in a commit.
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.Name() == ".git" && rel != "." {
			// In a git worktree .git is a file naming the real repository:
			// copied, it would make the hook repository that worktree, and
			// the commit below would land on its branch.
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(hookRepo, rel), 0o755)
		}
		// Everything the build needs (sources and the files they embed),
		// without the tests.
		keep := rel == ".pre-commit-hooks.yaml" || !strings.HasSuffix(rel, "_test.go")
		if !keep || !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(hookRepo, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	git := func(dir string, args ...string) string {
		t.Helper()
		r := runIn(t, dir, env, "git", args...)
		if r.code != 0 {
			t.Fatalf("git %v: %s", args, r.out)
		}
		return strings.TrimSpace(r.out)
	}
	git(hookRepo, "init", "-q")
	git(hookRepo, "add", "-A")
	git(hookRepo, "commit", "-q", "-m", "learnwatch")
	rev := git(hookRepo, "rev-parse", "HEAD")

	if err := os.MkdirAll(repo, 0o755); err != nil {
		t.Fatal(err)
	}
	git(repo, "init", "-q")
	config := "repos:\n- repo: " + hookRepo + "\n  rev: " + rev + "\n  hooks:\n  - id: learnwatch-stale\n"
	if err := os.WriteFile(filepath.Join(repo, ".pre-commit-config.yaml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "a.go"), []byte("package a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, repo, env, "pre-commit", "install"); r.code != 0 {
		t.Fatalf("pre-commit install: %s", r.out)
	}
	git(repo, "add", "-A")
	r := runIn(t, repo, env, "git", "commit", "-m", "first")
	t.Logf("git commit through pre-commit:\n%s", r.out)
	if strings.Contains(r.out, `unknown hook "pre-commit"`) {
		t.Skip("the framework built learnwatch and ran `learnwatch hook pre-commit`, which this build does not have yet")
	}
	if r.code != 0 || !regexp.MustCompile(`(?m)^learnwatch.*Passed$`).MatchString(r.out) {
		t.Fatalf("commit through the pre-commit framework: exit %d\n%s", r.code, r.out)
	}

	// A commit that removes a file the knowledge references: the hook
	// passes (it only warns by default), and the framework shows the
	// warning instead of hiding a passing hook's output.
	if err := os.MkdirAll(filepath.Join(repo, ".memory", "knowledge"), 0o755); err != nil {
		t.Fatal(err)
	}
	adr := "# Architectural Decisions\n\n## ADR-001: Keep the parser in a.go\n\n- **Status**: Accepted\n- **Decision**: the parser lives in `a.go`.\n"
	if err := os.WriteFile(filepath.Join(repo, ".memory", "knowledge", "decisions.md"), []byte(adr), 0o644); err != nil {
		t.Fatal(err)
	}
	git(repo, "add", "-A")
	if r := runIn(t, repo, env, "git", "commit", "-m", "knowledge"); r.code != 0 {
		t.Fatalf("commit the knowledge: %s", r.out)
	}
	git(repo, "rm", "-q", "a.go")
	r = runIn(t, repo, env, "git", "commit", "-m", "drop a.go")
	t.Logf("git commit removing a referenced file:\n%s", r.out)
	if r.code != 0 {
		t.Fatalf("a warning must not fail the commit: exit %d\n%s", r.code, r.out)
	}
	if !strings.Contains(r.out, "ADR-001") || !strings.Contains(r.out, "a.go") {
		t.Errorf("the framework hid learnwatch's warning:\n%s", r.out)
	}
}
