package staleness

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/safefs"
)

// IndexDigestFile keeps, in the cache directory, the digests of the last
// index read with that index's checksum (IndexIdentity).
const IndexDigestFile = "index.digest"

// indexMemoMagic starts the file; another version is ignored.
const indexMemoMagic = "learnwatch index digest 5\n"

// IndexArtifactsFile keeps, in the cache directory, what the last index
// read holds under the artifacts' directories (gitrepo.Artifacts), with
// that index's checksum: reconcile's questions to git about a missing or
// edited artifact read it instead of HEAD's trees (IndexArtifacts).
const IndexArtifactsFile = "index.artifacts"

// indexArtifactsMagic starts that file; another version is ignored.
const indexArtifactsMagic = "learnwatch index artifacts 3\n"

// maxIndexArtifacts bounds that file (an entry is about 100 bytes).
const maxIndexArtifacts = 64 << 20

// artifactsMemo is IndexArtifactsFile's content: an index whose bytes
// have the checksum Checksum holds the files Files (gitrepo's Pack) and
// the cached tree Tree (gitrepo.Artifacts). The files are one byte slice,
// not a map: a session start right after `git status` keeps them, and
// encoding 2,000 entries one by one cost it a millisecond; a pass looks up
// the few it asks about in them (gitrepo.UnpackArtifacts).
type artifactsMemo struct {
	Checksum string
	Tree     [20]byte
	Files    []byte
}

// maxIndexMemo bounds the file read (it holds three short strings).
const maxIndexMemo = 4 << 10

// indexMemo is IndexDigestFile's content: an index whose bytes have the
// checksum Checksum has the Digests (gitrepo.IndexFacts). All are
// functions of the index's bytes alone: a memo copied with a checkout, or
// planted in a clone, names the index it was computed from or none.
type indexMemo struct {
	Checksum string
	gitrepo.Digests
	// Artifacts is set when IndexArtifactsFile was written for the same
	// index, so that a memo without it is computed again once (keep).
	Artifacts bool
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
// stat data (gitrepo.IndexFacts; IndexID).
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
	if m, ok := readIndexMemo(root); ok && m.Checksum == sum && m.Staged != "" && m.Names != "" &&
		(m.Artifacts || !keep) {
		return m.id(), fi
	}
	m, a, ok := lastDigest.of(sum)
	if !ok {
		d, arts, checksum, dfi, err := gitrepo.IndexFacts(name)
		if err != nil || checksum != sum {
			// Not decoded, or replaced since its checksum was read.
			return same(fmt.Sprintf("%d:%s", fi.Size(), sum)), fi
		}
		m, a, fi = indexMemo{Checksum: checksum, Digests: d}, arts, dfi
		lastDigest.set(m, a)
	}
	// Disposable: not written (a read-only memory), the index is decoded
	// again next time. None is kept without a memory directory: none is
	// made for it. The artifacts' file goes first: the digest's memo
	// says it was written.
	if _, err := safefs.Lstat(filepath.Join(root, safefs.MemoryDirName)); err == nil && keep {
		m.Artifacts = cachedir.WriteSealedUnsynced(root, IndexArtifactsFile, encodeArtifactsMemo(&artifactsMemo{Checksum: m.Checksum, Tree: a.Tree, Files: a.Pack()})) == nil
		_ = cachedir.WriteSealedUnsynced(root, IndexDigestFile, encodeIndexMemo(&m))
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
	a  gitrepo.Artifacts
}

func (d *digestMemo) of(checksum string) (indexMemo, gitrepo.Artifacts, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.m, d.a, d.m.Checksum == checksum && d.m.Staged != ""
}

func (d *digestMemo) set(m indexMemo, a gitrepo.Artifacts) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.m, d.a = m, a
}

// IndexArtifacts returns what the git index file name holds under the
// artifacts' directories (gitrepo.Artifacts), when an IndexIdentity of
// this process or one kept in root's cache directory (IndexArtifactsFile)
// read an index with the checksum name has now; false otherwise. It never
// decodes the index: a pass whose staleness check has not read this index
// yet asks git's trees instead.
func IndexArtifacts(root, name string) (gitrepo.Artifacts, bool) {
	sum, _ := gitrepo.IndexChecksum(name)
	if sum == "" {
		return gitrepo.Artifacts{}, false
	}
	if _, a, ok := lastDigest.of(sum); ok {
		return a, true
	}
	if m, ok := readArtifactsMemo(root); ok && m.Checksum == sum {
		if a, ok := gitrepo.UnpackArtifacts(m.Tree, m.Files); ok {
			return a, true
		}
	}
	return gitrepo.Artifacts{}, false
}

// Both files are sealed cache files (codec.Encoder; gob before
// 2026-11-28): the digest is the index's checksum, the two digests
// (staged, names) and whether the artifacts' file was written; the
// artifacts' file the index's checksum, the tree's 20 bytes and the
// packed files (gitrepo.Artifacts.Pack).

// readIndexMemo reads the digest kept in root's cache directory.
func readIndexMemo(root string) (indexMemo, bool) {
	body, ok := cachedir.ReadSealed(root, IndexDigestFile, indexMemoMagic, maxIndexMemo)
	if !ok {
		return indexMemo{}, false
	}
	d := codec.NewDecoder(body)
	m := indexMemo{Checksum: d.String(), Digests: gitrepo.Digests{Staged: d.String(), Names: d.String()}, Artifacts: d.Bool()}
	if !d.OK() {
		return indexMemo{}, false
	}
	return m, true
}

// encodeIndexMemo is the digest's file of m.
func encodeIndexMemo(m *indexMemo) []byte {
	e := codec.NewEncoder(indexMemoMagic, len(m.Checksum)+len(m.Staged)+len(m.Names)+8)
	e.String(m.Checksum)
	e.String(m.Staged)
	e.String(m.Names)
	e.Bool(m.Artifacts)
	return e.Sealed()
}

// readArtifactsMemo reads the artifacts' file kept in root's cache
// directory.
func readArtifactsMemo(root string) (artifactsMemo, bool) {
	body, ok := cachedir.ReadSealed(root, IndexArtifactsFile, indexArtifactsMagic, maxIndexArtifacts)
	if !ok {
		return artifactsMemo{}, false
	}
	d := codec.NewDecoder(body)
	m := artifactsMemo{Checksum: d.String()}
	copy(m.Tree[:], d.Fixed(len(m.Tree)))
	m.Files = d.Bytes()
	if !d.OK() {
		return artifactsMemo{}, false
	}
	return m, true
}

// encodeArtifactsMemo is the artifacts' file of m.
func encodeArtifactsMemo(m *artifactsMemo) []byte {
	e := codec.NewEncoder(indexArtifactsMagic, len(m.Checksum)+len(m.Tree)+len(m.Files)+8)
	e.String(m.Checksum)
	e.Fixed(m.Tree[:])
	e.Bytes(m.Files)
	return e.Sealed()
}
