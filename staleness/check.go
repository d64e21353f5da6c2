package staleness

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// Mode selects the tree references are checked against.
type Mode int

const (
	// Auto checks against the HEAD commit's tree; outside git, or before
	// the first commit, against the working tree.
	Auto Mode = iota
	// Staged checks against the index: what the next commit will hold.
	Staged
	// Worktree checks against the files on disk.
	Worktree
	// PreCommit reports only references the staged commit deletes or
	// renames: paths in HEAD that are missing from the index. It reads no
	// blobs and walks no history (the pre-commit hook's fast path).
	PreCommit
)

// Reasons a reference is stale.
const (
	Missing     = "missing"       // the path is not in the checked tree
	LinePastEOF = "line-past-eof" // path:LINE names a line after the end of the file
)

// Finding is one stale reference.
type Finding struct {
	ID        string `json:"id"`  // observation id, ADR-/PF- id, or source file; Check leaves it empty
	Ref       string `json:"ref"` // the reference as written
	Reason    string `json:"reason"`
	RenamedTo string `json:"renamed_to,omitempty"` // where a missing path went, if found, with the reference's :LINE suffix
	// Searched is the number of commits searched for where a missing path
	// went when none removed it; Truncated is set when the walk stopped at
	// staleness.rename_depth with history left.
	Searched  int  `json:"searched,omitempty"`
	Truncated bool `json:"truncated,omitempty"`
	// File and Heading name where a reference of a source file (not the
	// knowledge base or the log) was written.
	File    string `json:"file,omitempty"`
	Heading string `json:"heading,omitempty"`
}

// ErrNotGit is returned by Open for the index modes when root is not inside
// a git worktree.
var ErrNotGit = errors.New("not inside a git worktree")

// Where a Checker looks paths up.
const (
	sourceIndex    = "index"
	sourceHead     = "HEAD"
	sourceWorktree = "working tree"
)

// Checker checks references against one tree. It caches what it reads, so
// one Checker serves one run; it is not safe for concurrent use.
type Checker struct {
	root   string
	mode   Mode
	source string
	depth  int
	parsed map[string]Parsed // UseParsed

	repo *gitrepo.Repo // nil outside git
	// unreadable is set in a repository go-git cannot read: the working
	// tree is checked, as outside git.
	unreadable *gitrepo.UnreadableError
	prefix     string         // root relative to the worktree top, "" or "dir/"
	head       *object.Commit // nil outside git or before the first commit
	tree       *object.Tree   // head's tree

	top    string // the worktree's top directory
	gitDir string // the worktree's git directory (its index)
	// commonDir is the git directory shared by the repository's
	// worktrees, where git reads info/exclude.
	commonDir string
	ignore    []string

	index    map[string]*index.Entry // index modes: repo path → entry
	idxCache *index.Tree             // index modes: the index's cached trees
	names    []string                // the index paths, sorted (index modes; see listing)
	names2   map[string][]string     // the checked tree's files by base name, built on demand
	// scanned maps the base names looked up in names2 to the batch of
	// findNames that looked (nameBatch once it ran); namesWanted is set
	// while a name waits for the next batch.
	scanned     map[string]uint32
	nameBatch   uint32
	namesWanted bool
	listed      bool // names holds the listing (listing)
	// listedFromIndex: in HEAD mode, names was read from the index.
	listedFromIndex bool
	staged          *deletedSet                    // index modes: HEAD files the index lacks, built on demand
	excludes        map[string][]gitignore.Pattern // ignore patterns by directory, read on demand
	byHash          map[plumbing.Hash][]string     // index modes, built on demand
	exists          map[string]bool                // root-relative path → present
	lines           map[string]int                 // root-relative path → line count, -1 unknown
	outcomes        map[outcomeKey]*outcome        // decided references
	trees           map[plumbing.Hash]*object.Tree // decoded trees by hash
	hist            history                        // commits walked for renames
	err             error                          // first non-fatal error
	ctx             context.Context                // nil: never cancelled (WithContext)
	// idxLazy: index modes whose outcomes came from the cache read the
	// index only when a reference not in the cache needs it.
	idxLazy bool
	cache   cacheState
	// deps and dirs are what the result depends on besides the log and
	// the knowledge files (Report.Inputs): files read or looked up on
	// disk, directories listed.
	deps map[string]bool
	dirs []string
	// dirNames, when set (EntryMarks outside git), collects the names
	// the working tree's listing read, by directory; listCut is set when
	// the listing stopped at maxWorktreeFiles.
	dirNames map[string][]string
	listCut  bool
}

