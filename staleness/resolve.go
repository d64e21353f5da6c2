package staleness

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"unicode"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/learnwatch/learnwatch/manifest"
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
	for _, q := range c.byBase()[path.Base(r.Path)] {
		if c.matches(r, q) {
			if rel := c.rootRel(q); rel != "" {
				return rel, how
			}
		}
	}
	return "", ""
}

// byBase returns the files of the checked tree by base name (repository
// paths), read once: the index, HEAD's whole tree, or the working tree.
func (c *Checker) byBase() map[string][]string {
	if c.names2 != nil {
		return c.names2
	}
	c.names2 = map[string][]string{}
	add := func(q string) {
		b := path.Base(q)
		c.names2[b] = append(c.names2[b], q)
	}
	switch c.source {
	case sourceIndex:
		if c.index == nil {
			// PreCommit before the first commit: nothing to list.
			break
		}
		for _, q := range c.names {
			add(q)
		}
	case sourceHead:
		c.fail(c.walkTree(c.tree.Hash, "", func(q string, _ plumbing.Hash) { add(q) }))
	default:
		for _, q := range c.listWorktree() {
			add(c.prefix + q)
		}
	}
	return c.names2
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
const maxWorktreeFiles = 200_000

// listWorktree lists the files below the root (root-relative), skipping
// .git and not following symlinks, at most maxWorktreeFiles.
func (c *Checker) listWorktree() []string {
	var out []string
	_ = filepath.WalkDir(c.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		}
		if len(out) >= maxWorktreeFiles {
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
		c.excludes["\x00info"] = c.readIgnore(filepath.Join(c.gitDir, "info", "exclude"), nil)
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
// unreadable one holds no patterns.
func (c *Checker) readIgnore(name string, domain []string) []gitignore.Pattern {
	if c.top == "" {
		return nil
	}
	fi, err := os.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	f, err := os.Open(name)
	if err != nil {
		return nil
	}
	defer f.Close()
	var ps []gitignore.Pattern
	sc := bufio.NewScanner(io.LimitReader(f, maxIgnoreFile))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || strings.TrimSpace(line) == "" {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, domain))
	}
	return ps
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
func (c *Checker) resolveAll(refs []Ref) {
	var pending []Ref
	for _, r := range refs {
		k := keyOf(r)
		if _, ok := c.outcomes[k]; ok {
			continue
		}
		o := &outcome{}
		c.outcomes[k] = o
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
		case c.gitignored(r.Path):
			o.skip = Gitignored
			continue
		}
		if c.stagedMatch(r, o) {
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

// stagedDeleted lists the files of HEAD that the index does not have,
// read once. Subtrees whose hash equals the index's cached tree for that
// directory (git keeps one for every directory the staged changes do not
// touch) are skipped without being read.
func (c *Checker) stagedDeleted() deletedSet {
	if c.staged != nil {
		return *c.staged
	}
	d := deletedSet{byBase: map[string][]string{}}
	c.staged = &d
	if c.tree == nil {
		return d
	}
	cache := c.cacheTree()
	var walk func(h plumbing.Hash, dir string) error
	walk = func(h plumbing.Hash, dir string) error {
		if ch, ok := cache[dir]; ok && ch == h {
			return nil
		}
		t, err := c.treeObj(h)
		if err != nil {
			return err
		}
		for _, e := range t.Entries {
			q := dir + e.Name
			if e.Mode == filemode.Dir {
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

// cacheTree returns the valid entries of the index's cached trees by
// directory ("" for the root, else "dir/").
func (c *Checker) cacheTree() map[string]plumbing.Hash {
	out := map[string]plumbing.Hash{}
	if c.idxCache == nil || len(c.idxCache.Entries) == 0 {
		return out
	}
	es := c.idxCache.Entries
	i := 0
	var read func(dir string)
	read = func(dir string) {
		if i >= len(es) {
			return
		}
		e := es[i]
		i++
		if e.Entries >= 0 {
			out[dir] = e.Hash
		}
		for k := 0; k < e.Trees && i < len(es); k++ {
			read(dir + es[i].Path + "/")
		}
	}
	read("")
	return out
}

// readBounded reads a regular file below root that does not resolve
// outside it, at most limit bytes; too large a file is an error.
func readBounded(root, rel string, limit int64) ([]byte, error) {
	abs, _, err := manifest.Resolve(root, rel)
	if err != nil {
		return nil, err
	}
	fi, err := os.Lstat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "read", Path: abs, Err: fs.ErrInvalid}
	}
	f, err := os.Open(abs)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, &fs.PathError{Op: "read", Path: abs, Err: errTooLarge}
	}
	return b, nil
}

var errTooLarge = errors.New("file too large")

// TreePaths returns the root-relative paths of the files of the checked
// tree, sorted.
func (c *Checker) TreePaths() []string {
	var out []string
	for _, qs := range c.byBase() {
		for _, q := range qs {
			if rel := c.rootRel(q); rel != "" {
				out = append(out, rel)
			}
		}
	}
	sort.Strings(out)
	return out
}
