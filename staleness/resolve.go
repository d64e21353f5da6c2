package staleness

import (
	"bufio"
	"bytes"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// How a reference resolved (Resolution.How).
const (
	ByPath     = "path"     // the path itself is in the tree
	ByName     = "name"     // a bare file name: a tracked file of that name
	BySuffix   = "suffix"   // a partial path: the end of a tracked path
	ByRelative = "relative" // relative to the directory of its document
)

// Why a reference that does not resolve is not reported (Resolution.Reason;
// the stale reasons are Missing and LinePastEOF).
const (
	NeverTracked = "never-tracked" // a name or partial path no file in the searched history had
	Gitignored   = "gitignored"    // the repository's .gitignore ignores it: a build output or runtime file
	Placeholder  = "placeholder"   // a template placeholder such as devflowDir/x.md
	NotAFile     = "not-a-file"    // a word that only looks like a file (Node.js, v1.2.md)
	Unchanged    = "unchanged"     // pre-commit: not removed by this commit
)

// Resolution says how one extracted reference resolved: ResolvedAs (with
// How) when it names a file of the checked tree, else Reason.
type Resolution struct {
	Ref        string `json:"ref"`
	Source     string `json:"source"` // the entry or file § heading it was written in
	ResolvedAs string `json:"resolved_as,omitempty"`
	How        string `json:"how,omitempty"`
	Reason     string `json:"reason,omitempty"`
	RenamedTo  string `json:"renamed_to,omitempty"`
	Searched   int    `json:"searched,omitempty"`
	Truncated  bool   `json:"truncated,omitempty"`
}

// notFiles are words that look like file names but name products,
// frameworks or standards; compared case-insensitively with a bare name.
// staleness.ignore extends the list.
var notFiles = map[string]bool{
	"node.js": true, "vue.js": true, "next.js": true, "nuxt.js": true, "react.js": true,
	"express.js": true, "three.js": true, "d3.js": true, "chart.js": true, "ember.js": true,
	"backbone.js": true, "angular.js": true, "alpine.js": true, "solid.js": true,
	"nest.js": true, "deno.js": true, "bun.sh": true, "asp.net": true, "socket.io": true,
	"p5.js": true, "anime.js": true, "moment.js": true, "day.js": true, "preact.js": true,
}

// looksLikeWord reports a bare name that is a product name from notFiles
// or a version string: an optional "v" and dot-separated numbers before
// the extension (v1.2.md, 2.0.json, 1.2.3.ts).
func looksLikeWord(p string) bool {
	if strings.Contains(p, "/") {
		return false
	}
	if notFiles[strings.ToLower(p)] {
		return true
	}
	stem := p[:max(strings.LastIndexByte(p, '.'), 0)]
	stem = strings.TrimPrefix(strings.TrimPrefix(stem, "v"), "V")
	if stem == "" {
		return false
	}
	for _, part := range strings.Split(stem, ".") {
		if part == "" {
			return false
		}
		for _, r := range part {
			if r < '0' || r > '9' {
				return false
			}
		}
	}
	return true
}

// placeholderSuffixes end the camelCase words that stand for a directory
// in templates and tool docs (devflowDir, projectRoot, outputPath).
var placeholderSuffixes = []string{"Dir", "Root", "Path", "Folder", "Home"}

// isPlaceholder reports a path whose first element is a camelCase
// placeholder: a lower-case letter first, only ASCII letters and digits,
// ending in Dir, Root, Path, Folder or Home after at least one lower-case
// letter ("devflowDir/x.md", "projectRoot/src/a.ts"). Placeholders written
// with <…>, {…} or $ never become references.
func isPlaceholder(p string) bool {
	first, _, ok := strings.Cut(p, "/")
	if !ok || first == "" || first[0] < 'a' || first[0] > 'z' {
		return false
	}
	for _, r := range first {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r)) {
			return false
		}
	}
	for _, s := range placeholderSuffixes {
		if len(first) > len(s) && strings.HasSuffix(first, s) {
			return true
		}
	}
	return false
}

// outcome is what the Checker decided about one reference.
type outcome struct {
	found     string // root-relative path it resolved to
	how       string
	skip      string // reason it is not a reference
	missing   bool
	moved     string // where a missing path went (root-relative)
	searched  int    // commits searched when no deletion was found
	truncated bool
	// used: a run of this Checker looked the reference up (the cache
	// keeps the outcomes its runs used).
	used bool
}

