package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// RefusedError reports a path that resolves outside the repository root.
// Such a path is never opened.
type RefusedError struct {
	Path   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("refused path %q: %s", e.Path, e.Reason)
}

// IsRefused reports whether err is a *RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// Resolve turns a manifest path (relative to root with / separators, or a
// legacy absolute path inside root) into an absolute path and the relative
// form learnwatch writes. It refuses paths that leave the root lexically
// ("..", absolute elsewhere) or through a symlink in any existing component.
// The file itself need not exist.
func Resolve(root, p string) (abs, rel string, err error) {
	return NewResolver(root).Resolve(p)
}

// Resolver resolves many paths under one root, caching the directories
// already found safe. It is safe for concurrent use (Trust aside).
type Resolver struct {
	root     string
	realRoot string
	// mu guards safeDirs: a pass resolves on several goroutines.
	mu       sync.Mutex
	safeDirs map[string]bool
	// seen, when set, is what the caller's own stats found moments ago
	// (Trust): those paths are not stat'ed again.
	seen Seen
}

// Seen is what a caller's lstats found of paths below the root moments
// ago, by absolute path spelt as the resolver joins it: a real directory
// (never a symlink to one), a regular file. A caller that stat'ed every
// path of a pass just before it (the engine's replay check) spares Resolve
// a stat per path component; anything else is stat'ed as before.
type Seen interface {
	SeenDir(abs string) bool
	SeenFile(abs string) bool
}

// Trust makes Resolve take what s saw instead of stat'ing those paths.
func (r *Resolver) Trust(s Seen) { r.seen = s }

// NewResolver returns a Resolver for root.
func NewResolver(root string) *Resolver {
	root = filepath.Clean(root)
	real, err := filepath.EvalSymlinks(root)
	if err != nil {
		real = root
	}
	return &Resolver{root: root, realRoot: real, safeDirs: map[string]bool{}}
}

// Resolve is the function Resolve with the resolver's root.
func (r *Resolver) Resolve(p string) (abs, rel string, err error) {
	abs, rel, _, err = r.ResolveEntry(p)
	return abs, rel, err
}

// artifactRoots are where every rendered artifact lives, relative to a
// repository root: what a foreign absolute path is rebased at.
var artifactRoots = []string{"/.claude/commands/", "/.claude/skills/", "/.memory/knowledge/"}

// ForeignRel returns the path relative to a repository root that an
// absolute path written in another checkout of the repository names (a
// devflow manifest records absolute paths: the repository since moved, or
// cloned elsewhere): the part from its last .claude/commands/,
// .claude/skills/ or .memory/knowledge/ on. false when p names none of
// them. The result never leaves the root it is joined to.
func ForeignRel(p string) (string, bool) {
	if !filepath.IsAbs(p) {
		return "", false
	}
	s := filepath.ToSlash(filepath.Clean(p))
	at := -1
	for _, m := range artifactRoots {
		if i := strings.LastIndex(s, m); i > at {
			at = i
		}
	}
	if at < 0 {
		return "", false
	}
	return filepath.FromSlash(s[at+1:]), true
}

// ResolveEntry is Resolve for a manifest entry's path, which may also be
// foreign: an absolute path outside the root that names an artifact
// location of another checkout (ForeignRel) is rebased inside the root,
// and foreign says so (the entry's artifact may never have been in this
// checkout). Any other absolute path outside the root is refused.
func (r *Resolver) ResolveEntry(p string) (abs, rel string, foreign bool, err error) {
	if p == "" {
		return "", "", false, &RefusedError{Path: p, Reason: "empty path"}
	}
	if strings.ContainsRune(p, 0) {
		return "", "", false, &RefusedError{Path: p, Reason: "contains a NUL byte"}
	}
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(r.root, filepath.FromSlash(p))
	}
	rl, ok := Within(r.root, abs)
	if !ok && filepath.IsAbs(p) {
		// An absolute path may name the root through a symlinked prefix
		// (/tmp vs /private/tmp): compare resolved forms.
		if rd, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
			rl, ok = Within(r.realRoot, filepath.Join(rd, filepath.Base(abs)))
		}
	}
	if !ok && filepath.IsAbs(p) {
		if fr, isForeign := ForeignRel(p); isForeign {
			rl, ok = Within(r.root, filepath.Join(r.root, fr))
			foreign = ok
		}
	}
	if !ok {
		return "", "", false, &RefusedError{Path: p, Reason: "outside the repository root"}
	}
	abs = filepath.Join(r.root, rl)
	if err := r.checkSymlinks(abs, rl); err != nil {
		return "", "", false, &RefusedError{Path: p, Reason: err.Error()}
	}
	return abs, filepath.ToSlash(rl), foreign, nil
}

// Within returns path relative to root when it lies strictly inside it.
func Within(root, path string) (string, bool) {
	r, err := filepath.Rel(root, path)
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return r, true
}

// checkSymlinks walks each existing component of rel below the root and
// refuses any symlink whose target leaves the root. Directories found safe
// are remembered. abs is the root joined with rel, which is clean
// (Within): the path of each component is a prefix of it, taken in place
// (joining the parts one by one cleaned and copied every prefix).
func (r *Resolver) checkSymlinks(abs, rel string) error {
	at := len(abs) - len(rel)
	if at < 1 || abs[at:] != rel || abs[at-1] != filepath.Separator {
		// Not the root's join (a relative root "." joins to rel alone):
		// the components are spelt below the root as given.
		abs, at = r.root+string(filepath.Separator)+rel, len(r.root)+1
	}
	for start := 0; start <= len(rel); {
		end := strings.IndexByte(rel[start:], filepath.Separator)
		if end < 0 {
			end = len(rel)
		} else {
			end += start
		}
		cur, last := abs[:at+end], end == len(rel)
		start = end + 1
		if !last && r.safe(cur) {
			continue
		}
		if r.seen != nil && (!last && r.seen.SeenDir(cur) || last && r.seen.SeenFile(cur)) {
			continue
		}
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil // the rest does not exist yet: nothing to follow
		}
		if fi.Mode()&os.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(cur)
			if err != nil {
				return fmt.Errorf("symlink %s cannot be resolved", cur)
			}
			if _, ok := Within(r.realRoot, target); !ok && target != r.realRoot {
				return fmt.Errorf("symlink %s leads outside the repository root", cur)
			}
		}
		if !last && fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 && !last {
			r.mu.Lock()
			r.safeDirs[cur] = true
			r.mu.Unlock()
		}
	}
	return nil
}

// safe reports a directory checkSymlinks found safe before.
func (r *Resolver) safe(dir string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.safeDirs[dir]
}
