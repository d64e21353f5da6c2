package hooks

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/learnwatch/learnwatch/safefs"
	"github.com/learnwatch/learnwatch/scaffold"
)

// excludePath returns the repository's info/exclude: in the common git
// directory, so one file serves every linked worktree.
func excludePath(root string) (string, error) {
	out, err := git(root, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("%s: %w (%v)", root, ErrNotRepo, err)
	}
	return filepath.Join(strings.TrimSpace(out), "info", "exclude"), nil
}

// readIgnore reads an ignore file: empty when absent, ok false when it
// cannot be judged (a symlink, too large, unreadable).
func readIgnore(path string) (b []byte, ok bool) {
	b, err := safefs.ReadFile(path, safefs.MaxState)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	return b, true
}

// exclude appends to the repository's info/exclude the patterns of the
// files learnwatch keeps local to a checkout (scaffold.LocalState) that
// neither the root's .gitignore nor info/exclude covers, and returns them
// (added). info/exclude is git's own, never committed: a repository set
// up with `hooks install` alone no longer has `git add -A` commit the
// watcher's pid and state. An info/exclude that cannot be judged (a
// symlink) or written is left alone, and the patterns the .gitignore
// leaves uncovered are returned as left, for the caller to name; a
// .gitignore that cannot be judged (a link, too large) gives neither.
func exclude(root string) (added, left []string, err error) {
	gi, ok := readIgnore(filepath.Join(root, ".gitignore"))
	if !ok {
		return nil, nil, nil
	}
	path, err := excludePath(root)
	if err != nil {
		return nil, scaffold.MissingIgnoreLines(gi), err
	}
	ex, ok := readIgnore(path)
	if !ok {
		return nil, scaffold.MissingIgnoreLines(gi), nil
	}
	missing := scaffold.MissingIgnoreLines(append(append(gi, '\n'), ex...))
	if len(missing) == 0 {
		return nil, nil, nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, missing, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|safefs.NoFollow, 0o644)
	if err != nil {
		return nil, missing, fmt.Errorf("open %s: %w", path, err)
	}
	_, err = f.Write(scaffold.IgnoreBlock(ex, missing))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, missing, fmt.Errorf("write %s: %w", path, err)
	}
	return missing, nil, nil
}
