package staleness

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// sampleCache builds a cache of the shape a memory of entries texts
// leaves: about 4.5 references per text over a few thousand distinct files
// (with lines, bare names and partial paths), and, in each of two modes,
// about outcomes resolved references, line checks and the tree's Markdown
// files, and a history walk with deletions and renames.
func sampleCache(seed int64, entries, outcomes int) cacheFile {
	rng := rand.New(rand.NewSource(seed))
	nfiles := max(8, entries*3/10)
	files := make([]string, nfiles)
	exts := []string{"go", "ts", "py", "md", "tsx", "rs"}
	for i := range files {
		files[i] = fmt.Sprintf("src/pkg%d/sub%d/file_%d.%s", rng.Intn(nfiles/8+1), rng.Intn(4), i, exts[rng.Intn(len(exts))])
	}
	zipf := rand.NewZipf(rng, 1.2, 4, uint64(nfiles-1))
	dirs := []string{"", "", "", "", ".memory/knowledge", "docs", "docs/adr"}
	cf := cacheFile{Local: "64769:1234567;64769:1234590;", Opts: "go\x00ts\x00py\x00\x01dist/\x00"}
	cf.Extract = make([]cachedRefs, entries)
	for i := range cf.Extract {
		e := &cf.Extract[i]
		e.Key = sha256.Sum256(binary.LittleEndian.AppendUint64(nil, uint64(i)))
		n := 1 + rng.Intn(8)
		dir := dirs[rng.Intn(len(dirs))] // the text's document
		for range n {
			p := files[zipf.Uint64()]
			r := Ref{Path: p, Raw: p, Dir: dir, Rooted: rng.Intn(10) == 0}
			switch rng.Intn(5) {
			case 0:
				r.Line = 1 + rng.Intn(800)
				r.Raw = fmt.Sprintf("%s:%d", p, r.Line)
			case 1:
				r.Path, r.Raw = path.Base(p), path.Base(p)
			}
			e.Refs = append(e.Refs, r)
		}
	}
	sort.Slice(cf.Extract, func(i, j int) bool { return bytes.Compare(cf.Extract[i].Key[:], cf.Extract[j].Key[:]) < 0 })
	hows := []string{"exact", "by-name", "by-suffix", "relative"}
	for _, mode := range []int{0, 2} {
		sec := treeSection{Mode: mode, Tree: fmt.Sprintf("%d\x00%x\x00%d:%x\x00\x00200\x00[]", mode, rng.Int63(), rng.Intn(1<<20), rng.Int63()), HasMD: true}
		for i := range 40 {
			sec.Ignore = append(sec.Ignore, ignoreDep{Name: fmt.Sprintf("/home/u/repo/src/pkg%d/.gitignore", i), Present: i%3 != 0})
			if sec.Ignore[i].Present {
				sec.Ignore[i].Sum = sha256.Sum256([]byte(sec.Ignore[i].Name))
			}
		}
		for i := range outcomes {
			p := files[rng.Intn(nfiles)]
			o := cachedOutcome{Path: p, Dir: dirs[rng.Intn(len(dirs))], Rooted: i%7 == 0}
			switch rng.Intn(6) {
			case 0:
				o.Missing, o.Searched = true, rng.Intn(200)
				if rng.Intn(2) == 0 {
					o.Moved = files[rng.Intn(nfiles)]
				}
			case 1:
				o.Skip, o.Searched, o.Truncated = NeverTracked, 200, true
			default:
				o.Found, o.How = p, hows[rng.Intn(len(hows))]
			}
			sec.Outcomes = append(sec.Outcomes, o)
			if i%4 == 0 {
				sec.EOF = append(sec.EOF, cachedEOF{Path: p, Dir: o.Dir, Line: 1 + rng.Intn(800), Past: rng.Intn(3) == 0})
			}
		}
		for i := range nfiles / 6 {
			sec.MD = append(sec.MD, fmt.Sprintf("docs/notes/n%d.md", i))
		}
		cf.Trees = append(cf.Trees, sec)
	}
	h := &cachedHistory{Head: fmt.Sprintf("%040x", rng.Int63()), Depth: 200, Complete: true, Truncated: true}
	for range 200 {
		var s [2][20]byte
		rng.Read(s[0][:])
		rng.Read(s[1][:])
		h.Steps = append(h.Steps, s)
	}
	for i := range outcomes / 10 {
		h.Dels = append(h.Dels, cachedDeletion{Step: i % 200, Path: files[rng.Intn(nfiles)]})
	}
	for i := range 20 {
		h.Renames = append(h.Renames, cachedRenames{Step: i * 7, Pairs: [][2]string{{files[rng.Intn(nfiles)], files[rng.Intn(nfiles)]}}})
	}
	cf.History = h
	return cf
}

