package heal

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/staleness"
)

// Bounds of the git look-ups reconcile makes for missing artifacts.
const (
	// historyLimit caps the commits read walking HEAD's history back to the
	// oldest render among the missing artifacts.
	historyLimit = 2000
	// refLimit caps the branch tips looked at for an artifact git took away.
	refLimit = 256
	// blobLimit caps the bytes read of one knowledge file's blob.
	blobLimit = 8 << 20
	// treeLimit caps the decoded directory trees a view keeps.
	treeLimit = 256
	// clockSkew is how much older than an artifact's render a commit may be
	// and still be searched for it (commit dates are set by other clocks).
	clockSkew = 24 * time.Hour
)

// gitView answers, for the few artifacts missing from the work tree (a
// file, or a knowledge section missing from its file), whether the person
// removed them or git took them away (the checked-out commit simply does
// not have them); and for those present with other content than the
// recorded one, whether the person edited them or git checked out another
// line's version. It reads the index, trees and a bounded stretch of
// history with go-git, never the work tree's status; for a whole-file
// artifact, what the staleness check kept of the index when it read it
// (artifactFacts) stands for the index and, when it holds HEAD's files,
// for HEAD's tree. Every answer is cached for the pass.
type gitView struct {
	repo     *gitrepo.Repo
	root     string // the reconciled root (its memory's cache directory)
	prefix   string // the reconciled root relative to the worktree top: "dir/" or ""
	top      string // the worktree top
	head     *object.Commit
	headTree *object.Tree
	index    map[string]plumbing.Hash // read by the first inIndex
	// sparse is set in a sparse checkout; skipped holds the index's
	// entries git keeps out of the work tree (skip-worktree), read with
	// the index.
	sparse   bool
	skipped  map[string]bool
	indexErr error
	trees    map[plumbing.Hash]*object.Tree // decoded subtrees (find)
	anchors  map[plumbing.Hash]map[string]bool
	versions map[version]bool

	// arts is what the index holds under the artifacts' directories, as
	// the staleness check's index identity kept it (keptIndex); nil when
	// it has not (artsRead: looked for).
	arts     *gitrepo.Artifacts
	artsRead bool

	histRead bool
	hist     []*object.Tree
	tipsRead bool
	tips     []*object.Tree
}

// openGit returns the view of the repository holding root, nil outside git
// (or when it cannot be found or opened: reconcile then behaves as outside
// git). For a repository whose format go-git cannot read it returns no
// view and why: nothing can be asked of it.
func openGit(root string) (*gitView, *gitrepo.UnreadableError) {
	g, unreadable := openRepo(root)
	if g == nil {
		return nil, unreadable
	}
	if ref, err := g.repo.Head(); err == nil {
		if c, err := g.repo.CommitObject(ref.Hash()); err == nil {
			if t, err := c.Tree(); err == nil {
				g.head, g.headTree = c, t
			}
		}
	}
	return g, nil
}

// openRepo is openGit without HEAD's commit and tree: a view for the
// questions to the index alone (Tracked).
func openRepo(root string) (*gitView, *gitrepo.UnreadableError) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, nil
	}
	repo, err := gitrepo.Open(abs, gitrepo.Options{Up: true})
	if unreadable, ok := errors.AsType[*gitrepo.UnreadableError](err); ok {
		return nil, unreadable
	}
	if err != nil {
		return nil, nil
	}
	prefix, err := repo.Prefix(abs)
	if err != nil {
		return nil, nil
	}
	return &gitView{repo: repo, root: abs, prefix: prefix, top: repo.Top, sparse: repo.Sparse(), anchors: map[plumbing.Hash]map[string]bool{}, versions: map[version]bool{}}, nil
}