// dep notes that the result depends on the file at abs (read, or looked
// up and found missing).
func (c *Checker) dep(abs string) {
	if c.deps == nil {
		c.deps = map[string]bool{}
	}
	c.deps[abs] = true
}

// Inputs are what a scan's result depends on besides the learning log and
// the knowledge files, for a caller that wants to know, from stats alone,
// whether a new scan could report anything else (the engine's pass
// replay): the files the scan read or looked up on disk, the directories
// it listed, and the git tree.
type Inputs struct {
	// Files are absolute paths: sources, ignore files, the git index,
	// files looked up in the working tree (present or not).
	Files []string
	// Dirs are the directories listed (the working tree outside git).
	Dirs []string
	// Git is set inside a git repository; Head is the checked commit
	// ("" before the first one). A new commit means a new scan.
	Git  bool
	Head string
}

// inputs returns what this Checker's runs depended on so far.
func (c *Checker) inputs() Inputs {
	in := Inputs{Git: c.repo != nil, Dirs: slices.Clone(c.dirs)}
	if c.head != nil {
		in.Head = c.head.Hash.String()
	}
	for f := range c.deps {
		in.Files = append(in.Files, f)
	}
	sort.Strings(in.Files)
	return in
}

// WithContext makes the history walk stop when ctx ends (a hook's
// deadline, SIGTERM): no further commit is read and the check reports
// ctx's error. It returns c.
func (c *Checker) WithContext(ctx context.Context) *Checker {
	c.ctx = ctx
	return c
}

// Open prepares a Checker for the repository at root. Outside git, Auto and
// Worktree check the working tree; Staged and PreCommit need the index and
// fail with ErrNotGit. In the index modes the index named by
// GIT_INDEX_FILE is read when that variable is set (git sets it for hooks,
// e.g. a temporary index during "git commit -a"). It reads the staleness
// cache (CacheName; what SaveCache wrote): results it holds for the same
// trees are used, and in the index modes the index is then decoded only
// if a reference the cache lacks needs it. PreCommit only reads it (it
// saves nothing) and takes only the references extracted from each text:
// it keeps no results, as the index it checks is new each time.
func Open(root string, mode Mode, cfg config.Staleness) (*Checker, error) {
	c, err := openChecker(root, mode, cfg, true)
	if err != nil {
		return nil, err
	}
	if !c.cache.tried {
		c.loadCache() // outside git: the extractions only
	}
	return c, nil
}

