package gitrepo

import (
	"bufio"
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"maps"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/index"

	"github.com/learnwatch/learnwatch/safefs"
)

// MaxIndex bounds the index file IndexFacts decodes (git's index holds
// about 100 bytes per tracked file: this is millions of files).
const MaxIndex = 512 << 20

// Digests are two sums of an index (IndexFacts). Staged sums what it
// stages: each entry's path, stage, mode, blob and the flags git keeps
// with it (skip-worktree, intent-to-add), the cached trees and the
// resolve-undo entries. Names sums its entries' paths and stages alone:
// what a check against HEAD's tree reads of the index (the tracked
// files' names), which a file staged with other content leaves as it
// was. Neither sums the stat data git keeps per entry (size, times,
// inode): `git status` rewrites the index with new stat data whenever a
// file was touched, or a commit left racily clean entries behind.
type Digests struct {
	Staged, Names string
}

// IndexFacts returns the Digests of the index file at path, what it holds
// of the artifacts (Artifacts), the file's own checksum (its last 20
// bytes, hex: the SHA-1 of everything before them, which git writes and
// go-git verifies) and the stat of the file it decoded. The file is opened
// without following a symlink, read at most MaxIndex bytes, and decoded
// with go-git once; an index go-git cannot decode (a sparse or split
// index) is an error.
func IndexFacts(path string) (d Digests, a Artifacts, checksum string, fi fs.FileInfo, err error) {
	f, err := safefs.Open(path)
	if err != nil {
		return d, a, "", nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return d, a, "", nil, err
	}
	if fi.Size() > MaxIndex {
		return d, a, "", nil, safefs.TooLarge(path, fi.Size(), MaxIndex)
	}
	var idx index.Index
	if err := index.NewDecoder(bufio.NewReader(io.LimitReader(f, fi.Size()))).Decode(&idx); err != nil {
		return d, a, "", nil, fmt.Errorf("decode git index %s: %w", path, IndexErr(err))
	}
	// The checksum of the bytes decoded: go-git verified it against them
	// (git's all-zero one of index.skipHash it refuses).
	sum, err := checksumOf(f, fi.Size())
	if err != nil {
		return d, a, "", nil, fmt.Errorf("read git index %s: %w", path, err)
	}
	return digestsOf(&idx), artifactsOf(&idx), hex.EncodeToString(sum[:]), fi, nil
}

