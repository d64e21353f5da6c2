package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/index"
)

// randomRecord is a record with n paths, every field set from r (nil
// lists where empty, as a read gives them back).
func randomRecord(r *rand.Rand, n int) replayRecord {
	rec := replayRecord{Key: fmt.Sprintf("%064x", r.Uint64()), Confirmed: r.IntN(2) == 0,
		Head: fmt.Sprintf("%040x", r.Uint64()), Report: []byte(fmt.Sprintf(`{"deletions":%d}`, r.IntN(100))),
		GitAsked: r.IntN(2) == 0, MarkTracked: r.IntN(2) == 0, Withheld: r.IntN(2) == 0}
	if r.IntN(2) == 0 {
		rec.Index, rec.IndexID = "/r/.git/index", fmt.Sprintf("%x", r.Uint64())
	}
	for i := range n {
		rec.Paths = append(rec.Paths, fmt.Sprintf("/r/.claude/commands/c%05d.md", i))
		rec.Kinds = append(rec.Kinds, depKind(r.IntN(int(depGit)+1)))
		s := depStat{Stat: statcache.Stat{Size: r.Int64N(1 << 40), Mtime: r.Int64() - 1<<62, Ctime: r.Int64(), Ino: r.Uint64()}, Type: r.Uint32()}
		if r.IntN(4) == 0 {
			s = depStat{} // missing
		}
		if rec.Kinds[i] == depList && r.IntN(2) == 0 {
			for j := range s.Names {
				s.Names[j] = byte(r.Uint32())
			}
		}
		rec.Stats = append(rec.Stats, s)
	}
	for range r.IntN(5) {
		rec.Kept = append(rec.Kept, fmt.Sprintf("obs_%d", r.IntN(1000)))
	}
	if n == 0 {
		rec.Kinds, rec.Stats = nil, nil
	}
	return rec
}

// A record reads back as written, whatever its fields hold.
func TestReplayRecordRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, 2, 7, 500} {
		for range 20 {
			want := randomRecord(r, n)
			body, ok := codec.Unseal(encodeRecord(&want), replayMagic)
			if !ok {
				t.Fatal("the record as written is refused")
			}
			got, ok := decodeRecord(body)
			if !ok || !reflect.DeepEqual(*got, want) {
				t.Fatalf("%d paths: read back\n%+v\nwant\n%+v", n, got, want)
			}
		}
	}
}

// A record the checksum vouches for is still refused when it does not fit
// itself: a kind no version wrote, a listing sum for a path it does not
// have.
func TestReplayRecordRefusesInconsistent(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(root+"/.memory", 0o755); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	good := randomRecord(r, 3)
	write := func(rec replayRecord) {
		t.Helper()
		if err := cachedir.WriteSealed(root, ReplayFile, encodeRecord(&rec)); err != nil {
			t.Fatal(err)
		}
	}
	write(good)
	if readReplay(root) == nil {
		t.Fatal("a good record is refused")
	}
	bad := good
	bad.Kinds = []depKind{depFile, depGit + 1, depFile}
	write(bad)
	if readReplay(root) != nil {
		t.Fatal("a record with an unknown kind is read")
	}
	// A listing sum placed after the last path: written by hand.
	e := codec.NewEncoder(replayMagic, 0)
	e.String("k")
	e.Bool(true)
	e.Strings([]string{"/r/a"})
	e.Fixed([]byte{byte(depList)})
	for range 5 {
		e.Uvarint(1)
	}
	e.Uvarint(1)
	e.Uvarint(1) // the place of a second path
	e.Fixed(make([]byte, 32))
	e.String("")
	e.Bytes(nil)
	e.Strings(nil)
	for range 3 {
		e.Bool(false)
	}
	e.String("")
	e.String("")
	if err := cachedir.WriteSealed(root, ReplayFile, e.Sealed()); err != nil {
		t.Fatal(err)
	}
	if readReplay(root) != nil {
		t.Fatal("a record with a listing sum past its paths is read")
	}
}