// openChecker is Open, reading the staleness cache when useCache is set.
func openChecker(root string, mode Mode, cfg config.Staleness, useCache bool) (*Checker, error) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("staleness: root %s: %w", root, err)
	}
	c := &Checker{
		root: abs, mode: mode, source: sourceWorktree, depth: cfg.RenameDepth, ignore: cfg.Ignore,
		exists: map[string]bool{}, lines: map[string]int{}, outcomes: map[outcomeKey]*outcome{},
		trees: map[plumbing.Hash]*object.Tree{},
	}
	if c.depth <= 0 {
		c.depth = config.Default().Staleness.RenameDepth
	}
	indexMode := mode == Staged || mode == PreCommit
	// go-git's default object cache keeps up to 96 MB of decoded objects,
	// which a long history walk fills with trees it reads once (learnwatch
	// keeps its own bounded map of decoded trees).
	repo, err := gitrepo.Open(abs, gitrepo.Options{Up: true, ObjectCache: objectCacheSize})
	if errors.Is(err, gitrepo.ErrNotExist) {
		if indexMode {
			return nil, fmt.Errorf("staleness: %s: %w (the staged check needs the index)", abs, ErrNotGit)
		}
		return c, nil
	}
	if unreadable, ok := errors.AsType[*gitrepo.UnreadableError](err); ok && !indexMode {
		// A repository go-git cannot read (SHA-256 objects, reftable):
		// checked against the working tree, as outside git, and said so.
		c.unreadable = unreadable
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("staleness: %w", err)
	}
	if c.prefix, err = repo.Prefix(abs); err != nil {
		return nil, fmt.Errorf("staleness: %w", err)
	}
	c.repo = repo
	c.top = repo.Top
	c.gitDir, c.commonDir = repo.GitDir, repo.CommonDir

	ref, err := repo.Head()
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
		// No commit yet: nothing was deleted or renamed, there is no
		// history, and Auto falls back to the working tree.
	case err != nil:
		return nil, fmt.Errorf("staleness: read HEAD in %s: %w", abs, err)
	default:
		if c.head, err = repo.CommitObject(ref.Hash()); err != nil {
			return nil, fmt.Errorf("staleness: read HEAD commit %s: %w", ref.Hash(), err)
		}
		if c.tree, err = c.treeObj(c.head.TreeHash); err != nil {
			return nil, fmt.Errorf("staleness: HEAD: %w", err)
		}
	}

	if useCache {
		c.loadCache()
	}
	switch {
	case mode == PreCommit && c.tree == nil:
		// The first commit deletes nothing: no need to read the index.
		c.source = sourceIndex
	case indexMode && c.cache.treeHit:
		// The outcomes of this very index are cached: read it only if
		// a new reference needs it.
		c.idxLazy = true
		c.source = sourceIndex
	case indexMode:
		c.dep(c.indexFile())
		idx, err := readIndex(repo)
		if err != nil {
			return nil, err
		}
		c.setIndex(idx)
		c.source = sourceIndex
	case mode == Auto && c.tree != nil:
		c.source = sourceHead
	}
	return c, nil
}

// setIndex takes the decoded index of an index mode.
func (c *Checker) setIndex(idx *index.Index) {
	c.idxCache = idx.Cache
	c.index = make(map[string]*index.Entry, len(idx.Entries))
	c.names = make([]string, 0, len(idx.Entries))
	for _, e := range idx.Entries {
		c.index[e.Name] = e
		c.names = append(c.names, e.Name)
	}
	// Git keeps the index sorted; do not rely on it.
	if !sort.StringsAreSorted(c.names) {
		sort.Strings(c.names)
	}
	c.listed = true
}

// ensureIndex reads the index of an index mode left unread by Open.
func (c *Checker) ensureIndex() {
	if !c.idxLazy {
		return
	}
	c.idxLazy = false
	c.dep(c.indexFile())
	idx, err := readIndex(c.repo)
	if err != nil {
		c.fail(err)
		c.listed = true
		return
	}
	c.setIndex(idx)
}

// objectCacheSize bounds go-git's cache of decoded objects.
const objectCacheSize = 16 << 20

// readIndex reads the index git would commit: GIT_INDEX_FILE when set,
// else the repository's index.
func readIndex(repo *gitrepo.Repo) (*index.Index, error) {
	defer relaxGC()()
	name := os.Getenv("GIT_INDEX_FILE")
	if name == "" {
		idx, err := repo.Index()
		if err != nil {
			return nil, fmt.Errorf("staleness: read git index: %w", err)
		}
		return idx, nil
	}
	abs, err := filepath.Abs(name)
	if err != nil {
		return nil, fmt.Errorf("staleness: GIT_INDEX_FILE %s: %w", name, err)
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, fmt.Errorf("staleness: read git index (GIT_INDEX_FILE): %w", err)
	}
	defer f.Close()
	idx := &index.Index{}
	if err := index.NewDecoder(bufio.NewReader(f)).Decode(idx); err != nil {
		return nil, fmt.Errorf("staleness: decode git index %s: %w", abs, gitrepo.IndexErr(err))
	}
	return idx, nil
}

