package engine

// The knowledge entries' cache: what the session index reads of the
// knowledge files — their active entries — kept in
// .memory/.cache/knowledge.entries with the SHA-256 of each file's bytes.
// A session start reads the files (a few hundred kilobytes at most) and
// sums them; a file whose sum is the one kept has its entries taken from
// the cache instead of being parsed again (goldmark: about 3 ms of CPU for
// the 200 entries of the 10k fixture, the largest step of the index). The
// cache is disposable: a file that cannot be read, of another version, or
// that names another sum means the file is parsed.

import (
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/safefs"
)

// EntriesFile is the knowledge entries' cache file in the cache directory.
const EntriesFile = "knowledge.entries"

// entriesMagic starts the file; another version is ignored.
const entriesMagic = "learnwatch knowledge entries 2\n"

// maxEntries bounds the file read: both knowledge files' entries, text
// included, with room for the encoding.
const maxEntries = 4 * safefs.MaxKnowledge

// entriesCache is the file's content: per knowledge file read, its name
// (base name), the sum of its bytes and its active entries (index.Parse).
type entriesCache struct {
	Files []entriesOf
}

type entriesOf struct {
	Name    string
	Sum     [sha256.Size]byte
	Entries []index.Entry
}

// loadEntries is index.Load through the entries' cache, which it rewrites
// when a file's entries were parsed anew (or a file is gone). The cache
// not written is a warning, not an error: the next session parses again
// (a read-only checkout is neither).
func loadEntries(root string) ([]index.Entry, []string, error) {
	files, err := index.ReadKnowledge(root)
	if err != nil {
		return nil, nil, err
	}
	kept, _ := readEntriesCache(root)
	var out []index.Entry
	now := entriesCache{Files: make([]entriesOf, 0, len(files))}
	for _, f := range files {
		e := entriesOf{Name: filepath.Base(f.Path), Sum: sha256.Sum256(f.Src)}
		if k := slices.IndexFunc(kept.Files, func(k entriesOf) bool { return k.Name == e.Name && k.Sum == e.Sum }); k >= 0 {
			e.Entries = kept.Files[k].Entries
		} else if e.Entries, err = index.Parse(f.Path, f.Src); err != nil {
			return nil, nil, err
		}
		now.Files = append(now.Files, e)
		out = index.Append(out, cleanEntries(e.Entries))
	}
	var warn []string
	if !sameSums(kept, now) {
		if err := cachedir.WriteSealedUnsynced(root, EntriesFile, encodeEntries(&now)); err != nil {
			warn = append(warn, fmt.Sprintf("knowledge entries cache not written (parsed again next time): %v", err))
		}
	}
	return out, warn, nil
}

// The file is a sealed cache file (codec.Encoder; gob before
// 2026-11-28, whose decoder build was most of a millisecond of every
// session start): the count of files, then per file its name, the 32
// bytes of its sum and the count of its entries, then per entry the
// fields index.Clean keeps (id, kind, title, status, area, source, text;
// the others are set by the index, never read from the cache).

// readEntriesCache reads the cache of root: false (and no files) when it
// is missing or not a cache file of this version.
func readEntriesCache(root string) (entriesCache, bool) {
	body, ok := cachedir.ReadSealed(root, EntriesFile, entriesMagic, maxEntries)
	if !ok {
		return entriesCache{}, false
	}
	return decodeEntries(body)
}

// encodeEntries is the file of c.
func encodeEntries(c *entriesCache) []byte {
	size := 8
	for _, f := range c.Files {
		size += len(f.Name) + sha256.Size + 4
		for _, e := range f.Entries {
			size += len(e.ID) + len(e.Kind) + len(e.Title) + len(e.Status) + len(e.Area) + len(e.Source) + len(e.Text) + 14
		}
	}
	enc := codec.NewEncoder(entriesMagic, size)
	enc.Uvarint(uint64(len(c.Files)))
	for _, f := range c.Files {
		enc.String(f.Name)
		enc.Fixed(f.Sum[:])
		enc.Uvarint(uint64(len(f.Entries)))
		for _, e := range f.Entries {
			for _, s := range []string{e.ID, e.Kind, e.Title, e.Status, e.Area, e.Source, e.Text} {
				enc.String(s)
			}
		}
	}
	return enc.Sealed()
}

// decodeEntries reads what encodeEntries wrote (the body, unsealed).
func decodeEntries(body []byte) (entriesCache, bool) {
	d := codec.NewDecoder(body)
	var c entriesCache
	// A file is at least its name's length, its sum and a count; an
	// entry its seven lengths.
	n := d.Count(1 + sha256.Size + 1)
	for range n {
		f := entriesOf{Name: d.String()}
		copy(f.Sum[:], d.Fixed(sha256.Size))
		if m := d.Count(7); m > 0 {
			f.Entries = make([]index.Entry, m)
			for i := range f.Entries {
				e := &f.Entries[i]
				e.ID, e.Kind, e.Title, e.Status = d.String(), d.String(), d.String(), d.String()
				e.Area, e.Source, e.Text = d.String(), d.String(), d.String()
			}
		}
		if d.Failed() {
			return entriesCache{}, false
		}
		c.Files = append(c.Files, f)
	}
	if !d.OK() {
		return entriesCache{}, false
	}
	return c, true
}

// cleanEntries returns entries as index.Parse makes them (index.Clean):
// the cache is in the clone, where anyone may have written it.
func cleanEntries(entries []index.Entry) []index.Entry {
	out := make([]index.Entry, len(entries))
	for i, e := range entries {
		out[i] = index.Clean(e)
	}
	return out
}

// sameSums reports whether a and b hold the same files with the same sums.
func sameSums(a, b entriesCache) bool {
	return slices.EqualFunc(a.Files, b.Files, func(x, y entriesOf) bool { return x.Name == y.Name && x.Sum == y.Sum })
}
