package gitrepo

import (
	"bytes"
	"encoding/hex"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// digest is IndexFacts' digests of dir's index, failing the test on an error; it
// also checks the checksum against IndexChecksum's.
func digest(t *testing.T, dir string) (d Digests, sum string) {
	t.Helper()
	path := filepath.Join(dir, ".git", "index")
	d, _, sum, fi, err := IndexFacts(path)
	if err != nil {
		t.Fatal(err)
	}
	if got, gfi := IndexChecksum(path); got != sum || gfi == nil || gfi.Size() != fi.Size() {
		t.Fatalf("IndexChecksum %q, IndexFacts' %q", got, sum)
	}
	return d, sum
}

// `git status` after a tracked file was touched rewrites the index with
// new stat data: the file's bytes and checksum change, the digest does
// not. Every change of what the index stages changes the digest.
func TestIndexDigest(t *testing.T) {
	dir := repo(t)
	put := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	d0, sum0 := digest(t, dir)
	index := filepath.Join(dir, ".git", "index")
	before, _ := os.ReadFile(index)
	// Later than the index's own mtime, so the entry's stat is stale.
	later := time.Now().Add(2 * time.Second)
	if err := os.Chtimes(filepath.Join(dir, "a.txt"), later, later); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "status", "--porcelain")
	after, _ := os.ReadFile(index)
	if bytes.Equal(before, after) {
		t.Fatal("git status did not rewrite the index: the test proves nothing")
	}
	d1, sum1 := digest(t, dir)
	if sum1 == sum0 || d1 != d0 {
		t.Fatalf("after a stat-only rewrite: checksum %s → %s, digests %v → %v (want a new checksum, the same digests)", sum0, sum1, d0, d1)
	}

	// Each change stages something else; the names change only with the
	// set of paths (and stages) the index holds.
	seen := map[string]string{d0.Staged: "the commit"}
	names := d0.Names
	changes := []struct {
		name     string
		do       func()
		newNames bool
	}{
		{"a changed file staged", func() { put("a.txt", "changed\n"); git(t, dir, "add", "a.txt") }, false},
		{"a new file staged", func() { put("c.txt", "c\n"); git(t, dir, "add", "c.txt") }, true},
		{"a file made executable", func() { git(t, dir, "update-index", "--chmod=+x", "c.txt") }, false},
		{"a file marked skip-worktree", func() { git(t, dir, "update-index", "--skip-worktree", "sub/b.txt") }, false},
		{"intent to add", func() { put("d.txt", "d\n"); git(t, dir, "add", "-N", "d.txt") }, true},
		{"a file removed from the index", func() { git(t, dir, "rm", "-q", "-f", "--cached", "c.txt") }, true},
		{"the cached trees written", func() { git(t, dir, "write-tree") }, false},
		{"a file unstaged", func() { git(t, dir, "reset", "-q", "--", "a.txt") }, false},
	}
	for _, c := range changes {
		c.do()
		d, _ := digest(t, dir)
		if was, ok := seen[d.Staged]; ok {
			t.Fatalf("%s: the digest is the one of %s", c.name, was)
		}
		seen[d.Staged] = c.name
		if (d.Names != names) != c.newNames {
			t.Fatalf("%s: names %s → %s, want a change: %v", c.name, names, d.Names, c.newNames)
		}
		names = d.Names
	}
}

// A merge conflict's stages are part of what the index stages.
func TestIndexDigestConflict(t *testing.T) {
	dir := repo(t)
	git(t, dir, "checkout", "-q", "-b", "other")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("other\n"), 0o644)
	git(t, dir, "commit", "-qam", "other")
	git(t, dir, "checkout", "-q", "main")
	os.WriteFile(filepath.Join(dir, "a.txt"), []byte("main\n"), 0o644)
	git(t, dir, "commit", "-qam", "main")
	d0, _ := digest(t, dir)
	cmd := gitCmd(dir, "merge", "-q", "other")
	if cmd.Run() == nil {
		t.Fatal("the merge did not conflict")
	}
	d1, _ := digest(t, dir)
	git(t, dir, "checkout", "--ours", "a.txt")
	git(t, dir, "add", "a.txt") // resolved: the resolve-undo entry stays
	d2, _ := digest(t, dir)
	if d1.Staged == d0.Staged || d2.Staged == d1.Staged || d2.Staged == d0.Staged {
		t.Fatalf("digests before, during and after the conflict: %v %v %v", d0, d1, d2)
	}
	// The conflict's stages are names of their own; resolved, the names
	// are those before it.
	if d1.Names == d0.Names || d2.Names != d0.Names {
		t.Fatalf("names before, during and after the conflict: %s %s %s", d0.Names, d1.Names, d2.Names)
	}
}

