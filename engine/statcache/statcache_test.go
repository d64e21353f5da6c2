package statcache

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/manifest"
)

func TestSame(t *testing.T) {
	base := Stat{Size: 10, Mtime: 100, Ctime: 200, Ino: 7}
	cases := []struct {
		name    string
		now     Stat
		def, mi bool
	}{
		{"identical", base, true, true},
		{"size", Stat{11, 100, 200, 7}, false, false},
		{"mtime", Stat{10, 101, 200, 7}, false, false},
		{"ctime only", Stat{10, 100, 201, 7}, false, true},
		{"inode only", Stat{10, 100, 200, 8}, false, true},
	}
	for _, c := range cases {
		e := Entry{Stat: base}
		if got := Same(e, c.now, Default); got != c.def {
			t.Errorf("%s default: %v, want %v", c.name, got, c.def)
		}
		if got := Same(e, c.now, Minimal); got != c.mi {
			t.Errorf("%s minimal: %v, want %v", c.name, got, c.mi)
		}
	}
}

func TestRacyAndVerifies(t *testing.T) {
	e := Entry{Stat: Stat{Mtime: 100}, SHA: manifest.Hash([]byte("x")), DJB2: manifest.DJB2([]byte("x"))}
	if !Racy(e, 100) || !Racy(e, 50) || Racy(e, 101) {
		t.Error("racy: an entry is racily clean when its mtime is not older than the cache's")
	}
	if !Verifies(e, manifest.Hash([]byte("x"))) || Verifies(e, manifest.Hash([]byte("y"))) {
		t.Error("sha256 verification")
	}
	if !Verifies(e, " "+manifest.DJB2([]byte("x"))+" ") || Verifies(Entry{SHA: e.SHA}, manifest.DJB2([]byte("x"))) {
		t.Error("legacy verification: only an entry carrying a djb2 verifies a djb2")
	}
}

// A cache round-trips; a changed mode or a file changed while read is not
// recorded; Save writes only when something changed.
func TestLoadSave(t *testing.T) {
	root := t.TempDir()
	art := filepath.Join(root, "a.md")
	os.WriteFile(art, []byte("hello\n"), 0o644)
	st, ok := Lstat(art)
	if !ok {
		t.Fatal("no stat")
	}
	c := Load(root, Default)
	c.Record("a.md", EntryOf(st, []byte("hello\n"), false), st)
	c.Record("b.md", EntryOf(st, []byte("changed while read"), false), Stat{Size: 1})
	if err := c.Save(root); err != nil {
		t.Fatal(err)
	}
	// The file is older than the cache now only if the clock moved; force it.
	old := mustStat(t, art).ModTime().Add(-1e9)
	os.Chtimes(art, old, old)
	st, _ = Lstat(art)
	c = Load(root, Default)
	c.Record("a.md", EntryOf(st, []byte("hello\n"), false), st)
	c.Save(root)
	c = Load(root, Default)
	if e, ok := c.Lookup("a.md", st); !ok || e.SHA != manifest.Hash([]byte("hello\n")) {
		t.Fatalf("lookup after save: %+v %v", e, ok)
	}
	if _, ok := c.Lookup("b.md", Stat{Size: 1}); ok {
		t.Error("a file that changed while read was recorded")
	}
	if _, ok := Load(root, Minimal).Lookup("a.md", st); ok {
		t.Error("a cache written in another check_stat mode was used")
	}
	e, _ := c.Lookup("a.md", st)
	c.Keep("a.md", e)
	if c.Dirty() {
		t.Error("an unchanged pass would rewrite the cache")
	}
}

func mustStat(t *testing.T, p string) os.FileInfo {
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

// Whatever the cache file holds, Load neither fails nor panics, and an
// entry it returns matches the stat it was asked about.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"version":1,"check_stat":"default","entries":{"a.md":{"s":6,"m":1,"c":2,"i":3,"h":"sha256:00"}}}`))
	f.Add([]byte(`{"version":1,"check_stat":"default","entries":null}`))
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		if _, err := cachedir.Ensure(root); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cachedir.Path(root, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c := Load(root, Default)
		want := Stat{Size: 6, Mtime: 1, Ctime: 2, Ino: 3}
		if e, ok := c.Lookup("a.md", want); ok && e.Stat != want {
			t.Fatalf("lookup returned another stat: %+v", e)
		}
	})
}

// Record keeps a key of its own: a path sliced from a larger text (the
// manifest's, decoded in place) must not keep that text for the pass.
func TestRecordCopiesKey(t *testing.T) {
	text := strings.Repeat("x", 4096) + "a.md"
	rel := text[4096:]
	s := Stat{Size: 1, Mtime: 1}
	c := Load(t.TempDir(), Default)
	c.Record(rel, Entry{Stat: s}, s)
	for k := range c.next {
		if k != "a.md" || unsafe.StringData(k) == unsafe.StringData(rel) {
			t.Fatalf("key %q shares the caller's bytes", k)
		}
	}
}

