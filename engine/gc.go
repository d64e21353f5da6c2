package engine

import (
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"

	"github.com/learnwatch/learnwatch/manifest"
)

// Collector settings of a full pass (relaxGC).
const (
	// passGCPercent is the GOGC of a full pass: off, so that the soft
	// memory limit below alone says when the collector runs. With a GOGC
	// of 400 (the heap may grow to five times what is live) the runtime's
	// first goal was 16 MB, a 10k first reconcile allocates about 24 MB,
	// and it collected twice to find most of it live: about 8 ms of CPU
	// and 5 ms of its 70 (six alternated runs; a 30k first pass 0.36 ->
	// 0.33 s). Where the limit binds (100,000 observations) the two are
	// the same: the goal was the limit already (first pass 104 MiB
	// resident, 1.06-1.19 s both ways; the full pass with the caches
	// 120 MiB).
	passGCPercent = -1
	// passHeapFloor and passHeapPerLogHalfByte set the soft memory limit
	// that keeps it bounded: the larger of 96 MiB and five and a half
	// bytes per byte of the learning log. A first pass over a log read
	// whole holds about four per byte at its peak (the log as read, its lines' index, the
	// staleness pass's references and cache), so the limit stays above
	// what is live and the collector does not run back to back; a limit
	// of eight per byte and a 256 MiB floor let a 100,000 observations'
	// pass grow to 300 MiB where 210 serve it in the same time. Below
	// ChunkedFrom the floor is the limit (a 10,000 observations' pass
	// holds about 35 MB at its peak).
	passHeapFloor          = 96 << 20
	passHeapPerLogHalfByte = 11
	// passHeapPerChunkedLogHalfByte is the limit's bytes per byte of a log
	// read in chunks (manifest.ReadsChunked), which the pass does not
	// hold: two. The history, at 100,000 observations (a 38 MB
	// log): at four per byte (a live peak of three), alternated with the
	// limit of 5.5 per byte on a whole log, its peak RSS 212 -> 158 MiB,
	// its time 2.6-2.9 -> 3.1-3.3 s; a full pass with the caches 255 ->
	// 189 MiB. At three and a half, with a smaller heap (a line index of
	// 144 bytes a line, no findings held): a first pass 158-162 -> 139-140
	// MiB, a full pass with caches 190-193 -> 169-170 MiB, in the same
	// time. Since a pass that keeps no state lets its plan go before the
	// staleness pass (heal.State.letGo), takes its staleness Checker after
	// the load and empties the replay check's stats once loaded, both the
	// first pass and the full pass with the caches peak at about 80 MB
	// live (96 and 95 before), so two and a half per byte (and the floor
	// at 96 MiB instead of 128, which at 100,000 observations was the
	// first pass's limit) hold them: the first pass 139 -> 107-109 MiB in
	// the same 1.1-1.4 s, the full pass with the caches 168 -> 123 MiB in
	// 0.69-0.74 s against 0.70-0.74 (alternated runs). The code before
	// under the same limit: 132 MiB and 1.76 s for the first pass, the
	// collector running back to back. Two per byte since the full pass
	// with the caches peaks at about 70 MB live (79 before: smaller log
	// chunks, FindLine's table, the replay record's stats let go): its
	// limit went from 112 to the 96 MiB floor at 100,000 observations (a
	// 47 MB log once marked), its peak RSS 120 -> 104 MiB, its time
	// 0.68 -> 0.71-0.80 s (three alternated rounds); the first pass,
	// whose limit was the floor already, is unchanged.
	passHeapPerChunkedLogHalfByte = 4
	// passHeapChunkedFloor is the floor of the limit of a pass over a log
	// read in chunks: 88 MiB, not 96. Under a soft limit the runtime
	// returns the pages the collector freed only when the limit asks, so
	// a pass's resident size follows the limit, not what is live: at
	// 100,000 observations both the first pass and the full pass with
	// the caches (their live peaks 59 and 67 MB, a collection forced at
	// each step) were resident at 104 MiB under the 96 MiB floor and are
	// at 96-100 MiB under 88, for 3-4 % more time (five alternated
	// rounds of both passes: 1.07-1.11 against 1.12-1.19 s and 0.76-0.79
	// against 0.77-0.80 s). Under 84 MiB the full pass took 0.88-0.93 s.
	passHeapChunkedFloor = 88 << 20
)

