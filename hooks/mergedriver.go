package hooks

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// MergeDriver is one git merge driver learnwatch configures: the name under
// merge.<name> in the repository's config, the KIND argument of
// `learnwatch merge-driver`, and the memory files it merges.
type MergeDriver struct {
	Name  string
	Kind  string
	Paths []string
}

// MergeDrivers are the drivers `hooks install` configures.
var MergeDrivers = []MergeDriver{
	{Name: "learnwatch-log", Kind: "log", Paths: []string{".memory/learning-log.jsonl"}},
	{Name: "learnwatch-manifest", Kind: "manifest", Paths: []string{".memory/.learning-manifest.json"}},
	{Name: "learnwatch-usage", Kind: "usage", Paths: []string{".memory/.knowledge-usage.json"}},
	{Name: "learnwatch-knowledge", Kind: "knowledge", Paths: []string{".memory/knowledge/decisions.md", ".memory/knowledge/pitfalls.md"}},
}

// Attribute block markers in .gitattributes.
const (
	attrBegin = "# learnwatch merge drivers: `learnwatch hooks install` writes this block, `hooks uninstall` removes it"
	attrEnd   = "# end of learnwatch merge drivers"
)

// maxAttributesBytes bounds the .gitattributes file learnwatch edits.
const maxAttributesBytes = 1 << 20

// DriverState is the state of learnwatch's merge drivers in one repository.
type DriverState struct {
	// Attributes is the .gitattributes file holding the driver lines.
	Attributes string `json:"attributes"`
	// Configured lists the drivers set in the repository's git config.
	Configured []string `json:"configured"`
	// Attributed is set when .gitattributes holds learnwatch's block.
	Attributed bool `json:"attributed"`
	Changed    bool `json:"changed,omitempty"`
}

// DriverCommand is the merge.<name>.driver value for a driver: the binary
// at binary (when it is still there at merge time), else learnwatch on PATH.
func DriverCommand(binary, kind string) string {
	if binary == "" {
		return "learnwatch merge-driver " + kind + " %O %A %B %P"
	}
	return "lw=" + shellQuote(binary) + "; [ -x \"$lw\" ] || lw=learnwatch; \"$lw\" merge-driver " + kind + " %O %A %B %P"
}

// attributesBlock is learnwatch's block of .gitattributes lines.
func attributesBlock() string {
	var b strings.Builder
	b.WriteString(attrBegin + "\n")
	for _, d := range MergeDrivers {
		for _, p := range d.Paths {
			fmt.Fprintf(&b, "/%s merge=%s\n", p, d.Name)
		}
	}
	for _, p := range UnionJournals {
		fmt.Fprintf(&b, "/%s merge=union\n", p)
	}
	b.WriteString(attrEnd + "\n")
	return b.String()
}

// UnionJournals are the append-only journals: git's built-in union merge
// keeps both sides' new lines without conflict markers.
var UnionJournals = []string{".memory/feedback.jsonl", ".memory/outcomes.jsonl"}

// topLevel returns the worktree root git sees for root.
func topLevel(root string) (string, error) {
	out, err := git(root, "rev-parse", "--path-format=absolute", "--show-toplevel")
	if errors.Is(err, exec.ErrNotFound) {
		return "", fmt.Errorf("merge drivers need git, which is not on PATH: %w", err)
	}
	if err != nil {
		return "", fmt.Errorf("%s: %w (%v)", root, ErrNotRepo, err)
	}
	return strings.TrimSpace(out), nil
}

// GitDir returns the git directory of the worktree at root (a linked
// worktree's own directory, not the common one): where a merge in that
// worktree keeps its state.
func GitDir(root string) (string, error) {
	dir, err := gitrepo.GitDir(root)
	if err != nil {
		return "", fmt.Errorf("%s: %w (%v)", root, ErrNotRepo, err)
	}
	return dir, nil
}

// Operation names the git operation under way in the worktree whose git
// directory is gitDir — "rebase" (rebase-merge/ or rebase-apply/, `git am`
// included), "merge" (MERGE_HEAD), "cherry-pick" (CHERRY_PICK_HEAD),
// "revert" (REVERT_HEAD) — or "" when none is: the state git leaves while
// it waits for the person (a conflict, `--no-commit`, an interactive
// stop). Five lstats, no git process.
func Operation(gitDir string) string {
	if gitDir == "" {
		return ""
	}
	for _, op := range []struct{ name, path string }{
		{"rebase", "rebase-merge"}, {"rebase", "rebase-apply"},
		{"merge", "MERGE_HEAD"}, {"cherry-pick", "CHERRY_PICK_HEAD"}, {"revert", "REVERT_HEAD"},
	} {
		if _, err := os.Lstat(filepath.Join(gitDir, op.path)); err == nil {
			return op.name
		}
	}
	return ""
}