// Tracked reports whether git's index holds the file at path (absolute):
// false outside git. root is the memory's root.
func Tracked(root, path string) bool {
	g, _ := openRepo(root)
	if g == nil {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rel, err := g.repo.Prefix(abs)
	if err != nil {
		return false
	}
	rel = strings.TrimSuffix(rel, "/")
	if gitrepo.ArtifactPath(rel) {
		// A memory file: what the staleness check kept of the index (or
		// read in this process) answers without decoding it again.
		if a := g.keptIndex(); a != nil {
			_, in := a.File(rel)
			return in
		}
	}
	_, in := g.inIndex(rel)
	return in
}

// inIndex returns the blob git's index holds for path (relative to the
// worktree top). The index (an entry per tracked file) is read on the
// first call: an edit's questions never need it.
func (g *gitView) inIndex(path string) (plumbing.Hash, bool) {
	if g.index == nil {
		g.index, g.skipped = map[string]plumbing.Hash{}, map[string]bool{}
		idx, err := g.repo.Index()
		if err != nil {
			g.indexErr = err
		} else {
			for _, e := range idx.Entries {
				g.index[e.Name] = e.Hash
				if e.SkipWorktree {
					g.skipped[e.Name] = true
				}
			}
		}
	}
	h, ok := g.index[path]
	return h, ok
}

// leftOut reports whether a sparse checkout keeps path (relative to the
// worktree top) out of the work tree: git's index holds it with the
// skip-worktree bit. In a sparse checkout whose index go-git cannot read
// (a sparse index keeps whole directories as one entry) any file may have
// been left out by git, and none is called deleted.
func (g *gitView) leftOut(path string) bool {
	if !g.sparse {
		return false
	}
	g.inIndex(path)
	return g.indexErr != nil || g.skipped[path]
}

// headHash is the checked-out commit, "" before the first commit.
func (g *gitView) headHash() string {
	if g == nil || g.head == nil {
		return ""
	}
	return g.head.Hash.String()
}

// deleted reports whether the artifact rel (anchor "" for a whole file),
// missing from the work tree, was removed by the person: it is in the
// index or HEAD's tree (an uncommitted deletion), or a commit of HEAD's
// history since the render had it (a committed deletion), or no branch
// has it (an untracked or ignored file that is gone). It is absent —
// false — when another branch, ORIG_HEAD or the stash has it and HEAD's
// line never did: a checkout, reset, rebase or stash took it away; or when
// a sparse checkout keeps it out of the work tree.
func (g *gitView) deleted(rel, anchor string, since time.Time) bool {
	if g == nil {
		return true
	}
	if g.leftOut(g.prefix + rel) {
		return false
	}
	if a := g.artifactFacts(rel, anchor); a != nil {
		// What the index holds, kept by the staleness check: in it, an
		// uncommitted deletion; not in it, HEAD's tree is asked unless
		// the index holds exactly HEAD's files.
		if _, in := a.File(g.prefix + rel); in {
			return true
		}
		if !g.indexIsHead(a) && g.has(g.headTree, rel, anchor) {
			return true
		}
	} else {
		// HEAD's tree first: it answers for most uncommitted deletions
		// without decoding the index (an entry per tracked file, 5 ms at
		// 10,000).
		if g.has(g.headTree, rel, anchor) {
			return true
		}
		if h, ok := g.inIndex(g.prefix + rel); ok && (anchor == "" || g.anchorsOf(h)[anchor]) {
			return true
		}
	}
	for _, t := range g.history(since) {
		if g.has(t, rel, anchor) {
			return true
		}
	}
	for _, t := range g.branchTips() {
		if g.has(t, rel, anchor) {
			return false
		}
	}
	return true
}

// backByCheckout reports whether a penalised artifact that is present again
// came back only because a checkout moved HEAD off the line where it was
// deleted onto a commit that has it: the deletion still stands there, and
// reversing it would penalise the same deletion again on the way back.
func (g *gitView) backByCheckout(rel, anchor, penaltyHead string) bool {
	if g == nil || g.head == nil || penaltyHead == "" || penaltyHead == g.head.Hash.String() {
		return false
	}
	if !g.has(g.headTree, rel, anchor) {
		return false
	}
	c, err := g.repo.CommitObject(plumbing.NewHash(penaltyHead))
	if err != nil {
		return true // the commit is gone (a rebase, gc): another line
	}
	anc, err := c.IsAncestor(g.head)
	return err != nil || !anc
}

// checkedOut reports whether an artifact present with other content than
// the recorded one (current is its file, or its section's text) got that
// content from git rather than from a person: the work tree holds HEAD's
// version (a change, staged or not, is the person's), no commit of HEAD's
// history since the render had the recorded content (a change committed
// on this line, by anyone, is an edit), and a branch tip or the stash has
// it. A checkout, rebase or stash replaced the recorded version with
// another line's; the recorded one comes back with its branch, as an
// absent artifact does.
func (g *gitView) checkedOut(rel, anchor, obsID, recorded string, current []byte, since time.Time) bool {
	if g == nil || g.headTree == nil {
		return false
	}
	var blob plumbing.Hash
	if a := g.artifactFacts(rel, anchor); a != nil && g.indexIsHead(a) {
		// The index holds exactly HEAD's files: its entry is HEAD's.
		f, in := a.File(g.prefix + rel)
		if !in || !filemode.FileMode(f.Mode).IsFile() {
			return false
		}
		blob = f.Blob
	} else {
		e, err := g.find(g.headTree, g.prefix+rel)
		if err != nil || !e.Mode.IsFile() {
			return false
		}
		blob = e.Hash
	}
	if anchor == "" {
		if plumbing.ComputeHash(plumbing.BlobObject, current) != blob {
			return false // changed since the checkout: the person's
		}
	} else if b, s, ok := g.section(blob, anchor, obsID); !ok || !bytes.Equal(markdown.SectionText(b, s), current) {
		return false
	}
	for _, t := range g.history(since) {
		if g.holds(t, rel, anchor, obsID, recorded) {
			return false
		}
	}
	for _, t := range g.branchTips() {
		if g.holds(t, rel, anchor, obsID, recorded) {
			return true
		}
	}
	return false
}

// artifactFacts returns what git's index holds under the artifacts'
// directories when it answers for the whole-file artifact rel (anchor
// ""): the staleness check's index identity kept it for the index as it
// is now (staleness.IndexArtifacts), rel lies under those directories,
// and the checkout is not sparse. nil otherwise: the trees are asked.
// 200 edited skills were 150 tree objects read, one per directory
// (about 6 of a 10k first reconcile's 65 ms).
func (g *gitView) artifactFacts(rel, anchor string) *gitrepo.Artifacts {
	if anchor != "" || g.sparse || !gitrepo.ArtifactPath(g.prefix+rel) {
		return nil
	}
	return g.keptIndex()
}

// keptIndex returns what the index holds under the artifacts' directories
// as the staleness check's index identity kept it for the index as it is
// now (staleness.IndexArtifacts), read on the first call; nil when none
// was kept.
func (g *gitView) keptIndex() *gitrepo.Artifacts {
	if !g.artsRead {
		g.artsRead = true
		if a, ok := staleness.IndexArtifacts(g.root, filepath.Join(g.repo.GitDir, "index")); ok {
			g.arts = &a
		}
	}
	return g.arts
}

// indexIsHead reports whether the index a describes holds exactly the
// files of HEAD's tree (gitrepo.Artifacts.Tree).
func (g *gitView) indexIsHead(a *gitrepo.Artifacts) bool {
	return g.headTree != nil && a.Tree != [20]byte{} && a.Tree == g.headTree.Hash
}

// find returns the entry at path p (slash-separated) of tree. It walks
// the directories through the view's decoded trees: go-git's
// Tree.FindEntry reads and inflates every directory on the way again on
// each call, which for 200 artifacts in one directory of 2,000 was 200
// decodes of the same tree.
func (g *gitView) find(tree *object.Tree, p string) (*object.TreeEntry, error) {
	dirs, base := path.Split(p)
	for name := range strings.SplitSeq(strings.TrimSuffix(dirs, "/"), "/") {
		if name == "" {
			continue
		}
		e, err := tree.FindEntry(name) // one name: the tree's own entry map
		if err != nil {
			return nil, err
		}
		if e.Mode != filemode.Dir {
			return nil, object.ErrDirectoryNotFound
		}
		sub, ok := g.trees[e.Hash]
		if !ok {
			if sub, err = object.GetTree(g.repo.Storer, e.Hash); err != nil {
				return nil, err
			}
			if g.trees == nil || len(g.trees) >= treeLimit {
				// A history walk meets a new version of a directory per
				// commit: the map is bounded, started again when full.
				g.trees = map[plumbing.Hash]*object.Tree{}
			}
			g.trees[e.Hash] = sub
		}
		tree = sub
	}
	return tree.FindEntry(base)
}

// version names one question holds answers: does blob (its section
// anchor, for obs) have the content hashed as recorded?
type version struct {
	blob                    plumbing.Hash
	anchor, obsID, recorded string
}

// holds reports whether tree has the artifact rel (its section anchor) with
// the content the manifest recorded (its hash, sha256 or devflow's djb2).
func (g *gitView) holds(tree *object.Tree, rel, anchor, obsID, recorded string) bool {
	if tree == nil {
		return false
	}
	e, err := g.find(tree, g.prefix+rel)
	if err != nil || !e.Mode.IsFile() {
		return false
	}
	k := version{e.Hash, anchor, obsID, recorded}
	if v, ok := g.versions[k]; ok {
		return v
	}
	v := false
	if anchor == "" {
		if b, ok := g.blob(e.Hash); ok {
			v = manifest.Unchanged(recorded, b, b)
		}
	} else if b, s, ok := g.section(e.Hash, anchor, obsID); ok {
		v = manifest.Unchanged(recorded, markdown.SectionText(b, s), b[s.Start:s.LegacyEnd])
	}
	g.versions[k] = v
	return v
}

// section returns the Markdown blob h and its section anchor (the one
// whose Source marker names obsID, else the first).
func (g *gitView) section(h plumbing.Hash, anchor, obsID string) ([]byte, markdown.Section, bool) {
	b, ok := g.blob(h)
	if !ok || markdown.Check(b) != nil {
		return nil, markdown.Section{}, false
	}
	s, ok := findAnchor(markdown.Sections(b), anchor, obsID)
	return b, s, ok
}

// blob reads blob h, at most blobLimit bytes (a larger one is not read).
func (g *gitView) blob(h plumbing.Hash) ([]byte, bool) {
	blob, err := g.repo.BlobObject(h)
	if err != nil || blob.Size > blobLimit {
		return nil, false
	}
	r, err := blob.Reader()
	if err != nil {
		return nil, false
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, blobLimit))
	return b, err == nil
}