// Source names the tree being checked: "index", "HEAD" or "working tree"
// (with why, in a repository go-git cannot read).
func (c *Checker) Source() string {
	if c.unreadable != nil {
		return c.source + " (" + c.unreadable.Error() + ")"
	}
	return c.source
}

// Err returns the first error met while checking (an unreadable object, a
// failed history walk). Such errors never turn into findings: the reference
// concerned is treated as fine.
func (c *Checker) Err() error { return c.err }

func (c *Checker) fail(err error) {
	if c.err == nil && err != nil {
		c.err = err
	}
}

// Check returns the stale references among refs, in order: a missing path
// once (with the raw text of its first reference), a line past the end of
// the file once per reference. Finding.ID is left empty.
func (c *Checker) Check(refs []Ref) []Finding {
	return c.appendChecked(nil, refs, c.resolveAll(refs))
}

// appendChecked appends the findings of refs to dst, given their outcomes
// (resolveAll's, in refs' order): a scan puts every entry's into one
// slice (a slice and a map per entry were most of what a first pass at
// 100,000 observations allocated).
func (c *Checker) appendChecked(dst []Finding, refs []Ref, outs []*outcome) []Finding {
	var buf [8]outcomeKey
	reported := buf[:0] // the missing paths this entry reported: a few
	for i, r := range refs {
		o := outs[i]
		switch {
		case o.missing:
			k := keyOf(r)
			if !slices.Contains(reported, k) {
				reported = append(reported, k)
				f := Finding{Ref: r.Raw, Reason: Missing, Searched: o.searched, Truncated: o.truncated}
				if o.moved != "" {
					f.RenamedTo = o.moved + refSuffix(r)
				}
				dst = append(dst, f)
			}
		case o.found != "" && r.Line > 0 && c.mode != PreCommit:
			if c.pastEOF(r, o) {
				dst = append(dst, Finding{Ref: r.Raw, Reason: LinePastEOF})
			}
		}
	}
	return dst
}

// Explain returns how each of refs resolved, in order (Source left empty).
func (c *Checker) Explain(refs []Ref) []Resolution {
	outs := c.resolveAll(refs)
	out := make([]Resolution, 0, len(refs))
	for i, r := range refs {
		o := outs[i]
		res := Resolution{Ref: r.Raw}
		switch {
		case o.found != "":
			res.ResolvedAs, res.How = o.found, o.how
			if r.Line > 0 && c.mode != PreCommit && c.pastEOF(r, o) {
				res.Reason = LinePastEOF
			}
		case o.missing:
			res.Reason, res.Searched, res.Truncated = Missing, o.searched, o.truncated
			if o.moved != "" {
				res.RenamedTo = o.moved + refSuffix(r)
			}
		default:
			res.Reason, res.Searched, res.Truncated = o.skip, o.searched, o.truncated
		}
		out = append(out, res)
	}
	return out
}

// pastEOF reports whether r's line is after the end of the file it
// resolved to; for a bare name, after the end of every tracked file of
// that name (up to maxCandidates of them).
func (c *Checker) pastEOF(r Ref, o *outcome) bool {
	k := eofKey{keyOf(r), r.Line}
	c.cache.useEOF(k)
	if v, ok := c.cache.eof[k]; ok {
		return v
	}
	v := c.pastEOFRead(r, o)
	c.cache.computed = true
	if c.cache.eof == nil {
		c.cache.eof = map[eofKey]bool{}
	}
	c.cache.eof[k] = v
	return v
}

