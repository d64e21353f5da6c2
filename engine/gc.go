package engine

import (
	"math"
	"os"
	"runtime/debug"

	"github.com/learnwatch/learnwatch/manifest"
)

// Collector settings of a full pass (relaxGC).
const (
	// passGCPercent is the GOGC of a full pass: the heap may grow to five
	// times what is live before the collector runs, instead of twice.
	passGCPercent = 400
	// passHeapFloor and passHeapPerLogHalfByte set the soft memory limit
	// that keeps it bounded: the larger of 128 MiB and five and a half
	// bytes per byte of the learning log. A first pass holds about four
	// per byte at its peak (the log as read, its lines' index, the
	// staleness pass's references and cache), so the limit stays above
	// what is live and the collector does not run back to back; a limit
	// of eight per byte and a 256 MiB floor let a 100,000 observations'
	// pass grow to 300 MiB where 210 serve it in the same time.
	passHeapFloor          = 128 << 20
	passHeapPerLogHalfByte = 11
	// passHeapPerChunkedLogHalfByte is the limit's bytes per byte of a log
	// read in chunks (manifest.ReadsChunked), which the pass does not
	// hold: three and a half. A 100,000 observations' first pass held
	// about three per byte at its peak, and since 2026-11-28 (a smaller
	// line index, no findings held, the staleness cache's extractions not
	// copied into maps) about two and a half. At four per byte (a live
	// peak of three), alternated with the limit of 5.5 per byte on a whole
	// log: its peak RSS 212 -> 158 MiB, its time 2.6-2.9 -> 3.1-3.3 s (the
	// collector runs more often); a full pass with the caches 255 -> 189
	// MiB, 1.7-1.8 -> 1.8-2.0 s. At three and a half, with the smaller
	// heap, alternated with the code before at four: a first pass 158-162
	// -> 139-140 MiB, a full pass with caches 190-193 -> 169-170 MiB, in
	// the same time (2.9-3.5 s and 2.0-2.5 s both ways).
	passHeapPerChunkedLogHalfByte = 7
)

// relaxGC sets the collector for one full pass and returns what restores
// it. A pass allocates most of what it holds in its first milliseconds
// (the log, its lines, the manifest, the artifacts' hashes) from a heap
// the runtime starts at 4 MB, so with the default GOGC the collector ran
// four times in a 10k first reconcile's first 50 ms, each time to find
// most of the heap still live: about 6 ms of its 75 (alternated runs). A
// higher GOGC under a soft memory limit lets the heap grow to what the
// pass needs: a 10k pass collects once or not at all, and a 100k one,
// whose heap the limit now bounds, peaks lower than with the default
// in the same time. Left alone when the
// person set GOGC or GOMEMLIMIT.
func relaxGC(logPath string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := int64(passHeapFloor)
	if fi, err := os.Lstat(logPath); err == nil && fi.Size() < math.MaxInt64/passHeapPerLogHalfByte {
		per := int64(passHeapPerLogHalfByte)
		if manifest.ReadsChunked(fi.Size()) {
			per = passHeapPerChunkedLogHalfByte
		}
		limit = max(limit, fi.Size()*per/2)
	}
	oldLimit := debug.SetMemoryLimit(limit)
	oldPercent := debug.SetGCPercent(passGCPercent)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}