// What is not an index git wrote is an error or no checksum, never a
// digest: a symlink, a truncated or corrupted file.
func TestIndexDigestRefuses(t *testing.T) {
	dir := repo(t)
	index := filepath.Join(dir, ".git", "index")
	good, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "index")
	cases := map[string]func(){
		"a symlink": func() {
			os.WriteFile(other, good, 0o644)
			os.Remove(index)
			os.Symlink(other, index)
		},
		"truncated": func() { os.WriteFile(index, good[:len(good)/2], 0o644) },
		"a byte flipped": func() {
			b := bytes.Clone(good)
			b[len(b)/2] ^= 1
			os.WriteFile(index, b, 0o644)
		},
		"empty": func() { os.WriteFile(index, nil, 0o644) },
	}
	for name, spoil := range cases {
		t.Run(name, func(t *testing.T) {
			os.Remove(index)
			spoil()
			if d, _, _, _, err := IndexFacts(index); err == nil {
				t.Fatalf("digests %v of a spoilt index", d)
			}
			if name != "a byte flipped" && name != "truncated" {
				if sum, _ := IndexChecksum(index); sum != "" {
					t.Fatalf("checksum %s", sum)
				}
			}
		})
	}
}

// IndexFacts decodes what a clone holds: any bytes end in an error or a
// digest, never a panic, and the same bytes give the same digest and the
// checksum IndexChecksum reads.
func FuzzIndexDigest(f *testing.F) {
	dir := repo(f)
	good, err := os.ReadFile(filepath.Join(dir, ".git", "index"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add(good[:12])
	f.Add([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "index")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		d, _, sum, _, err := IndexFacts(path)
		if err != nil {
			return
		}
		d2, _, sum2, _, err := IndexFacts(path)
		if err != nil || d2 != d || sum2 != sum {
			t.Fatalf("decoded twice: %s %s, then %s %s (%v)", d, sum, d2, sum2, err)
		}
		if got, _ := IndexChecksum(path); got != sum && sum != "0000000000000000000000000000000000000000" {
			t.Fatalf("IndexChecksum %q, IndexFacts' %q", got, sum)
		}
	})
}

// IndexFacts' Artifacts hold every entry under the artifacts' directories
// (at the worktree's top or below it), with git's blob and mode, and no
// other; Tree is HEAD's tree exactly while the index holds HEAD's files:
// after a commit and a hard reset, not after a staged change, an
// intent-to-add or during a conflict.
func TestIndexFactsArtifacts(t *testing.T) {
	dir := repo(t)
	put := func(name, text string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	artifacts := []string{
		".claude/commands/self-learning/lint.md",
		".claude/skills/deploy/SKILL.md",
		".memory/knowledge/decisions.md",
		"svc/.claude/commands/self-learning/test.md",
	}
	for _, p := range artifacts {
		put(p, p+"\n")
	}
	put(".claude/settings.json", "{}\n")
	put("docs/skills/x.md", "x\n")
	git(t, dir, "add", "-A")
	git(t, dir, "update-index", "--chmod=+x", artifacts[1])
	git(t, dir, "commit", "-qm", "artifacts")

	facts := func() Artifacts {
		t.Helper()
		_, a, _, _, err := IndexFacts(filepath.Join(dir, ".git", "index"))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	head := func() [20]byte {
		t.Helper()
		var h [20]byte
		b, err := hex.DecodeString(git(t, dir, "rev-parse", "HEAD^{tree}"))
		if err != nil || len(b) != len(h) {
			t.Fatalf("rev-parse: %v", err)
		}
		copy(h[:], b)
		return h
	}
	a := facts()
	packed, ok := UnpackArtifacts(a.Tree, a.Pack())
	if !ok {
		t.Fatal("the packed files do not unpack")
	}
	if !bytes.Equal(packed.Pack(), a.Pack()) {
		t.Fatal("packed again, the unpacked files give other bytes")
	}
	for _, a := range []Artifacts{a, packed} {
		if a.Len() != len(artifacts) {
			t.Fatalf("files %v, want exactly %v", slices.Sorted(maps.Keys(maps.Collect(a.All()))), artifacts)
		}
		for _, p := range []string{".claude/settings.json", "docs/skills/x.md", "a.txt", ".claude/commands/self-learning/zz.md"} {
			if _, ok := a.File(p); ok {
				t.Errorf("%s: held", p)
			}
		}
	}
	for _, p := range artifacts {
		f, ok := a.File(p)
		if pf, pok := packed.File(p); pf != f || pok != ok {
			t.Errorf("%s: packed %v %v, as decoded %v %v", p, pf, pok, f, ok)
		}
		if !ok {
			t.Fatalf("%s missing", p)
		}
		fields := strings.Fields(git(t, dir, "ls-files", "-s", p)) // mode blob stage path
		if got := hex.EncodeToString(f.Blob[:]); got != fields[1] {
			t.Errorf("%s: blob %s, git says %s", p, got, fields[1])
		}
		if got := strconv.FormatUint(uint64(f.Mode), 8); got != fields[0] {
			t.Errorf("%s: mode %s, git says %s", p, got, fields[0])
		}
	}
	if a.Tree != head() {
		t.Fatalf("after a commit: tree %x, HEAD's %x", a.Tree, head())
	}

	for _, c := range []struct {
		name  string
		setup func()
	}{
		{"a staged change", func() {
			put(artifacts[0], "edited\n")
			git(t, dir, "add", artifacts[0])
		}},
		{"an intent-to-add", func() {
			put("new.txt", "new\n")
			git(t, dir, "add", "-N", "new.txt")
		}},
		{"a conflict", func() {
			git(t, dir, "checkout", "-qb", "other")
			put(artifacts[0], "theirs\n")
			git(t, dir, "commit", "-qam", "theirs")
			git(t, dir, "checkout", "-q", "main")
			put(artifacts[0], "ours\n")
			git(t, dir, "commit", "-qam", "ours")
			if err := gitCmd(dir, "merge", "-q", "other").Run(); err == nil {
				t.Fatal("the merge did not conflict")
			}
		}},
	} {
		c.setup()
		if a := facts(); a.Tree != [20]byte{} {
			t.Errorf("%s: tree %x, want none", c.name, a.Tree)
		}
		git(t, dir, "reset", "-q", "--hard")
		git(t, dir, "clean", "-qfd")
		if a := facts(); a.Tree != head() {
			t.Errorf("after %s and a hard reset: tree %x, HEAD's %x", c.name, a.Tree, head())
		}
	}
	for _, p := range []string{"x/.claude/skills/a/SKILL.md", ".memory/learning-log.jsonl"} {
		if !ArtifactPath(p) {
			t.Errorf("ArtifactPath(%q) = false", p)
		}
	}
	for _, p := range []string{".claude/settings.json", "docs/skills/x.md", "a.claude/commands/x.md", "src/.memoryx/y"} {
		if ArtifactPath(p) {
			t.Errorf("ArtifactPath(%q) = true", p)
		}
	}
}

// The kept artifacts' file is the clone's input: unpacking any bytes
// never panics, and what unpacks packs to bytes that unpack to the same,
// each file found by its path.
func FuzzUnpackArtifacts(f *testing.F) {
	seed := Artifacts{files: map[string]ArtifactFile{".claude/commands/a.md": {Mode: 0o100644}, ".claude/skills/b/SKILL.md": {Blob: [20]byte{1}}}}
	f.Add(seed.Pack())
	f.Add([]byte("x\x00short"))
	f.Add([]byte("\x00" + strings.Repeat("b", 24)))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, ok := UnpackArtifacts([20]byte{}, b)
		if !ok {
			return
		}
		files := maps.Collect(a.All())
		for p, want := range files {
			if got, ok := a.File(p); !ok || got != want {
				t.Fatalf("%q: %s is %v %v, listed as %v", b, p, got, ok, want)
			}
		}
		again, ok := UnpackArtifacts([20]byte{}, (&Artifacts{files: files}).Pack())
		if !ok || !maps.Equal(files, maps.Collect(again.All())) {
			t.Fatalf("%q: unpacked %v, then %v", b, files, maps.Collect(again.All()))
		}
	})
}