// IndexChecksum returns the checksum of the index file at path (its last
// 20 bytes, hex), read without decoding it — a file with the same
// checksum has the same bytes — and the stat of the file read. "" when it
// cannot be read or has none (too short, or all zeros: index.skipHash).
func IndexChecksum(path string) (string, fs.FileInfo) {
	f, err := safefs.Open(path)
	if err != nil {
		return "", nil
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() < 12+20 {
		return "", nil
	}
	sum, err := checksumOf(f, fi.Size())
	if err != nil || sum == [sha1.Size]byte{} {
		return "", nil
	}
	return hex.EncodeToString(sum[:]), fi
}

// checksumOf reads the checksum at the end of the index file f of size
// bytes.
func checksumOf(f *os.File, size int64) (sum [sha1.Size]byte, err error) {
	_, err = f.ReadAt(sum[:], size-sha1.Size)
	return sum, err
}

// digestsOf sums idx (Digests), stat data left out.
func digestsOf(idx *index.Index) Digests {
	h, names := sha256.New(), sha256.New()
	num := func(v uint64) {
		var b [binary.MaxVarintLen64]byte
		h.Write(b[:binary.PutUvarint(b[:], v)])
	}
	str := func(s string) {
		num(uint64(len(s)))
		io.WriteString(h, s)
	}
	flag := func(b bool) {
		if b {
			num(1)
		} else {
			num(0)
		}
	}
	io.WriteString(h, "learnwatch index digest 1\x00")
	io.WriteString(names, "learnwatch index names 1\x00")
	num(uint64(idx.Version))
	num(uint64(len(idx.Entries)))
	for _, e := range idx.Entries {
		// A name and its stage, each ended by a NUL (no path holds one).
		io.WriteString(names, e.Name)
		names.Write([]byte{0, byte(e.Stage), 0})
		str(e.Name)
		h.Write(e.Hash[:])
		num(uint64(e.Mode))
		num(uint64(e.Stage))
		flag(e.SkipWorktree)
		flag(e.IntentToAdd)
	}
	if idx.Cache != nil {
		num(uint64(len(idx.Cache.Entries)) + 1)
		for _, e := range idx.Cache.Entries {
			str(e.Path)
			num(uint64(int64(e.Entries)))
			num(uint64(int64(e.Trees)))
			h.Write(e.Hash[:])
		}
	} else {
		num(0)
	}
	if idx.ResolveUndo != nil {
		num(uint64(len(idx.ResolveUndo.Entries)) + 1)
		for _, e := range idx.ResolveUndo.Entries {
			str(e.Path)
			stages := slices.Sorted(maps.Keys(e.Stages))
			num(uint64(len(stages)))
			for _, s := range stages {
				num(uint64(s))
				id := e.Stages[s]
				h.Write(id[:])
			}
		}
	} else {
		num(0)
	}
	return Digests{Staged: hex.EncodeToString(h.Sum(nil)), Names: hex.EncodeToString(names.Sum(nil))}
}

// Artifacts is what an index holds under the directories rendered
// artifacts live in (ArtifactPath): each file's blob and mode (File), and
// whether the index holds exactly the files of the tree Tree — git's
// cached tree of the whole index, valid (a commit, a checkout or a reset
// leaves it so) and covering every entry, none of them conflicted or
// added with intent-to-add. When Tree is HEAD's tree, HEAD holds exactly
// these files under those directories: what reconcile asks of HEAD for a
// missing or edited artifact is answered without reading a tree object.
// The files are a map as decoded, or the bytes Pack made when read back
// (UnpackArtifacts): a pass that asks about one file of 20,000 looks it
// up there instead of making a map of them all (10-14 ms).
type Artifacts struct {
	Tree  [20]byte // zero: no valid cached tree of the whole index
	files map[string]ArtifactFile
	// packed, when files is nil, holds them as Pack wrote them; at, the
	// offset of each entry, in the order of their paths.
	packed []byte
	at     []int32
}

// ArtifactFile is an index entry's blob and mode (filemode.FileMode).
type ArtifactFile struct {
	Blob [20]byte
	Mode uint32
}

// artifactEntry is a packed entry's size besides its path: a NUL, the
// blob's 20 bytes and the mode's 4 (big-endian).
const artifactEntry = 1 + 20 + 4

// File returns what the index holds at path (relative to the worktree
// top, slash-separated), false when it holds nothing there.
func (a *Artifacts) File(path string) (ArtifactFile, bool) {
	if a.packed == nil {
		f, ok := a.files[path]
		return f, ok
	}
	p := []byte(path)
	i, ok := slices.BinarySearchFunc(a.at, p, func(at int32, p []byte) int { return bytes.Compare(a.pathAt(at), p) })
	if !ok {
		return ArtifactFile{}, false
	}
	return a.fileAt(a.at[i], len(p)), true
}

// Len is how many files a holds.
func (a *Artifacts) Len() int {
	if a.packed == nil {
		return len(a.files)
	}
	return len(a.at)
}

// All yields a's files in no order.
func (a *Artifacts) All() iter.Seq2[string, ArtifactFile] {
	return func(yield func(string, ArtifactFile) bool) {
		if a.packed == nil {
			for p, f := range a.files {
				if !yield(p, f) {
					return
				}
			}
			return
		}
		for _, at := range a.at {
			p := a.pathAt(at)
			if !yield(string(p), a.fileAt(at, len(p))) {
				return
			}
		}
	}
}

func (a *Artifacts) pathAt(at int32) []byte {
	return a.packed[at : int(at)+bytes.IndexByte(a.packed[at:], 0)]
}

// fileAt is the blob and mode of the entry at at, whose path is n bytes
// long (pathAt).
func (a *Artifacts) fileAt(at int32, n int) ArtifactFile {
	b := a.packed[int(at)+n+1:]
	var f ArtifactFile
	copy(f.Blob[:], b)
	f.Mode = binary.BigEndian.Uint32(b[20:])
	return f
}

// Pack returns a's files as bytes, in the order of their paths: each
// path, a NUL, the blob's 20 bytes and the mode's 4 (big-endian).
func (a *Artifacts) Pack() []byte {
	if a.packed != nil {
		return bytes.Clone(a.packed) // Pack's bytes (UnpackArtifacts)
	}
	paths := slices.Sorted(maps.Keys(a.files))
	n := 0
	for _, p := range paths {
		n += len(p) + artifactEntry
	}
	b := make([]byte, 0, n)
	for _, p := range paths {
		f := a.files[p]
		b = append(b, p...)
		b = append(b, 0)
		b = append(b, f.Blob[:]...)
		b = binary.BigEndian.AppendUint32(b, f.Mode)
	}
	return b
}

// UnpackArtifacts returns the Artifacts of the cached tree tree whose
// files Pack packed into b, which they keep (b is not copied); false for
// bytes Pack did not make (an entry cut short, a path empty or out of
// order).
func UnpackArtifacts(tree [20]byte, b []byte) (Artifacts, bool) {
	if len(b) > math.MaxInt32 {
		return Artifacts{}, false
	}
	a := Artifacts{Tree: tree, packed: b, at: []int32{}}
	var last []byte
	for i := 0; i < len(b); {
		n := bytes.IndexByte(b[i:], 0)
		if n <= 0 || len(b)-i < n+artifactEntry {
			return Artifacts{}, false
		}
		if p := b[i : i+n]; len(a.at) == 0 || bytes.Compare(last, p) < 0 {
			last = p
		} else {
			return Artifacts{}, false
		}
		a.at = append(a.at, int32(i))
		i += n + artifactEntry
	}
	return a, true
}

// ArtifactPath reports whether path (slash-separated, relative to the
// worktree top) is one Artifacts holds when the index does: a path with a
// .claude/commands/, .claude/skills/ or .memory/ directory in it, at the
// top or below (a memory below the worktree's top).
func ArtifactPath(path string) bool {
	// Most paths of a large repository hold neither name: one scan each.
	if !strings.Contains(path, ".claude/") && !strings.Contains(path, ".memory/") {
		return false
	}
	for _, d := range artifactDirs {
		if strings.HasPrefix(path, d[1:]) || strings.Contains(path, d) {
			return true
		}
	}
	return false
}

// artifactDirs are the directories ArtifactPath looks for, each with the
// slash before it (below the top) and, without it, at the top.
var artifactDirs = []string{"/.claude/commands/", "/.claude/skills/", "/.memory/"}

// artifactsOf is idx's Artifacts.
func artifactsOf(idx *index.Index) Artifacts {
	a := Artifacts{files: map[string]ArtifactFile{}}
	whole := idx.Cache != nil && len(idx.Cache.Entries) > 0 && idx.Cache.Entries[0].Path == "" &&
		idx.Cache.Entries[0].Entries == len(idx.Entries)
	for _, e := range idx.Entries {
		// Stage 0 is a merged entry (go-git's index.Merged is 1). git
		// invalidates its cached tree for a conflict or an intent-to-add;
		// an index written otherwise is not believed either.
		if e.Stage != 0 || e.IntentToAdd {
			whole = false
		}
		if ArtifactPath(e.Name) {
			a.files[e.Name] = ArtifactFile{Blob: e.Hash, Mode: uint32(e.Mode)}
		}
	}
	if whole {
		a.Tree = idx.Cache.Entries[0].Hash
	}
	return a
}
