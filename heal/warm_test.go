package heal

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/manifest"
)

// warmMemory is a memory with two rendered commands, reconciled once with
// a warm state: it returns the root, the state and the options that keep
// it.
func warmMemory(t *testing.T) (string, *Warm, Options) {
	t.Helper()
	return warmMemoryWith(t, "")
}

// warmMemoryWith is warmMemory with details for the first observation.
func warmMemoryWith(t *testing.T, detailsA string) (string, *Warm, Options) {
	t.Helper()
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_a", manifest.Workflow, "Run the linter before pushing", detailsA)+
			readyObs("obs_b", manifest.Workflow, "Regenerate the client after the schema", ""))
	runRender(t, root)
	w := &Warm{}
	opts := Options{Now: testNow, LockTimeout: 10 * time.Second, Cache: statcache.Open(statcache.Default), Warm: w}
	if _, err := Reconcile(context.Background(), root, opts); err != nil {
		t.Fatal(err)
	}
	if !w.Valid() {
		t.Fatal("no warm state after a pass")
	}
	return root, w, opts
}

// A state whose files were written within the racy window is not taken
// until Prove compared their contents, and Prove refuses one whose file
// holds other bytes under the recorded stat (a rewrite within the same
// clock tick, which no stat can tell).
func TestWarmProve(t *testing.T) {
	t.Run("racy until proved", func(t *testing.T) {
		root, w, _ := warmMemory(t)
		p := manifest.PathsFor(root)
		// The files were written just before the stats were taken: racy.
		w.at = time.Now().UnixNano()
		if w.usable(p, map[string]bool{}) {
			t.Fatal("a racily written state was taken")
		}
		if w.Prove(p) {
			t.Fatal("proved within the racy window")
		}
		time.Sleep(racyWindow + 10*time.Millisecond)
		if !w.Prove(p) || !w.usable(p, map[string]bool{}) {
			t.Fatal("an unchanged state was not proved")
		}
	})
	t.Run("same stat, other bytes", func(t *testing.T) {
		root, w, _ := warmMemory(t)
		p := manifest.PathsFor(root)
		rewriteInTick(t, w, p.Log, []byte(`"confidence":0.95`), []byte(`"confidence":0.15`))
		time.Sleep(racyWindow + 10*time.Millisecond)
		if w.Prove(p) || w.Valid() {
			t.Fatal("a log with other bytes was proved")
		}
	})
	// An edit's pass writes the manifest alone: the log proved before
	// keeps its proof (its stat unchanged), and the manifest is proved by
	// the sum of the bytes the pass wrote, which a rewrite of the same
	// size within the tick of its stat fails.
	for _, rewrite := range []bool{false, true} {
		t.Run(map[bool]string{false: "an edit's pass proves the manifest alone", true: "an edit's manifest rewritten within the tick"}[rewrite], func(t *testing.T) {
			root, w, opts := warmMemory(t)
			p := manifest.PathsFor(root)
			time.Sleep(racyWindow + 10*time.Millisecond)
			if !w.Prove(p) {
				t.Fatal("an unchanged state was not proved")
			}
			rel := firstArtifact(t, p)
			if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), []byte("# edited by a person\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			logBefore, _ := statcache.Lstat(p.Log)
			opts.Touched = map[string]bool{rel: true}
			opts.Now = testNow.Add(time.Minute)
			res, err := Reconcile(context.Background(), root, opts)
			if err != nil || res.Edits != 1 {
				t.Fatalf("edit pass: %d edits, %v", res.Edits, err)
			}
			if logNow, _ := statcache.Lstat(p.Log); logNow != logBefore {
				t.Fatal("the edit's pass wrote the log: nothing left to carry a proof over")
			}
			for i, f := range w.files {
				if want := f.path == p.Log; (f.path == p.Log || f.path == p.Manifest) && w.sure[i] != want {
					t.Errorf("%s: needs no proof %v, want %v", filepath.Base(f.path), w.sure[i], want)
				}
			}
			if _, ok := w.sums[p.Manifest]; !ok || w.proved {
				t.Fatalf("after the edit's pass: sum of the manifest kept %v, proved %v", ok, w.proved)
			}
			if rewrite {
				rewriteInTick(t, w, p.Manifest, []byte("sha256:"), []byte("SHA256:"))
			}
			proveOnceSettled(t, w, p, !rewrite)
		})
	}
	// A deletion's pass writes the log and the manifest: both are proved
	// by the sums of what it wrote, which a log rewritten with the same
	// size within the tick of its stat fails.
	for _, rewrite := range []bool{false, true} {
		t.Run(map[bool]string{false: "a deletion's pass proves both files by their sums", true: "a deletion's log rewritten within the tick"}[rewrite], func(t *testing.T) {
			root, w, opts := warmMemory(t)
			p := manifest.PathsFor(root)
			if err := os.Remove(filepath.Join(root, filepath.FromSlash(firstArtifact(t, p)))); err != nil {
				t.Fatal(err)
			}
			opts.Now = testNow.Add(time.Minute)
			res, err := Reconcile(context.Background(), root, opts)
			if err != nil || res.Deletions != 1 {
				t.Fatalf("deletion pass: %d deletions, %v", res.Deletions, err)
			}
			_, logSum := w.sums[p.Log]
			_, manifestSum := w.sums[p.Manifest]
			if !logSum || !manifestSum || w.proved {
				t.Fatalf("after the deletion's pass: sums of the log %v and the manifest %v, proved %v", logSum, manifestSum, w.proved)
			}
			if rewrite {
				rewriteInTick(t, w, p.Log, []byte(`"type"`), []byte(`"TYPE"`))
			}
			proveOnceSettled(t, w, p, !rewrite)
		})
	}
	t.Run("only a touched pass without events on the state's files takes it", func(t *testing.T) {
		root, w, _ := warmMemory(t)
		p := manifest.PathsFor(root)
		time.Sleep(racyWindow + 10*time.Millisecond)
		if !w.Prove(p) || !w.usable(p, map[string]bool{}) {
			t.Fatal("a proved state was not taken")
		}
		if w.usable(p, nil) {
			t.Fatal("a pass that checks every file took the state")
		}
		if w.usable(p, map[string]bool{".memory/learning-log.jsonl": true}) {
			t.Fatal("an event on the log left the state in use")
		}
	})
}

