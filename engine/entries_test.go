package engine

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/manifest"
)

// knowledgeRoot is a root whose memory holds decisions.md with the text
// decisions.
func knowledgeRoot(t testing.TB, decisions string) string {
	t.Helper()
	root := t.TempDir()
	p := manifest.PathsFor(root)
	if err := os.MkdirAll(filepath.Dir(p.Decisions), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Decisions, []byte(decisions), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

const sqliteADR = "# Decisions\n\n## ADR-001: Use SQLite\n\n- **Status**: Accepted\n"

// The knowledge entries read through the cache are the entries parsed
// from the files as they are, whatever happened to the files or to the
// cache since it was written.
func TestEntriesCacheMatchesParse(t *testing.T) {
	root := t.TempDir()
	p := manifest.PathsFor(root)
	if err := os.MkdirAll(filepath.Dir(p.Decisions), 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	check := func(step string) {
		t.Helper()
		want, err := index.Load(root)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 { // the cache written, then read
			got, _, err := loadEntries(root)
			if err != nil {
				t.Fatalf("%s: %v", step, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: entries through the cache\n%+v\nparsed\n%+v", step, got, want)
			}
		}
	}
	check("no knowledge files")
	write(p.Decisions, "# Decisions\n\n## ADR-001: Use SQLite\n\n- **Status**: Accepted\n\nBody one.\n\n## ADR-002: Old\n\n- **Status**: Deprecated\n")
	check("decisions only")
	write(p.Pitfalls, "# Pitfalls\n\n## PF-001: Flaky clock\n\n- **Area**: tests\n\nBody.\n")
	check("both files")
	// The same size, another title: the sum tells them apart.
	write(p.Decisions, "# Decisions\n\n## ADR-001: Use SQLitX\n\n- **Status**: Accepted\n\nBody one.\n\n## ADR-002: Old\n\n- **Status**: Deprecated\n")
	check("a title edited at the same size")
	write(p.Decisions, "# Decisions\n\n## ADR-002: Old\n\n- **Status**: Accepted\n")
	check("an entry removed, another revived")
	os.Remove(p.Pitfalls)
	check("a file removed")
	write(cachedir.Path(root, EntriesFile), entriesMagic+"\x03\xff\x81garbage")
	check("the cache corrupt")
	write(cachedir.Path(root, EntriesFile), "learnwatch knowledge entries 0\n")
	check("the cache of another version")
	write(p.Decisions, "# Decisions\n\n## ADR-001: Nested\n\n"+strings.Repeat(">", 200)+" deep\n")
	if _, _, err := loadEntries(root); err == nil {
		t.Fatal("a file index.Parse refuses is read from the cache")
	}
}

// The cache is in the clone, where anyone may write it: what it holds is
// made safe again before the index prints it, and an answer it keeps for
// the file's sum is the only one taken from it.
func TestEntriesCachePlanted(t *testing.T) {
	root := knowledgeRoot(t, sqliteADR)
	if _, _, err := loadEntries(root); err != nil {
		t.Fatal(err)
	}
	c, ok := readEntriesCache(root)
	if !ok || len(c.Files) != 1 || len(c.Files[0].Entries) != 1 {
		t.Fatalf("cache %+v, want the decisions' one entry", c)
	}
	c.Files[0].Entries[0].Title = "planted \x1b]52;c;Y3VybA==\x07 title\u202e"
	c.Files[0].Entries[0].Score, c.Files[0].Entries[0].Tags = 99, []string{"planted"}
	if err := cachedir.WriteSealed(root, EntriesFile, encodeEntries(&c)); err != nil {
		t.Fatal(err)
	}
	got, _, err := loadEntries(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !strings.Contains(got[0].Title, "planted") || strings.ContainsAny(got[0].Title, "\x1b\x07\u202e") || got[0].Score != 1 || got[0].Tags != nil {
		t.Fatalf("planted entry read as %+v: want it read, made safe, score 1 and no tags", got)
	}
	c.Files[0].Sum[0]++
	if err := cachedir.WriteSealed(root, EntriesFile, encodeEntries(&c)); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := loadEntries(root); len(got) != 1 || got[0].Title != "Use SQLite" {
		t.Fatalf("entries %+v under another sum: want the file parsed", got)
	}
}

// The entries' cache is read from a file anyone with write access to the
// clone can plant: whatever its bytes, loadEntries never panics nor fails
// for them, and a file whose sum the planted bytes do not hold has its
// entries parsed.
func FuzzEntriesCache(f *testing.F) {
	root := knowledgeRoot(f, sqliteADR)
	p := manifest.PathsFor(root)
	if err := os.WriteFile(p.Pitfalls, []byte("# Pitfalls\n\n## PF-001: Flaky clock\n"), 0o644); err != nil {
		f.Fatal(err)
	}
	want, err := index.Load(root)
	if err != nil {
		f.Fatal(err)
	}
	var sums [][sha256.Size]byte
	for _, path := range []string{p.Decisions, p.Pitfalls} {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		sums = append(sums, sha256.Sum256(b))
	}
	if _, _, err := loadEntries(root); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(cachedir.Path(root, EntriesFile)); err == nil {
		f.Add(b)
	}
	f.Add([]byte(entriesMagic + "garbage"))
	f.Add([]byte(entriesMagic + "\x03\xff\x81"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		path := cachedir.Path(root, EntriesFile)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		planted, _ := readEntriesCache(root)
		got, _, err := loadEntries(root)
		if err != nil {
			t.Fatalf("planted cache %q: %v", b, err)
		}
		for _, e := range got {
			if e.Score != 1 || e.Tags != nil || e.Stale != "" || e.Refs != nil {
				t.Fatalf("entry %+v: fields Parse leaves unset are set", e)
			}
		}
		if !slices.ContainsFunc(planted.Files, func(e entriesOf) bool { return slices.Contains(sums, e.Sum) }) && !reflect.DeepEqual(got, want) {
			t.Fatalf("no file's sum planted, entries %+v; want %+v", got, want)
		}
	})
}

// A cache that cannot be written is a warning; the entries are the file's.
func TestEntriesCacheNotWritten(t *testing.T) {
	root := knowledgeRoot(t, sqliteADR)
	if err := os.WriteFile(cachedir.Dir(root), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, warn, err := loadEntries(root)
	if err != nil || len(got) != 1 || got[0].ID != "ADR-001" {
		t.Fatalf("entries %+v, %v: want ADR-001", got, err)
	}
	if len(warn) != 1 || !strings.Contains(warn[0], "knowledge entries cache not written") {
		t.Fatalf("warnings %q: want the cache not written", warn)
	}
	os.Remove(cachedir.Dir(root))
	if _, warn, _ := loadEntries(root); warn != nil {
		t.Fatalf("warnings %q with a cache directory", warn)
	}
}