// LetOldGo decides then whether Save writes, as Dirty would have at the
// end of the pass: nothing changed writes nothing, a changed, a dropped or
// a later entry writes; the loaded entries are gone for the rest of the
// pass and back (this pass's) for the next.
func TestLetOldGo(t *testing.T) {
	root := t.TempDir()
	old := Stat{Size: 6, Mtime: 1, Ctime: 2, Ino: 3}
	seed := func() {
		c := Load(root, Default)
		c.Record("a.md", EntryOf(old, []byte("hello\n"), false), old)
		c.Record("b.md", EntryOf(old, []byte("world\n"), false), old)
		if err := c.Save(root); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name  string
		pass  func(c *Cache) // before LetOldGo
		after func(c *Cache) // after it
		dirty bool
	}{
		{"both kept", func(c *Cache) {
			for _, rel := range []string{"a.md", "b.md"} {
				e, _ := c.Lookup(rel, old)
				c.Keep(rel, e)
			}
		}, nil, false},
		{"one dropped", func(c *Cache) {
			e, _ := c.Lookup("a.md", old)
			c.Keep("a.md", e)
		}, nil, true},
		{"one rehashed", func(c *Cache) {
			e, _ := c.Lookup("a.md", old)
			c.Keep("a.md", e)
			now := Stat{Size: 4, Mtime: 5, Ctime: 6, Ino: 3}
			c.Record("b.md", EntryOf(now, []byte("new\n"), false), now)
		}, nil, true},
		{"kept after", func(c *Cache) {
			e, _ := c.Lookup("a.md", old)
			c.Keep("a.md", e)
		}, func(c *Cache) { c.Keep("b.md", EntryOf(old, []byte("world\n"), false)) }, true},
		{"recorded after a clean pass", func(c *Cache) {
			for _, rel := range []string{"a.md", "b.md"} {
				e, _ := c.Lookup(rel, old)
				c.Keep(rel, e)
			}
		}, func(c *Cache) {
			now := Stat{Size: 4, Mtime: 5, Ctime: 6, Ino: 3}
			c.Record("b.md", EntryOf(now, []byte("new\n"), false), now)
		}, true},
		{"kept after a clean pass", func(c *Cache) {
			e, _ := c.Lookup("a.md", old)
			c.Keep("a.md", e)
			c.Keep("b.md", EntryOf(old, []byte("world\n"), false))
		}, func(c *Cache) { c.Keep("c.md", EntryOf(old, []byte("more\n"), false)) }, true},
	}
	for _, tc := range cases {
		seed()
		// Written atomically (a new file renamed over it): another file.
		before := mustStat(t, cachedir.Path(root, FileName))
		c := Load(root, Default)
		c.Begin(root)
		tc.pass(c)
		want := c.Dirty()
		c.LetOldGo()
		if _, ok := c.Lookup("a.md", old); ok {
			t.Errorf("%s: a loaded entry found after LetOldGo", tc.name)
		}
		if tc.after != nil {
			tc.after(c)
			want = true
		}
		if got := c.Dirty(); got != want || got != tc.dirty {
			t.Errorf("%s: Dirty %v after LetOldGo, %v before, want %v", tc.name, got, want, tc.dirty)
		}
		if err := c.Save(root); err != nil {
			t.Fatal(err)
		}
		wrote := !os.SameFile(before, mustStat(t, cachedir.Path(root, FileName)))
		if wrote != tc.dirty {
			t.Errorf("%s: Save wrote %v, want %v", tc.name, wrote, tc.dirty)
		}
		// The next pass starts from this one's entries.
		c.Begin(root)
		if _, ok := c.old["a.md"]; !ok || c.oldGone {
			t.Errorf("%s: the next pass lost this pass's entries", tc.name)
		}
	}
}

// SaveAndUnload writes the pass's entries and lets them go: the next pass
// of the same cache reads them back as the last completed pass's (Lookup
// and Untouched answer as after Save, nothing held in between), and when
// the file cannot be written they stay in memory.
func TestSaveAndUnload(t *testing.T) {
	for _, unwritable := range []bool{false, true} {
		root := t.TempDir()
		old := time.Now().Add(-time.Hour).UnixNano() // not racily clean
		st := Stat{Size: 6, Mtime: old, Ctime: old, Ino: 3}
		c := Open(Default)
		c.Begin(root)
		c.Record("a.md", EntryOf(st, []byte("hello\n"), false), st)
		if err := c.Save(root); err != nil {
			t.Fatal(err)
		}
		c.Begin(root)
		e, ok := c.Lookup("a.md", st)
		if !ok {
			t.Fatal("no entry after a save")
		}
		c.Keep("a.md", e)
		if unwritable {
			// A directory where the file goes: the write fails.
			os.Remove(cachedir.Path(root, FileName))
			os.Mkdir(cachedir.Path(root, FileName), 0o755)
			c.Keep("b.md", e) // something to write
		}
		err := c.SaveAndUnload(root)
		if (err != nil) != unwritable {
			t.Fatalf("unwritable %v: %v", unwritable, err)
		}
		if !unwritable && (len(c.old) != 0 || len(c.next) != 0) {
			t.Fatalf("entries held after SaveAndUnload: %d, %d", len(c.old), len(c.next))
		}
		c.Begin(root)
		if got, ok := c.Untouched("a.md"); !ok || got != e {
			t.Errorf("unwritable %v: the next pass does not trust the entry it wrote: %+v %v", unwritable, got, ok)
		}
		if got, ok := c.Lookup("a.md", st); !ok || got != e {
			t.Errorf("unwritable %v: lookup after SaveAndUnload: %+v %v", unwritable, got, ok)
		}
	}
}
