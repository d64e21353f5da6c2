// Package bench holds the end-to-end benchmarks of learnwatch on generated
// fixtures (see fixture and bench/gen). Each benchmark has a baseline in
// the same run so ratios can be compared on noisy machines.
package bench

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/render"
)

var spec = fixture.Spec{Observations: 10000, Artifacts: 2000, Entries: 200, Seed: 1}

func gen(b *testing.B, s fixture.Spec) string {
	b.Helper()
	dir := b.TempDir()
	if err := fixture.Generate(dir, s); err != nil {
		b.Fatal(err)
	}
	return dir
}

// BenchmarkReadFiles is the baseline: read every file reconcile reads.
func BenchmarkReadFiles(b *testing.B) {
	dir := gen(b, spec)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		n := 0
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				data, err := os.ReadFile(path)
				if err != nil {
					b.Fatal(err)
				}
				n += len(data)
			}
			return nil
		})
		b.SetBytes(int64(n))
	}
}

// BenchmarkReconcile: a reconcile that finds everything unchanged (the
// session-start case).
func BenchmarkReconcile(b *testing.B) {
	dir := gen(b, spec)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := heal.Reconcile(context.Background(), dir, heal.Options{LockTimeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if res.Unchanged != spec.Artifacts+spec.Entries {
			b.Fatalf("unchanged %d", res.Unchanged)
		}
	}
}

// BenchmarkRender renders 200 ready observations (50 of each type) into a
// fixture of 10,000 observations and 2,000 artifacts whose knowledge files
// hold 50 entries each (room for 50 more before the 100-entry ceiling).
func BenchmarkRender(b *testing.B) {
	s := spec
	s.Entries = 100
	s.Ready = 200
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := gen(b, s)
		b.StartTimer()
		res, err := render.Run(context.Background(), dir, render.Options{LockTimeout: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Rendered) != 200 {
			b.Fatalf("rendered %d", len(res.Rendered))
		}
	}
}
