package journal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/learn"
)

// refFold is the reference: the whole journal read and folded at once.
func refFold(t testing.TB, root string, now time.Time, p learn.Params) Folded {
	t.Helper()
	pol, err := LoadPolicy(root)
	if err != nil {
		t.Fatal(err)
	}
	evs, corrupt, err := ReadFeedback(root)
	if err != nil {
		t.Fatal(err)
	}
	f := learn.NewFolder()
	f.Add(evs) // Events counts what a base line stands for
	return Folded{Stats: learn.FoldWith(evs, now, p), Tally: learn.Tally(evs, pol.Resets), Resets: pol.Resets, Events: f.Events(), Corrupt: corrupt}
}

// sameFold compares everything a fold yields (not how it was obtained).
func sameFold(t testing.TB, what string, got, want Folded) {
	t.Helper()
	if got.Events != want.Events || got.Corrupt != want.Corrupt {
		t.Fatalf("%s: %d events %d corrupt, want %d and %d", what, got.Events, got.Corrupt, want.Events, want.Corrupt)
	}
	if !reflect.DeepEqual(got.Stats, want.Stats) {
		for k, w := range want.Stats {
			if g := got.Stats[k]; !reflect.DeepEqual(g, w) {
				t.Fatalf("%s: target %s\n got %+v\nwant %+v", what, k, g, w)
			}
		}
		t.Fatalf("%s: stats differ: %d targets, want %d", what, len(got.Stats), len(want.Stats))
	}
	if len(got.Tally)+len(want.Tally) > 0 && !reflect.DeepEqual(got.Tally, want.Tally) {
		t.Fatalf("%s: tally\n got %+v\nwant %+v", what, got.Tally, want.Tally)
	}
}

var zones = []*time.Location{time.UTC, time.FixedZone("", 2*3600), time.FixedZone("", -7*3600-1800)}

// randomLine is one journal line the way the writers produce them:
// learnwatch's own events, devflow's (other key order, escapes, extra
// fields), unknown kinds, hand-edited garbage, blank lines. Timestamps
// mostly advance; now and then one is older (a writer with a slow clock).
func randomLine(r *rand.Rand, clock *time.Time) string {
	*clock = clock.Add(time.Duration(r.IntN(3)) * time.Hour)
	ts := *clock
	if r.IntN(12) == 0 {
		ts = ts.Add(-time.Duration(r.IntN(48)) * time.Hour)
	}
	ts = ts.Add(time.Duration(r.IntN(1000)) * time.Nanosecond).In(zones[r.IntN(len(zones))])
	target := []string{"ADR-001", "ADR-002", "PF-003", "obs_a1", "obs_b2", "obs_c3"}[r.IntN(6)]
	kind := append(append([]string{}, learn.Kinds...), "frobbed")[r.IntN(len(learn.Kinds)+1)]
	typ := []string{"", "decision", "pitfall", "workflow", "procedural"}[r.IntN(5)]
	value := []float64{0, 1, 1, 0.38, 0.7, -1, 2.5, 1e-9}[r.IntN(8)]
	reason := []string{"", "", "deleted", "anchor-lost", "stale", "timeout"}[r.IntN(6)]
	switch r.IntN(20) {
	case 0:
		return ""
	case 1:
		return "not json at all"
	case 2:
		return fmt.Sprintf(`{"target":%q,"kind":"kept","ts":"yesterday"}`, target)
	case 3, 4: // devflow's shape: other key order, an escape, an extra field, "+00:00"
		stamp := strings.Replace(ts.Format(time.RFC3339Nano), "Z", "+00:00", 1)
		return fmt.Sprintf(`{"kind":%q, "target":%q, "ts":%q, "value":%v, "source":"devflow\u0020hook", "type":%q, "session":"s-%d"}`,
			kind, target, stamp, value, typ, r.IntN(100))
	}
	b, err := MarshalEvent(learn.Event{TS: ts, Target: target, Kind: kind, Value: value, Source: "reconcile", Type: typ,
		Reason: reason, Retries: r.IntN(3), Role: []string{"", "", "reviewer"}[r.IntN(3)], Of: []string{"", "", "k1", "k2"}[r.IntN(4)]})
	if err != nil {
		panic(err)
	}
	return string(b)
}

