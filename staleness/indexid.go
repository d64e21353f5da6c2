package staleness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/safefs"
)

// IndexDigestFile keeps, in the cache directory, the digests of the last
// index read with that index's checksum (IndexIdentity).
const IndexDigestFile = "index.digest"

// indexMemoMagic starts the file; another version is ignored.
const indexMemoMagic = "learnwatch index digest 2\n"

// maxIndexMemo bounds the file read (it holds three short strings).
const maxIndexMemo = 4 << 10

// indexMemo is IndexDigestFile's content: an index whose bytes have the
// checksum Checksum has the Digests (gitrepo.IndexDigest). All are
// functions of the index's bytes alone: a memo copied with a checkout, or
// planted in a clone, names the index it was computed from or none.
type indexMemo struct {
	Checksum string
	gitrepo.Digests
}

// IndexID is the identity of a git index (IndexIdentity): Staged, of what
// it stages, for what depends on its blobs and flags (git's answers for
// an artifact, the checks against the index); Names, of the paths it
// holds, for what reads only those (the checks against HEAD's tree, which
// list the tracked files from the index, and whether a file is tracked).
// Both are "staged:" or "names:" and a digest, "absent" when there is no
// index, the size and checksum of an index go-git cannot decode, or ""
// when the index has no checksum (index.skipHash) or cannot be read.
type IndexID struct {
	Staged, Names string
}

// id is the identity of m's index.
func (m indexMemo) id() IndexID {
	return IndexID{Staged: "staged:" + m.Staged, Names: "names:" + m.Names}
}

// of is the identity a check of mode depends on: the checks against the
// index read what it stages, the others (HEAD's tree, the working tree)
// at most the names it holds.
func (id IndexID) of(mode Mode) string {
	if mode == Staged || mode == PreCommit {
		return id.Staged
	}
	return id.Names
}

// same is the identity of both kinds alike.
func same(id string) IndexID { return IndexID{Staged: id, Names: id} }

// IndexIdentity identifies the git index file name, for the keys of
// results that depend on it (the staleness cache's, the session's stale
// marks', the engine's pass replay): digests of its entries without their
// stat data (gitrepo.IndexDigest; IndexID).
// `git status` rewrites the index with new stat data when a file was
// touched — and after most commits, whose racily clean entries it hashes
// again — and every result keyed on the index was computed again after
// it, at the cost of a first pass. root is the memory whose cache
// directory keeps the digest with the index's checksum (IndexDigestFile):
// an index with the same checksum has the same bytes, and is not decoded
// again. keep says whether a digest computed now may be kept there (a
// run that writes nothing — a replayed pass, the pre-commit check —
// reads a kept one but keeps none; the process remembers the last one
// it computed, for the next call). An index go-git cannot decode is
// identified by its size and checksum, which change with its stat data.
// fi is the stat of the file whose checksum was read (nil when none was).
func IndexIdentity(root, name string, keep bool) (id IndexID, fi fs.FileInfo) {
	sum, fi := gitrepo.IndexChecksum(name)
	if sum == "" {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return same("absent"), nil
		}
		return same(""), nil
	}
	var m indexMemo
	if cachedir.ReadGob(root, IndexDigestFile, indexMemoMagic, maxIndexMemo, &m) && m.Checksum == sum && m.Staged != "" && m.Names != "" {
		return m.id(), fi
	}
	m, ok := lastDigest.of(sum)
	if !ok {
		d, checksum, dfi, err := gitrepo.IndexDigest(name)
		if err != nil || checksum != sum {
			// Not decoded, or replaced since its checksum was read.
			return same(fmt.Sprintf("%d:%s", fi.Size(), sum)), fi
		}
		m, fi = indexMemo{Checksum: checksum, Digests: d}, dfi
		lastDigest.set(m)
	}
	// Disposable: not written (a read-only memory), the index is decoded
	// again next time. None is kept without a memory directory: none is
	// made for it.
	if _, err := safefs.Lstat(filepath.Join(root, safefs.MemoryDirName)); err == nil && keep {
		_ = cachedir.WriteGobUnsynced(root, IndexDigestFile, indexMemoMagic, &m)
	}
	return m.id(), fi
}

// indexIdentity is IndexIdentity's identity alone.
func indexIdentity(root, name string, keep bool) IndexID {
	id, _ := IndexIdentity(root, name, keep)
	return id
}

// lastDigest is the last index digest this process computed: a session
// start's replay check, which keeps none, decodes the index, and the
// session index's stale marks right after it take the same digest
// instead of decoding it again (45 ms at 50,000 files). A digest is a
// function of the index's bytes, named by their checksum.
var lastDigest digestMemo

type digestMemo struct {
	mu sync.Mutex
	m  indexMemo
}

func (d *digestMemo) of(checksum string) (indexMemo, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m, d.m.Checksum == checksum && d.m.Staged != ""
}

func (d *digestMemo) set(m indexMemo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m = m
}
