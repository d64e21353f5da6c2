// Package hooks owns learnwatch's hooks: the git hooks it installs
// (pre-commit, post-checkout, post-merge, post-rewrite) in the repository's
// hooks directory with chaining of hooks it did not write; the git merge
// drivers for the memory files (config and .gitattributes lines, see
// mergedriver.go); the .git/info/exclude lines that keep the files local to
// a checkout out of commits (exclude.go); its entries in the agent's
// .claude/settings.json
// (SessionStart and Stop); the parsing of the agent's hook input on stdin;
// the citation scan that counts ADR-NNN/PF-NNN mentions in a session
// transcript into .memory/.knowledge-usage.json; and the git state the
// automatic passes wait for (Operation: a rebase, merge, cherry-pick or
// revert in progress).
//
// The hook entry points themselves (what `learnwatch hook <name>` does) live
// with the command line; this package only installs, removes and inspects,
// and reads what the hooks are given.
package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// GitHooks are the git hooks learnwatch installs, in order.
var GitHooks = []string{"pre-commit", "post-checkout", "post-merge", "post-rewrite"}

// Marker is the comment that identifies a hook script written by learnwatch.
// A hook file without it is someone else's and is never overwritten.
const Marker = "# learnwatch-managed-hook"

// ChainedSuffix is appended to the name of a hook learnwatch found in place:
// the original is moved to <name>.learnwatch-chained and called first.
const ChainedSuffix = ".learnwatch-chained"

// ErrNotRepo is returned (wrapped) when the root is not inside a git
// worktree, so there is no hooks directory.
var ErrNotRepo = errors.New("not a git worktree")

// ErrConflict is returned (wrapped) when a hook learnwatch did not write sits
// next to a <name>.learnwatch-chained file: chaining it would lose one.
var ErrConflict = errors.New("hook conflict")

// State says who owns one hook.
type State string

// Hook states.
const (
	Missing     State = "missing"      // no hook
	Ours        State = "ours"         // learnwatch's hook
	OursChained State = "ours+chained" // learnwatch's hook calling the original first
	Foreign     State = "foreign"      // a hook learnwatch did not write
)

// Hook is the state of one git hook.
type Hook struct {
	Name    string `json:"name"`
	State   State  `json:"state"`
	Path    string `json:"path"`
	Chained string `json:"chained,omitempty"` // the moved-aside original, if any
	// ChainedFramework: the chained original is the pre-commit
	// framework's hook (pre-commit.com), which runs its own hooks first.
	ChainedFramework bool `json:"chained_framework,omitempty"`
	// Changed is set by Install and Uninstall when they changed this hook.
	Changed bool `json:"changed,omitempty"`
}

// Status is the state of learnwatch's git hooks in one repository.
type Status struct {
	Dir   string `json:"dir"` // the hooks directory git uses
	Hooks []Hook `json:"hooks"`
	// Drivers is the state of learnwatch's merge drivers (mergedriver.go).
	Drivers *DriverState `json:"merge_drivers,omitempty"`
	// Excluded are the patterns of the files learnwatch keeps local to a
	// checkout (scaffold.LocalState: the watcher's pid and state, the
	// locks, the stamps) that Install appended to the repository's
	// info/exclude, since neither it nor the root's .gitignore covered
	// them: `git add -A` would have committed them.
	Excluded []string `json:"excluded,omitempty"`
	// Unignored are those patterns that still are not covered (the
	// ignore files could not be judged or written). `learnwatch init`
	// adds them to .gitignore.
	Unignored []string `json:"unignored,omitempty"`
}

// Options configure Install.
type Options struct {
	// Binary is the absolute path of the learnwatch binary the hooks call.
	// When it no longer exists at run time (or is empty) the hooks look
	// learnwatch up on PATH, and skip themselves when it is not there.
	Binary string
}

// Dir returns the hooks directory git uses for the repository at root:
// core.hooksPath when set (relative to the worktree root when relative, as
// git resolves it), else the hooks directory of the common git dir, which is
// shared by all linked worktrees. It asks the git binary, so includes,
// worktree config and the like are honoured.
func Dir(root string) (string, error) {
	out, err := git(root, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir")
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("git hooks need git, which is not on PATH: %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w (%v)", root, ErrNotRepo, err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		return "", fmt.Errorf("%s: unexpected output from git rev-parse: %q", root, out)
	}
	top, common := lines[0], lines[1]
	hp, err := git(root, "config", "--type=path", "--get", "core.hooksPath")
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 { // 1: not set
			return "", fmt.Errorf("%s: read core.hooksPath: %w", root, err)
		}
		hp = ""
	}
	hp = strings.TrimRight(hp, "\r\n")
	if hp == "" {
		return filepath.Join(common, "hooks"), nil
	}
	if !filepath.IsAbs(hp) {
		hp = filepath.Join(top, hp)
	}
	return filepath.Clean(hp), nil
}