type outcomeKey struct {
	path, dir string
	rooted    bool
}

func keyOf(r Ref) outcomeKey {
	if !r.Rooted && strings.Contains(r.Path, "/") {
		return outcomeKey{r.Path, r.Dir, false}
	}
	return outcomeKey{path: r.Path, rooted: r.Rooted}
}

// bare reports a file name without a directory that is not rooted.
func (r Ref) bare() bool { return !r.Rooted && !strings.Contains(r.Path, "/") }

// matches reports whether the repository path q could be what r names:
// the path itself, and for an unrooted reference a file of the same name
// (bare), a path ending in it, or it relative to its document.
func (c *Checker) matches(r Ref, q string) bool {
	if q == c.prefix+r.Path {
		return true
	}
	if r.Rooted {
		return false
	}
	if r.bare() {
		return path.Base(q) == r.Path
	}
	if strings.HasSuffix(q, "/"+r.Path) && strings.HasPrefix(q, c.prefix) {
		return true
	}
	return r.Dir != "" && q == c.prefix+path.Join(r.Dir, r.Path)
}

// resolveTree finds r in the checked tree.
func (c *Checker) resolveTree(r Ref) (string, string) {
	if c.present(r.Path) {
		return r.Path, ByPath
	}
	if r.Rooted {
		return "", ""
	}
	if !r.bare() && r.Dir != "" {
		if j := path.Join(r.Dir, r.Path); !strings.HasPrefix(j, "../") && j != ".." && c.present(j) {
			return j, ByRelative
		}
	}
	how := BySuffix
	if r.bare() {
		how = ByName
	}
	for _, q := range c.named(path.Base(r.Path)) {
		if c.matches(r, q) {
			if rel := c.rootRel(q); rel != "" {
				return rel, how
			}
		}
	}
	return "", ""
}

// named returns the files of the checked tree (repository paths) whose
// base name is b. The listing is scanned once per batch of names
// (wantName, findNames).
func (c *Checker) named(b string) []string {
	if c.wantName(b) {
		c.findNames()
	}
	return c.names2[b]
}

// wantName notes base name b for the next findNames, unless it was
// noted before; it reports whether it was new.
func (c *Checker) wantName(b string) bool {
	if c.names2 == nil {
		c.names2 = map[string][]string{}
		c.scanned = map[string]uint32{}
	}
	if _, ok := c.scanned[b]; ok {
		return false
	}
	c.scanned[b] = c.nameBatch + 1
	c.namesWanted = true
	return true
}

// findNames finds the files with the base names noted since the last
// call (wantName) in one pass over the listing. In HEAD mode the listing
// may come from the index: each candidate is then looked up in HEAD.
// The names wanted are those scanned maps to this batch: resolveSeq
// notes them as it meets them, not collected first (a string per
// reference missed, 1.6 MB at 100,000 observations) nor put in a set
// apart.
func (c *Checker) findNames() {
	if !c.namesWanted {
		return
	}
	c.namesWanted = false
	c.nameBatch++
	// listing first: it decides whether the listing came from the index.
	names := c.listing()
	verify := c.source == sourceHead && c.listedFromIndex
	for _, q := range names {
		b := q[strings.LastIndexByte(q, '/')+1:]
		if c.scanned[b] != c.nameBatch {
			continue
		}
		if verify {
			if _, ok := c.headEntry(q); !ok {
				continue
			}
		}
		c.names2[b] = append(c.names2[b], q)
	}
}

// listing returns the paths of the files of the checked tree (repository
// paths, sorted), read once: the index in the index modes; in HEAD mode
// the index too when it can be read (it is the checkout, and far cheaper
// to read than HEAD's whole tree; callers look candidates up in HEAD), else
// HEAD's tree; outside git the working tree.
func (c *Checker) listing() []string {
	c.ensureIndex()
	if c.listed {
		return c.names
	}
	c.listed = true
	switch c.source {
	case sourceIndex:
	case sourceHead:
		c.dep(c.indexFile())
		if idx, err := readIndex(c.repo); err == nil && len(idx.Entries) > 0 {
			c.names = make([]string, 0, len(idx.Entries))
			for _, e := range idx.Entries {
				c.names = append(c.names, e.Name)
			}
			c.listedFromIndex = true
		} else {
			c.fail(c.walkTree(c.tree.Hash, "", func(q string, _ plumbing.Hash) { c.names = append(c.names, q) }))
		}
	default:
		for _, q := range c.listWorktree() {
			c.names = append(c.names, c.prefix+q)
		}
	}
	if !sort.StringsAreSorted(c.names) {
		sort.Strings(c.names)
	}
	return c.names
}