// BenchmarkCacheCodec decodes and encodes the staleness cache of a
// 10,000-observation memory (10,000 texts, about 45,000 references, 3,000
// outcomes per mode) with encoding/gob, the previous format, and with the
// cache codec, side by side.
func BenchmarkCacheCodec(b *testing.B) {
	cf := sampleCache(1, 10000, 3000)
	var gb bytes.Buffer
	if err := gob.NewEncoder(&gb).Encode(&cf); err != nil {
		b.Fatal(err)
	}
	enc := appendCacheFile(nil, &cf)
	b.Run("gob/decode", func(b *testing.B) {
		for b.Loop() {
			var got cacheFile
			if err := gob.NewDecoder(bytes.NewReader(gb.Bytes())).Decode(&got); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(gb.Len()), "file-bytes")
	})
	b.Run("gob/encode", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			if err := gob.NewEncoder(&buf).Encode(&cf); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(gb.Len()), "file-bytes")
	})
	b.Run("codec/decode", func(b *testing.B) {
		for b.Loop() {
			if _, err := decodeCacheFile(enc); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(len(enc)), "file-bytes")
	})
	b.Run("codec/encode", func(b *testing.B) {
		for b.Loop() {
			appendCacheFile(nil, &cf)
		}
		b.ReportMetric(float64(len(enc)), "file-bytes")
	})
}

// normalized is cf as decoding gives it back: empty slices nil.
func normalized(cf cacheFile) cacheFile {
	out := cf
	out.Extract, out.Trees = nil, nil
	for _, e := range cf.Extract {
		e.Refs = nilIfEmpty(e.Refs)
		out.Extract = append(out.Extract, e)
	}
	for _, t := range cf.Trees {
		t.Ignore, t.Outcomes, t.EOF, t.MD = nilIfEmpty(t.Ignore), nilIfEmpty(t.Outcomes), nilIfEmpty(t.EOF), nilIfEmpty(t.MD)
		out.Trees = append(out.Trees, t)
	}
	if cf.History != nil {
		h := *cf.History
		h.Steps, h.Dels, h.Renames = nilIfEmpty(h.Steps), nilIfEmpty(h.Dels), nil
		for _, rs := range cf.History.Renames {
			rs.Pairs = nilIfEmpty(rs.Pairs)
			h.Renames = append(h.Renames, rs)
		}
		out.History = &h
	}
	return out
}

func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}

const (
	maxInt = int(^uint(0) >> 1)
	minInt = -maxInt - 1
)

