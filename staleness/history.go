package staleness

import (
	"container/heap"
	"context"
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Tree reading. A tree object is decoded once per Checker (up to maxTrees
// of them) and looked up by hash: consecutive commits share almost all their subtrees,
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
	if len(c.trees) >= maxTrees {
		// A long history walk reads tens of thousands of trees, each
		// needed for a commit or two: start over rather than hold them.
		clear(c.trees)
	}
	c.trees[h] = t
	return t, nil
}

// maxTrees bounds the decoded trees a Checker keeps.
const maxTrees = 1024

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

// history is the part of HEAD's history read so far: every commit
// reachable through all parents (like git log), newest committer date
// first, at most the configured depth. It grows only while some missing
// reference is unresolved; later lookups reuse the steps already read.
type history struct {
	queue     commitQueue
	queued    map[plumbing.Hash]bool
	seq       int
	started   bool
	steps     []*step
	truncated bool // stopped at the depth with commits left
	done      bool // every commit within the depth was read
	// all lists every deletion in the order read (the cache's record).
	all []deletion
	// dels lists every deletion read so far by base name, newest first.
	dels map[string][]deletion
}

type deletion struct {
	step int
	path string
}

// step is one commit compared with its parents.
type step struct {
	from, to plumbing.Hash     // root trees of the first parent and of the commit
	renames  map[string]string // from → to, computed on first use
}

// renameOptions follow git's defaults: 50% similarity; a commit with more
// than 1000 additions or deletions gets exact renames only.
var renameOptions = &object.DiffTreeOptions{DetectRenames: true, RenameScore: 50, RenameLimit: 1000}

// walkHistory resolves each pending reference: the newest commit that
// removed a file it names (the path; for unrooted references also a file
// of that name, a path ending in it, or it relative to its document),
// followed through later renames to a name present in the checked tree.
// A reference no commit within the depth removed is never-tracked, except
// that a rooted reference, and a path with a directory when there is no
// history or the walk was cut short, is missing (with the commits
// searched, and whether the walk stopped at the depth).
func (c *Checker) walkHistory(pending []Ref) {
	want := map[string][]Ref{} // by base name
	n := 0
	for _, r := range pending {
		b := path.Base(r.Path)
		want[b] = append(want[b], r)
		n++
	}
	found := func(r Ref, d deletion) {
		o := c.outcomes[keyOf(r)]
		o.missing = true
		o.moved = c.follow(c.renameIn(d.step, d.path), d.step)
	}
	// What was read already, newest first.
	for b, rs := range want {
		rest := rs[:0]
		for _, r := range rs {
			if d, ok := c.firstDeletion(r, c.hist.dels[b]); ok {
				found(r, d)
				n--
			} else {
				rest = append(rest, r)
			}
		}
		want[b] = rest
	}
	for n > 0 {
		i, dels, ok := c.nextStep()
		if !ok {
			break
		}
		for _, q := range dels {
			b := path.Base(q)
			rs := want[b]
			if len(rs) == 0 {
				continue
			}
			rest := rs[:0]
			for _, r := range rs {
				if c.matches(r, q) {
					found(r, deletion{i, q})
					n--
				} else {
					rest = append(rest, r)
				}
			}
			want[b] = rest
		}
	}
	for _, rs := range want {
		for _, r := range rs {
			o := c.outcomes[keyOf(r)]
			o.searched, o.truncated = len(c.hist.steps), c.hist.truncated
			// Without history (outside git, before the first commit)
			// or with history cut short, a path with a directory may
			// well have been a file: report it. A bare name is a file
			// reference only when a file of that name was seen.
			if r.Rooted || !r.bare() && (c.head == nil || c.hist.truncated) {
				o.missing = true
			} else {
				o.skip = NeverTracked
			}
		}
	}
}

// firstDeletion returns the newest deletion among dels (newest first) of a
// file r names.
func (c *Checker) firstDeletion(r Ref, dels []deletion) (deletion, bool) {
	for _, d := range dels {
		if c.matches(r, d.path) {
			return d, true
		}
	}
	return deletion{}, false
}

// follow takes the name a file was renamed to in step i and follows later
// (newer) renames to a name present in the checked tree; "" when the trail
// ends in a deletion.
func (c *Checker) follow(name string, i int) string {
	for hops := 0; name != "" && hops <= len(c.hist.steps); hops++ {
		rel := c.rootRel(name)
		if rel == "" {
			return ""
		}
		if c.present(rel) {
			return rel
		}
		j := -1
		for _, d := range c.hist.dels[path.Base(name)] {
			if d.step < i && d.path == name {
				j = max(j, d.step)
			}
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
		c.cache.computed, c.cache.histNew = true, true
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

// nextStep reads one more commit of history: its step index and the files
// it removed (for a merge, the files every parent had).
func (c *Checker) nextStep() (int, []string, bool) {
	h := &c.hist
	if c.ctx != nil && c.ctx.Err() != nil {
		c.fail(fmt.Errorf("staleness: history walk stopped: %w", context.Cause(c.ctx)))
		return 0, nil, false
	}
	if !h.started {
		h.started = true
		h.queued = map[plumbing.Hash]bool{}
		h.dels = map[string][]deletion{}
		if c.head != nil {
			h.push(c.head)
		}
	}
	if len(h.queue) == 0 {
		h.done = true
		return 0, nil, false
	}
	if len(h.steps) >= c.depth {
		h.truncated, h.done = true, true
		return 0, nil, false
	}
	commit := heap.Pop(&h.queue).(queued).c
	c.cache.computed, c.cache.histNew = true, true
	var parents []*object.Commit
	for _, ph := range commit.ParentHashes {
		p, err := c.repo.CommitObject(ph)
		if err != nil {
			// A shallow clone ends here.
			continue
		}
		parents = append(parents, p)
		if !h.queued[ph] {
			h.push(p)
		}
	}
	s := &step{to: commit.TreeHash}
	h.steps = append(h.steps, s)
	i := len(h.steps) - 1
	if len(parents) == 0 {
		return i, nil, true
	}
	s.from = parents[0].TreeHash
	if s.from == s.to {
		return i, nil, true
	}
	var changes object.Changes
	if err := c.diff(s.from, s.to, "", &changes); err != nil {
		c.fail(fmt.Errorf("staleness: diff commit %s: %w", commit.Hash, err))
		return i, nil, true
	}
	var dels []string
	for _, ch := range changes {
		if ch.To.Name != "" {
			continue
		}
		q := ch.From.Name
		if c.inEveryParent(q, parents[1:]) {
			dels = append(dels, q)
			b := path.Base(q)
			h.dels[b] = append(h.dels[b], deletion{i, q})
			h.all = append(h.all, deletion{i, q})
		}
	}
	return i, dels, true
}

// inEveryParent reports whether every one of parents has the path q: a
// merge removes a file only when no parent lacked it (otherwise the branch
// that removed it did, and that commit is walked too).
func (c *Checker) inEveryParent(q string, parents []*object.Commit) bool {
	for _, p := range parents {
		_, ok, err := c.lookup(p.TreeHash, q)
		c.fail(err)
		if !ok {
			return false
		}
	}
	return true
}

type queued struct {
	c   *object.Commit
	seq int
}

// commitQueue orders commits newest committer date first, then in the
// order they were queued (children before parents).
type commitQueue []queued

func (q commitQueue) Len() int { return len(q) }
func (q commitQueue) Less(i, j int) bool {
	ti, tj := q[i].c.Committer.When, q[j].c.Committer.When
	if !ti.Equal(tj) {
		return ti.After(tj)
	}
	return q[i].seq < q[j].seq
}
func (q commitQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *commitQueue) Push(x any)   { *q = append(*q, x.(queued)) }
func (q *commitQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

func (h *history) push(c *object.Commit) {
	h.queued[c.Hash] = true
	h.seq++
	heap.Push(&h.queue, queued{c, h.seq})
}

// historyRecord returns the history read, for the cache, when the walk
// read every commit within the depth (nil otherwise: a partial walk is
// cheap to repeat). The record taken from the cache is returned as is
// when the walk read nothing more.
func (c *Checker) historyRecord() *cachedHistory {
	h := &c.hist
	if c.head == nil {
		return nil
	}
	if !h.done || c.cache.history != nil && !c.cache.histNew {
		return c.cache.history // still valid: keyed on this HEAD and depth
	}
	r := &cachedHistory{Head: c.head.Hash.String(), Depth: c.depth, Complete: true, Truncated: h.truncated}
	for _, s := range h.steps {
		r.Steps = append(r.Steps, [2][20]byte{[20]byte(s.from), [20]byte(s.to)})
	}
	for _, d := range h.all {
		r.Dels = append(r.Dels, cachedDeletion{d.step, d.path})
	}
	r.Renames = renamesRecord(h.steps)
	return r
}

// renamesRecord lists the renames computed so far, by step (sorted).
func renamesRecord(steps []*step) []cachedRenames {
	var out []cachedRenames
	for i, s := range steps {
		if s.renames == nil {
			continue
		}
		rs := cachedRenames{Step: i}
		for from, to := range s.renames {
			rs.Pairs = append(rs.Pairs, [2]string{from, to})
		}
		sort.Slice(rs.Pairs, func(a, b int) bool { return rs.Pairs[a][0] < rs.Pairs[b][0] })
		out = append(out, rs)
	}
	return out
}

// restoreHistory takes a complete walk of this HEAD from the cache: the
// steps and deletions read then, in the same order, so every lookup gives
// what the walk would. It reports false (and leaves the history unread)
// for a damaged record.
func (c *Checker) restoreHistory(r *cachedHistory) bool {
	h := &c.hist
	h.started, h.done, h.truncated = true, true, r.Truncated
	h.queued = map[plumbing.Hash]bool{}
	h.dels = map[string][]deletion{}
	h.steps = make([]*step, len(r.Steps))
	for i, s := range r.Steps {
		h.steps[i] = &step{from: plumbing.Hash(s[0]), to: plumbing.Hash(s[1])}
	}
	for _, d := range r.Dels {
		if d.Step < 0 || d.Step >= len(h.steps) {
			// A damaged record: walk again.
			c.hist = history{}
			return false
		}
		b := path.Base(d.Path)
		h.dels[b] = append(h.dels[b], deletion{d.Step, d.Path})
		h.all = append(h.all, deletion{d.Step, d.Path})
	}
	for _, rs := range r.Renames {
		if rs.Step < 0 || rs.Step >= len(h.steps) {
			c.hist = history{}
			return false
		}
		m := make(map[string]string, len(rs.Pairs))
		for _, p := range rs.Pairs {
			m[p[0]] = p[1]
		}
		h.steps[rs.Step].renames = m
	}
	return true
}

// maxExtend bounds the commits a cached history is extended by.
const maxExtend = 200

// extendHistory builds, from a complete walk cached for an older HEAD,
// the walk of this HEAD when the newer commits are a chain of
// single-parent commits down to that HEAD (commits on top of it, as
// committing does): the walk pops each of them first — the queue holds
// one commit at a time along the chain — then reads exactly what it read
// from the old HEAD. Only the chain's commits are compared with their
// parents; the old steps follow, shifted and cut at the depth. Nil when
// the history is not such an extension.
func (c *Checker) extendHistory(old *cachedHistory) *cachedHistory {
	if c.head == nil || old.Depth != c.depth || !old.Complete {
		return nil
	}
	oldHead := plumbing.NewHash(old.Head)
	var chain []*object.Commit
	for cm := c.head; cm.Hash != oldHead; {
		if len(chain) >= maxExtend || len(chain) >= c.depth || len(cm.ParentHashes) != 1 {
			return nil
		}
		chain = append(chain, cm)
		p, err := c.repo.CommitObject(cm.ParentHashes[0])
		if err != nil {
			return nil
		}
		cm = p
	}
	k := len(chain)
	r := &cachedHistory{Head: c.head.Hash.String(), Depth: c.depth, Complete: true}
	for i, cm := range chain {
		p, err := c.repo.CommitObject(cm.ParentHashes[0])
		if err != nil {
			return nil
		}
		r.Steps = append(r.Steps, [2][20]byte{[20]byte(p.TreeHash), [20]byte(cm.TreeHash)})
		if p.TreeHash == cm.TreeHash {
			continue
		}
		var changes object.Changes
		if err := c.diff(p.TreeHash, cm.TreeHash, "", &changes); err != nil {
			return nil
		}
		for _, ch := range changes {
			if ch.To.Name == "" {
				r.Dels = append(r.Dels, cachedDeletion{i, ch.From.Name})
			}
		}
	}
	keep := min(len(old.Steps), c.depth-k)
	r.Steps = append(r.Steps, old.Steps[:keep]...)
	for _, d := range old.Dels {
		if d.Step < keep {
			r.Dels = append(r.Dels, cachedDeletion{d.Step + k, d.Path})
		}
	}
	for _, rs := range old.Renames {
		if rs.Step < keep {
			r.Renames = append(r.Renames, cachedRenames{rs.Step + k, rs.Pairs})
		}
	}
	// Commits were left after the old walk (it stopped at the depth), or
	// the old steps no longer fit: the walk stops at the depth.
	r.Truncated = old.Truncated || keep < len(old.Steps)
	return r
}