// has reports whether tree holds the file rel (and, with an anchor, the
// section anchor in it).
func (g *gitView) has(tree *object.Tree, rel, anchor string) bool {
	if tree == nil {
		return false
	}
	e, err := g.find(tree, g.prefix+rel)
	if err != nil || !e.Mode.IsFile() {
		return false
	}
	return anchor == "" || g.anchorsOf(e.Hash)[anchor]
}

// anchorsOf returns the ADR/PF ids of the knowledge file blob h.
func (g *gitView) anchorsOf(h plumbing.Hash) map[string]bool {
	if a, ok := g.anchors[h]; ok {
		return a
	}
	a := map[string]bool{}
	g.anchors[h] = a
	// Never hand goldmark a nesting bomb (markdown.Check): a commit's
	// blob is as untrusted as the work tree.
	if b, ok := g.blob(h); ok && markdown.Check(b) == nil {
		for _, s := range markdown.Sections(b) {
			a[s.ID] = true
		}
	}
	return a
}

// history returns the trees of HEAD's ancestors (HEAD excluded) committed
// since the given time (less clockSkew), at most historyLimit of them. The
// first call fixes the cut-off: callers pass the oldest render first.
func (g *gitView) history(since time.Time) []*object.Tree {
	if g.histRead || g.head == nil {
		return g.hist
	}
	g.histRead = true
	cutoff := since.Add(-clockSkew)
	seen := map[plumbing.Hash]bool{g.head.Hash: true}
	queue := []plumbing.Hash{}
	queue = append(queue, g.head.ParentHashes...)
	for len(queue) > 0 && len(seen) <= historyLimit {
		h := queue[0]
		queue = queue[1:]
		if seen[h] {
			continue
		}
		seen[h] = true
		c, err := g.repo.CommitObject(h)
		if err != nil {
			continue // a shallow clone's boundary
		}
		if !since.IsZero() && c.Committer.When.Before(cutoff) {
			continue // older than the render: cannot hold it
		}
		if t, err := c.Tree(); err == nil {
			g.hist = append(g.hist, t)
		}
		queue = append(queue, c.ParentHashes...)
	}
	return g.hist
}