// codecCases are values the codec must carry exactly.
func codecCases() map[string]cacheFile {
	weird := []string{"", "\x00", "a\x00b", "é/日本語.go", "\xff\xfe not utf-8", "line\nbreak", strings.Repeat("x", 300)}
	uni := cacheFile{Local: weird[3], Opts: weird[2]}
	for i, w := range weird {
		uni.Extract = append(uni.Extract, cachedRefs{Key: [32]byte{byte(i)}, Refs: []Ref{{Path: w, Raw: w + ":1", Dir: weird[(i+1)%len(weird)], Line: 1}, {Path: w, Raw: w}}})
	}
	uni.Trees = []treeSection{{Mode: 1, Tree: weird[1], MD: weird, HasMD: true,
		Outcomes: []cachedOutcome{{Path: weird[4], Dir: weird[0], Found: weird[5], How: weird[6], Skip: weird[1], Moved: weird[3]}}}}
	uni.History = &cachedHistory{Head: weird[2], Renames: []cachedRenames{{Pairs: [][2]string{{weird[0], weird[1]}, {weird[1], weird[0]}}}}}

	flags := cacheFile{
		Extract: []cachedRefs{{Refs: []Ref{{Path: "a.go", Raw: "a.go", Rooted: true}, {Path: "a.go", Raw: "./a.go", Rooted: true}, {Path: "", Raw: ""}, {Path: "", Raw: "x"}}}},
		Trees: []treeSection{{HasMD: true,
			Ignore:   []ignoreDep{{Name: "a", Present: true, Sum: sha256.Sum256(nil)}, {Name: "b", Sum: [32]byte{1}}},
			Outcomes: []cachedOutcome{{Rooted: true, Missing: true, Truncated: true}, {Missing: true}, {Truncated: true}},
			EOF:      []cachedEOF{{Rooted: true, Past: true}, {Past: true}, {Rooted: true}}}},
		History: &cachedHistory{Complete: true, Truncated: true},
	}

	big := cacheFile{
		Extract: []cachedRefs{{Key: [32]byte{31: 0xff}, Refs: []Ref{{Path: "a.go", Raw: "a.go:9", Line: maxInt}, {Path: "a.go", Raw: "a.go:-1", Line: minInt}, {Line: -1}, {Line: 1 << 40}}}},
		Trees: []treeSection{{Mode: minInt, Outcomes: []cachedOutcome{{Searched: maxInt}}, EOF: []cachedEOF{{Line: minInt}}},
			{Mode: maxInt, Outcomes: []cachedOutcome{{Searched: -7}}}},
		History: &cachedHistory{Depth: maxInt, Steps: [][2][20]byte{{{1}, {19: 2}}},
			Dels: []cachedDeletion{{Step: minInt, Path: "x"}, {Step: maxInt}}, Renames: []cachedRenames{{Step: -1}, {Step: maxInt}}},
	}

	many := cacheFile{}
	for i := range 300 {
		many.Trees = append(many.Trees, treeSection{Mode: i - 150, Tree: fmt.Sprint(i % 17), MD: []string{fmt.Sprint(i)}})
	}

	return map[string]cacheFile{
		"empty":          {},
		"local and opts": {Local: "64769:1234;64769:99;", Opts: "go\x00ts\x00\x01dist/\x00"},
		"empty history":  {History: &cachedHistory{}},
		"empty slices": {Extract: []cachedRefs{{Refs: []Ref{}}}, Trees: []treeSection{{Ignore: []ignoreDep{}, Outcomes: []cachedOutcome{}, EOF: []cachedEOF{}, MD: []string{}}},
			History: &cachedHistory{Steps: [][2][20]byte{}, Dels: []cachedDeletion{}, Renames: []cachedRenames{{Pairs: [][2]string{}}}}},
		"unicode and NUL": uni,
		"every flag":      flags,
		"big numbers":     big,
		"many trees":      many,
		"realistic":       sampleCache(2, 300, 100),
	}
}

