package staleness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

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
// again. An index go-git cannot decode is identified by its size and
// checksum, which change with its stat data. The identity is "" when the
// index has no checksum (index.skipHash) or cannot be read, "absent" when
// there is none; fi is the stat of the file whose checksum was read (nil
// when none was).
func IndexIdentity(root, name string) (id string, fi fs.FileInfo) {
	return indexIdentityOf(root, name, true)
}

// indexIdentity is IndexIdentity's identity alone, the digest kept when
// keep is set (a run that writes nothing, the pre-commit check's, reads a
// kept one but keeps none).
func indexIdentity(root, name string, keep bool) string {
	id, _ := indexIdentityOf(root, name, keep)
	return id
}

func indexIdentityOf(root, name string, keep bool) (id string, fi fs.FileInfo) {
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
	digest, checksum, dfi, err := gitrepo.IndexDigest(name)
	if err != nil || checksum != sum {
		// Not decoded, or replaced since its checksum was read.
		return fmt.Sprintf("%d:%s", fi.Size(), sum), fi
	}
	// Disposable: not written (a read-only memory), the index is decoded
	// again next time. None is kept without a memory directory: none is
	// made for it.
	if _, err := safefs.Lstat(filepath.Join(root, safefs.MemoryDirName)); err == nil && keep {
		_ = cachedir.WriteGobUnsynced(root, IndexDigestFile, indexMemoMagic, &indexMemo{Checksum: checksum, Digest: digest})
	}
	return "staged:" + digest, dfi
}
