package manifest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
	if p == "" {
		return "", "", &RefusedError{Path: p, Reason: "empty path"}
	}
	if strings.ContainsRune(p, 0) {
		return "", "", &RefusedError{Path: p, Reason: "contains a NUL byte"}
	}
	root = filepath.Clean(root)
	if filepath.IsAbs(p) {
		abs = filepath.Clean(p)
	} else {
		abs = filepath.Join(root, filepath.FromSlash(p))
	}
	r, err := filepath.Rel(root, abs)
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		// An absolute path may name the root through a symlinked prefix
		// (/tmp vs /private/tmp); compare resolved forms before refusing.
		if filepath.IsAbs(p) {
			if rr, ok := relViaSymlinks(root, abs); ok {
				r = rr
				abs = filepath.Join(root, rr)
				goto inside
			}
		}
		return "", "", &RefusedError{Path: p, Reason: "outside the repository root"}
	}
inside:
	if err := checkSymlinks(root, r); err != nil {
		return "", "", &RefusedError{Path: p, Reason: err.Error()}
	}
	return abs, filepath.ToSlash(r), nil
}

// relViaSymlinks compares abs and root after resolving symlinks of both.
func relViaSymlinks(root, abs string) (string, bool) {
	rr, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", false
	}
	dir, base := filepath.Dir(abs), filepath.Base(abs)
	rd, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", false
	}
	r, err := filepath.Rel(rr, filepath.Join(rd, base))
	if err != nil || r == "." || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "", false
	}
	return r, true
}

// checkSymlinks walks each existing component of rel below root and refuses
// any symlink whose target leaves the root.
func checkSymlinks(root, rel string) error {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		realRoot = root
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil {
			return nil // the rest does not exist yet: nothing to follow
		}
		if fi.Mode()&os.ModeSymlink == 0 {
			continue
		}
		target, err := filepath.EvalSymlinks(cur)
		if err != nil {
			return fmt.Errorf("symlink %s cannot be resolved", cur)
		}
		r, err := filepath.Rel(realRoot, target)
		if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
			return fmt.Errorf("symlink %s leads outside the repository root", cur)
		}
	}
	return nil
}