func TestCacheCodecRoundTrip(t *testing.T) {
	for name, cf := range codecCases() {
		t.Run(name, func(t *testing.T) {
			enc := appendCacheFile(nil, &cf)
			if again := appendCacheFile(nil, &cf); !bytes.Equal(enc, again) {
				t.Fatal("two encodings of one value differ")
			}
			if pre := appendCacheFile([]byte("head\n"), &cf); string(pre) != "head\n"+string(enc) {
				t.Fatal("appendCacheFile does not append")
			}
			got, err := decodeCacheFile(enc)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if want := normalized(cf); !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded\n%+v\nwant\n%+v", got, want)
			}
			if (got.History == nil) != (cf.History == nil) {
				t.Fatal("a history record appeared or went away")
			}
			if re := appendCacheFile(nil, &got); !bytes.Equal(re, enc) {
				t.Fatal("the decoded value encodes to other bytes")
			}
		})
	}
	// Built twice from the same seed (new strings, new slices): the same
	// bytes.
	a, b := sampleCache(5, 200, 50), sampleCache(5, 200, 50)
	if !bytes.Equal(appendCacheFile(nil, &a), appendCacheFile(nil, &b)) {
		t.Error("equal values encode differently")
	}
	// The smallest encoding, spelled out: one string (""), Local and
	// Opts, no entry and no reference, no tree, no history.
	if got := appendCacheFile(nil, &cacheFile{}); !bytes.Equal(got, []byte{1, 0, 0, 0, 0, 0, 0, 0}) {
		t.Errorf("empty cacheFile encodes as %v", got)
	}
}

// enc builds encodings by hand.
type enc []byte

func (b enc) u(v uint64) enc    { return binary.AppendUvarint(b, v) }
func (b enc) i(v int64) enc     { return binary.AppendVarint(b, v) }
func (b enc) raw(p ...byte) enc { return append(b, p...) }
func (b enc) key() enc          { return append(b, make([]byte, 32)...) }

// table is a string table of strs.
func table(strs ...string) enc {
	b := enc{}.u(uint64(len(strs)))
	for _, s := range strs {
		b = b.u(uint64(len(s)))
	}
	for _, s := range strs {
		b = append(b, s...)
	}
	return b
}

// Each malformed encoding is an error, never a panic.
func TestCacheCodecRejects(t *testing.T) {
	empty := table("").u(0).u(0) // Local, Opts
	// One entry with one reference "a.go" (Raw the same), no tree, no
	// history: valid.
	oneRef := func(flags byte, refTail ...byte) enc {
		return table("", "a.go").u(0).u(0).u(1).u(1).key().u(1).raw(flags).u(1).i(0).raw(refTail...).u(0).u(0)
	}
	if cf, err := decodeCacheFile(oneRef(2, 0)); err != nil || len(cf.Extract) != 1 || cf.Extract[0].Refs[0] != (Ref{Path: "a.go", Raw: "a.go"}) {
		t.Fatalf("the valid base does not decode: %+v %v", cf, err)
	}
	if _, err := decodeCacheFile(empty.u(0).u(0).u(0).raw(0)); err != nil {
		t.Fatalf("the empty base does not decode: %v", err)
	}
	for name, data := range map[string][]byte{
		"nothing":                       nil,
		"only the table":                table("", "x"),
		"trailing byte":                 empty.u(0).u(0).u(0).raw(0, 0),
		"string index out of range":     table("").u(1).u(0).u(0).u(0).u(0).raw(0),
		"string index out of order":     table("a", "b").u(1).u(0).u(0).u(0).u(0).raw(0),
		"string never used":             table("a", "b").u(0).u(0).u(0).u(0).u(0).raw(0),
		"string longer than the input":  enc{}.u(1).u(100).raw('x'),
		"strings longer than the input": enc{}.u(3).u(1).u(1).u(1<<62).raw('x', 'y'),
		"string count too large":        enc{}.u(1 << 40).u(0),
		"entry count too large":         empty.u(1 << 50).u(0).u(0).raw(0),
		"reference count too large":     empty.u(1).u(1 << 50).key().u(0).u(0).raw(0),
		"references without entries":    empty.u(0).u(3).u(0).raw(0),
		"more references than counted":  table("", "a.go").u(0).u(0).u(1).u(1).key().u(2).raw(2).u(1).i(0).u(0).raw(2).u(1).i(0).u(0).u(0).raw(0),
		"fewer references than counted": empty.u(1).u(1).key().u(0).u(0).raw(0, 0, 0, 0),
		"bad reference flags":           oneRef(4, 0),
		"raw written as its path":       oneRef(0, 1, 0),
		"tree count too large":          empty.u(0).u(0).u(1 << 30).raw(0),
		"bad HasMD flags":               empty.u(0).u(0).u(1).i(0).u(0).u(0).u(0).u(0).raw(2).u(0).raw(0),
		"truncated ignore sum":          empty.u(0).u(0).u(1).i(0).u(0).u(1).u(0).raw(1).raw(make([]byte, 31)...),
		"bad outcome flags":             empty.u(0).u(0).u(1).i(0).u(0).u(0).u(1).raw(0, 0, 0, 0, 0, 0).i(0).raw(8).u(0).raw(0).u(0).raw(0),
		"bad line-check flags":          empty.u(0).u(0).u(1).i(0).u(0).u(0).u(0).u(1).raw(0, 0).i(0).raw(4).raw(0).u(0).raw(0),
		"history flags without bit 1":   empty.u(0).u(0).u(0).raw(2),
		"unknown history flag":          empty.u(0).u(0).u(0).raw(9),
		"truncated history":             empty.u(0).u(0).u(0).raw(1, 0, 0),
		"truncated step":                empty.u(0).u(0).u(0).raw(1).u(0).i(0).u(1).raw(make([]byte, 39)...),
		"overlong varint":               table("").raw(0x80, 0).u(0).u(0).u(0).u(0).raw(0),
		"varint overflow":               table("").raw(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f).u(0).u(0).u(0).u(0).raw(0),
		"truncated varint":              table("").raw(0x80),
	} {
		cf, err := decodeCacheFile(data)
		var ce *errCacheCodec
		if err == nil {
			t.Errorf("%s: decoded %+v", name, cf)
		} else if !errors.As(err, &ce) {
			t.Errorf("%s: %v is not a codec error", name, err)
		}
	}
}

