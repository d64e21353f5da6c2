package staleness

import (
	"os"
	"reflect"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/config"
)

// The cache of entry references gives what extraction gives: for
// unchanged texts from the file, for a changed text or other options by
// extracting again, and a corrupt file is ignored.
func TestEntryRefsCache(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(root+"/.memory", 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default().Staleness
	ids := []string{"ADR-001", "PF-001"}
	texts := map[string]string{
		"ADR-001": "Use the store in `src/store.go`; see [the notes](../../docs/notes.md).",
		"PF-001":  "Never call `Flush` from `cmd/server/main.go:40`.",
	}
	want := func(texts map[string]string, cfg config.Config) map[string][]Ref {
		opts := OptionsFor(cfg.Staleness)
		opts.LinkBase = knowledgeDir
		out := map[string][]Ref{}
		for _, id := range ids {
			out[id] = ExtractMarkdown([]byte(texts[id]), opts)
		}
		return out
	}
	check := func(what string, cfg config.Config, texts map[string]string) {
		t.Helper()
		got, err := EntryRefs(root, cfg.Staleness, ids, texts)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if w := want(texts, cfg); !reflect.DeepEqual(got, w) {
			t.Fatalf("%s: got %+v, want %+v", what, got, w)
		}
	}
	full := config.Default()
	full.Staleness = cfg
	check("first (extracted)", full, texts)
	if _, err := os.Stat(cachedir.Path(root, EntryRefsFile)); err != nil {
		t.Fatalf("no cache written: %v", err)
	}
	check("second (from the cache)", full, texts)
	texts["PF-001"] = "Never call `Flush` from `cmd/worker/main.go`."
	check("a changed entry", full, texts)
	other := full
	other.Staleness.Extensions = []string{"md"}
	check("other extensions", other, texts)
	os.WriteFile(cachedir.Path(root, EntryRefsFile), []byte(entryRefsMagic+"garbage"), 0o644)
	check("a corrupt cache", full, texts)
}

// The entry-refs cache is read from a file anyone with write access to the
// clone can plant: whatever its bytes, EntryRefs never panics and returns
// what extraction gives (a cache that does not decode is ignored; one that
// decodes under the right options key is trusted only for the texts whose
// hash it holds, and a planted entry can only name paths, which the
// staleness check then verifies like any other reference).
func FuzzEntryRefsCache(f *testing.F) {
	f.Add([]byte(entryRefsMagic + "garbage"))
	f.Add([]byte(entryRefsMagic))
	f.Add([]byte{})
	root := f.TempDir()
	os.MkdirAll(root+"/.memory", 0o755)
	cfg := config.Default().Staleness
	ids := []string{"ADR-001"}
	texts := map[string]string{"ADR-001": "See `src/store.go:12` and [notes](../../docs/notes.md)."}
	if _, err := EntryRefs(root, cfg, ids, texts); err != nil {
		f.Fatal(err)
	}
	if b, err := os.ReadFile(cachedir.Path(root, EntryRefsFile)); err == nil {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		os.WriteFile(cachedir.Path(root, EntryRefsFile), data, 0o644)
		if _, err := EntryRefs(root, cfg, ids, texts); err != nil {
			t.Fatal(err)
		}
	})
}

// The cache file reads back as written; a text's key written twice is
// refused.
func TestEntryRefsCodec(t *testing.T) {
	want := entryRefsFile{Opts: "opts-key", Refs: map[[32]byte][]Ref{
		{1}:     {{Path: "src/store.go", Line: 12, Raw: "`src/store.go:12`", Rooted: false, Dir: ""}, {Path: "docs/notes.md", Raw: "../../docs/notes.md", Rooted: true, Dir: ".memory/knowledge"}},
		{2}:     nil,
		{31: 7}: {{Path: "a.go", Line: 1 << 30}},
	}}
	body, ok := codec.Unseal(encodeEntryRefs(&want), entryRefsMagic)
	if !ok {
		t.Fatal("the cache as written is refused")
	}
	got, ok := decodeEntryRefs(body)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	e := codec.NewEncoder(entryRefsMagic, 0)
	e.String("opts-key")
	e.Uvarint(2)
	for range 2 {
		e.Fixed(make([]byte, 32))
		e.Uvarint(0)
	}
	body, _ = codec.Unseal(e.Sealed(), entryRefsMagic)
	if _, ok := decodeEntryRefs(body); ok {
		t.Fatal("a key written twice is read")
	}
}
