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

// IndexDigestFile keeps, in the cache directory, the digest of what the
// last index read stages with that index's checksum (IndexIdentity).
const IndexDigestFile = "index.digest"

// indexMemoMagic starts the file; another version is ignored.
const indexMemoMagic = "learnwatch index digest 1\n"

// maxIndexMemo bounds the file read (it holds two short strings).
const maxIndexMemo = 4 << 10

// indexMemo is IndexDigestFile's content: an index whose bytes have the
// checksum Checksum stages Digest (gitrepo.IndexDigest). Both are
// functions of the index's bytes alone: a memo copied with a checkout, or
// planted in a clone, names the index it was computed from or none.
type indexMemo struct {
	Checksum, Digest string
}

// IndexIdentity identifies what the git index file name stages, for the
// keys of results that depend on the index (the staleness cache's, the
// session's stale marks', the engine's pass replay): "staged:" and the
// digest of its entries without their stat data (gitrepo.IndexDigest).
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
// The identity is "" when the index has no checksum (index.skipHash) or
// cannot be read, "absent" when there is none; fi is the stat of the file
// whose checksum was read (nil when none was).
func IndexIdentity(root, name string, keep bool) (id string, fi fs.FileInfo) {
	sum, fi := gitrepo.IndexChecksum(name)
	if sum == "" {
		if _, err := os.Lstat(name); errors.Is(err, os.ErrNotExist) {
			return "absent", nil
		}
		return "", nil
	}
	var m indexMemo
	if cachedir.ReadGob(root, IndexDigestFile, indexMemoMagic, maxIndexMemo, &m) && m.Checksum == sum && m.Digest != "" {
		return "staged:" + m.Digest, fi
	}
	m, ok := lastDigest.of(sum)
	if !ok {
		digest, checksum, dfi, err := gitrepo.IndexDigest(name)
		if err != nil || checksum != sum {
			// Not decoded, or replaced since its checksum was read.
			return fmt.Sprintf("%d:%s", fi.Size(), sum), fi
		}
		m, fi = indexMemo{Checksum: checksum, Digest: digest}, dfi
		lastDigest.set(m)
	}
	// Disposable: not written (a read-only memory), the index is decoded
	// again next time. None is kept without a memory directory: none is
	// made for it.
	if _, err := safefs.Lstat(filepath.Join(root, safefs.MemoryDirName)); err == nil && keep {
		_ = cachedir.WriteGobUnsynced(root, IndexDigestFile, indexMemoMagic, &m)
	}
	return "staged:" + m.Digest, fi
}

// indexIdentity is IndexIdentity's identity alone.
func indexIdentity(root, name string, keep bool) string {
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
	return d.m, d.m.Checksum == checksum && d.m.Digest != ""
}

func (d *digestMemo) set(m indexMemo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m = m
}