// firstArtifact is the path of the manifest's first entry.
func firstArtifact(t *testing.T, p manifest.Paths) string {
	t.Helper()
	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	return m.Entries[0].Path
}

// proveOnceSettled waits out the racy window of w's stats and requires
// Prove to prove w, or to refuse and drop it.
func proveOnceSettled(t *testing.T, w *Warm, p manifest.Paths, want bool) {
	t.Helper()
	time.Sleep(racyWindow + 10*time.Millisecond)
	if proved := w.Prove(p); proved != want || w.Valid() != want {
		t.Fatalf("proved %v, valid %v, want %v", proved, w.Valid(), want)
	}
}

// rewriteInTick rewrites path in place, old replaced by new (of the same
// length), and records the stat it now has in w as if the rewrite fell in
// the tick of the stat w took: only its content can tell.
func rewriteInTick(t *testing.T, w *Warm, path string, old, new []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(old) != len(new) || !bytes.Contains(b, old) {
		t.Fatalf("%s: no %q to rewrite as %q", path, old, new)
	}
	if err := os.WriteFile(path, bytes.Replace(b, old, new, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for i, f := range w.files {
		if f.path == path {
			w.files[i].stat, _ = statcache.Lstat(path)
		}
	}
	w.at = time.Now().UnixNano()
}

// rescope taking the kept notes finds the scope a lookup per entry finds
// (every entry of a touched file, whatever its spelling, and every path
// never resolved), in the manifest's order, for a few touched files and
// for a burst (the map).
func TestRescopeWithNotesMatchesLookups(t *testing.T) {
	entries := []manifest.Entry{
		{ObservationID: "obs_a", Path: ".claude/commands/a.md"},
		{ObservationID: "obs_b", Path: ".claude/commands/b.md"},
		{ObservationID: "obs_a2", Path: "/root/.claude/commands/a.md"}, // a's other spelling
		{ObservationID: "obs_x", Path: "../outside.md"},                // never resolved
		{ObservationID: "obs_c", Path: ".claude/commands/c.md"},
	}
	rel := map[string]string{
		".claude/commands/a.md": ".claude/commands/a.md", "/root/.claude/commands/a.md": ".claude/commands/a.md",
		".claude/commands/b.md": ".claude/commands/b.md", ".claude/commands/c.md": ".claude/commands/c.md",
	}
	state := func(notes bool) *State {
		st := &State{Manifest: &manifest.Manifest{Entries: entries}, Rel: map[string]string{},
			Files: map[string][]byte{}, Verified: map[string]bool{}, vouched: map[string]statcache.Entry{},
			Missing: map[string]bool{}, Unreadable: map[string]error{}, Refused: map[string]error{}}
		for k, v := range rel {
			st.Rel[k] = v
		}
		if notes {
			for _, e := range entries {
				st.prior = append(st.prior, entryNote{rel: rel[e.Path], quiet: quietUnchanged})
			}
		}
		return st
	}
	burst := map[string]bool{}
	for i := range 20 {
		burst[".claude/commands/other-"+string(rune('a'+i))+".md"] = true
	}
	burst[".claude/commands/c.md"] = true
	for _, touched := range []map[string]bool{
		{}, {".claude/commands/a.md": true}, {".claude/commands/b.md": true, ".claude/commands/c.md": true},
		{".claude/commands/a.md": false}, burst,
	} {
		want := rescope(state(false), touched)
		st := state(true)
		got := rescope(st, touched)
		if len(got) != len(want) {
			t.Fatalf("touched %v: scope %v, want %v", touched, got, want)
		}
		for i := range got {
			if got[i].ObservationID != want[i].ObservationID {
				t.Fatalf("touched %v: scope %v, want %v", touched, got, want)
			}
		}
		for i, e := range entries {
			inScope := slices.ContainsFunc(got, func(s manifest.Entry) bool { return s.ObservationID == e.ObservationID })
			if quiet := st.prior[i].quiet != notQuiet; quiet == inScope {
				t.Errorf("touched %v: %s quiet %v, in scope %v", touched, e.ObservationID, quiet, inScope)
			}
		}
	}
}

// ManifestPaths hands out the paths of the manifest a warm state holds
// while the file is the one it recorded, and nothing once another writer
// replaced it or the state was dropped.
func TestWarmManifestPaths(t *testing.T) {
	root, w, _ := warmMemory(t)
	p := manifest.PathsFor(root)
	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, e := range m.Entries {
		want = append(want, e.Path)
	}
	seq, ok := w.ManifestPaths(p)
	if !ok {
		t.Fatal("no paths from a warm state whose manifest is unchanged")
	}
	if got := slices.Collect(seq); len(want) != 2 || !slices.Equal(got, want) {
		t.Fatalf("paths %v, want %v", got, want)
	}
	m.Entries = m.Entries[:1]
	if err := manifest.WriteManifest(p.Manifest, m); err != nil {
		t.Fatal(err)
	}
	if _, ok := w.ManifestPaths(p); ok {
		t.Error("paths from a state whose manifest another writer replaced")
	}
	w.Forget()
	if _, ok := w.ManifestPaths(p); ok {
		t.Error("paths from a dropped state")
	}
}

// A pass prepared right after an artifact was edited (its stat within the
// racy window, where a rewrite of the same size keeps it) is committed
// only when the artifact still holds what it held before the pass read it.
func TestPreparedRacyTouched(t *testing.T) {
	for _, rewrite := range []bool{false, true} {
		t.Run(map[bool]string{false: "unchanged", true: "rewritten within the tick"}[rewrite], func(t *testing.T) {
			root, _, opts := warmMemory(t)
			p := manifest.PathsFor(root)
			rel := firstArtifact(t, p)
			path := filepath.Join(root, filepath.FromSlash(rel))
			time.Sleep(racyWindow + 10*time.Millisecond) // the memory files settled
			if err := os.WriteFile(path, []byte("# edited by a person\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			opts.Touched = map[string]bool{rel: true}
			opts.Now = testNow.Add(time.Minute)
			x, err := Prepare(context.Background(), root, opts)
			if err != nil || x == nil {
				t.Fatalf("not prepared right after the edit: %v", err)
			}
			if rewrite {
				// Same size, other bytes, and as if within the tick of
				// the stat the pass took.
				if err := os.WriteFile(path, []byte("# EDITED BY A PERSON\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				for i, f := range x.touched {
					if f.path == path {
						x.touched[i].stat, _ = statcache.Lstat(path)
					}
				}
			}
			res, ok, err := x.Commit(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if ok == rewrite {
				t.Fatalf("committed %v, want %v", ok, !rewrite)
			}
			if ok && res.Edits != 1 {
				t.Fatalf("committed with %d edits, want 1", res.Edits)
			}
		})
	}
}

// vouchByLookups is vouch as it was written first, a lookup of every
// entry's path: the reference TestVouchMatchesLookups holds vouch to.
func vouchByLookups(st *State) {
	byRel := map[string][]manifest.Entry{}
	for _, e := range st.Manifest.Entries {
		if rel, ok := st.Rel[e.Path]; ok && len(st.Files[rel]) > 0 && !st.Verified[rel] {
			byRel[rel] = append(byRel[rel], e)
		}
	}
	for rel, es := range byRel {
		b := st.Files[rel]
		ce := statcache.Entry{SHA: manifest.Hash(b)}
		ok := true
		for _, e := range es {
			if manifest.IsLegacyHash(e.ContentHash) && ce.DJB2 == "" {
				ce.DJB2 = manifest.DJB2(b)
			}
			if e.AnchorID != "" || e.Deleted != nil || !manifest.Unchanged(e.ContentHash, b, b) || !statcache.Verifies(ce, e.ContentHash) {
				ok = false
				break
			}
		}
		if ok {
			st.Verified[rel], st.Files[rel], st.vouched[rel] = true, []byte{}, ce
		}
	}
}

// vouch, which finds the held files first, verifies exactly the files a
// lookup of every entry's path verifies, with the same stat cache
// entries: random states of a few to many held files among verified
// ones, paths named twice (relative and absolute), paths resolving
// nowhere, held files no entry names, entries whose hash does not match
// (an edit), legacy hashes, anchors and deleted entries.
func TestVouchMatchesLookups(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 7))
		n := 1 + rng.IntN(60)
		build := func() *State {
			r := rand.New(rand.NewPCG(seed, 11))
			st := &State{Manifest: &manifest.Manifest{}, Rel: map[string]string{}, Files: map[string][]byte{},
				Verified: map[string]bool{}, vouched: map[string]statcache.Entry{}}
			for i := range n {
				rel := fmt.Sprintf(".claude/commands/c%d.md", r.IntN(n)) // some named twice
				body := []byte(fmt.Sprintf("# c%d\n", i%7))
				path := rel
				if r.IntN(3) == 0 {
					path = "/root/" + rel
				}
				e := manifest.Entry{ObservationID: fmt.Sprintf("obs_%d", i), Path: path, ContentHash: manifest.Hash(body)}
				switch r.IntN(12) {
				case 0:
					e.ContentHash = manifest.DJB2(body)
				case 1:
					e.AnchorID = "ADR-001"
				case 2:
					e.Deleted = &manifest.Deletion{}
				case 3:
					e.ContentHash = manifest.Hash([]byte("edited"))
				}
				st.Manifest.Entries = append(st.Manifest.Entries, e)
				if r.IntN(10) == 0 {
					continue // never resolved
				}
				st.Rel[path] = rel
				switch {
				case st.Files[rel] != nil && r.IntN(2) == 0:
					// read once, by another spelling
				case r.IntN(n) < 3:
					st.Files[rel] = body // held
				case r.IntN(n) < 2:
					st.Files[rel], st.Verified[rel] = body, true // verified, bytes held (a move onto it)
				default:
					st.Files[rel], st.Verified[rel] = []byte{}, true
				}
			}
			for i := range r.IntN(3) {
				st.Files[fmt.Sprintf("lone%d.md", i)] = []byte("x") // held, named by nothing
			}
			return st
		}
		want, got := build(), build()
		vouchByLookups(want)
		w := &Warm{st: *got} // the maps shared with got
		w.vouch()
		if !maps.Equal(got.Verified, want.Verified) || !maps.Equal(got.vouched, want.vouched) ||
			!maps.EqualFunc(got.Files, want.Files, bytes.Equal) {
			t.Fatalf("seed %d: verified %v, want %v", seed, got.Verified, want.Verified)
		}
	}
}

// BenchmarkVouch is the proof's vouch after a watcher's pass at 50,000
// artifacts (absolute paths, as devflow writes them): one file held, the
// rest verified. lookups is the first version, a lookup of every entry's
// path (vouchByLookups).
func BenchmarkVouch(b *testing.B) {
	const n = 50000
	st := &State{Manifest: &manifest.Manifest{}, Rel: map[string]string{}, Files: map[string][]byte{},
		Verified: map[string]bool{}, vouched: map[string]statcache.Entry{}}
	body := []byte("# edited\n")
	for i := range n {
		rel := fmt.Sprintf(".claude/commands/generated-command-%05d.md", i)
		path := "/home/someone/src/project/" + rel
		st.Manifest.Entries = append(st.Manifest.Entries, manifest.Entry{ObservationID: fmt.Sprintf("obs_%d", i), Path: path, ContentHash: manifest.Hash(body)})
		st.Rel[path] = rel
		st.Files[rel], st.Verified[rel] = []byte{}, true
	}
	held := ".claude/commands/generated-command-00042.md"
	for _, bc := range []struct {
		name  string
		vouch func(*State)
	}{{"new", func(st *State) { (&Warm{st: *st}).vouch() }}, {"lookups", vouchByLookups}} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				st.Files[held], st.Verified[held] = body, false
				bc.vouch(st)
			}
			if !st.Verified[held] {
				b.Fatal("the held file was not verified")
			}
		})
	}
}

