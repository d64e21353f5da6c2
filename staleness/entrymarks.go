package staleness

// The session-start index's stale marks, and their cache. The index runs at
// every session start; resolving its entries' references lists the tracked
// files, which means decoding the git index (go-git: about 4 ms for a few
// thousand files, 50 ms for 50,000). What it finds depends only on the
// references, HEAD, the index, the options and the ignore files read, so
// the answer is kept in a small file of the cache directory under exactly
// that key (the staleness cache's own tree key), and a session that starts
// on the same checkout reads it instead.
//
// Outside git the answer depends on the working tree itself: the listing
// of every directory (bare names and partial paths resolve against it) and
// the files looked up or counted. It is kept with what it read there
// (treeStamps), as git's untracked cache keeps a directory's listing with
// its stat: a session believes it while every directory keeps its names —
// taken as read while its stat is unchanged (a directory's mtime moves when
// an entry is added, removed or renamed in it), read again when it moved
// and then kept with its new stat when the names are the same and the stat
// old enough to vouch for them — and every path looked up is still there
// or still missing, which costs a stat per directory instead of reading
// each.

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
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
const entryMarksMagic = "learnwatch entry marks 4\n"

// maxEntryMarks bounds the file read: a few hundred entries' marks are a
// few kilobytes; outside git the stats of the working tree's directories
// (about 100 bytes each) are at most maxTreeStamps.
const maxEntryMarks = 8 << 20

// maxTreeStamps bounds the stats an answer outside git is kept with: a
// larger working tree is listed at every session start, as before.
const maxTreeStamps = 50_000

// racyStamp is how recent a directory's modification may be, when an
// answer outside git is computed, for its stat to vouch for the names read
// in it: a change within the same tick of the file system's clock leaves
// the stat as it was, so a directory modified that recently has its names
// compared at every read. Two seconds cover the coarsest clocks (FAT's).
const racyStamp = 2 * time.Second

// entryMarksCache is the cache's content (encodeEntryMarks).
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
	// Tree is, for an answer computed outside git, what it was read from
	// (treeStamps): it holds while every stamp does (pathStamp.check).
	// Nil in git.
	Tree []pathStamp
}