// branchTips returns the trees of the local and remote branch tips, of
// ORIG_HEAD and of the stash (with its index and untracked-files parents),
// HEAD's excluded. ORIG_HEAD is where `git reset`, `git rebase` and `git
// merge` leave the commit they moved the branch away from: after `git
// reset --hard HEAD~1` or a rebase that drops a commit, the commit that had
// the artifact is on no branch any more, and git, not the person, took the
// file away.
func (g *gitView) branchTips() []*object.Tree {
	if g.tipsRead {
		return g.tips
	}
	g.tipsRead = true
	refs, err := g.repo.References()
	if err != nil {
		return nil
	}
	defer refs.Close()
	seen := map[plumbing.Hash]bool{}
	if g.head != nil {
		seen[g.head.Hash] = true
	}
	add := func(h plumbing.Hash) *object.Commit {
		if seen[h] || len(seen) > refLimit {
			return nil
		}
		seen[h] = true
		c, err := g.repo.CommitObject(h)
		if err != nil {
			return nil
		}
		if t, err := c.Tree(); err == nil {
			g.tips = append(g.tips, t)
		}
		return c
	}
	if r, err := g.repo.Reference(plumbing.ReferenceName("ORIG_HEAD"), true); err == nil && r.Type() == plumbing.HashReference {
		add(r.Hash())
	}
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		n := r.Name()
		switch {
		case n.IsBranch(), n.IsRemote():
			add(r.Hash())
		case n == "refs/stash":
			// A stash commit's parents hold the index and the untracked
			// files (`git stash -u`); its own tree the tracked ones.
			if c := add(r.Hash()); c != nil {
				for _, p := range c.ParentHashes {
					add(p)
				}
			}
		}
		if len(seen) > refLimit {
			return errStop
		}
		return nil
	})
	return g.tips
}

