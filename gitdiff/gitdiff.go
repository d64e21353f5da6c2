// Package gitdiff answers "which files does the current branch change?" for
// the index's context boost: the paths that differ between HEAD and its
// merge base with the default branch, read with go-git from commits and
// trees (never the working tree, which would mean hashing every file).
package gitdiff

import (
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/learnwatch/learnwatch/gitrepo"
)

// baseRefs are tried in order as the branch the current one forked from.
var baseRefs = []plumbing.ReferenceName{
	"refs/remotes/origin/HEAD", "refs/remotes/origin/main", "refs/remotes/origin/master",
	"refs/heads/main", "refs/heads/master", "refs/heads/trunk", "refs/heads/develop",
}

// MaxFiles bounds the answer: a branch that touches more files than this
// gives no context boost at all (everything would overlap).
const MaxFiles = 2000

// Branch returns the repo-relative paths changed on the current branch
// against its merge base with the default branch. Not a git repository, a
// detached or unborn HEAD, HEAD on the default branch itself, or no default
// branch: no files and no error.
func Branch(root string) ([]string, error) {
	repo, err := gitrepo.Open(root, gitrepo.Options{})
	if errors.Is(err, gitrepo.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	head, err := repo.Head()
	if err != nil {
		return nil, nil // unborn HEAD
	}
	headCommit, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, nil
	}
	for _, name := range baseRefs {
		ref, err := repo.Reference(name, true)
		if err != nil {
			continue
		}
		if ref.Hash() == head.Hash() || (head.Name().IsBranch() && ref.Name() == head.Name()) {
			return nil, nil // on the default branch
		}
		baseCommit, err := repo.CommitObject(ref.Hash())
		if err != nil {
			continue
		}
		bases, err := headCommit.MergeBase(baseCommit)
		if err != nil || len(bases) == 0 {
			continue
		}
		return diff(bases[0], headCommit)
	}
	return nil, nil
}

func diff(from, to *object.Commit) ([]string, error) {
	ft, err := from.Tree()
	if err != nil {
		return nil, err
	}
	tt, err := to.Tree()
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTree(ft, tt)
	if err != nil {
		return nil, err
	}
	if len(changes) > MaxFiles {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, c := range changes {
		for _, p := range []string{c.From.Name, c.To.Name} {
			if p != "" && !seen[p] {
				seen[p] = true
				out = append(out, p)
			}
		}
	}
	return out, nil
}