// OperationAt is Operation for the worktree holding root, "" when none is
// under way or root is not in git (a few stats find the git directory, no
// git process).
func OperationAt(root string) string {
	dir, err := GitDir(root)
	if err != nil {
		return ""
	}
	return Operation(dir)
}

// InProgress is why a command that only adds facts queues them instead of
// writing the committed memory: "git <operation> in progress" while
// OperationAt names one (modified then, a tracked file would make `git
// rebase --continue` refuse), "" otherwise.
func InProgress(root string) string {
	if op := OperationAt(root); op != "" {
		return "git " + op + " in progress"
	}
	return ""
}

// configGet returns a local config value ("" and false when unset).
func configGet(root, key string) (string, bool, error) {
	out, err := git(root, "config", "--local", "--get", key)
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() == 1 {
			return "", false, nil
		}
		return "", false, fmt.Errorf("read git config %s: %w", key, err)
	}
	return strings.TrimRight(out, "\r\n"), true, nil
}

// InstallMergeDrivers sets merge.<name>.name and .driver for each of
// learnwatch's drivers in the repository's own config (shared by its linked
// worktrees) and writes learnwatch's block of lines into the worktree's
// .gitattributes. Installing twice changes nothing.
func InstallMergeDrivers(root, binary string) (DriverState, error) {
	top, err := topLevel(root)
	if err != nil {
		return DriverState{}, err
	}
	st := DriverState{Attributes: filepath.Join(top, ".gitattributes")}
	for _, d := range MergeDrivers {
		want := map[string]string{
			"merge." + d.Name + ".name":   "learnwatch " + d.Kind + " merge (learnwatch hooks install)",
			"merge." + d.Name + ".driver": DriverCommand(binary, d.Kind),
		}
		for _, key := range []string{"merge." + d.Name + ".name", "merge." + d.Name + ".driver"} {
			cur, ok, err := configGet(top, key)
			if err != nil {
				return st, err
			}
			if ok && cur == want[key] {
				continue
			}
			if _, err := git(top, "config", "--local", "--replace-all", key, want[key]); err != nil {
				return st, fmt.Errorf("set git config %s: %w", key, err)
			}
			st.Changed = true
		}
		st.Configured = append(st.Configured, d.Name)
	}
	cur, err := readAttributes(st.Attributes)
	if err != nil {
		return st, err
	}
	next := withBlock(cur, attributesBlock())
	if !bytes.Equal(cur, next) {
		if err := manifest.WriteFile(st.Attributes, next, 0o644); err != nil {
			return st, fmt.Errorf("write %s: %w", st.Attributes, err)
		}
		st.Changed = true
	}
	st.Attributed = true
	return st, nil
}

// UninstallMergeDrivers removes learnwatch's merge.<name> sections (only
// those whose driver runs `merge-driver`) and its .gitattributes block; a
// .gitattributes left empty is removed. Uninstalling twice changes nothing.
func UninstallMergeDrivers(root string) (DriverState, error) {
	top, err := topLevel(root)
	if err != nil {
		return DriverState{}, err
	}
	st := DriverState{Attributes: filepath.Join(top, ".gitattributes")}
	for _, d := range MergeDrivers {
		cur, ok, err := configGet(top, "merge."+d.Name+".driver")
		if err != nil {
			return st, err
		}
		if ok && !strings.Contains(cur, "merge-driver") {
			st.Configured = append(st.Configured, d.Name) // someone else's driver under our name: left alone
			continue
		}
		_, nameSet, err := configGet(top, "merge."+d.Name+".name")
		if err != nil {
			return st, err
		}
		if !ok && !nameSet {
			continue
		}
		if _, err := git(top, "config", "--local", "--remove-section", "merge."+d.Name); err != nil {
			return st, fmt.Errorf("remove git config merge.%s: %w", d.Name, err)
		}
		st.Changed = true
	}
	cur, err := readAttributes(st.Attributes)
	if err != nil {
		return st, err
	}
	next := withBlock(cur, "")
	if !bytes.Equal(cur, next) {
		st.Changed = true
		if len(bytes.TrimSpace(next)) == 0 {
			if err := os.Remove(st.Attributes); err != nil && !errors.Is(err, os.ErrNotExist) {
				return st, fmt.Errorf("remove %s: %w", st.Attributes, err)
			}
		} else if err := manifest.WriteFile(st.Attributes, next, 0o644); err != nil {
			return st, fmt.Errorf("write %s: %w", st.Attributes, err)
		}
	}
	return st, nil
}