// EntryMarks returns, for each knowledge entry (id → its references, as
// EntryRefs extracts them) with a stale reference, the first one as
// written: what the session-start index shows as "[stale: ref]". The
// entries are checked against HEAD (the working tree outside git) with a
// history walk of at most 200 commits; only sure findings count — a path
// still unaccounted for when the walk stopped early is not marked.
//
// The answer is kept in the cache directory under the key of what it
// depends on (entryMarksKeyOf; outside git with the working tree's
// stats) and read from there while that holds, when the memory directory
// exists. The cache is disposable: it is written atomically without the
// learning lock (two sessions write the same answer), and one that cannot
// be read is computed again; one that cannot be written is cacheErr (the
// marks stand). err is the check's: the marks may then be partial.
func EntryMarks(root string, cfg config.Staleness, ids []string, refs map[string][]Ref) (marks map[string]string, cacheErr, err error) {
	if cfg.RenameDepth <= 0 || cfg.RenameDepth > indexDepth {
		cfg.RenameDepth = indexDepth
	}
	// The cache is looked at before the checker is opened: opening it
	// reads HEAD's commit and tree from the object store (milliseconds in
	// a large repository's pack).
	var k marksKey // none without a memory directory: none is made for a cache
	if _, err := safefs.Lstat(filepath.Join(root, safefs.MemoryDirName)); err == nil {
		k = entryMarksKeyOf(root, cfg, ids, refs)
	}
	if k.key != "" {
		if marks, ok := readEntryMarks(root, k); ok {
			return marks, nil, nil
		}
	}
	began := time.Now()
	// Not through the staleness cache: its outcomes are for the full
	// depth, and the session-start hook must not spend time decoding it.
	c, err := openChecker(root, Auto, cfg, false)
	if err != nil {
		return nil, nil, err
	}
	if k.worktree {
		c.dirNames = map[string][]string{} // the names the listing reads, for treeStamps
		// The cache directory made now, not by the write after the
		// listing: its name in the memory directory's listing would
		// differ from the one the answer was read from.
		if _, err := cachedir.Ensure(root); err != nil {
			k = marksKey{}
			if !errors.Is(err, fs.ErrPermission) { // a read-only checkout: only missing
				cacheErr = notKept(err)
			}
		}
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
	switch {
	case k.key == "" || c.Err() != nil:
	case k.worktree:
		// Outside git still: read from the working tree alone.
		if c.repo == nil && c.unreadable == nil && c.source == sourceWorktree {
			if tree, ok := c.treeStamps(began); ok {
				cacheErr = c.writeEntryMarks(k, out, tree)
			}
		}
	case c.source == sourceHead && c.head != nil && c.head.Hash.String() == k.head:
		cacheErr = c.writeEntryMarks(k, out, nil)
	}
	return out, cacheErr, c.Err()
}

// marksKey is what EntryMarks' answer depends on besides the ignore files
// (key: a hash), and the checkout's identity (local) and HEAD's commit it
// was computed for; worktree: outside git, where the answer also depends
// on the working tree (entryMarksCache.Tree).
type marksKey struct {
	key, local, head string
	worktree         bool
}

// entryMarksKeyOf computes the key: the checkout (the device and inode of
// the root and the git directories), the tree key of the staleness cache
// (mode, HEAD's commit, the index's identity, the root's prefix, the
// rename depth, the ignore list), the whole staleness configuration, and
// the entries' references in order. Outside git the key is the root's
// identity, the rename depth, the configuration and the references, and
// the working tree's stats go with the answer (worktree). No key (a
// repository go-git cannot read, no commit yet, an index without its
// checksum, a platform without inode numbers): the answer is computed
// every time.
func entryMarksKeyOf(root string, cfg config.Staleness, ids []string, refs map[string][]Ref) marksKey {
	abs, err := filepath.Abs(root)
	if err != nil {
		return marksKey{}
	}
	repo, err := gitrepo.Open(abs, gitrepo.Options{Up: true})
	if errors.Is(err, gitrepo.ErrNotExist) {
		local := checkoutIdentity(abs, "", "")
		if local == "" {
			return marksKey{}
		}
		h := sha256.New()
		fmt.Fprintf(h, "worktree\x00%d\x00", cfg.RenameDepth)
		if !hashMarksInputs(h, cfg, ids, refs) {
			return marksKey{}
		}
		return marksKey{key: fmt.Sprintf("%x", h.Sum(nil)), local: local, worktree: true}
	}
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
	id := indexIdentity(abs, indexFileOf(repo.GitDir), true).of(Auto)
	if local == "" || id == "" {
		return marksKey{}
	}
	// EntryMarks set the depth (the checker's own).
	h := sha256.New()
	h.Write([]byte(treeKey(Auto, ref.Hash(), id, prefix, cfg.RenameDepth, cfg.Ignore) + "\x00"))
	if !hashMarksInputs(h, cfg, ids, refs) {
		return marksKey{}
	}
	return marksKey{key: fmt.Sprintf("%x", h.Sum(nil)), local: local, head: ref.Hash().String()}
}

// hashMarksInputs writes the staleness configuration and the entries'
// references, in order, to h; false when one cannot be encoded.
func hashMarksInputs(h hash.Hash, cfg config.Staleness, ids []string, refs map[string][]Ref) bool {
	cb, err := json.Marshal(cfg)
	if err != nil {
		return false
	}
	h.Write(cb)
	for _, id := range ids {
		rb, err := json.Marshal(refs[id])
		if err != nil {
			return false
		}
		fmt.Fprintf(h, "\x00%q\x00", id)
		h.Write(rb)
	}
	return true
}

// readEntryMarks returns the cached answer for k when the file holds
// one for this checkout and every ignore file it depended on still has
// the content it had; outside git, when it holds the working tree's stats
// and every path stats as it did.
func readEntryMarks(root string, k marksKey) (map[string]string, bool) {
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, false
	}
	f, ok := readEntryMarksFile(root)
	if !ok || f.Local != k.local || f.Key != k.key {
		return nil, false
	}
	for _, d := range f.Ignore {
		if readIgnoreDep(d.Name) != d {
			return nil, false
		}
	}
	if k.worktree != (f.Tree != nil) || len(f.Tree) > maxTreeStamps {
		return nil, false
	}
	verified := time.Now()
	settled := false
	for i, st := range f.Tree {
		now, listed, ok := st.check(abs)
		if !ok {
			return nil, false
		}
		if listed {
			// Its names were read again and are those the answer was
			// read from: the stat taken before them vouches for them from
			// now on, unless it is too recent to (git refreshes the
			// racily clean entries of its index the same way). A tree
			// that was new when the answer was computed was otherwise
			// listed whole at every session start.
			f.Tree[i].Stat = now
			f.Tree[i].Racy = now.Mtime >= verified.Add(-racyStamp).UnixNano()
			settled = settled || !f.Tree[i].Racy
		}
	}
	if settled {
		// Not kept: the same directories are listed next time.
		_ = cachedir.WriteSealedUnsynced(root, EntryMarksFile, encodeEntryMarks(&f))
	}
	return f.Marks, true
}

