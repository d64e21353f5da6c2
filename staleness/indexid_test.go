package staleness

import (
	"bytes"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/gitrepo"
)

// refreshIndex touches file (later than the index) and runs git status,
// which rewrites the index with the file's new stat and nothing else; it
// fails the test when the index's bytes did not change.
func refreshIndex(t *testing.T, r *gitRepo, file string) {
	t.Helper()
	index := filepath.Join(r.dir, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(r.dir, file), later, later); err != nil {
		t.Fatal(err)
	}
	r.git("status", "--porcelain")
	if after, _ := os.ReadFile(index); bytes.Equal(before, after) {
		t.Fatal("git status did not rewrite the index: the test proves nothing")
	}
}

// The index's identity is what it stages (and the names it holds): the
// same after git status rewrote its stat data; after git add of a changed
// file, another for what it stages and the same names; after git add of
// a new file, both new. It is kept with the index's checksum, and a kept
// one is believed only for that checksum.
func TestIndexIdentity(t *testing.T) {
	r := newRepo(t)
	index := filepath.Join(r.dir, ".git", "index")
	if id := indexIdentity(r.dir, index, true); id != same("absent") {
		t.Fatalf("no index yet: %q", id)
	}
	r.write("src/a.go", "package src\n")
	r.write("docs/b.md", "# b\n")
	r.commit("one")
	indexIdentity(r.dir, index, true)
	if _, err := os.Lstat(filepath.Join(r.dir, ".memory")); err == nil {
		t.Fatal("a memory directory was made for the digest")
	}
	os.MkdirAll(filepath.Join(r.dir, ".memory"), 0o755)
	indexIdentity(r.dir, index, false)
	if _, err := os.Lstat(cachedir.Path(r.dir, IndexDigestFile)); err == nil {
		t.Fatal("a run that keeps nothing kept the digest")
	}
	id0 := indexIdentity(r.dir, index, true)
	if !strings.HasPrefix(id0.Staged, "staged:") || !strings.HasPrefix(id0.Names, "names:") {
		t.Fatalf("identity %q", id0)
	}
	if id0.of(Auto) != id0.Names || id0.of(Staged) != id0.Staged || id0.of(PreCommit) != id0.Staged {
		t.Fatal("the checks against the index do not depend on what it stages")
	}
	m, ok := readIndexMemo(r.dir)
	if !ok || m.id() != id0 {
		t.Fatalf("the digest was not kept: %+v", m)
	}

	refreshIndex(t, r, "docs/b.md")
	if id := indexIdentity(r.dir, index, true); id != id0 {
		t.Fatalf("after a stat-only rewrite: %q, was %q", id, id0)
	}

	// A kept digest is believed for its checksum only.
	sum, _ := indexChecksum(t, index)
	cachedir.WriteSealed(r.dir, IndexDigestFile, encodeIndexMemo(&indexMemo{Checksum: strings.Repeat("0", 39) + "1", Digests: gitrepo.Digests{Staged: "planted", Names: "planted"}}))
	if id := indexIdentity(r.dir, index, true); id != id0 {
		t.Fatalf("a digest kept for another checksum was believed: %q", id)
	}
	cachedir.WriteSealed(r.dir, IndexDigestFile, encodeIndexMemo(&indexMemo{Checksum: sum, Digests: gitrepo.Digests{Staged: "kept", Names: "kept"}, Artifacts: true}))
	if id := indexIdentity(r.dir, index, true); id != (IndexID{"staged:kept", "names:kept"}) {
		t.Fatalf("the kept digest of this checksum was not used: %q", id)
	}
	// One kept without the artifacts' facts is enough for a run that
	// keeps nothing; a run that keeps computes both again.
	cachedir.WriteSealed(r.dir, IndexDigestFile, encodeIndexMemo(&indexMemo{Checksum: sum, Digests: gitrepo.Digests{Staged: "kept", Names: "kept"}}))
	if id := indexIdentity(r.dir, index, false); id != (IndexID{"staged:kept", "names:kept"}) {
		t.Fatalf("the kept digest of this checksum was not used by a run that keeps nothing: %q", id)
	}
	if id := indexIdentity(r.dir, index, true); id != id0 {
		t.Fatalf("a kept digest without the artifacts' facts, in a run that keeps: %q", id)
	}
	if m, ok = readIndexMemo(r.dir); !ok || m.id() != id0 || !m.Artifacts {
		t.Fatalf("not kept again with the artifacts' facts: %+v", m)
	}
	os.WriteFile(cachedir.Path(r.dir, IndexDigestFile), []byte(indexMemoMagic+"\x03\xff"), 0o644)
	if id := indexIdentity(r.dir, index, true); id != id0 {
		t.Fatalf("with the kept digest corrupt: %q", id)
	}

	r.write("src/a.go", "package src // changed\n")
	r.git("add", "src/a.go")
	id1 := indexIdentity(r.dir, index, true)
	if id1.Staged == id0.Staged || id1.Names != id0.Names {
		t.Fatalf("after git add of a changed file: %q, was %q", id1, id0)
	}
	r.write("src/c.go", "package src\n")
	r.git("add", "src/c.go")
	if id := indexIdentity(r.dir, index, true); id.Staged == id1.Staged || id.Names == id1.Names || !strings.HasPrefix(id.Staged, "staged:") {
		t.Fatalf("after git add of a new file: %q, was %q", id, id1)
	}
}

