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
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/gitrepo"
)

// indexDepth bounds the history walk of EntryMarks: the session-start
// hook must stay fast.
const indexDepth = 200

// EntryMarksFile is the entry marks' cache file in the cache directory.
const EntryMarksFile = "entry-marks.cache"

// entryMarksMagic starts the file; another version is ignored.
const entryMarksMagic = "learnwatch entry marks 2\n"

// maxEntryMarks bounds the file read (a few hundred entries' marks are a
// few kilobytes).
const maxEntryMarks = 1 << 20

// entryMarksCache is the cache's content after the magic line
// (cachedir.ReadGob).
type entryMarksCache struct {
	// Local identifies the checkout (checkoutIdentity): a file copied
	// from another clone is ignored.
	Local string
	// Key is entryMarksKeyOf's: the tree key, the options and the
	// references.
	Key string
	// Ignore are the ignore files the resolution read, by content.
	Ignore []ignoreDep
	Marks  map[string]string
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
	local := checkoutIdentity(abs, repo.GitDir, repo.CommonDir)
	id := indexIdentity(indexFileOf(repo.GitDir))
	if local == "" || id == "" {
		return marksKey{}
	}
	// EntryMarks set the depth (the checker's own).
	h := sha256.New()
	h.Write([]byte(treeKey(Auto, ref.Hash(), id, prefix, cfg.RenameDepth, cfg.Ignore) + "\x00"))
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
	var f entryMarksCache
	if !cachedir.ReadGob(root, EntryMarksFile, entryMarksMagic, maxEntryMarks, &f) || f.Local != k.local || f.Key != k.key {
		return nil, false
	}
	for _, d := range f.Ignore {
		if readIgnoreDep(d.Name) != d {
			return nil, false
		}
	}
	if f.Marks == nil {
		f.Marks = map[string]string{} // gob leaves an empty map out
	}
	return f.Marks, true
}

// writeEntryMarks keeps marks as the answer for k (errors ignored: the
// cache is disposable).
func (c *Checker) writeEntryMarks(k marksKey, marks map[string]string) {
	f := entryMarksCache{Local: k.local, Key: k.key, Ignore: c.ignoreDeps(), Marks: marks}
	_ = cachedir.WriteGobUnsynced(c.root, EntryMarksFile, entryMarksMagic, &f)
}