func randomJournal(r *rand.Rand, clock *time.Time, n int) []byte {
	var b bytes.Buffer
	for range n {
		b.WriteString(randomLine(r, clock))
		b.WriteByte('\n')
	}
	return b.Bytes()
}

func appendRaw(t testing.TB, root string, data []byte) {
	t.Helper()
	f, err := os.OpenFile(Path(root, FeedbackFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// foldFeedbackLocked folds the journal for a caller holding the learning
// lock and, with save, then writes the new snapshot (serr: a failure to
// write it changes nothing but the next run's cost), as the policy refresh
// does (refreshPolicyLocked saves the snapshot beside the policy).
func foldFeedbackLocked(root string, since map[string]time.Time, save bool) (fd folding, serr error, err error) {
	fd, err = foldJournal(root, since)
	if err != nil {
		return folding{}, nil, err
	}
	if save && fd.save != nil {
		serr = saveSnapshot(root, fd.save)
	}
	return fd, serr, nil
}

// refresh folds under the lock, as the policy refresh does, writing the
// snapshot.
func refresh(t testing.TB, root string) {
	t.Helper()
	pol, err := LoadPolicy(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := foldFeedbackLocked(root, pol.Resets, true); err != nil {
		t.Fatal(err)
	}
}

// The property: whatever the journal, wherever the snapshot was taken
// (mid-line included), whatever was appended since or done to the file,
// the fold with the snapshot equals the fold without it.
func TestSnapshotFoldEqualsFullFold(t *testing.T) {
	p := learn.Params{HalfLifeDays: 30}
	resumed, tails := 0, 0
	for seed := range uint64(150) {
		r := rand.New(rand.NewPCG(seed, 7))
		root := t.TempDir()
		os.MkdirAll(Path(root, ""), 0o755)
		if r.IntN(3) == 0 {
			os.WriteFile(Path(root, PolicyFile), []byte(`{"resets":{"decision":"2026-03-02T00:00:00Z"}}`), 0o644)
		}
		clock := t0
		journal := randomJournal(r, &clock, 20+r.IntN(200))
		cut := r.IntN(len(journal) + 1)
		appendRaw(t, root, journal[:cut])
		refresh(t, root)
		now := clock.Add(time.Duration(r.IntN(400)) * time.Hour)
		check := func(what string) {
			t.Helper()
			want := refFold(t, root, now, p)
			got, err := FoldFeedback(root, now, p)
			if err != nil {
				t.Fatal(err)
			}
			sameFold(t, fmt.Sprintf("seed %d, %s", seed, what), got, want)
			if got.FromSnapshot {
				resumed++
				if got.TailBytes > 0 {
					tails++
				}
			}
			os.Remove(cachedir.Path(root, SnapshotFile))
			cold, err := FoldFeedback(root, now, p)
			if err != nil {
				t.Fatal(err)
			}
			sameFold(t, fmt.Sprintf("seed %d, %s, no snapshot", seed, what), cold, want)
		}
		check("at the cut")
		appendRaw(t, root, journal[cut:])
		refresh(t, root)
		// Random appends by other tools, some of them torn.
		for i := range 3 {
			more := randomJournal(r, &clock, r.IntN(30))
			if r.IntN(4) == 0 && len(more) > 2 {
				more = more[:len(more)-1-r.IntN(len(more)/2)] // no newline at the end
			}
			appendRaw(t, root, more)
			check(fmt.Sprintf("append %d", i))
			refresh(t, root)
		}
	}
	// Older events appended refold from scratch; most checks must not.
	if resumed < 300 || tails < 200 {
		t.Fatalf("the snapshot was resumed %d times of 600, with a tail %d times", resumed, tails)
	}
}

// Every way the snapshot can stop matching the journal: each gives the
// full fold, and a snapshot that still matches is used.
func TestSnapshotInvalidation(t *testing.T) {
	now := t0.Add(30 * 24 * time.Hour)
	setup := func(t *testing.T) (string, []byte) {
		root := t.TempDir()
		os.MkdirAll(Path(root, ""), 0o755)
		r := rand.New(rand.NewPCG(1, 2))
		clock := t0
		data := randomJournal(r, &clock, 300)
		appendRaw(t, root, data)
		refresh(t, root)
		if _, err := os.Stat(cachedir.Path(root, SnapshotFile)); err != nil {
			t.Fatal("no snapshot written:", err)
		}
		return root, data
	}
	line := func(target string, ts time.Time) []byte {
		b, _ := MarshalEvent(learn.Event{TS: ts, Target: target, Kind: learn.KindCited, Source: "cli"})
		return append(b, '\n')
	}
	snap := cachedir.Path("", SnapshotFile)
	cases := []struct {
		name   string
		change func(t *testing.T, root string, data []byte)
		used   bool // the snapshot still matches
	}{
		{"nothing changed", func(*testing.T, string, []byte) {}, true},
		{"appended", func(t *testing.T, root string, _ []byte) { appendRaw(t, root, line("ADR-009", t0.Add(9999*time.Hour))) }, true},
		{"appended an older event", func(t *testing.T, root string, _ []byte) { appendRaw(t, root, line("ADR-001", t0.Add(-time.Hour))) }, false},
		{"truncated", func(t *testing.T, root string, data []byte) {
			os.Truncate(Path(root, FeedbackFile), int64(len(data)/2))
		}, false},
		{"emptied", func(t *testing.T, root string, data []byte) { os.Truncate(Path(root, FeedbackFile), 0) }, false},
		{"deleted", func(t *testing.T, root string, data []byte) { os.Remove(Path(root, FeedbackFile)) }, false},
		{"last line rewritten in place, same size", func(t *testing.T, root string, data []byte) {
			b := bytes.Clone(data)
			i := bytes.LastIndex(b[:len(b)-1], []byte("\n")) + 1
			copy(b[i:], bytes.Repeat([]byte{' '}, len(b)-1-i)) // a blank line now
			os.WriteFile(Path(root, FeedbackFile), b, 0o644)
		}, false},
		{"first line rewritten in place", func(t *testing.T, root string, data []byte) {
			b := bytes.Clone(data)
			b[0] = ' '
			os.WriteFile(Path(root, FeedbackFile), b, 0o644)
		}, false},
		{"replaced by an identical copy (another inode)", func(t *testing.T, root string, data []byte) {
			tmp := Path(root, "tmp")
			os.WriteFile(tmp, data, 0o644)
			os.Rename(tmp, Path(root, FeedbackFile))
		}, false},
		{"snapshot corrupt", func(t *testing.T, root string, _ []byte) {
			os.WriteFile(filepath.Join(root, snap), []byte(`{"version":1,"size":12,"fo`), 0o644)
		}, false},
		{"snapshot's fold state cut short", func(t *testing.T, root string, _ []byte) {
			b, _ := os.ReadFile(filepath.Join(root, snap))
			os.WriteFile(filepath.Join(root, snap), b[:len(b)-3], 0o644)
		}, false},
		{"snapshot's fold state altered", func(t *testing.T, root string, _ []byte) {
			b, _ := os.ReadFile(filepath.Join(root, snap))
			i := bytes.IndexByte(b, '\n')
			os.WriteFile(filepath.Join(root, snap), append(b[:i+1], "lwfold1\x02"...), 0o644)
		}, false},
		{"snapshot's fold state with a count changed, same length", func(t *testing.T, root string, _ []byte) {
			b, _ := os.ReadFile(filepath.Join(root, snap))
			i := bytes.IndexByte(b, '\n')
			// Every byte of the state in turn: the first change the fold
			// still decodes is a snapshot only its sum tells from the
			// one written.
			for j := i + 1; j < len(b); j++ {
				c := bytes.Clone(b)
				c[j] ^= 0x01
				if learn.NewFolder().UnmarshalBinary(c[i+1:]) == nil {
					os.WriteFile(filepath.Join(root, snap), c, 0o644)
					return
				}
			}
			t.Fatal("no altered state decodes")
		}, false},
		{"snapshot's fold state zeroed (a power cut before its blocks were written)", func(t *testing.T, root string, _ []byte) {
			b, _ := os.ReadFile(filepath.Join(root, snap))
			i := bytes.IndexByte(b, '\n')
			clear(b[i+1:])
			os.WriteFile(filepath.Join(root, snap), b, 0o644)
		}, false},
		{"snapshot from another version", func(t *testing.T, root string, _ []byte) {
			b, _ := os.ReadFile(root + snap)
			os.WriteFile(filepath.Join(root, snap), bytes.Replace(b, []byte(`"version":2,`), []byte(`"version":1,`), 1), 0o644)
		}, false},
		{"snapshot claims more than the file", func(t *testing.T, root string, data []byte) {
			b, _ := os.ReadFile(root + snap)
			os.WriteFile(filepath.Join(root, snap), bytes.Replace(b, fmt.Appendf(nil, `"size":%d,`, len(data)), fmt.Appendf(nil, `"size":%d,`, len(data)+10), 1), 0o644)
		}, false},
		{"snapshot is a directory", func(t *testing.T, root string, _ []byte) {
			os.Remove(filepath.Join(root, snap))
			os.Mkdir(filepath.Join(root, snap), 0o755)
		}, false},
		{"policy resets changed", func(t *testing.T, root string, _ []byte) {
			os.WriteFile(Path(root, PolicyFile), []byte(`{"resets":{"pitfall":"2026-03-05T00:00:00Z"}}`), 0o644)
		}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, data := setup(t)
			c.change(t, root, data)
			want := refFold(t, root, now, learn.Params{})
			got, err := FoldFeedback(root, now, learn.Params{})
			if err != nil {
				t.Fatal(err)
			}
			sameFold(t, c.name, got, want)
			if got.FromSnapshot != c.used {
				t.Fatalf("snapshot used = %v, want %v", got.FromSnapshot, c.used)
			}
		})
	}
}

// Another tool appends while learnwatch folds and refreshes the snapshot:
// every fold is the full fold of some prefix of whole lines, and once the
// writer stops, the fold with the snapshot is the full fold.
func TestSnapshotConcurrentAppends(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(Path(root, ""), 0o755)
	now := t0.Add(100 * 24 * time.Hour)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range 400 {
			e := learn.Event{TS: t0.Add(time.Duration(i) * time.Minute), Target: fmt.Sprintf("obs_%d", i%7), Kind: learn.Kinds[i%len(learn.Kinds)], Value: 1, Source: "devflow", Type: "workflow", Reason: strings.Repeat("r", i%50)}
			if err := AppendFeedback(root, e); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	last := 0
	for range 60 {
		if _, err := RefreshPolicy(t.Context(), root, now, time.Second); err != nil {
			t.Fatal(err)
		}
		got, err := FoldFeedback(root, now, learn.Params{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Corrupt != 0 || got.Events < last {
			t.Fatalf("%d events (%d before), %d corrupt", got.Events, last, got.Corrupt)
		}
		last = got.Events
	}
	wg.Wait()
	got, err := FoldFeedback(root, now, learn.Params{})
	if err != nil {
		t.Fatal(err)
	}
	sameFold(t, "after the writer", got, refFold(t, root, now, learn.Params{}))
	if got.Events != 400 {
		t.Fatalf("%d events", got.Events)
	}
}

// refreshJournal is the journal the refresh tests fold (400 events, enough
// for overlays), the time they fold it at and the engine parameters.
func refreshJournal() (data []byte, now time.Time, p learn.Params) {
	r := rand.New(rand.NewPCG(9, 9))
	clock := t0
	data = randomJournal(r, &clock, 400)
	return data, clock.Add(48 * time.Hour), learn.Params{MinEvents: 2}
}

// The session start's refresh hands back the fold it made: the same
// policy as RefreshPolicy, the same fold as a full read.
func TestRefreshPolicyFolded(t *testing.T) {
	data, now, p := refreshJournal()
	a, b := t.TempDir(), t.TempDir()
	for _, root := range []string{a, b} {
		os.MkdirAll(Path(root, ""), 0o755)
		appendRaw(t, root, data)
	}
	want := refFold(t, a, now, p)
	pa, err := RefreshPolicy(t.Context(), a, now, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	pb, fb, err := RefreshPolicyFolded(t.Context(), b, now, time.Second, p)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(pa, pb) {
		t.Fatalf("policy %+v, want %+v", pb, pa)
	}
	sameFold(t, "refresh", fb, want)
	if len(pb.Overlays) == 0 {
		t.Fatal("the journal produced no overlay: the test proves nothing")
	}
	if !fb.Current(b) || !reflect.DeepEqual(fb.StatsAt(now, p), fb.Stats) {
		t.Fatal("the refresh's fold is not current right after it")
	}
	later := now.Add(24 * time.Hour)
	if !reflect.DeepEqual(fb.StatsAt(later, learn.Params{}), refFold(t, b, later, learn.Params{}).Stats) {
		t.Fatal("StatsAt another time and parameters is not that fold")
	}
	got, err := FoldFeedback(b, now, p)
	if err != nil {
		t.Fatal(err)
	}
	if !got.FromSnapshot || got.TailBytes != 0 {
		t.Fatalf("after the refresh the fold read %d bytes (snapshot %v)", got.TailBytes, got.FromSnapshot)
	}
	sameFold(t, "after refresh", got, want)
	appendRaw(t, b, []byte(`{"ts":"2027-01-01T00:00:00Z","target":"ADR-001","kind":"cited"}`+"\n"))
	if fb.Current(b) || got.Current(b) {
		t.Fatal("a fold is current after the journal grew")
	}
	if f, _ := FoldFeedback(b, now, p); !f.Current(b) || f.Current(a) {
		t.Fatal("a fold is current for another journal, or not for its own")
	}
	none, fn, err := RefreshPolicyFolded(t.Context(), t.TempDir(), now, time.Second, p)
	if err != nil || len(none.Overlays) != 0 || fn.Events != 0 || fn.Stats == nil {
		t.Fatalf("no .memory: %+v %+v %v", none, fn, err)
	}
}

// A snapshot that cannot be written (a file where the cache directory
// goes) is the refresh's SnapshotErr: the policy, saved beside it, and the
// fold stand.
func TestRefreshPolicySnapshotNotSaved(t *testing.T) {
	data, now, p := refreshJournal()
	root := t.TempDir()
	os.MkdirAll(Path(root, ""), 0o755)
	appendRaw(t, root, data)
	if err := os.WriteFile(cachedir.Path(root, ""), []byte("not a directory"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := refFold(t, root, now, p)
	pol, f, err := RefreshPolicyFolded(t.Context(), root, now, time.Second, p)
	if err != nil {
		t.Fatal(err)
	}
	if f.SnapshotErr == nil {
		t.Fatal("no SnapshotErr for a snapshot that could not be written")
	}
	sameFold(t, "unsaved", f, want)
	saved, err := LoadPolicy(root)
	if err != nil || len(pol.Overlays) == 0 || !reflect.DeepEqual(normal(saved), normal(pol)) {
		t.Fatalf("policy saved %+v (%v), refreshed %+v", saved, err, pol)
	}
}