func indexChecksum(t *testing.T, index string) (string, []byte) {
	t.Helper()
	b, err := os.ReadFile(index)
	if err != nil || len(b) < 32 {
		t.Fatal(err)
	}
	return hex.EncodeToString(b[len(b)-20:]), b
}

// An index go-git cannot decode (here, a mandatory extension it does not
// know, as a sparse index has) is identified by its size and checksum,
// as before there were digests: a change of its bytes changes it.
func TestIndexIdentityUndecodable(t *testing.T) {
	r := newRepo(t)
	r.write("a.go", "package a\n")
	r.commit("one")
	index := filepath.Join(r.dir, ".git", "index")
	_, b := indexChecksum(t, index)
	body := append(bytes.Clone(b[:len(b)-20]), "sdir"...)
	body = binary.BigEndian.AppendUint32(body, 0)
	sum := sha1.Sum(body)
	if err := os.WriteFile(index, append(body, sum[:]...), 0o644); err != nil {
		t.Fatal(err)
	}
	if id, want := indexIdentity(r.dir, index, true), same(fmt.Sprintf("%d:%x", len(body)+len(sum), sum)); id != want {
		t.Fatalf("identity %q, want %q", id, want)
	}
}

// The session's stale marks outlive git status, and git add of a changed
// file: the answer cached before is still the answer (the planted one is
// believed, as with nothing changed).
func TestEntryMarksAfterIndexRefresh(t *testing.T) {
	cfg := config.Default().Staleness
	r, ids, refs := plantedMarksRepo(t, cfg)
	refreshIndex(t, r, "docs/b.md")
	if got := entryMarks(t, r.dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("computed again after git status: %v", got)
	}
	// Checked against HEAD, the marks read the names the index holds: a
	// file staged with other content changes none of them.
	r.write("docs/b.md", "# b, changed\n")
	r.git("add", "docs/b.md")
	if got := entryMarks(t, r.dir, cfg, ids, refs); got["ADR-002"] != "planted" {
		t.Fatalf("computed again after git add of a changed file: %v", got)
	}
}

// IndexArtifacts answers what an index identity kept (or this process
// read) for the index as it is now, and nothing for another: after a
// stat-only rewrite or a change staged, until an identity is kept again.
func TestIndexArtifacts(t *testing.T) {
	r := newRepo(t)
	index := filepath.Join(r.dir, ".git", "index")
	r.write(".claude/commands/self-learning/lint.md", "# Lint\n")
	r.write("src/a.go", "package src\n")
	r.commit("one")
	os.MkdirAll(filepath.Join(r.dir, ".memory"), 0o755)
	if _, ok := IndexArtifacts(r.dir, index); ok {
		t.Fatal("facts before any identity was taken")
	}
	indexIdentity(r.dir, index, true)
	lastDigest.set(indexMemo{}, gitrepo.Artifacts{}) // this process forgets: the kept file answers
	a, ok := IndexArtifacts(r.dir, index)
	if !ok || a.Len() != 1 || a.Tree == [20]byte{} {
		t.Fatalf("kept facts: %v %+v", ok, a)
	}
	if _, ok := a.File(".claude/commands/self-learning/lint.md"); !ok {
		t.Fatalf("files %v", maps.Collect(a.All()))
	}
	refreshIndex(t, r, "src/a.go")
	if _, ok := IndexArtifacts(r.dir, index); ok {
		t.Fatal("facts kept for the index before git status rewrote it")
	}
	indexIdentity(r.dir, index, false)
	if _, ok := IndexArtifacts(r.dir, index); !ok {
		t.Fatal("the facts this process read are not answered")
	}
	lastDigest.set(indexMemo{}, gitrepo.Artifacts{})
	if _, ok := IndexArtifacts(r.dir, index); ok {
		t.Fatal("a run that keeps nothing kept the facts")
	}
	r.write(".claude/commands/self-learning/lint.md", "# Lint, edited\n")
	r.git("add", ".claude/commands/self-learning/lint.md")
	indexIdentity(r.dir, index, true)
	lastDigest.set(indexMemo{}, gitrepo.Artifacts{})
	if a, ok := IndexArtifacts(r.dir, index); !ok || a.Tree != [20]byte{} {
		t.Fatalf("after a change staged: %v, tree %x (want none)", ok, a.Tree)
	}
}

// The index digest's and the artifacts' files read back as written.
func TestIndexMemoCodec(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	m := indexMemo{Checksum: strings.Repeat("ab", 20), Digests: gitrepo.Digests{Staged: "s", Names: "n"}, Artifacts: true}
	if err := cachedir.WriteSealed(root, IndexDigestFile, encodeIndexMemo(&m)); err != nil {
		t.Fatal(err)
	}
	if got, ok := readIndexMemo(root); !ok || got != m {
		t.Fatalf("digest read back as %+v, want %+v", got, m)
	}
	a := artifactsMemo{Checksum: "c", Tree: [20]byte{3}, Files: []byte("packed\x00files")}
	if err := cachedir.WriteSealed(root, IndexArtifactsFile, encodeArtifactsMemo(&a)); err != nil {
		t.Fatal(err)
	}
	if got, ok := readArtifactsMemo(root); !ok || !reflect.DeepEqual(got, a) {
		t.Fatalf("artifacts read back as %+v, want %+v", got, a)
	}
}
