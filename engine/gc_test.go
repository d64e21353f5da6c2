package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

// percent and limit read the collector's settings without changing them.
func percent() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
func limit() int64 { return debug.SetMemoryLimit(-1) }

// unsetGCEnv unsets GOGC and GOMEMLIMIT for the test (both are put back
// after it): with either set, the collector is left to the person.
func unsetGCEnv(t *testing.T) {
	t.Helper()
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
}

// sizeLog makes the file log size bytes long (none for a size < 0).
func sizeLog(t *testing.T, log string, size int64) {
	t.Helper()
	if size < 0 {
		os.Remove(log)
		return
	}
	if err := os.WriteFile(log, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(log, size); err != nil {
		t.Fatal(err)
	}
}

// checkRelaxed runs relax on log and requires GOGC wantPercent and the
// soft limit wantLimit while it holds — the settings as they were when
// wantLimit is 0 (left alone) — and those settings back once restored.
func checkRelaxed(t *testing.T, what string, relax func(string) func(), log string, wantPercent int, wantLimit int64) {
	t.Helper()
	p0, l0 := percent(), limit()
	if wantLimit == 0 {
		wantPercent, wantLimit = p0, l0
	}
	restore := relax(log)
	if p, l := percent(), limit(); p != wantPercent || l != wantLimit {
		t.Errorf("%s: GOGC %d, limit %d; want %d, %d", what, p, l, wantPercent, wantLimit)
	}
	restore()
	if p, l := percent(), limit(); p != p0 || l != l0 {
		t.Errorf("%s: not restored: GOGC %d, limit %d; want %d, %d", what, p, l, p0, l0)
	}
}

func TestRelaxGC(t *testing.T) {
	unsetGCEnv(t)
	log := filepath.Join(t.TempDir(), "learning-log.jsonl")
	for _, c := range []struct {
		size int64
		want int64
	}{
		{-1, passHeapFloor}, // no log
		{1 << 20, passHeapFloor},
		{manifest.ChunkedFrom - 1, max(passHeapFloor, (manifest.ChunkedFrom-1)*passHeapPerLogHalfByte/2)},
		{64 << 20, 64 << 20 * passHeapPerChunkedLogHalfByte / 2}, // read in chunks: not held
		{40 << 20, max(passHeapChunkedFloor, 40<<20*passHeapPerChunkedLogHalfByte/2)},
	} {
		if c.size >= manifest.ChunkedFrom && !manifest.ReadsChunked(c.size) {
			c.want = c.size * passHeapPerLogHalfByte / 2
		}
		sizeLog(t, log, c.size)
		checkRelaxed(t, fmt.Sprintf("log of %d bytes", c.size), relaxGC, log, passGCPercent, c.want)
	}

	// The person's own settings are left alone.
	t.Setenv("GOGC", "50")
	checkRelaxed(t, "with GOGC set", relaxGC, log, 0, 0)
}

// A full pass whose heap stays under the limit never collects: what a
// 10k first reconcile allocates (about 24 MB, in 1 MB pieces here, all
// kept) runs no cycle, where a GOGC of 400 from a small heap ran two.
func TestRelaxGCNoCollection(t *testing.T) {
	unsetGCEnv(t)
	log := filepath.Join(t.TempDir(), "learning-log.jsonl")
	sizeLog(t, log, 1<<20)
	runtime.GC() // a small heap, as a pass starts from
	restore := relaxGC(log)
	defer restore()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	held := make([][]byte, 0, 32)
	for range 32 {
		held = append(held, make([]byte, 1<<20))
	}
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(held)
	if n := after.NumGC - before.NumGC; n != 0 {
		t.Errorf("32 MB allocated under the pass's settings: %d collections, want none", n)
	}
}

func TestRelaxIndexGC(t *testing.T) {
	unsetGCEnv(t)
	runtime.GC() // what earlier tests left is not this test's heap
	log := filepath.Join(t.TempDir(), "learning-log.jsonl")
	for _, c := range []struct {
		size int64
		want int64
	}{
		{-1, indexHeapFloor}, // no log
		{1 << 20, indexHeapFloor},
		{100 << 20, 100 << 20 * indexHeapPerLogQuarterByte / 4},
	} {
		sizeLog(t, log, c.size)
		checkRelaxed(t, fmt.Sprintf("log of %d bytes", c.size), relaxIndexGC, log, indexGCPercent, c.want)
	}

	// An index that starts from a large heap (its session's pass ran in
	// full) leaves the collector alone.
	held := make([]byte, 2*indexHeapLarge)
	checkRelaxed(t, fmt.Sprintf("from a heap of %d MB", heapNow()>>20), relaxIndexGC, log, 0, 0)
	runtime.KeepAlive(held)

	// The person's own settings are left alone.
	t.Setenv("GOGC", "50")
	checkRelaxed(t, "with GOGC set", relaxIndexGC, log, 0, 0)
}