// git runs git in dir with an environment cleared of the variables a
// surrounding git process (a hook) sets, so that dir decides the repository.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	for _, kv := range os.Environ() {
		switch k, _, _ := strings.Cut(kv, "="); k {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		if msg := strings.TrimSpace(stderr.String()); msg != "" {
			return "", &gitError{msg: msg, err: err}
		}
		return "", err
	}
	return string(out), nil
}

type gitError struct {
	msg string
	err error
}

func (e *gitError) Error() string { return e.msg }
func (e *gitError) Unwrap() error { return e.err }

// Check reports the state of learnwatch's git hooks at root.
func Check(root string) (Status, error) {
	dir, err := Dir(root)
	if err != nil {
		return Status{}, err
	}
	st := Status{Dir: dir}
	for _, name := range GitHooks {
		h, err := inspect(dir, name)
		if err != nil {
			return st, err
		}
		st.Hooks = append(st.Hooks, h)
	}
	ds, err := CheckMergeDrivers(root)
	st.Drivers = &ds
	return st, err
}

// inspect returns the state of one hook.
func inspect(dir, name string) (Hook, error) {
	path := filepath.Join(dir, name)
	h := Hook{Name: name, Path: path, State: Missing}
	chained := path + ChainedSuffix
	if fi, err := os.Lstat(chained); err == nil {
		h.Chained = chained
		h.ChainedFramework = fi.Mode().IsRegular() && isFrameworkHook(chained)
	}
	ours, exists, err := isOurs(path)
	if err != nil {
		return h, err
	}
	switch {
	case !exists:
		h.State = Missing
	case !ours:
		h.State = Foreign
	case h.Chained != "":
		h.State = OursChained
	default:
		h.State = Ours
	}
	return h, nil
}