// The log facts read back as written; ids out of order (binary search
// would miss some) are refused.
func TestLogFactsRoundTrip(t *testing.T) {
	want := logFacts{Stat: statcache.Stat{Size: 3_800_000, Mtime: 1_764_000_000_123_456_789, Ctime: -1, Ino: 1 << 63}, Type: 0o100644,
		IDs: []string{"obs_a", "obs_b", "obs_c"}, Confidence: []float64{0.5, 0, 0.95}}
	body, ok := codec.Unseal(encodeLogFacts(&want), logFactsMagic)
	if !ok {
		t.Fatal("the facts as written are refused")
	}
	got, ok := decodeLogFacts(body)
	if !ok || !reflect.DeepEqual(*got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	for _, id := range want.IDs {
		if c := got.confidence(id); c != want.Confidence[want.index(id)] {
			t.Fatalf("confidence of %s: %v", id, c)
		}
	}
	if c := got.confidence("obs_zz"); c != 0 {
		t.Fatalf("an id the facts lack has confidence %v", c)
	}
	for _, ids := range [][]string{{"obs_b", "obs_a", "obs_c"}, {"obs_a", "obs_a", "obs_c"}} {
		bad := want
		bad.IDs = ids
		body, _ := codec.Unseal(encodeLogFacts(&bad), logFactsMagic)
		if _, ok := decodeLogFacts(body); ok {
			t.Fatalf("ids %q read", ids)
		}
	}
}

// index is the place of id in f.IDs (tests).
func (f *logFacts) index(id string) int {
	for i, x := range f.IDs {
		if x == id {
			return i
		}
	}
	return -1
}

// The entries' cache reads back as written: every field index.Clean keeps.
func TestEntriesCacheRoundTrip(t *testing.T) {
	want := entriesCache{Files: []entriesOf{
		{Name: "decisions.md", Sum: [32]byte{1, 2, 3}, Entries: []index.Entry{
			{ID: "ADR-001", Kind: "decision", Title: "Use SQLite", Status: "Accepted", Area: "storage", Source: "decisions.md", Text: "## ADR-001\n\nBody."},
			{ID: "ADR-002", Kind: "decision", Title: "", Status: "Deprecated"},
		}},
		{Name: "pitfalls.md", Sum: [32]byte{31: 9}},
	}}
	body, ok := codec.Unseal(encodeEntries(&want), entriesMagic)
	if !ok {
		t.Fatal("the cache as written is refused")
	}
	got, ok := decodeEntries(body)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("read back %+v, want %+v", got, want)
	}
	// Every field a cached entry gives back is one Clean keeps: an entry
	// with all its fields set reads back as Clean makes it (Score 1
	// aside, which the index sets).
	full := index.Entry{ID: "i", Kind: "k", Title: "t", Status: "s", Area: "a", Score: 2, Source: "src", Text: "x", Order: 3,
		Refs: []string{"r"}, Tags: []string{"g"}, Stale: "st"}
	c := entriesCache{Files: []entriesOf{{Name: "n", Entries: []index.Entry{full}}}}
	body, _ = codec.Unseal(encodeEntries(&c), entriesMagic)
	got, _ = decodeEntries(body)
	clean := index.Clean(full)
	clean.Score = 0
	if len(got.Files) != 1 || !reflect.DeepEqual(got.Files[0].Entries, []index.Entry{clean}) {
		t.Fatalf("a full entry reads back as %+v, want %+v", got.Files, clean)
	}
}

// BenchmarkReplayRecordRead reads a record of the 10k fixture's size
// (2,400 paths) from the cache directory: a replayed pass's first step.
// About 0.29 ms and 24 allocations on the machine of 2026-11-28, where
// the fixture's real record took 0.72 ms and 255 allocations as gob.
func BenchmarkReplayRecordRead(b *testing.B) {
	root := b.TempDir()
	if err := os.Mkdir(root+"/.memory", 0o755); err != nil {
		b.Fatal(err)
	}
	rec := randomRecord(rand.New(rand.NewPCG(5, 6)), 2400)
	rec.Report = make([]byte, 16<<10)
	if err := cachedir.WriteSealed(root, ReplayFile, encodeRecord(&rec)); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if readReplay(root) == nil {
			b.Fatal("no record")
		}
	}
}