var errStop = errors.New("stop")

// GitInputs are the files of the repository that a pass's answers from
// git (absent, checked out, back by a checkout) depended on, besides the
// work tree's files and HEAD's commit: HEAD and ORIG_HEAD, the index, every
// reference (the refs directories, listed, and each loose reference file),
// packed-refs, shallow, the configuration, the sparse-checkout definition
// and, in a linked worktree, the .git file that names its git directory.
// Git replaces each of them by a rename, so a changed one has a new inode.
// The objects they name never change. A caller that stats them (the
// engine's pass replay) knows from those stats alone whether the answers
// could differ.
type GitInputs struct {
	// Head is HEAD's commit ("" before the first one).
	Head string
	// Files are absolute paths, present or not; Dirs the directories
	// whose names were read.
	Files, Dirs []string
	// Complete is false when they could not all be named: a repository
	// that cannot be read, or more references than gitRefLimit.
	Complete bool
}

// gitRefLimit bounds the files and directories under refs/ a pass names as
// its inputs (GitInputs): a repository with more is never replayed after a
// pass that asked git.
const gitRefLimit = 2048

// inputs returns what this view's answers depended on (GitInputs).
func (g *gitView) inputs() GitInputs {
	in := GitInputs{Head: g.headHash(), Complete: true}
	if g.sparse && g.indexErr != nil {
		in.Complete = false // every missing artifact was called absent
		return in
	}
	seen := map[string]bool{}
	file := func(p string) {
		if !seen[p] {
			seen[p] = true
			in.Files = append(in.Files, p)
		}
	}
	own, common := g.repo.GitDir, g.repo.CommonDir
	for _, f := range []string{"HEAD", "ORIG_HEAD", "index", "config.worktree", filepath.Join("info", "sparse-checkout")} {
		file(filepath.Join(own, f))
	}
	for _, f := range []string{"packed-refs", "shallow", "config"} {
		file(filepath.Join(common, f))
	}
	// A linked worktree's (or a submodule's) .git is a file naming its
	// git directory: pointed elsewhere, every answer may change.
	if dotGit := filepath.Join(g.top, ".git"); dotGit != own {
		file(dotGit)
	}
	var walk func(dir string) bool
	walk = func(dir string) bool {
		fi, err := os.Stat(dir)
		if errors.Is(err, os.ErrNotExist) {
			file(dir) // its appearance is a change
			return true
		}
		if err != nil || !fi.IsDir() {
			return false // never opened: a FIFO would block the open
		}
		f, err := os.Open(dir)
		if err != nil {
			return false
		}
		// Read no more names than the bound allows (a directory of a
		// million entries is not read whole to find out).
		room := gitRefLimit + 1 - len(in.Files) - len(in.Dirs)
		if room <= 0 {
			f.Close()
			return false
		}
		ents, err := f.ReadDir(room)
		f.Close()
		if err != nil && !errors.Is(err, io.EOF) {
			return false
		}
		in.Dirs = append(in.Dirs, dir)
		for _, e := range ents {
			if len(in.Files)+len(in.Dirs) > gitRefLimit {
				return false
			}
			p := filepath.Join(dir, e.Name())
			if e.IsDir() {
				if !walk(p) {
					return false
				}
				continue
			}
			file(p)
		}
		return true
	}
	refs := []string{filepath.Join(common, "refs")}
	if own != common {
		refs = append(refs, filepath.Join(own, "refs")) // a linked worktree's own
	}
	for _, d := range refs {
		if !walk(d) {
			in.Complete = false
			return in
		}
	}
	return in
}