// repeatsString reports whether the string table of data holds a string
// twice (what the decoder does not look for).
func repeatsString(data []byte) bool {
	d := cacheDecoder{b: data}
	d.strings()
	seen := map[string]bool{}
	for _, s := range d.strs {
		if seen[s] {
			return true
		}
		seen[s] = true
	}
	return false
}

// checkCodec decodes data and, when it decodes, wants it back from the
// value's encoding (bytes that decode to the same value when the table
// repeats a string).
func checkCodec(t testing.TB, data []byte) bool {
	t.Helper()
	cf, err := decodeCacheFile(data)
	if err != nil {
		return false
	}
	enc := appendCacheFile(nil, &cf)
	if !bytes.Equal(enc, data) && !repeatsString(data) {
		t.Fatalf("decoded % x\nre-encoded as % x", data, enc)
	}
	again, err := decodeCacheFile(enc)
	if err != nil {
		t.Fatalf("the re-encoding does not decode: %v", err)
	}
	if !reflect.DeepEqual(again, cf) {
		t.Fatalf("re-encoded value differs:\n%+v\n%+v", again, cf)
	}
	return true
}

// smallSample is a sample cache of about 2 KB encoded.
func smallSample(seed int64) cacheFile {
	cf := sampleCache(seed, 12, 8)
	cf.History.Steps, cf.History.Renames = cf.History.Steps[:4], cf.History.Renames[:1]
	for i := range cf.Trees {
		cf.Trees[i].Ignore = cf.Trees[i].Ignore[:2]
	}
	return cf
}

// Every truncation of a valid encoding is an error; every single-byte
// change decodes to an error or to a value that encodes back to it.
func TestCacheCodecCorruption(t *testing.T) {
	for name, cf := range map[string]cacheFile{"sample": smallSample(3), "every flag": codecCases()["every flag"]} {
		data := appendCacheFile(nil, &cf)
		for n := range len(data) {
			if _, err := decodeCacheFile(data[:n]); err == nil {
				t.Fatalf("%s: truncated to %d of %d bytes, it decodes", name, n, len(data))
			}
		}
		decoded := 0
		mut := make([]byte, len(data))
		for i := range data {
			for _, x := range []byte{0x01, 0x02, 0x10, 0x40, 0x80, 0xff} {
				copy(mut, data)
				mut[i] ^= x
				if checkCodec(t, mut) {
					decoded++
				}
			}
		}
		t.Logf("%s: %d bytes, %d of %d single-byte changes still decode", name, len(data), decoded, 6*len(data))
	}
}