// letListingGo drops the listing of the tree a scan resolved against
// (names, and the names by base name), outside the index modes, whose
// names are the index's: a Checker spent by MarkCached holds no more
// than its save needs (at 100,000 observations and 20,000 artifacts,
// the working tree's listing was 4 MB of a first pass's peak, the
// save). A later lookup lists the tree again.
func (c *Checker) letListingGo() {
	if c.source == sourceIndex {
		return
	}
	c.names, c.names2, c.scanned, c.nameBatch, c.namesWanted = nil, nil, nil, 0, false
	c.listed, c.listedFromIndex = false, false
}

// walkTree calls f with every file below the tree with hash h.
func (c *Checker) walkTree(h plumbing.Hash, dir string, f func(string, plumbing.Hash)) error {
	t, err := c.treeObj(h)
	if err != nil {
		return err
	}
	for _, e := range t.Entries {
		if e.Mode == filemode.Dir {
			if err := c.walkTree(e.Hash, dir+e.Name+"/", f); err != nil {
				return err
			}
			continue
		}
		if e.Mode != filemode.Submodule {
			f(dir+e.Name, e.Hash)
		}
	}
	return nil
}

// maxWorktreeFiles bounds the working-tree listing outside git.
const maxWorktreeFiles = 100_000

// listWorktree lists the files below the root (root-relative), skipping
// .git, node_modules and learnwatch's cache directory and not following
// symlinks, at most maxWorktreeFiles.
func (c *Checker) listWorktree() []string {
	var out []string
	cache := cachedir.Dir(c.root) // learnwatch's own disposable caches
	_ = filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if c.ctx != nil && c.ctx.Err() != nil {
			return filepath.SkipAll // the scan stops at its next check
		}
		if c.dirNames != nil && p != c.root {
			parent := filepath.Dir(p)
			c.dirNames[parent] = append(c.dirNames[parent], d.Name())
		}
		if d.IsDir() {
			if d.Name() == ".git" || d.Name() == "node_modules" || p == cache {
				return filepath.SkipDir
			}
			c.dirs = append(c.dirs, p)
			return nil
		}
		if len(out) >= maxWorktreeFiles {
			c.listCut = true
			return filepath.SkipAll
		}
		if rel, err := filepath.Rel(c.root, p); err == nil {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

// maxIgnoreFile bounds the size of one .gitignore read.
const maxIgnoreFile = 256 << 10

// gitignored reports whether the repository's ignore rules
// (.git/info/exclude and the .gitignore files of the working tree on the
// way to the path) ignore the root-relative path p. For a bare name only
// the rules at the root apply.
func (c *Checker) gitignored(p string) bool {
	if c.repo == nil {
		return false
	}
	full := c.prefix + p
	parts := strings.Split(full, "/")
	var pats []gitignore.Pattern
	if c.excludes == nil {
		c.excludes = map[string][]gitignore.Pattern{}
		c.excludes["\x00info"] = c.readIgnore(filepath.Join(c.commonDir, "info", "exclude"), nil)
	}
	pats = append(pats, c.excludes["\x00info"]...)
	for i := 0; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		ps, ok := c.excludes[dir]
		if !ok {
			var domain []string
			if dir != "" {
				domain = parts[:i:i]
			}
			ps = c.readIgnore(filepath.Join(c.top, filepath.FromSlash(dir), ".gitignore"), domain)
			c.excludes[dir] = ps
		}
		pats = append(pats, ps...)
	}
	if len(pats) == 0 {
		return false
	}
	return gitignore.NewMatcher(pats).Match(parts, false)
}

// readIgnore reads one ignore file (bounded, not through a symlink); an
// unreadable one holds no patterns. What was read is remembered for the
// cache: outcomes depend on it.
func (c *Checker) readIgnore(name string, domain []string) []gitignore.Pattern {
	if c.top == "" {
		return nil
	}
	c.dep(name)
	data, ok := readIgnoreBytes(name)
	c.noteIgnore(name, data, ok)
	if !ok {
		return nil
	}
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
}

// readIgnoreBytes reads at most maxIgnoreFile bytes of a regular file,
// not through a symlink; ok is false when it cannot.
func readIgnoreBytes(name string) (data []byte, ok bool) {
	fi, err := os.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil, false
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	data, err = io.ReadAll(io.LimitReader(f, maxIgnoreFile))
	if err != nil {
		return nil, false
	}
	return data, true
}

// refSuffix returns the line suffix of a reference as written (":12",
// ":10-20", "#L5"), or "".
func refSuffix(r Ref) string {
	if r.Line == 0 {
		return ""
	}
	raw := strings.ReplaceAll(r.Raw, `\`, "/")
	i := strings.LastIndexByte(raw, '/')
	if j := strings.IndexAny(raw[i+1:], ":#"); j >= 0 {
		return raw[i+1+j:]
	}
	return ""
}

// resolveAll decides every reference of refs not decided yet: in the
// tree, skipped, or missing (with where it went, from the staged changes
// and from history).
func (c *Checker) resolveAll(refs []Ref) []*outcome {
	return c.resolveSeq(len(refs), slices.Values(refs))
}

// resolveSeq is resolveAll of the n references refs yields (twice, the
// same each time): a scan's are its entries', not copied into one slice
// (6 MB at 100,000 observations).
func (c *Checker) resolveSeq(n int, refs iter.Seq[Ref]) []*outcome {
	// One lookup per reference decided before (most of them): its
	// outcome is taken from the map once, and handed back in refs' order.
	outs := make([]*outcome, n)
	var misses []int32 // places in refs: int32, a cold pass misses them all
	i := -1
	for r := range refs {
		i++
		if o, ok := c.outcomes[keyOf(r)]; ok {
			o.used = true
			outs[i] = o
			continue
		}
		misses = append(misses, int32(i))
		if !r.Rooted && !c.present(r.Path) {
			c.wantName(path.Base(r.Path))
		}
	}
	if len(misses) == 0 {
		return outs
	}
	c.findNames()
	var pending []Ref
	// The misses again, in order, with their references.
	i, next := -1, 0
	for r := range refs {
		if i++; next == len(misses) {
			break
		}
		if i != int(misses[next]) {
			continue
		}
		next++
		k := keyOf(r)
		if o, ok := c.outcomes[k]; ok {
			outs[i] = o // the same reference earlier in refs
			continue
		}
		o := &outcome{used: true}
		c.outcomes[k] = o
		outs[i] = o
		c.cache.computed = true
		if o.found, o.how = c.resolveTree(r); o.found != "" {
			continue
		}
		switch {
		case !r.Rooted && (looksLikeWord(r.Path) || ignored(r.Path, c.ignore)):
			o.skip = NotAFile
			continue
		case !r.Rooted && isPlaceholder(r.Path):
			o.skip = Placeholder
			continue
		case c.stagedMatch(r, o):
			// Removed by the staged commit: stale even when an ignore
			// rule matches (a file added with git add -f).
			continue
		case c.gitignored(r.Path):
			o.skip = Gitignored
			continue
		}
		if c.mode == PreCommit {
			o.skip = Unchanged
			continue
		}
		pending = append(pending, r)
	}
	if len(pending) > 0 {
		c.walkHistory(pending)
	}
	return outs
}

// stagedMatch looks r up among the files the index no longer has but HEAD
// has (index modes) or, in working-tree mode inside git, the HEAD path
// itself; on a match o is missing, with a staged rename when there is one.
func (c *Checker) stagedMatch(r Ref, o *outcome) bool {
	switch {
	case c.source == sourceIndex && c.tree != nil:
		del := c.stagedDeleted()
		for _, q := range del.byBase[path.Base(r.Path)] {
			if c.matches(r, q) {
				o.missing = true
				if e, ok := c.headEntry(q); ok && e != nil {
					o.moved = c.stagedTarget(q, e)
				}
				return true
			}
		}
	case c.source == sourceWorktree && c.tree != nil:
		if _, ok := c.headEntry(c.prefix + r.Path); ok {
			o.missing = true
			return true
		}
	}
	return false
}

// deletedSet is a set of repository paths by base name.
type deletedSet struct {
	byBase map[string][]string
}

// DeletesNothing reports whether the staged commit of an index mode
// (Staged, PreCommit) deletes or renames no file of HEAD — the first
// commit deletes nothing — as far as it could be read (an error reading
// a tree is not nothing). The pre-commit check, which reports only the
// references such a commit breaks, then has nothing to report and need
// not read the log, the knowledge files or their references.
func (c *Checker) DeletesNothing() bool {
	if c.mode != Staged && c.mode != PreCommit {
		return false
	}
	d := c.stagedDeleted()
	return c.err == nil && len(d.byBase) == 0
}

// stagedDeleted lists the files of HEAD that the index does not have,
// read once. A HEAD subtree the index's cached trees (the TREE extension
// git keeps for every directory the staged changes leave alone) hold
// unchanged is skipped without being read.
func (c *Checker) stagedDeleted() deletedSet {
	if c.staged != nil {
		return *c.staged
	}
	c.ensureIndex()
	d := deletedSet{byBase: map[string][]string{}}
	c.staged = &d
	if c.tree == nil {
		return d
	}
	cache, rootHash := c.cachedTrees()
	if rootHash == c.tree.Hash {
		return d // the index holds HEAD's tree: nothing deleted
	}
	var walk func(h plumbing.Hash, dir string) error
	walk = func(h plumbing.Hash, dir string) error {
		t, err := c.treeObj(h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			q := dir + e.Name
			if e.Mode == filemode.Dir {
				if n, ok := cache[cachedTree{e.Name, e.Hash}]; ok && n == c.indexCount(q+"/") {
					continue
				}
				if err := walk(e.Hash, q+"/"); err != nil {
					return err
				}
				continue
			}
			if _, ok := c.index[q]; !ok && e.Mode != filemode.Submodule {
				d.byBase[e.Name] = append(d.byBase[e.Name], q)
			}
		}
		return nil
	}
	c.fail(walk(c.tree.Hash, ""))
	return d
}

// cachedTree names a valid cached tree of the index.
type cachedTree struct {
	name string
	hash plumbing.Hash
}

// cachedTrees returns the index's valid cached trees by directory name and
// tree hash, with the number of index entries each covers, and the root's
// hash when it is valid. go-git drops invalidated entries (and their
// subtree counts) when decoding, so a cached tree's full path is not
// known: a HEAD directory is taken as unchanged when a cached tree has its
// name and hash and the index has as many entries below it as that tree
// covers.
func (c *Checker) cachedTrees() (map[cachedTree]int, plumbing.Hash) {
	out := map[cachedTree]int{}
	var root plumbing.Hash
	if c.idxCache == nil {
		return out, root
	}
	for _, e := range c.idxCache.Entries {
		if e.Entries < 0 {
			continue
		}
		if e.Path == "" {
			root = e.Hash
			continue
		}
		out[cachedTree{e.Path, e.Hash}] = e.Entries
	}
	return out, root
}

// indexCount returns the number of index entries below dir ("a/b/").
func (c *Checker) indexCount(dir string) int {
	lo := sort.SearchStrings(c.names, dir)
	hi := sort.SearchStrings(c.names, dir[:len(dir)-1]+"0") // '0' follows '/'
	return hi - lo
}

// readBounded reads a regular file below root that does not resolve
// outside it, at most limit bytes (safefs.ReadFile: a symlink, FIFO or
// larger file is refused).
func readBounded(root, rel string, limit int64) ([]byte, error) {
	abs, _, err := manifest.Resolve(root, rel)
	if err != nil {
		return nil, err
	}
	return safefs.ReadFile(abs, limit)
}

// TreePaths returns the root-relative paths of the files of the checked
// tree whose names end in ext (case-insensitive; "" for all), sorted. In
// HEAD mode they are the files of the checkout (the index) when it can be
// read.
func (c *Checker) TreePaths(ext string) []string {
	if ext == ".md" && c.cache.hasMD {
		return append([]string(nil), c.cache.md...)
	}
	out := c.treePaths(ext)
	c.cache.computed = true
	if ext == ".md" && c.cache.treeKey != "" {
		c.cache.hasMD, c.cache.md = true, append([]string(nil), out...)
	}
	return out
}

func (c *Checker) treePaths(ext string) []string {
	var out []string
	for _, q := range c.listing() {
		if ext == "" || len(q) >= len(ext) && strings.EqualFold(q[len(q)-len(ext):], ext) {
			if rel := c.rootRel(q); rel != "" {
				out = append(out, rel)
			}
		}
	}
	return out
}