func (c *Checker) pastEOFRead(r Ref, o *outcome) bool {
	n := c.lineCount(o.found)
	if n < 0 || r.Line <= n {
		return false
	}
	if o.how != ByName && o.how != BySuffix {
		return true
	}
	for k, q := range c.named(path.Base(r.Path)) {
		if k == maxCandidates {
			break
		}
		if rel := c.rootRel(q); rel != "" && c.matches(r, q) {
			if m := c.lineCount(rel); m < 0 || r.Line <= m {
				return false
			}
		}
	}
	return true
}

// present reports whether a root-relative path is in the checked tree.
func (c *Checker) present(p string) bool {
	if v, ok := c.exists[p]; ok {
		return v
	}
	var v bool
	switch c.source {
	case sourceIndex:
		c.ensureIndex()
		_, v = c.index[c.prefix+p]
		if !v {
			// A directory (HEAD has tree entries for them, the index
			// only files): some entry lies below it.
			dir := c.prefix + p + "/"
			i := sort.SearchStrings(c.names, dir)
			v = i < len(c.names) && strings.HasPrefix(c.names[i], dir)
		}
	case sourceHead:
		_, v = c.headEntry(c.prefix + p)
	default:
		abs := filepath.Join(c.root, filepath.FromSlash(p))
		c.dep(abs)
		_, err := os.Lstat(abs)
		v = err == nil
	}
	c.exists[p] = v
	return v
}

// headEntry looks a repository path up in HEAD's tree.
func (c *Checker) headEntry(p string) (*object.TreeEntry, bool) {
	if c.tree == nil {
		return nil, false
	}
	e, ok, err := c.lookup(c.tree.Hash, p)
	if err != nil {
		// A broken repository: say so, and do not flag the ref.
		c.fail(fmt.Errorf("staleness: look up %s in HEAD: %w", p, err))
		return nil, true
	}
	if !ok {
		return nil, false
	}
	return &e, true
}

// lineCount returns the number of lines of a present root-relative path,
// or -1 when it cannot be counted (not a regular file, unreadable).
func (c *Checker) lineCount(p string) int {
	if n, ok := c.lines[p]; ok {
		return n
	}
	n := -1
	switch c.source {
	case sourceIndex:
		c.ensureIndex()
		if e := c.index[c.prefix+p]; e != nil && isFile(e.Mode) {
			n = c.blobLines(e.Hash, p)
		}
	case sourceHead:
		if e, ok := c.headEntry(c.prefix + p); ok && e != nil && isFile(e.Mode) {
			n = c.blobLines(e.Hash, p)
		}
	default:
		n = c.fileLines(p)
	}
	c.lines[p] = n
	return n
}

func isFile(m filemode.FileMode) bool { return m == filemode.Regular || m == filemode.Executable }

func (c *Checker) blobLines(h plumbing.Hash, p string) int {
	b, err := c.repo.BlobObject(h)
	if err != nil {
		c.fail(fmt.Errorf("staleness: read blob %s of %s: %w", h, p, err))
		return -1
	}
	r, err := b.Reader()
	if err != nil {
		c.fail(fmt.Errorf("staleness: read blob %s of %s: %w", h, p, err))
		return -1
	}
	defer r.Close()
	n, err := countLines(r)
	if err != nil {
		c.fail(fmt.Errorf("staleness: read blob %s of %s: %w", h, p, err))
		return -1
	}
	return n
}

// fileLines counts the lines of a working-tree file; a path that leaves
// the root through a symlink is not read.
func (c *Checker) fileLines(p string) int {
	c.dep(filepath.Join(c.root, filepath.FromSlash(p)))
	n, err := worktreeLines(c.root, p)
	if err != nil {
		c.fail(err)
	}
	return n
}

