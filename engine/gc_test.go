package engine

import (
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

func TestRelaxGC(t *testing.T) {
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	log := filepath.Join(t.TempDir(), "learning-log.jsonl")
	for _, c := range []struct {
		size int64
		want int64
	}{
		{-1, passHeapFloor}, // no log
		{1 << 20, passHeapFloor},
		{manifest.ChunkedFrom - 1, max(passHeapFloor, (manifest.ChunkedFrom-1)*passHeapPerLogHalfByte/2)},
		{64 << 20, 64 << 20 * passHeapPerChunkedLogHalfByte / 2}, // read in chunks: not held
	} {
		if c.size >= manifest.ChunkedFrom && !manifest.ReadsChunked(c.size) {
			c.want = c.size * passHeapPerLogHalfByte / 2
		}
		if c.size >= 0 {
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(log, c.size); err != nil {
				t.Fatal(err)
			}
		}
		p0, l0 := percent(), limit()
		restore := relaxGC(log)
		if p, l := percent(), limit(); p != passGCPercent || l != c.want {
			t.Errorf("log of %d bytes: GOGC %d, limit %d; want %d, %d", c.size, p, l, passGCPercent, c.want)
		}
		restore()
		if p, l := percent(), limit(); p != p0 || l != l0 {
			t.Errorf("not restored: GOGC %d, limit %d; want %d, %d", p, l, p0, l0)
		}
	}

	// The person's own settings are left alone.
	t.Setenv("GOGC", "50")
	p0, l0 := percent(), limit()
	restore := relaxGC(log)
	if p, l := percent(), limit(); p != p0 || l != l0 {
		t.Errorf("with GOGC set: GOGC %d, limit %d; want %d, %d", p, l, p0, l0)
	}
	restore()
}

func TestRelaxIndexGC(t *testing.T) {
	for _, k := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
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
		if c.size >= 0 {
			if err := os.WriteFile(log, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(log, c.size); err != nil {
				t.Fatal(err)
			}
		}
		p0, l0 := percent(), limit()
		restore := relaxIndexGC(log)
		if p, l := percent(), limit(); p != indexGCPercent || l != c.want {
			t.Errorf("log of %d bytes: GOGC %d, limit %d; want %d, %d", c.size, p, l, indexGCPercent, c.want)
		}
		restore()
		if p, l := percent(), limit(); p != p0 || l != l0 {
			t.Errorf("not restored: GOGC %d, limit %d; want %d, %d", p, l, p0, l0)
		}
	}

	// An index that starts from a large heap (its session's pass ran in
	// full) leaves the collector alone.
	held := make([]byte, 2*indexHeapLarge)
	p0, l0 := percent(), limit()
	restore := relaxIndexGC(log)
	if p, l := percent(), limit(); p != p0 || l != l0 {
		t.Errorf("from a heap of %d MB: GOGC %d, limit %d; want %d, %d", heapNow()>>20, p, l, p0, l0)
	}
	restore()
	runtime.KeepAlive(held)

	// The person's own settings are left alone.
	t.Setenv("GOGC", "50")
	restore = relaxIndexGC(log)
	if p, l := percent(), limit(); p != p0 || l != l0 {
		t.Errorf("with GOGC set: GOGC %d, limit %d; want %d, %d", p, l, p0, l0)
	}
	restore()
}