// isOurs reports whether path is a regular file carrying Marker.
func isOurs(path string) (ours, exists bool, err error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err != nil {
		return false, false, fmt.Errorf("inspect hook: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return false, true, nil
	}
	data, err := safefs.ReadFollowing(path, maxHookBytes)
	if safefs.IsRefused(err) {
		return false, true, nil // not a script of ours: too large, or no longer a file
	}
	if err != nil {
		return false, true, fmt.Errorf("read hook: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, Marker) {
			return true, true, nil
		}
	}
	return false, true, nil
}

// Install writes learnwatch's git hooks into the hooks directory of root.
// A hook learnwatch did not write is moved to <name>.learnwatch-chained and
// called first by ours; a hook of ours is rewritten only when its content
// differs, so installing twice changes nothing.
func Install(root string, opts Options) (Status, error) {
	dir, err := Dir(root)
	if err != nil {
		return Status{}, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return Status{Dir: dir}, fmt.Errorf("create hooks directory: %w", err)
	}
	st := Status{Dir: dir}
	for _, name := range GitHooks {
		h, err := installOne(dir, name, Script(name, opts.Binary))
		st.Hooks = append(st.Hooks, h)
		if err != nil {
			return st, err
		}
	}
	ds, err := InstallMergeDrivers(root, opts.Binary)
	st.Drivers = &ds
	excluded, unignored, xerr := exclude(root)
	st.Excluded, st.Unignored = excluded, unignored
	return st, errors.Join(err, xerr)
}

func installOne(dir, name string, script []byte) (Hook, error) {
	h, err := inspect(dir, name)
	if err != nil {
		return h, err
	}
	switch h.State {
	case Foreign:
		if h.Chained != "" {
			return h, fmt.Errorf("%w: %s is not learnwatch's and %s already exists: move one of them away, then install again", ErrConflict, h.Path, h.Chained)
		}
		fi, err := os.Lstat(h.Path)
		if err != nil {
			return h, fmt.Errorf("inspect hook: %w", err)
		}
		if fi.IsDir() {
			return h, fmt.Errorf("hook %s is a directory", h.Path)
		}
		// Rename keeps the original's bytes, mode and (for a symlink)
		// target, so Uninstall can put it back exactly.
		if err := os.Rename(h.Path, h.Path+ChainedSuffix); err != nil {
			return h, fmt.Errorf("move existing hook aside: %w", err)
		}
		h.Chained = h.Path + ChainedSuffix
		h.ChainedFramework = fi.Mode().IsRegular() && isFrameworkHook(h.Chained)
	case Ours, OursChained:
		cur, err := safefs.ReadFollowing(h.Path, maxHookBytes)
		if err != nil {
			return h, fmt.Errorf("read hook: %w", err)
		}
		if bytes.Equal(cur, script) {
			fi, err := os.Stat(h.Path)
			if err != nil {
				return h, fmt.Errorf("inspect hook: %w", err)
			}
			if fi.Mode().Perm()&0o111 == 0o111 {
				return h, nil
			}
			if err := os.Chmod(h.Path, fi.Mode().Perm()|0o111); err != nil {
				return h, fmt.Errorf("make hook executable: %w", err)
			}
			h.Changed = true
			return h, nil
		}
	}
	if err := manifest.WriteFile(h.Path, script, 0o755); err != nil {
		return h, fmt.Errorf("write hook: %w", err)
	}
	// WriteFile's mode is filtered by the umask; a hook must be executable.
	if fi, err := os.Stat(h.Path); err == nil && fi.Mode().Perm()&0o100 == 0 {
		_ = os.Chmod(h.Path, fi.Mode().Perm()|0o100)
	}
	h.Changed = true
	h.State = Ours
	if h.Chained != "" {
		h.State = OursChained
	}
	return h, nil
}

// Uninstall removes learnwatch's git hooks from root's hooks directory and
// puts back the hooks they chained (by rename: same bytes, same mode). Hooks
// learnwatch did not write are left alone.
func Uninstall(root string) (Status, error) {
	dir, err := Dir(root)
	if err != nil {
		return Status{}, err
	}
	st := Status{Dir: dir}
	for _, name := range GitHooks {
		h, err := uninstallOne(dir, name)
		st.Hooks = append(st.Hooks, h)
		if err != nil {
			return st, err
		}
	}
	ds, err := UninstallMergeDrivers(root)
	st.Drivers = &ds
	return st, err
}

func uninstallOne(dir, name string) (Hook, error) {
	h, err := inspect(dir, name)
	if err != nil {
		return h, err
	}
	switch h.State {
	case Foreign:
		return h, nil // not ours; a chained file next to it stays too
	case Ours:
		if err := os.Remove(h.Path); err != nil {
			return h, fmt.Errorf("remove hook: %w", err)
		}
		h.State, h.Changed = Missing, true
	case OursChained, Missing:
		if h.Chained == "" {
			return h, nil
		}
		// Missing with a chained file: an install interrupted between the
		// move and the write. Either way the original goes back.
		if err := os.Rename(h.Chained, h.Path); err != nil {
			return h, fmt.Errorf("restore chained hook: %w", err)
		}
		h.State, h.Chained, h.Changed = Foreign, "", true
	}
	return h, nil
}

// Script returns the hook script learnwatch installs as name. It runs the
// chained original first (with the hook's arguments and stdin); then
// `learnwatch hook <name> "$@"` with the binary at binary, else learnwatch
// on PATH, else nothing (a missing learnwatch never fails a hook).
//
// Exit codes: when the chained hook fails, pre-commit exits with its code at
// once (the commit is refused anyway; learnwatch's check would only add
// noise); post-checkout and post-merge still run learnwatch's reconcile,
// because the checkout or merge has already happened, and then exit with the
// chained hook's code. learnwatch's own pre-commit exit 1 (stale knowledge
// with precommit.block) blocks the commit; any other failure of learnwatch
// is reported on stderr and ignored. In post-checkout and post-merge
// learnwatch's exit code is always ignored.
func Script(name, binary string) []byte {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	w("#!/bin/sh\n")
	w("%s: written by `learnwatch hooks install`; `learnwatch hooks uninstall`\n", Marker)
	w("# removes it and puts back the hook it replaced (%s%s), which runs first.\n", name, ChainedSuffix)
	w("chained=\"$(dirname \"$0\")/%s%s\"\n", name, ChainedSuffix)
	w("status=0\n")
	w("if [ -x \"$chained\" ]; then\n")
	w("\t\"$chained\" \"$@\"\n")
	w("\tstatus=$?\n")
	if name == "pre-commit" {
		w("\t[ \"$status\" -eq 0 ] || exit \"$status\"\n")
	}
	w("fi\n")
	w("lw=%s\n", shellQuote(binary))
	w("[ -n \"$lw\" ] && [ -x \"$lw\" ] || lw=$(command -v learnwatch 2>/dev/null) || lw=\n")
	w("if [ -z \"$lw\" ]; then\n")
	w("\techo \"learnwatch: binary not found; %s hook skipped\" >&2\n", name)
	w("\texit \"$status\"\n")
	w("fi\n")
	w("\"$lw\" hook %s \"$@\"\n", name)
	w("code=$?\n")
	if name == "pre-commit" {
		w("case $code in\n")
		w("0 | 1) exit \"$code\" ;;\n")
		w("*) echo \"learnwatch: hook %s failed (exit $code); not blocking\" >&2 ;;\n", name)
		w("esac\n")
	} else {
		w("[ \"$code\" -eq 0 ] || echo \"learnwatch: hook %s failed (exit $code); ignored\" >&2\n", name)
	}
	w("exit \"$status\"\n")
	return []byte(b.String())
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// frameworkMarker is the line the pre-commit framework writes into the git
// hooks it installs.
const frameworkMarker = "File generated by pre-commit: https://pre-commit.com"

// isFrameworkHook reports whether the hook script at path was written by
// the pre-commit framework (the marker is in its first 4 KiB).
func isFrameworkHook(path string) bool {
	b, err := safefs.ReadFollowing(path, maxHookBytes)
	return err == nil && bytes.Contains(b[:min(len(b), 4096)], []byte(frameworkMarker))
}

// maxHookBytes bounds the hook files read to tell ours and a framework's
// apart: a larger one is neither (ours are a few hundred bytes).
const maxHookBytes = 1 << 20
