// Package statcache owns the stat cache of a pass, like git's index: per
// artifact file the size, mtime, ctime and inode it had when its content
// was last hashed, with the hashes that content had. A file whose stat is
// unchanged is not read again. The cache is disposable: one versioned,
// checksummed file, .memory/.cache/stat.cache, written without an fsync
// and ignored (and rebuilt) when missing, unreadable, corrupt or from
// another version, and it never changes a result, only how much is read.
//
// An entry is "racily clean" when the file's mtime is not older than the
// cache file's own mtime: the file may have changed within the same clock
// tick after it was hashed, so its stat proves nothing and it is hashed
// again (git's rule).
package statcache

import (
	"io/fs"
	"maps"
	"os"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// FileName is the cache's name under .memory/.cache.
const FileName = "stat.cache"

// Version is the format of the cache file (codec.go); another version is
// ignored. Version 1 was JSON; version 2 had no checksum (and was synced);
// version 3 had a CRC-32C and a codec of its own.
const Version = 4

// maxSize bounds the cache file read (about 200 bytes an artifact).
const maxSize = 64 << 20

// Mode is engine.check_stat: which stat fields prove a file unchanged.
type Mode string

const (
	// Default compares size, mtime, ctime and inode.
	Default Mode = "default"
	// Minimal compares size and mtime only, for file systems whose ctime
	// or inode numbers change without the content (some network and
	// container file systems).
	Minimal Mode = "minimal"
)

// ModeOf maps the config value ("" is Default).
func ModeOf(s string) Mode {
	if s == string(Minimal) {
		return Minimal
	}
	return Default
}

// Stat is what the cache compares.
type Stat struct {
	Size  int64  `json:"s"`
	Mtime int64  `json:"m"` // ns
	Ctime int64  `json:"c"` // ns
	Ino   uint64 `json:"i"`
}

// StatOf extracts a Stat from a FileInfo (Lstat, never followed). Where
// the platform has no ctime or inode (stat_other.go) they stay 0: only
// size and mtime then prove anything, as under Minimal.
func StatOf(fi fs.FileInfo) Stat {
	s := Stat{Size: fi.Size(), Mtime: fi.ModTime().UnixNano()}
	s.Ctime, s.Ino = ctimeIno(fi)
	return s
}

// Entry is one file: its stat when hashed and the hashes of that content
// (SHA: manifest.Hash; DJB2: the legacy hash, set only when asked for).
type Entry struct {
	Stat
	SHA  string `json:"h"`
	DJB2 string `json:"d,omitempty"`
}

// Same reports whether a file with stat now is the file e was taken from,
// under mode. It is a plain decision: no I/O.
func Same(e Entry, now Stat, mode Mode) bool {
	if e.Size != now.Size || e.Mtime != now.Mtime {
		return false
	}
	if mode == Minimal {
		return true
	}
	return e.Ctime == now.Ctime && e.Ino == now.Ino
}

// Racy reports whether an entry cannot be trusted because the file's mtime
// is not older than the cache file's (cacheMtime, ns): it may have been
// rewritten within the tick after it was hashed.
func Racy(e Entry, cacheMtime int64) bool { return e.Mtime >= cacheMtime }

// Verifies reports whether an entry's content matches stored, a manifest
// content hash (sha256, or a legacy djb2 the entry was asked to carry).
func Verifies(e Entry, stored string) bool {
	if manifest.IsLegacyHash(stored) {
		return e.DJB2 != "" && strings.EqualFold(strings.TrimSpace(stored), e.DJB2)
	}
	return e.SHA != "" && stored == e.SHA
}

// Cache is the stat cache of one pass: what the last pass recorded (old)
// and what this pass records (next). Not safe for concurrent use.
type Cache struct {
	mode   Mode
	loaded bool
	// inPass is set from Begin to Save; trustless while the entries in
	// memory are not the last completed pass's (freshly loaded, or a pass
	// ended without Save): Untouched then trusts nothing.
	inPass, trustless bool
	cacheMtime        int64
	old               map[string]Entry
	next              map[string]Entry
	// rewrite is set when an entry was racily clean but could be proved
	// clean now: writing the cache again moves its mtime past the file.
	rewrite bool
	// oldGone is set when LetOldGo let the loaded entries go this pass;
	// changed is then what Dirty answers (besides rewrite).
	oldGone, changed bool
	// unsavedSince, when not zero, is the start (ns) of the first pass
	// EndPass ended without writing: Flush writes what those passes left.
	unsavedSince int64
	// unloaded: SaveAndUnload let the entries go once it had written
	// them; the next Begin reads them back, trusted (the last completed
	// pass's).
	unloaded bool
}

// Load reads root's stat cache. It never fails: a cache that is missing,
// unreadable, corrupt, from another version or another check_stat mode is
// an empty one.
func Load(root string, mode Mode) *Cache {
	c := Open(mode)
	c.Begin(root)
	return c
}

// Open returns a cache that Begin loads on first use: a long-running
// process (the watcher's engine) keeps one in memory across passes.
func Open(mode Mode) *Cache {
	return &Cache{mode: mode, old: map[string]Entry{}, next: map[string]Entry{}}
}

// Begin starts a pass. It loads root's cache file the first time; later
// passes keep what is in memory (entries are facts about a stat, whoever
// wrote them).
func (c *Cache) Begin(root string) {
	c.trustless = c.trustless || c.inPass || !c.loaded && !c.unloaded
	c.inPass = true
	if c.loaded {
		return
	}
	c.loaded, c.unloaded = true, false
	path := cachedir.Path(root, FileName)
	fi, err := safefs.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	b, err := safefs.ReadFile(path, maxSize)
	if err != nil {
		return
	}
	mode, entries, err := decode(b)
	if err != nil || mode != c.mode {
		return
	}
	c.old, c.cacheMtime = entries, fi.ModTime().UnixNano()
}

// Lookup returns the entry recorded for rel when a file with stat now is
// provably the one it was taken from (same stat, not racily clean).
func (c *Cache) Lookup(rel string, now Stat) (Entry, bool) {
	e, ok := c.old[rel]
	if !ok || !Same(e, now, c.mode) {
		return Entry{}, false
	}
	if Racy(e, c.cacheMtime) {
		return Entry{}, false
	}
	return e, true
}

// Untouched returns the entry recorded for rel without a stat, for a file
// the caller knows has not changed since the last pass (the watcher saw no
// event for it); a racily clean entry is not returned.
func (c *Cache) Untouched(rel string) (Entry, bool) {
	e, ok := c.old[rel]
	if !ok || c.trustless || Racy(e, c.cacheMtime) {
		return Entry{}, false
	}
	return e, true
}

// CarryOver carries every entry of the last pass into this one but those
// of the files in skip (relative paths): a caller that keeps what the
// last pass found of the other files (the watcher's warm state) looks at
// those only.
func (c *Cache) CarryOver(skip map[string]bool) {
	// The last pass's map itself: no copy per pass. It is written once
	// the pass ends, so Dirty cannot compare the two: a pass with files
	// to look at counts as a change.
	c.next = c.old
	for rel := range skip {
		delete(c.next, rel)
		c.rewrite = true
	}
}

// Keep carries an entry Lookup returned into this pass's cache.
func (c *Cache) Keep(rel string, e Entry) {
	c.next[rel] = e
	c.changed = c.changed || c.oldGone
}

// EntryOf is the entry of content read with stat s: its sha256, and with
// legacy its djb2 hash too (a manifest entry of the file stores one). It
// touches no cache: readers compute it on their own goroutines.
func EntryOf(s Stat, content []byte, legacy bool) Entry {
	e := Entry{Stat: s, SHA: manifest.Hash(content)}
	if legacy {
		e.DJB2 = manifest.DJB2(content)
	}
	return e
}

// Record notes e, the EntryOf of the content of rel as read after stat
// e.Stat, and after the read: a file that changed while it was read
// (after differs) is not recorded.
func (c *Cache) Record(rel string, e Entry, after Stat) {
	if e.Stat != after {
		return
	}
	if old, ok := c.old[rel]; ok && old == e && Racy(old, c.cacheMtime) {
		c.rewrite = true
	}
	c.changed = c.changed || c.oldGone
	// The key is a copy: rel is often a slice of the manifest's text
	// (manifest.ReadManifest decodes its strings in place), and a key
	// kept through the pass kept that whole text, 6.4 MB at 20,000
	// artifacts, after the pass let the manifest go.
	c.next[strings.Clone(rel)] = e
}

// Dirty reports whether Save would write: this pass's entries differ from
// the loaded ones, or a racily clean entry was proved clean.
func (c *Cache) Dirty() bool {
	if c.oldGone {
		return c.rewrite || c.changed
	}
	return c.rewrite || !maps.Equal(c.old, c.next)
}

// LetOldGo decides now whether Save writes (Dirty) and lets the entries
// the pass loaded go, for a pass that looks nothing more up once it has
// looked at its files (one that keeps no state for another): at 20,000
// artifacts they were 4 MB of what such a pass held to its end. Lookup
// and Untouched then find nothing, and an entry kept or recorded after
// it makes Save write. Save or the end of the pass starts the next one
// from this pass's entries, as always.
func (c *Cache) LetOldGo() {
	c.changed = c.Dirty()
	c.oldGone, c.old = true, nil
}

// Save writes this pass's entries when they differ from the loaded ones,
// atomically; the caller holds the learning lock. Entries of files no
// longer looked at are dropped. The cache then starts the next pass from
// this one's entries.
func (c *Cache) Save(root string) error {
	defer func() {
		c.old, c.next, c.rewrite = c.next, map[string]Entry{}, false
		c.inPass, c.trustless, c.oldGone, c.changed = false, false, false, false
	}()
	if !c.Dirty() && c.unsavedSince == 0 {
		return nil
	}
	// Entries a deferred pass recorded are written now: the same cut as
	// Flush.
	c.dropUnsavedRecent(c.next)
	return c.write(root, c.next)
}

// SaveAndUnload is Save for a pass that looks no entry up once it has
// looked at its files (one that keeps no state for another, before its
// staleness pass): the entries it wrote leave memory (at 20,000
// artifacts, about 8 MB of a first pass's peak), and the next pass's
// Begin reads them back from the file, as the last completed pass's
// entries (Untouched trusts them, as after Save). A cache it could not
// write stays in memory.
func (c *Cache) SaveAndUnload(root string) error {
	if err := c.Save(root); err != nil {
		return err
	}
	c.old, c.loaded, c.unloaded = map[string]Entry{}, false, true
	return nil
}

// dropUnsavedRecent removes from entries those of files modified since
// shortly before the first pass EndPass did not save (none when every
// pass was saved), and marks the unsaved passes written.
func (c *Cache) dropUnsavedRecent(entries map[string]Entry) {
	if c.unsavedSince == 0 {
		return
	}
	cut := c.unsavedSince - int64(FlushRacy)
	c.unsavedSince = 0
	for rel, e := range entries {
		if e.Mtime >= cut {
			delete(entries, rel)
		}
	}
}

// write replaces root's cache file with entries, atomically, and takes
// the file's new mtime as the racy bound.
func (c *Cache) write(root string, entries map[string]Entry) error {
	if _, err := cachedir.Ensure(root); err != nil {
		return err
	}
	b := encode(c.mode, entries)
	path := cachedir.Path(root, FileName)
	// Replaced atomically but not synced, as git writes its index: a
	// power cut leaves the file before (its entries are still facts about
	// a stat) or one its checksum refuses (codec.go). The syncs cost a CLI
	// pass 4–5 ms at 10,000 artifacts and the watcher's idle work, which
	// an event cannot call off here, about 15 ms of a 60 ms write at 50,000.
	if err := manifest.WriteFileUnsynced(path, b, 0o644); err != nil {
		return err
	}
	if fi, err := safefs.Lstat(path); err == nil {
		c.cacheMtime = fi.ModTime().UnixNano()
	}
	return nil
}

// EndPass ends a pass like Save without writing the file: this pass's
// entries start the next pass, and Flush writes them later (the watcher
// keeps the disk copy off the path of its events). passStart is when the
// pass began (ns).
func (c *Cache) EndPass(passStart int64) { c.EndPassDirty(passStart, c.Dirty()) }

// EndPassDirty is EndPass for a caller that took Dirty when the pass's
// entries were final (a prepared pass, committed later: comparing the
// two maps of 50,000 entries took about 45 ms).
func (c *Cache) EndPassDirty(passStart int64, dirty bool) {
	if dirty && c.unsavedSince == 0 {
		c.unsavedSince = passStart
	}
	c.old, c.next, c.rewrite = c.next, map[string]Entry{}, false
	c.inPass, c.trustless, c.oldGone, c.changed = false, false, false, false
}

// AbortPass ends a pass whose results are not kept (a prepared pass
// dropped, heal.Prepared) without writing anything. The entries in memory
// stay, but the next pass trusts none of them without a stat (a pass that
// carried the last one's entries over edited their map).
func (c *Cache) AbortPass() {
	c.next, c.rewrite, c.inPass, c.trustless = map[string]Entry{}, false, false, true
	c.oldGone, c.changed = false, false
}

// Unsaved reports whether passes ended by EndPass left entries Flush has
// not written yet.
func (c *Cache) Unsaved() bool { return c.unsavedSince != 0 }

// FlushRacy is how recent, against the first pass EndPass did not save, a
// file's mtime may be for Flush to leave its entry out: it was hashed
// while a write within the same tick could still follow, and the cache
// file written later would otherwise vouch for it.
const FlushRacy = 50 * time.Millisecond

// Flush writes what the passes EndPass ended left, when there is anything
// (the caller holds the learning lock, as for Save). Entries of files
// modified since shortly before the first of those passes are left out,
// on disk and in memory: the next pass hashes them again.
func (c *Cache) Flush(root string) error {
	if c.unsavedSince == 0 || c.inPass {
		return nil
	}
	c.dropUnsavedRecent(c.old)
	return c.write(root, c.old)
}

// Lstat is os.Lstat returning a Stat of a regular file; ok is false for
// anything else (missing, a symlink, a directory, a special file).
func Lstat(path string) (Stat, bool) {
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() {
		return Stat{}, false
	}
	return StatOf(fi), true
}
