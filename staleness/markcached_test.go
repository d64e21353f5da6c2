package staleness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// MarkCached keeps only the first stale reference of each id, never the
// findings: over random logs (ids repeated, ids a knowledge section or a
// source file also has, several stale references to a line, deprecated,
// corrupt and invalid lines, marks of this check and of other tools, a
// person's resolution) it counts, marks and writes exactly what ScanCached
// followed by Mark does, with the cache cold and warm.
func TestMarkCachedMatchesScanThenMark(t *testing.T) {
	r, _ := scanRepo(t)
	// The source has a stale reference of its own (old.go was removed), and
	// a name an observation's id can have: a line of the same id comes
	// before it.
	r.write("obs_design.md", "# Design\n\nThe parser lives in src/auth/old.go:1 and src/auth/login.go:2.\n")
	r.commit("notes")
	cfg := config.Default().Staleness
	cfg.Sources = []string{"obs_design.md"}
	ids := []string{"obs_a", "obs_b", "obs_c", "obs_d", "ADR-001", "PF-001", "obs_design.md", ""}
	texts := []string{
		"see src/auth/login.go:3",
		"use src/util.go",
		"src/auth/old.go:2 and src/missing.ts:1",
		"src/auth/login.go:9 then src/auth/old.go",
		"src/parser/gone.go",
		"nothing to check",
		"lib/util.go",
	}
	reasons := []string{"", ReasonPrefix + "src/util.go", ReasonPrefix + "src/auth/login.go:9", "other-tool:x"}
	rng := rand.New(rand.NewPCG(7, 11))
	for round := range 40 {
		var lines []string
		for range 1 + rng.IntN(14) {
			if rng.IntN(12) == 0 {
				lines = append(lines, `{not json`)
				continue
			}
			status := []string{"observing", "ready", "created", "deprecated"}[rng.IntN(4)]
			var ev []string
			for range rng.IntN(3) {
				ev = append(ev, texts[rng.IntN(len(texts))])
			}
			o := map[string]any{
				"id": ids[rng.IntN(len(ids))], "type": "pitfall", "pattern": "p", "confidence": 0.5, "observations": 1,
				"first_seen": "2024-01-01T00:00:00Z", "last_seen": "2024-01-01T00:00:00Z", "status": status,
				"evidence": ev, "details": texts[rng.IntN(len(texts))], "quality_ok": true,
			}
			if reason := reasons[rng.IntN(len(reasons))]; reason != "" {
				o["mayBeStale"], o["needsReview"], o["staleReason"] = true, rng.IntN(2) == 0, reason
			}
			if rng.IntN(4) == 0 {
				o[manifest.ResolutionKey] = map[string]any{"staleReasons": []string{reasons[1+rng.IntN(2)]}}
			}
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatal(err)
			}
			lines = append(lines, string(b))
		}
		data := []byte(strings.Join(lines, "\n") + "\n")
		if rng.IntN(2) == 0 {
			os.Remove(cachedir.Path(r.dir, CacheName))
		}
		want := manifest.ParseLog(data)
		c, err := Open(r.dir, Auto, cfg)
		if err != nil {
			t.Fatal(err)
		}
		rep, _, err := ScanCached(context.Background(), r.dir, c, cfg, want)
		if err != nil {
			t.Fatal(err)
		}
		wantMarked := Mark(want, rep.Stale)
		got := manifest.ParseLog(data)
		if c, err = Open(r.dir, Auto, cfg); err != nil {
			t.Fatal(err)
		}
		m, _, err := MarkCached(context.Background(), r.dir, c, cfg, got)
		if err != nil {
			t.Fatal(err)
		}
		if m.Stale != len(rep.Stale) {
			t.Fatalf("round %d: %d findings, Scan then Mark %d\n%s", round, m.Stale, len(rep.Stale), data)
		}
		if g, w := markedLines(got, m.Marked), markedLines(want, wantMarked); g != w {
			t.Fatalf("round %d: marked\n%s\nScan then Mark marked\n%s\nlog:\n%s", round, g, w, data)
		}
		if fmt.Sprint(m.Inputs) != fmt.Sprint(rep.Inputs) {
			t.Fatalf("round %d: inputs %v, want %v", round, m.Inputs, rep.Inputs)
		}
		gb, err1 := got.Bytes()
		wb, err2 := want.Bytes()
		if err1 != nil || err2 != nil || !bytes.Equal(gb, wb) {
			t.Fatalf("round %d: the logs differ (%v, %v):\n%s\nwant:\n%s", round, err1, err2, gb, wb)
		}
	}
}