// What a hostile encoding makes the decoder allocate is bounded by a
// small multiple of its size, whatever its counts claim.
func TestCacheCodecBoundedAlloc(t *testing.T) {
	big := 1 << 16
	inputs := map[string][]byte{
		"huge counts":       enc{}.u(1 << 60).u(1 << 60),
		"huge entry count":  table("").u(0).u(0).u(1 << 62).u(1 << 62).key(),
		"many MD strings":   append(table("").u(0).u(0).u(0).u(0).u(1).i(0).u(0).u(0).u(0).u(0).raw(1).u(uint64(big)), make([]byte, big)...),
		"many references":   append(table("").u(0).u(0).u(1).u(uint64(big/4)).key().u(uint64(big/4)), make([]byte, big)...),
		"many outcomes":     append(table("").u(0).u(0).u(0).u(0).u(1).i(0).u(0).u(0).u(uint64(big/8)), make([]byte, big)...),
		"many strings":      append(enc{}.u(uint64(big)), make([]byte, big)...),
		"many renames":      append(table("").u(0).u(0).u(0).u(0).u(0).raw(1).u(0).i(0).u(0).u(0).u(uint64(big/2)), make([]byte, big)...),
		"sample, truncated": func() []byte { cf := sampleCache(1, 2000, 500); b := appendCacheFile(nil, &cf); return b[:len(b)-1] }(),
	}
	for name, data := range inputs {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		decodeCacheFile(data)
		runtime.ReadMemStats(&after)
		if got, limit := after.TotalAlloc-before.TotalAlloc, uint64(24*len(data)+64<<10); got > limit {
			t.Errorf("%s: %d bytes allocated for %d bytes of input (limit %d)", name, got, len(data), limit)
		}
	}
}

// FuzzCacheCodec: arbitrary bytes never make the decoder panic, and what
// decodes encodes back to the same bytes (to bytes decoding to the same
// value when the string table repeats a string). The seeds are small (the
// fuzzer minimizes every new input it finds, a long one for long).
func FuzzCacheCodec(f *testing.F) {
	for name, cf := range codecCases() {
		if name != "realistic" {
			f.Add(appendCacheFile(nil, &cf))
		}
	}
	cf := smallSample(4)
	f.Add(appendCacheFile(nil, &cf))
	f.Add(realCacheBody(f))
	f.Add([]byte(table("a", "a").u(0).u(1).u(0).u(0).u(0).raw(0))) // a string twice
	f.Fuzz(func(t *testing.T, data []byte) {
		checkCodec(t, data)
	})
}

// realCacheBody is the encoded cacheFile a scan of a small memory outside
// git writes.
func realCacheBody(t testing.TB) []byte {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"src/auth/login.go": "a\nb\nc\n", "src/util.go": "package util\n",
		".memory/knowledge/decisions.md": decisions, ".memory/knowledge/pitfalls.md": pitfalls,
		".memory/learning-log.jsonl": obsLine("obs_a", "created", "see src/auth/login.go:3 and `src/util.go`") + "\n" +
			obsLine("obs_b", "observing", "src/gone.ts", "src/auth/login.go:9") + "\n",
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Default().Staleness
	c, err := Open(dir, Auto, cfg)
	if err != nil {
		t.Fatal(err)
	}
	log, err := manifest.ReadLog(manifest.PathsFor(dir).Log)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Scan(dir, c, log, OptionsFor(cfg)); err != nil {
		t.Fatal(err)
	}
	if err := c.SaveCache(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(cachedir.Path(dir, CacheName))
	if err != nil {
		t.Skip("no cache written here (no inodes):", err)
	}
	return data[len(cacheHeader(c.cache.local)):]
}