// slowRelease is a replaced file whose release takes a while.
type slowRelease struct{ released *atomic.Int32 }

func (slowRelease) Commit() error { return nil }
func (slowRelease) Abort()        {}
func (s slowRelease) Release() {
	time.Sleep(20 * time.Millisecond)
	s.released.Add(1)
}

// ReleaseAside lets the replaced files go on another goroutine, and
// Release, called after, returns only once they are gone (Close relies on
// it: no replaced file outlives the watcher).
func TestReplacedReleaseAside(t *testing.T) {
	var released atomic.Int32
	var r Replaced
	r.files = []stagedFile{slowRelease{&released}, slowRelease{&released}}
	t0 := time.Now()
	r.ReleaseAside()
	if d := time.Since(t0); d >= 20*time.Millisecond || r.Held() != 0 {
		t.Fatalf("ReleaseAside waited %s and holds %d", d, r.Held())
	}
	r.files = []stagedFile{slowRelease{&released}}
	r.Release()
	if n := released.Load(); n != 3 {
		t.Fatalf("%d files released when Release returned, want 3", n)
	}
}

// The staleness pass the watcher runs when idle (StalePass) writes the
// marks into the log of the state it was lent and keeps the sum of what
// it wrote: the proof compares it, and a log rewritten with the same size
// within the tick of its stat is refused.
func TestStalePassKeepsTheLogsSum(t *testing.T) {
	for _, rewrite := range []bool{false, true} {
		t.Run(map[bool]string{false: "proved", true: "rewritten within the tick"}[rewrite], func(t *testing.T) {
			root, w, opts := warmMemoryWith(t, "See scripts/lint.sh for the flags.")
			cfg := config.Default().Staleness
			p := manifest.PathsFor(root)
			time.Sleep(racyWindow + 10*time.Millisecond)
			if !w.Prove(p) {
				t.Fatal("an unchanged state was not proved")
			}
			opts.Staleness = &cfg
			res, err := StalePass(context.Background(), root, opts)
			if err != nil || res.Stale != 1 || !slices.Contains(res.Wrote, p.Log) {
				t.Fatalf("staleness pass: %d stale, wrote %v, %v", res.Stale, res.Wrote, err)
			}
			if _, ok := w.sums[p.Log]; !ok || w.proved {
				t.Fatalf("after the staleness pass: sum of the log kept %v, proved %v", ok, w.proved)
			}
			if rewrite {
				rewriteInTick(t, w, p.Log, []byte(`"type"`), []byte(`"TYPE"`))
			}
			proveOnceSettled(t, w, p, !rewrite)
		})
	}
}