// CheckMergeDrivers reports which of learnwatch's drivers are configured
// and whether .gitattributes holds its block.
func CheckMergeDrivers(root string) (DriverState, error) {
	top, err := topLevel(root)
	if err != nil {
		return DriverState{}, err
	}
	st := DriverState{Attributes: filepath.Join(top, ".gitattributes")}
	for _, d := range MergeDrivers {
		cur, ok, err := configGet(top, "merge."+d.Name+".driver")
		if err != nil {
			return st, err
		}
		if ok && strings.Contains(cur, "merge-driver") {
			st.Configured = append(st.Configured, d.Name)
		}
	}
	cur, err := readAttributes(st.Attributes)
	var fe *FileError
	if errors.As(err, &fe) {
		return st, nil // a .gitattributes learnwatch would not edit holds none of its lines
	}
	if err != nil {
		return st, err
	}
	st.Attributed = bytes.Contains(cur, []byte(attributesBlock()))
	return st, nil
}

// readAttributes reads .gitattributes (nil when absent). A cloned
// repository is untrusted: a symlink or a non-regular file there is refused,
// and the read is bounded.
func readAttributes(path string) ([]byte, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("inspect %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, &FileError{Path: path, Err: errors.New("not a regular file (a symlink?); learnwatch does not edit it")}
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxAttributesBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxAttributesBytes {
		return nil, &FileError{Path: path, Err: fmt.Errorf("larger than %d bytes; learnwatch does not edit it", maxAttributesBytes)}
	}
	return data, nil
}

// withBlock returns cur with learnwatch's block replaced by block (removed
// when block is ""), appended when cur has none. Other lines are kept.
func withBlock(cur []byte, block string) []byte {
	lines := strings.SplitAfter(string(cur), "\n")
	var out strings.Builder
	in, found := false, false
	for _, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		switch {
		case !in && t == attrBegin:
			in, found = true, true
			out.WriteString(block)
		case in && t == attrEnd:
			in = false
		case in:
		default:
			out.WriteString(l)
		}
	}
	if in { // an unterminated block: its lines were learnwatch's
		found = true
	}
	s := out.String()
	if !found && block != "" {
		if s != "" && !strings.HasSuffix(s, "\n") {
			s += "\n"
		}
		if s != "" && !strings.HasSuffix(s, "\n\n") {
			s += "\n"
		}
		s += block
	}
	if block == "" && found {
		s = strings.TrimRight(s, "\n")
		if s != "" {
			s += "\n"
		}
	}
	return []byte(s)
}

// IncomingLabel names the side a merge driver is merging in, for messages:
// the branch git gave `git merge` (the one GITHEAD_<sha> variable in env),
// the branch being rebased (whose commits are the incoming side of a
// rebase), or the commit being cherry-picked when git has recorded it; ""
// when none is known.
func IncomingLabel(gitDir string, env []string) string {
	var heads []string
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "GITHEAD_") && v != "" && v != "HEAD" {
			heads = append(heads, v)
		}
	}
	if len(heads) == 1 {
		return heads[0]
	}
	read := func(name string) string {
		f, err := os.OpenFile(filepath.Join(gitDir, name), os.O_RDONLY|safefs.NoFollow, 0)
		if err != nil {
			return ""
		}
		defer f.Close()
		b, _ := io.ReadAll(io.LimitReader(f, 4096))
		return strings.TrimSpace(string(b))
	}
	for _, name := range []string{"rebase-merge/head-name", "rebase-apply/head-name"} {
		if h := read(name); h != "" && h != "detached HEAD" {
			return strings.TrimPrefix(h, "refs/heads/")
		}
	}
	if h := read("CHERRY_PICK_HEAD"); len(h) >= 7 {
		return "commit " + h[:7]
	}
	return "" // a cherry-pick: git gives its driver no name for the commit
}
