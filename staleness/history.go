package staleness

import (
	"context"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Tree reading. Every tree object is decoded at most once per Checker and
// looked up by hash: consecutive commits share almost all their subtrees,
// so following a few paths through many commits reads few objects. (go-git's
// object.DiffTree lists every sibling of a changed directory, reading one
// tree object — and reopening the packfile — per sibling; on a 50,000-file
// repository that made twenty commits cost seconds.)

// treeObj returns the decoded tree with hash h.
func (c *Checker) treeObj(h plumbing.Hash) (*object.Tree, error) {
	if t, ok := c.trees[h]; ok {
		return t, nil
	}
	t, err := c.repo.TreeObject(h)
	if err != nil {
		return nil, fmt.Errorf("read tree %s: %w", h, err)
	}
	c.trees[h] = t
	return t, nil
}

// lookup finds the repository path p in the tree with hash root.
func (c *Checker) lookup(root plumbing.Hash, p string) (object.TreeEntry, bool, error) {
	h := root
	for {
		name, rest, more := strings.Cut(p, "/")
		t, err := c.treeObj(h)
		if err != nil {
			return object.TreeEntry{}, false, err
		}
		e, err := t.FindEntry(name)
		if err != nil {
			// Not found, or a name no tree can hold (".git").
			return object.TreeEntry{}, false, nil
		}
		if !more {
			return *e, true, nil
		}
		if e.Mode != filemode.Dir {
			return object.TreeEntry{}, false, nil
		}
		h, p = e.Hash, rest
	}
}

// history is the part of HEAD's first-parent history read so far, newest
// first. It grows only while some missing path is unresolved and never
// beyond the configured depth; later lookups reuse the steps already read.
type history struct {
	next  *object.Commit // next commit to compare with its first parent
	steps []*step
	done  bool
}

// step is one commit compared with its first parent.
type step struct {
	from, to plumbing.Hash     // root trees of the parent and of the commit
	deleted  map[string]bool   // memo: was this path removed by the commit
	renames  map[string]string // from → to, computed on first use
}

// renameOptions follow git's defaults: 50% similarity; a commit with more
// than 1000 additions or deletions gets exact renames only.
var renameOptions = &object.DiffTreeOptions{DetectRenames: true, RenameScore: 50, RenameLimit: 1000}

// walkHistory resolves each pending repository path: the newest commit
// that removed it, followed through later renames to a name present in the
// checked tree. A path not removed within the depth, or removed without a
// rename, resolves to "".
func (c *Checker) walkHistory(pending []string) {
	want := append([]string(nil), pending...)
	resolve := func(i int) {
		rest := want[:0]
		for _, p := range want {
			if c.deletedIn(i, p) {
				c.moved[p] = c.follow(c.renameIn(i, p), i)
			} else {
				rest = append(rest, p)
			}
		}
		want = rest
	}
	for i := 0; i < len(c.hist.steps) && len(want) > 0; i++ {
		resolve(i)
	}
	for len(want) > 0 {
		i, ok := c.nextStep()
		if !ok {
			break
		}
		resolve(i)
	}
	for _, p := range want {
		c.moved[p] = ""
	}
}

// deletedIn reports whether step i removed the repository path p.
func (c *Checker) deletedIn(i int, p string) bool {
	s := c.hist.steps[i]
	if v, ok := s.deleted[p]; ok {
		return v
	}
	v := false
	if !s.from.IsZero() && s.from != s.to {
		_, inFrom, err := c.lookup(s.from, p)
		c.fail(err)
		if inFrom {
			_, inTo, err := c.lookup(s.to, p)
			c.fail(err)
			v = err == nil && !inTo
		}
	}
	s.deleted[p] = v
	return v
}

// follow takes the name a file was renamed to in step i and follows later
// (newer) renames to a name present in the checked tree; "" when the trail
// ends in a deletion.
func (c *Checker) follow(name string, i int) string {
	for name != "" {
		rel := c.rootRel(name)
		if rel == "" {
			return ""
		}
		if c.present(rel) {
			return rel
		}
		j := i - 1
		for j >= 0 && !c.deletedIn(j, name) {
			j--
		}
		if j < 0 {
			// In HEAD but not in the checked tree: a staged deletion
			// or rename (index modes) or a file deleted on disk.
			if c.source == sourceIndex {
				if e, ok := c.headEntry(name); ok && e != nil {
					return c.stagedTarget(name, e)
				}
			}
			return ""
		}
		name, i = c.renameIn(j, name), j
	}
	return ""
}

// renameIn returns the path that from was renamed to in step i ("" when
// it was deleted outright), with go-git's rename detection over the
// commit's additions and deletions.
func (c *Checker) renameIn(i int, from string) string {
	s := c.hist.steps[i]
	if s.renames == nil {
		s.renames = map[string]string{}
		var changes object.Changes
		if err := c.diff(s.from, s.to, "", &changes); err != nil {
			c.fail(fmt.Errorf("staleness: diff for renames: %w", err))
			return ""
		}
		changes, err := object.DetectRenames(changes, renameOptions)
		if err != nil {
			c.fail(fmt.Errorf("staleness: detect renames: %w", err))
			return ""
		}
		for _, ch := range changes {
			if ch.From.Name != "" && ch.To.Name != "" && ch.From.Name != ch.To.Name {
				s.renames[ch.From.Name] = ch.To.Name
			}
		}
	}
	return s.renames[from]
}

// diff appends the files added and deleted between two trees (directory
// dir) to out, descending only into subtrees whose hashes differ.
// Modifications in place are left out: they are not renames.
func (c *Checker) diff(from, to plumbing.Hash, dir string, out *object.Changes) error {
	ft, err := c.treeObj(from)
	if err != nil {
		return err
	}
	tt, err := c.treeObj(to)
	if err != nil {
		return err
	}
	inTo := make(map[string]*object.TreeEntry, len(tt.Entries))
	for k := range tt.Entries {
		inTo[tt.Entries[k].Name] = &tt.Entries[k]
	}
	inFrom := make(map[string]bool, len(ft.Entries))
	for k := range ft.Entries {
		fe := &ft.Entries[k]
		inFrom[fe.Name] = true
		te := inTo[fe.Name]
		switch {
		case te != nil && te.Hash == fe.Hash && te.Mode == fe.Mode:
		case te != nil && fe.Mode == filemode.Dir && te.Mode == filemode.Dir:
			if err := c.diff(fe.Hash, te.Hash, dir+fe.Name+"/", out); err != nil {
				return err
			}
		case te != nil && fe.Mode != filemode.Dir && te.Mode != filemode.Dir:
			// Modified in place.
		default:
			if err := c.side(ft, fe, dir, true, out); err != nil {
				return err
			}
			if te != nil {
				if err := c.side(tt, te, dir, false, out); err != nil {
					return err
				}
			}
		}
	}
	for k := range tt.Entries {
		if te := &tt.Entries[k]; !inFrom[te.Name] {
			if err := c.side(tt, te, dir, false, out); err != nil {
				return err
			}
		}
	}
	return nil
}

// side appends entry e of tree t (in directory dir) as a deletion (del) or
// an addition; a directory contributes every file below it.
func (c *Checker) side(t *object.Tree, e *object.TreeEntry, dir string, del bool, out *object.Changes) error {
	name := dir + e.Name
	if e.Mode != filemode.Dir {
		ce := object.ChangeEntry{Name: name, Tree: t, TreeEntry: *e}
		if del {
			*out = append(*out, &object.Change{From: ce})
		} else {
			*out = append(*out, &object.Change{To: ce})
		}
		return nil
	}
	sub, err := c.treeObj(e.Hash)
	if err != nil {
		return err
	}
	for k := range sub.Entries {
		if err := c.side(sub, &sub.Entries[k], name+"/", del, out); err != nil {
			return err
		}
	}
	return nil
}

// nextStep reads one more commit of history and returns its step index.
func (c *Checker) nextStep() (int, bool) {
	h := &c.hist
	if c.ctx != nil && c.ctx.Err() != nil {
		c.fail(fmt.Errorf("staleness: history walk stopped: %w", context.Cause(c.ctx)))
		h.done = true
		return 0, false
	}
	if h.done || h.next == nil || len(h.steps) >= c.depth {
		h.done = true
		return 0, false
	}
	commit := h.next
	s := &step{to: commit.TreeHash, deleted: map[string]bool{}}
	h.next = nil
	if commit.NumParents() > 0 {
		parent, err := commit.Parent(0)
		if err != nil {
			// A shallow clone ends here.
			h.done = true
			return 0, false
		}
		h.next, s.from = parent, parent.TreeHash
	}
	h.steps = append(h.steps, s)
	return len(h.steps) - 1, true
}
