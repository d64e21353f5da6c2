package staleness

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/config"
)

// EntryRefsFile is the cache of the knowledge entries' references, in the
// cache directory (.memory/.cache/entry-refs.cache): the session-start
// index extracts the references of every ADR and PF entry (to mark the
// stale ones and to rank by the branch's changed files), and most entries
// have not changed since the last session. Keyed by a hash of each text
// and the extraction options; small, disposable, read without the lock
// and replaced atomically.
const EntryRefsFile = "entry-refs.cache"

// entryRefsMagic starts the file; another version is ignored.
const entryRefsMagic = "learnwatch entry refs 2\n"

// maxEntryRefs bounds the file read.
const maxEntryRefs = 16 << 20

type entryRefsFile struct {
	Opts string
	Refs map[[32]byte][]Ref
}

// EntryRefs returns the references of each knowledge entry (id → its
// Markdown text), written relative to the knowledge directory, taking
// unchanged entries' from the entry-refs cache and updating it. A cache
// that cannot be written is only slower next time: its error is returned
// apart, for a warning (none for a read-only memory directory).
func EntryRefs(root string, cfg config.Staleness, ids []string, texts map[string]string) (map[string][]Ref, error) {
	opts := OptionsFor(cfg)
	opts.LinkBase = knowledgeDir
	okey := optionsKey(opts)
	old, ok := readEntryRefs(root)
	if !ok || old.Opts != okey {
		old = entryRefsFile{}
	}
	next := entryRefsFile{Opts: okey, Refs: make(map[[32]byte][]Ref, len(ids))}
	out := make(map[string][]Ref, len(ids))
	changed := false
	for _, id := range ids {
		k := textKey("entry", opts.LinkBase, texts[id])
		refs, ok := old.Refs[k]
		if !ok {
			refs, changed = ExtractMarkdown([]byte(texts[id]), opts), true
		}
		next.Refs[k], out[id] = refs, refs
	}
	var err error
	if changed || len(next.Refs) != len(old.Refs) {
		err = saveEntryRefs(root, next)
	}
	return out, err
}

// saveEntryRefs writes the cache when the memory directory exists.
func saveEntryRefs(root string, f entryRefsFile) error {
	if _, err := os.Lstat(filepath.Join(root, ".memory")); err != nil {
		return nil
	}
	if err := cachedir.WriteSealed(root, EntryRefsFile, encodeEntryRefs(&f)); err != nil {
		return fmt.Errorf("entry references cache not written (rebuilt next time): %w", err)
	}
	return nil
}

// The file is a sealed cache file (codec.Encoder; gob before
// 2026-11-28, whose decoder build was most of a millisecond of every
// session start): the options' key, the count of texts, then per text
// (by key) its 32-byte key and the count of its references, then per
// reference its path, line (a varint), text as written, whether it is
// rooted and its directory.

// readEntryRefs reads the cache of root: false when it is missing or not a
// cache file of this version.
func readEntryRefs(root string) (entryRefsFile, bool) {
	body, ok := cachedir.ReadSealed(root, EntryRefsFile, entryRefsMagic, maxEntryRefs)
	if !ok {
		return entryRefsFile{}, false
	}
	return decodeEntryRefs(body)
}

// encodeEntryRefs is the file of f, its texts in the order of their keys.
func encodeEntryRefs(f *entryRefsFile) []byte {
	keys := slices.SortedFunc(maps.Keys(f.Refs), func(a, b [32]byte) int { return bytes.Compare(a[:], b[:]) })
	size := len(f.Opts) + 8
	for _, k := range keys {
		size += 34
		for _, r := range f.Refs[k] {
			size += len(r.Path) + len(r.Raw) + len(r.Dir) + 8
		}
	}
	e := codec.NewEncoder(entryRefsMagic, size)
	e.String(f.Opts)
	e.Uvarint(uint64(len(keys)))
	for _, k := range keys {
		e.Fixed(k[:])
		refs := f.Refs[k]
		e.Uvarint(uint64(len(refs)))
		for _, r := range refs {
			e.String(r.Path)
			e.Varint(int64(r.Line))
			e.String(r.Raw)
			e.Bool(r.Rooted)
			e.String(r.Dir)
		}
	}
	return e.Sealed()
}

// decodeEntryRefs reads what encodeEntryRefs wrote (the body, unsealed).
// A key written twice is refused.
func decodeEntryRefs(body []byte) (entryRefsFile, bool) {
	d := codec.NewDecoder(body)
	f := entryRefsFile{Opts: d.String()}
	// A text is at least its key and a count; a reference five bytes.
	n := d.Count(33)
	f.Refs = make(map[[32]byte][]Ref, n)
	for range n {
		var k [32]byte
		copy(k[:], d.Fixed(32))
		var refs []Ref
		if m := d.Count(5); m > 0 {
			refs = make([]Ref, m)
			for i := range refs {
				r := &refs[i]
				r.Path = d.String()
				line := d.Varint()
				r.Raw, r.Rooted, r.Dir = d.String(), d.Bool(), d.String()
				if line < 0 || line > math.MaxInt32 {
					return entryRefsFile{}, false
				}
				r.Line = int(line)
			}
		}
		if _, dup := f.Refs[k]; dup || d.Failed() {
			return entryRefsFile{}, false
		}
		f.Refs[k] = refs
	}
	if !d.OK() {
		return entryRefsFile{}, false
	}
	return f, true
}
