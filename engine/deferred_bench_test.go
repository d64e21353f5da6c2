package engine

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/manifest"
)

// BenchmarkDeferredDeletion: the watcher's pass that records a deletion
// (engine.Pass.Deferred, told the one touched file), with the engine
// settled in between as the idle watcher does. The metric record-p99-ms
// is the target's measure (the change is final — debounced, past the grace
// window — to the penalty written). LEARNWATCH_BENCH_ARTIFACTS sets the
// size (observations = artifacts; default 10,000).
func BenchmarkDeferredDeletion(b *testing.B) {
	n := 10000
	if v, err := strconv.Atoi(os.Getenv("LEARNWATCH_BENCH_ARTIFACTS")); err == nil && v >= 10 {
		n = v
	}
	root, files := generated(b, fixture.Spec{Observations: n + 200, Artifacts: n, Entries: 200, Seed: 1})
	if b.N > len(files) {
		b.Fatalf("at most %d iterations", len(files))
	}
	cfg := config.Default()
	e := New(root, cfg, nil)
	ctx := context.Background()
	settle := func() { settleFully(b, e) }
	if _, err := e.Reconcile(ctx, Pass{Deferred: true}); err != nil {
		b.Fatal(err)
	}
	settle()
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		rel := files[i]
		if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		rep, err := e.Reconcile(ctx, Pass{Deferred: true, Touched: map[string]bool{rel: true}})
		took = append(took, time.Since(t0))
		if err != nil || rep.Deletions != 1 {
			b.Fatalf("pass %d: %+v %v", i, rep.Result, err)
		}
		b.StopTimer()
		settle()
		b.StartTimer()
	}
	b.StopTimer()
	slices.Sort(took)
	p := func(q float64) float64 {
		return float64(took[min(len(took)-1, int(float64(len(took))*q))].Microseconds()) / 1000
	}
	b.ReportMetric(p(0.5), "record-p50-ms")
	b.ReportMetric(p(0.99), "record-p99-ms")
}

// generated is a fixture made to spec in a new directory, and the paths of
// its whole-file artifacts (relative, the manifest's order).
func generated(tb testing.TB, spec fixture.Spec) (root string, files []string) {
	tb.Helper()
	root = filepath.Join(tb.TempDir(), "repo")
	if err := fixture.Generate(root, spec); err != nil {
		tb.Fatal(err)
	}
	m, _, err := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	if err != nil {
		tb.Fatal(err)
	}
	for _, e := range m.Entries {
		if e.AnchorID == "" {
			files = append(files, e.Path)
		}
	}
	return root, files
}

// settleFully runs e's Settle until it has nothing left to do.
func settleFully(tb testing.TB, e *Engine) {
	tb.Helper()
	for range 50 {
		if _, again, err := e.Settle(context.Background(), time.Now()); err != nil {
			tb.Fatal(err)
		} else if !again {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tb.Fatal("the engine did not settle")
}
