package staleness

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/learnwatch/learnwatch/cachedir"
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
const entryRefsMagic = "learnwatch entry refs 1\n"

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
	var old entryRefsFile
	if !cachedir.ReadGob(root, EntryRefsFile, entryRefsMagic, maxEntryRefs, &old) || old.Opts != okey {
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
	if err := cachedir.WriteGob(root, EntryRefsFile, entryRefsMagic, &f); err != nil {
		return fmt.Errorf("entry references cache not written (rebuilt next time): %w", err)
	}
	return nil
}