// worktreeLines counts the lines of the working-tree file at the
// root-relative path p: -1 when it is not a regular file within the root
// (through a symlink that leaves it, say), and an error with -1 when it
// cannot be read to its end.
func worktreeLines(root, p string) (int, error) {
	abs, _, err := manifest.Resolve(root, p)
	if err != nil {
		return -1, nil
	}
	f, err := safefs.OpenFollowing(abs) // a FIFO would block the open
	if err != nil {
		return -1, nil // not a regular file: no lines to count
	}
	defer f.Close()
	n, err := countLines(f)
	if err != nil {
		return -1, fmt.Errorf("staleness: read %s: %w", abs, err)
	}
	return n, nil
}

// countLines counts lines the way an editor numbers them: "a\nb" and
// "a\nb\n" have two, an empty file none.
func countLines(r io.Reader) (int, error) {
	buf := make([]byte, 64<<10)
	n := 0
	var last byte = '\n'
	for {
		k, err := r.Read(buf)
		for _, b := range buf[:k] {
			if b == '\n' {
				n++
			}
		}
		if k > 0 {
			last = buf[k-1]
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if last != '\n' {
		n++
	}
	return n, nil
}

// stagedTarget finds where the HEAD file p (entry e) went in the index: a
// path with the same blob that is not in HEAD (an exact rename, "git mv").
// Empty files are never matched. When many files share the blob, the
// candidates with p's base name come first, then those in p's directory,
// and only the first maxCandidates are looked up in HEAD.
func (c *Checker) stagedTarget(p string, e *object.TreeEntry) string {
	if e.Hash == emptyBlob || !isFile(e.Mode) {
		return ""
	}
	if c.byHash == nil {
		c.ensureIndex()
		c.byHash = map[plumbing.Hash][]string{}
		for _, name := range c.names {
			if ie := c.index[name]; isFile(ie.Mode) {
				c.byHash[ie.Hash] = append(c.byHash[ie.Hash], name)
			}
		}
	}
	cands := c.byHash[e.Hash]
	if len(cands) > 1 {
		dir, base := path.Split(p)
		rank := func(q string) int {
			qd, qb := path.Split(q)
			switch {
			case qb == base:
				return 0
			case qd == dir:
				return 1
			}
			return 2
		}
		cands = append([]string(nil), cands...)
		sort.SliceStable(cands, func(i, j int) bool { return rank(cands[i]) < rank(cands[j]) })
	}
	for k, q := range cands {
		if k == maxCandidates {
			break
		}
		if _, inHead := c.headEntry(q); !inHead {
			return c.rootRel(q)
		}
	}
	return ""
}

// maxCandidates bounds the HEAD lookups of one staged-rename search.
const maxCandidates = 32

var emptyBlob = plumbing.ComputeHash(plumbing.BlobObject, nil)

// rootRel turns a repository path into a root-relative one ("" when it is
// outside the root's subtree).
func (c *Checker) rootRel(q string) string {
	if !strings.HasPrefix(q, c.prefix) {
		return ""
	}
	return strings.TrimPrefix(q, c.prefix)
}

// relaxGC lets the heap grow to five times the live data (GOGC=400) until
// the returned function is called. Decoding a large index makes tens of
// thousands of small allocations that all stay live: with the default
// setting a good part of it was spent collecting garbage that was not
// there. Nested and concurrent uses share one relaxation; the setting found
// before the first is restored after the last.
func relaxGC() func() {
	gcRelax.Lock()
	defer gcRelax.Unlock()
	if gcRelax.users == 0 {
		gcRelax.old = debug.SetGCPercent(400)
		if gcRelax.old < 0 || gcRelax.old > 400 {
			debug.SetGCPercent(gcRelax.old) // off or already relaxed further
		}
	}
	gcRelax.users++
	return func() {
		gcRelax.Lock()
		defer gcRelax.Unlock()
		if gcRelax.users--; gcRelax.users == 0 {
			debug.SetGCPercent(gcRelax.old)
		}
	}
}

// gcRelax counts the callers of relaxGC.
var gcRelax struct {
	sync.Mutex
	users, old int
}