// markedLines names each marked line by its place in log, with the marks
// it had before and has now.
func markedLines(log *manifest.Log, marked []Marked) string {
	at := map[*manifest.Line]int{}
	for i, ln := range log.Lines {
		at[ln] = i
	}
	var b strings.Builder
	for _, m := range marked {
		fmt.Fprintf(&b, "%d %+v -> %+v\n", at[m.Line], m.Marks, m.Line.Marks())
	}
	return b.String()
}

// The extractions of a cache file are looked up as a map filled in the
// file's order would have them, whatever the order and repeats of the
// file (a save writes them by increasing key, once each).
func TestOldExtractsAsMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for round := range 200 {
		var list []cachedRefs
		want := map[[32]byte][]Ref{}
		for i := range rng.IntN(12) {
			var k [32]byte
			k[rng.IntN(2)*31] = byte(rng.IntN(4)) // few keys: repeats
			refs := []Ref{{Path: fmt.Sprint(round, i)}}
			list = append(list, cachedRefs{k, refs})
			want[k] = refs
		}
		if rng.IntN(2) == 0 {
			slices.SortFunc(list, func(a, b cachedRefs) int { return bytes.Compare(a.Key[:], b.Key[:]) })
		}
		in := slices.Clone(list)
		old := newOldExtracts(in)
		if fmt.Sprint(in) != fmt.Sprint(list) {
			t.Fatalf("the file's list was changed: %v, read %v", in, list)
		}
		if len(old.list) != len(want) || len(old.used) != len(want) {
			t.Fatalf("%d extractions kept of %v, want %d", len(old.list), list, len(want))
		}
		for k, refs := range want {
			i, ok := old.find(k)
			if !ok || fmt.Sprint(old.list[i].Refs) != fmt.Sprint(refs) {
				t.Fatalf("key %v: %v, want %v (of %v)", k, old.list[i].Refs, refs, list)
			}
		}
		var k [32]byte
		k[5] = 1
		if _, ok := old.find(k); ok {
			t.Fatal("found a key the file does not hold")
		}
	}
}

// A large file's extractions are found through the bucket index: every
// key it holds, none it does not, whatever the spread of the keys (sums
// spread evenly, and keys sharing their first bytes, which fall in one
// bucket).
func TestOldExtractsIndexed(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	key := func(clustered bool) [32]byte {
		var k [32]byte
		for i := range k {
			k[i] = byte(rng.Uint32())
		}
		if clustered {
			copy(k[:9], "clustered") // one bucket for all of them
		}
		return k
	}
	for _, n := range []int{63, 64, 65, 100, 1000, 4097} {
		for _, clustered := range []bool{false, true} {
			var list []cachedRefs
			seen := map[[32]byte]bool{}
			for i := range n {
				k := key(clustered && i%3 == 0)
				seen[k] = true
				list = append(list, cachedRefs{k, []Ref{{Path: fmt.Sprint(i)}}})
			}
			slices.SortFunc(list, func(a, b cachedRefs) int { return bytes.Compare(a.Key[:], b.Key[:]) })
			old := newOldExtracts(slices.Clone(list))
			if n >= 64 && old.starts == nil {
				t.Fatalf("n=%d: not indexed", n)
			}
			for _, e := range list {
				i, ok := old.find(e.Key)
				if !ok || old.list[i].Key != e.Key {
					t.Fatalf("n=%d clustered=%v: key %x not found", n, clustered, e.Key[:8])
				}
			}
			for range 200 {
				k := key(clustered && rng.IntN(2) == 0)
				if seen[k] {
					continue
				}
				if _, ok := old.find(k); ok {
					t.Fatalf("n=%d clustered=%v: found %x, not in the file", n, clustered, k[:8])
				}
			}
			// Keys at either end of the key space.
			for _, k := range [][32]byte{{}, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}} {
				if _, ok := old.find(k); ok != seen[k] {
					t.Fatalf("n=%d: edge key %x: %v", n, k[:8], ok)
				}
			}
		}
	}
}

