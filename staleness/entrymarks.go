package staleness

// The session-start index's stale marks, and their cache. The index runs at
// every session start; resolving its entries' references lists the tracked
// files, which means decoding the git index (go-git: about 4 ms for a few
// thousand files, 50 ms for 50,000). What it finds depends only on the
// references, HEAD, the index, the options and the ignore files read, so
// the answer is kept in a small file of the cache directory under exactly
// that key (the staleness cache's own tree key), and a session that starts
// on the same checkout reads it instead.

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// indexDepth bounds the history walk of EntryMarks: the session-start
// hook must stay fast.
const indexDepth = 200

// EntryMarksFile is the entry marks' cache file in the cache directory.
const EntryMarksFile = "entry-marks.cache"

// entryMarksMagic starts the file; another version is ignored.
const entryMarksMagic = "learnwatch entry marks 1\n"

// maxEntryMarks bounds the file read (a few hundred entries' marks are a
// few kilobytes).
const maxEntryMarks = 1 << 20

// entryMarksCache is the cache's content after the magic line.
type entryMarksCache struct {
	// Local identifies the checkout (localIdentity): a file copied from
	// another clone is ignored.
	Local string `json:"local"`
	// Key is entryMarksKeyOf's: the tree key, the options and the
	// references.
	Key string `json:"key"`
	// Ignore are the ignore files the resolution read, by content.
	Ignore []ignoreDep       `json:"ignore"`
	Marks  map[string]string `json:"marks"`
}

// EntryMarks returns, for each knowledge entry (id → its references, as
// EntryRefs extracts them) with a stale reference, the first one as
// written: what the session-start index shows as "[stale: ref]". The
// entries are checked against HEAD (the working tree outside git) with a
// history walk of at most 200 commits; only sure findings count — a path
// still unaccounted for when the walk stopped early is not marked.
//
// In git, the answer is kept in the cache directory under the key of what
// it depends on (entryMarksKeyOf) and read from there while that holds. The
// cache is disposable: it is written atomically without the learning lock
// (two sessions write the same answer), and one that cannot be read or
// written is computed again.
func EntryMarks(root string, cfg config.Staleness, ids []string, refs map[string][]Ref) (map[string]string, error) {
	if cfg.RenameDepth <= 0 || cfg.RenameDepth > indexDepth {
		cfg.RenameDepth = indexDepth
	}
	// The cache is looked at before the checker is opened: opening it
	// reads HEAD's commit and tree from the object store (milliseconds in
	// a large repository's pack).
	k := entryMarksKeyOf(root, cfg, ids, refs)
	if k.key != "" {
		if marks, ok := readEntryMarks(root, k); ok {
			return marks, nil
		}
	}
	// Not through the staleness cache: its outcomes are for the full
	// depth, and the session-start hook must not spend time decoding it.
	c, err := openChecker(root, Auto, cfg, false)
	if err != nil {
		return nil, err
	}
	var all []Ref
	for _, id := range ids {
		all = append(all, refs[id]...)
	}
	c.resolveAll(all)
	out := map[string]string{}
	for _, id := range ids {
		for _, f := range c.Check(refs[id]) {
			if !f.Truncated {
				out[id] = f.Ref
				break
			}
		}
	}
	// Kept only when the checker read the HEAD the key names, against
	// HEAD's tree (a checkout between the two is computed next time).
	if k.key != "" && c.Err() == nil && c.source == sourceHead && c.head != nil && c.head.Hash.String() == k.head {
		c.writeEntryMarks(k, out)
	}
	return out, c.Err()
}

// marksKey is what EntryMarks' answer depends on besides the ignore files
// (key: a hash), and the checkout's identity (local) and HEAD's commit it
// was computed for.
type marksKey struct{ key, local, head string }

// entryMarksKeyOf computes the key: the checkout (the device and inode of
// the root and the git directories), the tree key of the staleness cache
// (mode, HEAD's commit, the index's identity, the root's prefix, the
// rename depth, the ignore list), the whole staleness configuration, and
// the entries' references in order. No key (outside git, a repository
// go-git cannot read, no commit yet, an index without its checksum, a
// platform without inode numbers): the answer is computed every time.
func entryMarksKeyOf(root string, cfg config.Staleness, ids []string, refs map[string][]Ref) marksKey {
	abs, err := filepath.Abs(root)
	if err != nil {
		return marksKey{}
	}
	repo, err := gitrepo.Open(abs, gitrepo.Options{Up: true})
	if err != nil {
		return marksKey{}
	}
	prefix, err := repo.Prefix(abs)
	if err != nil {
		return marksKey{}
	}
	ref, err := repo.Head()
	if err != nil {
		return marksKey{}
	}
	dirs := []string{abs, repo.GitDir}
	if repo.CommonDir != repo.GitDir {
		dirs = append(dirs, repo.CommonDir)
	}
	local := localIdentity(dirs...)
	id := indexIdentity(indexFileOf(repo.GitDir))
	if local == "" || id == "" {
		return marksKey{}
	}
	depth := cfg.RenameDepth
	if depth <= 0 {
		depth = config.Default().Staleness.RenameDepth
	}
	h := sha256.New()
	fmt.Fprintf(h, "%d\x00%s\x00%s\x00%s\x00%d\x00%q\x00", Auto, ref.Hash(), id, prefix, depth, cfg.Ignore)
	cb, err := json.Marshal(cfg)
	if err != nil {
		return marksKey{}
	}
	h.Write(cb)
	for _, id := range ids {
		rb, err := json.Marshal(refs[id])
		if err != nil {
			return marksKey{}
		}
		fmt.Fprintf(h, "\x00%q\x00", id)
		h.Write(rb)
	}
	return marksKey{key: fmt.Sprintf("%x", h.Sum(nil)), local: local, head: ref.Hash().String()}
}

// readEntryMarks returns the cached answer for k when the file holds
// one for this checkout and every ignore file it depended on still has
// the content it had.
func readEntryMarks(root string, k marksKey) (map[string]string, bool) {
	data, err := safefs.ReadFile(cachedir.Path(root, EntryMarksFile), maxEntryMarks)
	if err != nil || !bytes.HasPrefix(data, []byte(entryMarksMagic)) {
		return nil, false
	}
	var f entryMarksCache
	if json.Unmarshal(data[len(entryMarksMagic):], &f) != nil || f.Local != k.local || f.Key != k.key || f.Marks == nil {
		return nil, false
	}
	for _, d := range f.Ignore {
		if readIgnoreDep(d.Name) != d {
			return nil, false
		}
	}
	return f.Marks, true
}

// writeEntryMarks keeps marks as the answer for k (errors ignored: the
// cache is disposable).
func (c *Checker) writeEntryMarks(k marksKey, marks map[string]string) {
	f := entryMarksCache{Local: k.local, Key: k.key, Marks: marks}
	for _, d := range c.cache.ignore {
		f.Ignore = append(f.Ignore, d)
	}
	slices.SortFunc(f.Ignore, func(a, b ignoreDep) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	b, err := json.Marshal(f)
	if err != nil {
		return
	}
	if _, err := cachedir.Ensure(c.root); err != nil {
		return
	}
	_ = manifest.WriteFileUnsynced(cachedir.Path(c.root, EntryMarksFile), append([]byte(entryMarksMagic), b...), 0o644)
}