// writeEntryMarks keeps marks as the answer for k, with the working
// tree's stats outside git.
func (c *Checker) writeEntryMarks(k marksKey, marks map[string]string, tree []pathStamp) error {
	f := entryMarksCache{Local: k.local, Key: k.key, Ignore: c.ignoreDeps(), Marks: marks, Tree: tree}
	if err := cachedir.WriteSealedUnsynced(c.root, EntryMarksFile, encodeEntryMarks(&f)); err != nil {
		return notKept(err)
	}
	return nil
}

// notKept is the warning for an answer that could not be kept.
func notKept(err error) error {
	return fmt.Errorf("entry marks cache not written (computed again next time): %w", err)
}

// treeStamps records what this Checker's runs read from the working tree
// outside git, for an answer computed from began on: every directory the
// listing read (its stat, with the sum of the names it read there), every
// path looked up (whether it was there), every file whose lines were
// counted (the count), the directories on the way to those (their
// identity), and whether the root and every directory above it has a .git
// (a repository created there would have the answer read from git). ok is
// false — the answer is not kept — when the listing was cut short or there
// are more than maxTreeStamps. A directory modified within racyStamp of
// began (or after it) is kept as racy: its stat may not show a change
// made in the same tick, so its names are compared at every read.
func (c *Checker) treeStamps(began time.Time) (out []pathStamp, ok bool) {
	if c.listCut {
		return nil, false
	}
	kinds := map[string]stampKind{}
	rels := map[string]string{}
	mark := func(p string, k stampKind) {
		if old, ok := kinds[p]; !ok || k > old {
			kinds[p] = k
		}
	}
	below := c.root + string(filepath.Separator)
	way := func(abs string) {
		for d := filepath.Dir(abs); strings.HasPrefix(d, below); d = filepath.Dir(d) {
			mark(d, stampWay)
		}
	}
	for _, d := range c.dirs {
		if !volatilePath(c.root, d) {
			mark(d, stampList)
		}
	}
	for p := range c.exists {
		abs := filepath.Join(c.root, filepath.FromSlash(p))
		mark(abs, stampPresence)
		way(abs)
	}
	for p := range c.lines {
		abs := filepath.Join(c.root, filepath.FromSlash(p))
		mark(abs, stampLines)
		rels[abs] = p
		way(abs)
	}
	mark(c.root, stampWay)
	for d := c.root; ; d = filepath.Dir(d) {
		mark(filepath.Join(d, ".git"), stampPresence)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(kinds) > maxTreeStamps {
		return nil, false
	}
	bound := began.Add(-racyStamp).UnixNano()
	out = make([]pathStamp, 0, len(kinds))
	for _, p := range slices.Sorted(maps.Keys(kinds)) {
		s := pathStamp{Path: p, Kind: kinds[p], Stat: stampOf(p)}
		switch s.Kind {
		case stampList:
			s.Names = manifest.ListingSum(c.dirNames[p])
			s.Racy = s.Stat.Mtime >= bound
		case stampLines:
			s.Rel, s.Lines = rels[p], c.lines[rels[p]]
		}
		out = append(out, s)
	}
	return out, true
}

// volatilePath reports whether p, below root, lies in learnwatch's own
// passing state (a lock directory: manifest.Volatile), which a listing
// made while a lock was held may have read.
func volatilePath(root, p string) bool {
	rel, ok := manifest.Within(root, p)
	if !ok {
		return false
	}
	for part := range strings.SplitSeq(filepath.ToSlash(rel), "/") {
		if manifest.Volatile(part) {
			return true
		}
	}
	return false
}

// stampKind is what a recorded path stands for, in increasing order of
// what must hold of it.
type stampKind uint8

const (
	// stampWay: a directory on the way to a path looked up: its type and
	// identity (one swapped for a symlink changes where the way leads).
	stampWay stampKind = iota
	// stampPresence: a path looked up: whether it is there.
	stampPresence
	// stampLines: a file whose lines were counted: whether it is there,
	// and the count, counted again at every read (a few files, those
	// cited with a line).
	stampLines
	// stampList: a directory whose listing was read: its type and
	// identity, and its names (compared when its stat moved, or was racy).
	stampList
)

// pathStamp is what a path looked like when an answer outside git was
// computed.
type pathStamp struct {
	Path  string
	Kind  stampKind
	Stat  statStamp
	Names [32]byte // stampList: manifest.ListingSum of the names read
	Racy  bool     // stampList: modified too recently for its stat to vouch for its names
	Rel   string   // stampLines: the root-relative path counted
	Lines int      // stampLines: the count (worktreeLines)
}

// statStamp is a path's lstat (statcache.LstatRaw): its size, mtime,
// ctime and inode (0 where the platform has none), and its type bits with
// bit 0 set — Type 0 when it is absent.
type statStamp struct {
	statcache.Stat
	Type uint32
}

// stampOf stats path without following a symlink.
func stampOf(path string) statStamp {
	st, typ := statcache.LstatRaw(path)
	return statStamp{st, typ}
}

// check reports whether the path is still as s found it, for what its
// kind needs, in the working tree at root (ok), with its stat now, and
// whether a directory's names were read again (listed: its stat moved, or
// was racy).
func (s pathStamp) check(root string) (now statStamp, listed, ok bool) {
	now = stampOf(s.Path)
	there := (now.Type != 0) == (s.Stat.Type != 0)
	if s.Kind == stampLines {
		// Whether it is there too: a count of -1 is also a file's that
		// is not regular, or leaves the root.
		n, err := worktreeLines(root, s.Rel)
		return now, false, there && err == nil && n == s.Lines
	}
	same := now.Type == s.Stat.Type && now.Ino == s.Stat.Ino
	switch s.Kind {
	case stampWay:
		return now, false, same
	case stampPresence:
		return now, false, there
	case stampList:
		if !same || now.Type == 0 {
			return now, false, false
		}
		if !s.Racy && now == s.Stat {
			return now, false, true
		}
		return now, true, manifest.ListDirSum(s.Path) == s.Names
	}
	return now, false, false
}

// The file is a sealed cache file (codec.Encoder; gob before
// 2026-11-28): the checkout's identity and the key; the ignore files (a
// count, then each one's name, whether it was there and its sum's 32
// bytes); the marks (a count, then each id and its reference, by id);
// whether the answer was read from the working tree (Tree not nil), and
// then its stamps (a count, then each one's path, kind, stat — size,
// mtime and ctime as varints, inode and type as uvarints —, the 32 bytes
// of its names, racy, the relative path and the line count).

// readEntryMarksFile reads root's entry marks file.
func readEntryMarksFile(root string) (entryMarksCache, bool) {
	body, ok := cachedir.ReadSealed(root, EntryMarksFile, entryMarksMagic, maxEntryMarks)
	if !ok {
		return entryMarksCache{}, false
	}
	return decodeEntryMarks(body)
}

// encodeEntryMarks is the file of f.
func encodeEntryMarks(f *entryMarksCache) []byte {
	e := codec.NewEncoder(entryMarksMagic, 64+len(f.Marks)*64+len(f.Tree)*96)
	e.String(f.Local)
	e.String(f.Key)
	e.Uvarint(uint64(len(f.Ignore)))
	for _, d := range f.Ignore {
		e.String(d.Name)
		e.Bool(d.Present)
		e.Fixed(d.Sum[:])
	}
	e.Uvarint(uint64(len(f.Marks)))
	for _, id := range slices.Sorted(maps.Keys(f.Marks)) {
		e.String(id)
		e.String(f.Marks[id])
	}
	e.Bool(f.Tree != nil)
	e.Uvarint(uint64(len(f.Tree)))
	for _, st := range f.Tree {
		e.String(st.Path)
		e.Uvarint(uint64(st.Kind))
		st.Stat.Stat.Encode(e)
		e.Uint32(st.Stat.Type)
		e.Fixed(st.Names[:])
		e.Bool(st.Racy)
		e.String(st.Rel)
		e.Varint(int64(st.Lines))
	}
	return e.Sealed()
}

// decodeEntryMarks reads what encodeEntryMarks wrote (the body,
// unsealed). A kind no version wrote, a type or count out of range, or an
// id written twice is refused.
func decodeEntryMarks(body []byte) (entryMarksCache, bool) {
	d := codec.NewDecoder(body)
	f := entryMarksCache{Local: d.String(), Key: d.String()}
	if n := d.Count(1 + 1 + 32); n > 0 {
		f.Ignore = make([]ignoreDep, n)
		for i := range f.Ignore {
			f.Ignore[i].Name, f.Ignore[i].Present = d.String(), d.Bool()
			copy(f.Ignore[i].Sum[:], d.Fixed(32))
		}
	}
	n := d.Count(2)
	f.Marks = make(map[string]string, n)
	for range n {
		id, ref := d.String(), d.String()
		if _, dup := f.Marks[id]; dup || d.Failed() {
			return entryMarksCache{}, false
		}
		f.Marks[id] = ref
	}
	if tree := d.Bool(); tree {
		// A stamp is at least 1 + 1 + 5 + 32 + 1 + 1 + 1 bytes.
		f.Tree = make([]pathStamp, d.Count(42))
	} else if d.Uvarint() != 0 {
		return entryMarksCache{}, false
	}
	for i := range f.Tree {
		st := &f.Tree[i]
		st.Path = d.String()
		kind := d.Uvarint()
		st.Stat.Stat, st.Stat.Type = statcache.DecodeStat(d), d.Uint32()
		copy(st.Names[:], d.Fixed(32))
		st.Racy, st.Rel = d.Bool(), d.String()
		lines := d.Varint()
		if kind > uint64(stampList) || lines < math.MinInt32 || lines > math.MaxInt32 {
			return entryMarksCache{}, false
		}
		st.Kind, st.Lines = stampKind(kind), int(lines)
	}
	if !d.OK() {
		return entryMarksCache{}, false
	}
	return f, true
}