// TestInputsOutsideGit: outside git every file a reference was looked up
// at is an input of the scan, present or not, once (a source the scan
// reads is also referenced), and MarkCached names the same inputs as
// ScanCached; a pass replay that missed one would replay stale marks
// after the file came back or went.
func TestInputsOutsideGit(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "src/here.go"), "package here\n")
	writeFile(t, filepath.Join(dir, "docs/notes.md"), "# Notes\n\nSee src/here.go and src/gone.go.\n")
	writeFile(t, filepath.Join(dir, ".memory/knowledge/decisions.md"), "")
	cfg := config.Default().Staleness
	cfg.Sources = []string{"docs/notes.md"}
	data := []byte(obsLine("obs_a", "created", "uses src/here.go:1 and src/gone.go") + "\n" +
		obsLine("obs_b", "observing", "documented in docs/notes.md") + "\n")
	c, err := Open(dir, Auto, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rep, _, err := ScanCached(context.Background(), dir, c, cfg, manifest.ParseLog(data))
	if err != nil {
		t.Fatal(err)
	}
	if c, err = Open(dir, Auto, cfg); err != nil {
		t.Fatal(err)
	}
	m, _, err := MarkCached(context.Background(), dir, c, cfg, manifest.ParseLog(data))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []Inputs{rep.Inputs, m.Inputs} {
		if !slices.IsSorted(in.Files) || len(slices.Compact(slices.Clone(in.Files))) != len(in.Files) {
			t.Errorf("inputs not sorted, or named twice: %q", in.Files)
		}
		for _, rel := range []string{"src/here.go", "src/gone.go", "docs/notes.md"} {
			if !slices.Contains(in.Files, filepath.Join(dir, filepath.FromSlash(rel))) {
				t.Errorf("%s is not an input: %q", rel, in.Files)
			}
		}
	}
	if fmt.Sprint(m.Inputs) != fmt.Sprint(rep.Inputs) {
		t.Errorf("MarkCached's inputs %v, ScanCached's %v", m.Inputs, rep.Inputs)
	}
}

// MarkCached lets the tree's listing go once its scan is done; a Checker
// asked again lists the tree again and answers as a fresh one (a name
// looked up by base name included).
func TestMarkCachedThenScanAgain(t *testing.T) {
	for _, inGit := range []bool{false, true} {
		dir := t.TempDir()
		if inGit {
			r := newRepo(t)
			dir = r.dir
		}
		for rel, body := range map[string]string{"src/deep/here.go": "package here\n", "src/deep/other.go": "package here\n", ".memory/knowledge/decisions.md": ""} {
			writeFile(t, filepath.Join(dir, filepath.FromSlash(rel)), body)
		}
		data := []byte(obsLine("obs_a", "created", "see here.go:1, deep/here.go and src/gone.go") + "\n")
		cfg := config.Default().Staleness
		c, err := Open(dir, Worktree, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := MarkCached(context.Background(), dir, c, cfg, manifest.ParseLog(data)); err != nil {
			t.Fatal(err)
		}
		// References it has not decided yet: it needs the listing again.
		data = append(data, obsLine("obs_b", "created", "see other.go and deep/other.go:1")+"\n"...)
		again, err := Scan(dir, c, manifest.ParseLog(data), OptionsFor(cfg))
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := Scan(dir, open(t, dir, Worktree), manifest.ParseLog(data), OptionsFor(cfg))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(again.Stale, again.Checked) != fmt.Sprint(fresh.Stale, fresh.Checked) || len(fresh.Stale) != 1 || fresh.Checked != 5 {
			t.Errorf("in git %v: a spent Checker found %+v (%d checked), a fresh one %+v (%d)", inGit, again.Stale, again.Checked, fresh.Stale, fresh.Checked)
		}
	}
}
