package engine

import (
	"math"
	"os"
	"runtime/debug"
)

// Collector settings of a full pass (relaxGC).
const (
	// passGCPercent is the GOGC of a full pass: the heap may grow to five
	// times what is live before the collector runs, instead of twice.
	passGCPercent = 400
	// passHeapFloor and passHeapPerLogByte set the soft memory limit that
	// keeps it bounded: the larger of 256 MiB and eight bytes per byte of
	// the learning log (a first pass holds about 4.6 per byte at its peak,
	// so the limit stays well above what is live and never makes the
	// collector run back to back).
	passHeapFloor      = 256 << 20
	passHeapPerLogByte = 8
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
// (270–300 MiB instead of 330–360) in the same time. Left alone when the
// person set GOGC or GOMEMLIMIT.
func relaxGC(logPath string) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	limit := int64(passHeapFloor)
	if fi, err := os.Lstat(logPath); err == nil && fi.Size() < math.MaxInt64/passHeapPerLogByte {
		limit = max(limit, fi.Size()*passHeapPerLogByte)
	}
	oldLimit := debug.SetMemoryLimit(limit)
	oldPercent := debug.SetGCPercent(passGCPercent)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}
