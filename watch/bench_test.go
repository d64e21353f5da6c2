package watch

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/manifest"
)

// BenchmarkDeletionLatency measures event-to-penalty latency — from the
// os.Remove of a rendered artifact to the end of the reconcile that wrote
// its ×0.3 penalty — with a watcher on 10,000 rendered artifacts (5,000
// commands in one directory, 5,000 skills in a directory each) and the
// default 200 ms debounce, and the process's peak RSS. Each iteration
// deletes one artifact (alternately a command file and a whole skill
// directory), or edits one (LEARNWATCH_WATCH_EDIT=1).
//
//	go test -run '^$' -bench DeletionLatency -benchtime 100x ./watch/
func BenchmarkDeletionLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("10,000-artifact benchmark skipped under -short")
	}
	// LEARNWATCH_WATCH_ARTIFACTS sets the number of artifacts (half
	// commands, half skills; default 10,000).
	nCmd, nSkill := 5000, 5000
	if n, err := strconv.Atoi(os.Getenv("LEARNWATCH_WATCH_ARTIFACTS")); err == nil && n >= 2 {
		nCmd, nSkill = n/2, n-n/2
	}
	// LEARNWATCH_WATCH_GRACE sets the grace window (default 1 ms: the
	// pass runs right after the one that saw the file missing, with no
	// time to prepare it; the watcher's own default is 2 s, in which the
	// pass is prepared and its end only commits it: engine.Prepare).
	opts := Options{}
	if g, err := time.ParseDuration(os.Getenv("LEARNWATCH_WATCH_GRACE")); err == nil {
		opts.Grace = g
	}
	// LEARNWATCH_WATCH_EDIT=1 edits the artifacts instead of deleting
	// them: an edit is final after the debounce, with no grace window to
	// prepare its pass in (the record is its edit, not a penalty).
	edit := os.Getenv("LEARNWATCH_WATCH_EDIT") == "1"
	root := fixture(b, nCmd, nSkill)
	victim := make(chan string, 1)
	penalised := make(chan time.Time, 1)
	// took: every pass; recorded: the passes that wrote a victim's penalty
	// (from the change being final — debounced, past the grace window —
	// to the result written: from the pass's start, or from the end of
	// the grace window when the pass started after it).
	var took, recorded []time.Duration
	prepared := 0 // recorded passes that committed a prepared pass
	var settles atomic.Int64
	r := start(b, root, opts, func(w *watcher) {
		w.afterSettle = func() { settles.Add(1) }
		inner := w.reconcile
		w.reconcile = func(ctx context.Context, o engine.Pass) (engine.Report, error) {
			t0 := time.Now()
			res, err := inner(ctx, o)
			d := time.Since(t0)
			took = append(took, d)
			if !w.dueAt.IsZero() && w.dueAt.Before(t0) {
				// Final when its grace window ended: the pass may have
				// started later (the watcher was busy).
				d = time.Since(w.dueAt)
			}

			select {
			case id := <-victim:
				if slices.Contains(res.Deleted, id) || edit && slices.Contains(res.Edited, id) {
					recorded = append(recorded, d)
					if res.Prepared {
						prepared++
					}
					penalised <- time.Now()
				} else {
					victim <- id
				}
			default:
			}
			return res, err
		}
	})
	if b.N > 2*min(nCmd, nSkill) {
		b.Fatalf("at most %d iterations", 2*min(nCmd, nSkill))
	}
	lat := make([]time.Duration, 0, b.N)
	// A watcher that has run a while: its idle work after the startup
	// pass (the staleness pass, the caches, the proof of its kept state)
	// is done before the first change.
	for n, quietSince, deadline := settles.Load(), time.Now(), time.Now().Add(time.Minute); time.Since(quietSince) < 10*settleDelay && time.Now().Before(deadline); {
		time.Sleep(settleDelay / 2)
		if m := settles.Load(); m != n || m == 0 {
			n, quietSince = m, time.Now()
		}
	}
	b.ResetTimer()
	for i := range b.N {
		var id, path string
		if i%2 == 0 {
			id, path = fmt.Sprintf("obs_c%d", i/2), abs(root, cmdRel(i/2))
		} else {
			id, path = fmt.Sprintf("obs_s%d", i/2), filepath.Dir(abs(root, skillRel(i/2)))
		}
		victim <- id
		removed := time.Now()
		if edit {
			// The command file, or the skill's SKILL.md, edited in place.
			if i%2 == 1 {
				path = abs(root, skillRel(i/2))
			}
			f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			f.WriteString("\nEdited by a person.\n")
			f.Close()
		} else if err := os.RemoveAll(path); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-penalised:
			lat = append(lat, at.Sub(removed))
		case <-time.After(30*time.Second + opts.Grace):
			b.Fatalf("%s not penalised within 30s", id)
		}
		r.settle()
	}
	b.StopTimer()
	slices.Sort(lat)
	slices.Sort(took)
	slices.Sort(recorded)
	pct := func(s []time.Duration, p float64) float64 {
		return float64(s[min(len(s)-1, int(float64(len(s))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(lat, 0.50), "p50-ms")
	b.ReportMetric(pct(lat, 0.99), "p99-ms")
	b.ReportMetric(pct(took, 0.50), "reconcile-p50-ms")
	b.ReportMetric(pct(recorded, 0.50), "record-p50-ms")
	b.ReportMetric(pct(recorded, 0.90), "record-p90-ms")
	// The share of the recorded passes over the 40 ms the watcher aims at
	// (its p99 is within it when this is at most 1).
	late := len(recorded) - sort.Search(len(recorded), func(i int) bool { return recorded[i] > 40*time.Millisecond })
	b.ReportMetric(100*float64(late)/float64(max(1, len(recorded))), "record-over-40ms-%")
	b.ReportMetric(pct(recorded, 0.99), "record-p99-ms")
	b.ReportMetric(float64(procStatus("VmHWM:"))/1024, "peak-RSS-MB")
	// Right after the last pass, before the watcher's idle work gives the
	// garbage back (the real binary's idle figures: docs/watch.md).
	b.ReportMetric(float64(procStatus("VmRSS:"))/1024, "idle-RSS-MB")
	b.ReportMetric(float64(r.w.state.Watches), "watches")
	b.ReportMetric(float64(prepared), "prepared")
	b.ReportMetric(writeFloor(b, root), "write-floor-ms")
}

// writeFloor is the least a pass that records a penalty can cost on this
// disk, measured next to the benchmark: the log and the manifest of the
// fixture, as large as the pass writes them, each replaced atomically
// (temp file, fsync, rename, directory fsync: manifest.WriteFile) and the
// manifest's SHA-256 taken (the feedback record names it). Median of 11,
// in ms.
func writeFloor(b *testing.B, root string) float64 {
	p := manifest.PathsFor(root)
	logB, err := os.ReadFile(p.Log)
	if err != nil {
		b.Fatal(err)
	}
	manB, err := os.ReadFile(p.Manifest)
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(b.TempDir(), "floor")
	var ds []time.Duration
	for range 11 {
		t0 := time.Now()
		_ = journal.ManifestSum(manB)
		if err := manifest.WriteFile(filepath.Join(dir, "log"), logB, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := manifest.WriteFile(filepath.Join(dir, "manifest"), manB, 0o644); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, time.Since(t0))
	}
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}

// procStatus returns a field of /proc/self/status in KiB (VmHWM: the peak
// resident set, VmRSS: the current one; 0 when unknown).
func procStatus(field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