// Collector settings of the session-start index (relaxIndexGC).
const (
	// indexGCPercent is the index's GOGC: its heap may grow to five times
	// what is live before the collector runs.
	indexGCPercent = 400
	// indexHeapFloor and indexHeapPerLogQuarterByte set its soft memory
	// limit: the larger of 48 MiB and a quarter more than the learning
	// log's size. A session start that replayed its pass holds a few MB
	// at 10,000 observations and about 35 MB at 100,000 (a 38 MB log).
	indexHeapFloor             = 48 << 20
	indexHeapPerLogQuarterByte = 5
	// indexHeapLarge: an index that starts from a heap larger than this
	// leaves the collector as it is. One whose session's pass ran in full
	// starts from the pass's heap (about 180 MB at 100,000 observations),
	// which its ranking then reads: under the limit above the collector
	// ran back to back (the session start 0.87 -> 1.1-1.2 s), and under a
	// limit of twice that heap the peak RSS grew from 137 to 153 MiB.
	indexHeapLarge = 24 << 20
)

// relaxIndexGC sets the collector for building the knowledge index and
// returns what restores it. With the default GOGC the collector ran three
// times in a 10k session start's index, each finding about 3 MB live,
// on the cores the index's own goroutines (the feedback fold, the stale
// marks) were using: without them the session start went from medians of
// 20.5-21.3 ms to 16.1-17.3 (four alternated rounds of 11, a 66k-event
// journal). At 100,000 observations a replayed session start is
// unchanged (58-71 MiB resident at its peak, 0.11-0.12 s, both ways).
// Left alone when the person set GOGC or GOMEMLIMIT (setGC).
func relaxIndexGC(logPath string) (restore func()) {
	if heapNow() > indexHeapLarge {
		return func() {}
	}
	limit := int64(indexHeapFloor)
	if fi, err := os.Lstat(logPath); err == nil && fi.Size() < math.MaxInt64/indexHeapPerLogQuarterByte {
		limit = max(limit, fi.Size()*indexHeapPerLogQuarterByte/4)
	}
	return setGC(indexGCPercent, limit)
}

// heapNow is the bytes the heap's objects take now, live or not yet
// collected (runtime/metrics: no stop of the world).
func heapNow() int64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[0].Value.Uint64() > math.MaxInt64/4 {
		return 0
	}
	return int64(s[0].Value.Uint64())
}

// setGC sets the collector's GOGC and soft memory limit and returns what
// restores them. Left alone when the person set GOGC or GOMEMLIMIT.
func setGC(percent int, limit int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	oldLimit := debug.SetMemoryLimit(limit)
	oldPercent := debug.SetGCPercent(percent)
	return func() {
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	}
}

// relaxGC sets the collector for one full pass and returns what restores
// it. A pass allocates most of what it holds in its first milliseconds
// (the log, its lines, the manifest, the artifacts' hashes) from a heap
// the runtime starts at 4 MB, so with the default GOGC the collector ran
// four times in a 10k first reconcile's first 50 ms, each time to find
// most of the heap still live: about 6 ms of its 75 (alternated runs).
// With the collector off under a soft memory limit the heap grows to what
// the pass needs: a pass whose heap stays under the limit (10,000
// observations: about 24 MB) never collects, and a 100k one, whose heap
// the limit bounds, peaks lower than with the default in the same time.
// Left alone when the person set GOGC or GOMEMLIMIT (setGC).
func relaxGC(logPath string) (restore func()) {
	limit := int64(passHeapFloor)
	if fi, err := os.Lstat(logPath); err == nil && fi.Size() < math.MaxInt64/passHeapPerLogHalfByte {
		per := int64(passHeapPerLogHalfByte)
		if manifest.ReadsChunked(fi.Size()) {
			per, limit = passHeapPerChunkedLogHalfByte, passHeapChunkedFloor
		}
		limit = max(limit, fi.Size()*per/2)
	}
	return setGC(passGCPercent, limit)
}
