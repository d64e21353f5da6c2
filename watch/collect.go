package watch

// When the watcher's garbage is collected. A preparation at 50,000
// artifacts allocates about 60 MB over a live heap of about 150 MB, so with
// the runtime's own pacing every other one ran into a collection, and on
// two cores the collection took its time from the preparation: 60–70 ms
// of work took 110–200 ms, and the pass was not ready when its debounce
// ended. A prepared pass waits for its due time; the watcher collects in
// that wait, when the heap has less room left than the next preparation
// would take, so that the next one starts on a collected heap.

import (
	"runtime/metrics"
	"time"
)

// heapState is what the collection is decided on (runtime/metrics).
type heapState struct {
	// inUse: the bytes of heap objects, live or not yet collected.
	inUse uint64
	// goal: the heap size the collector aims to stay under; it starts
	// its cycle some way before it.
	goal uint64
	// allocs: the bytes allocated since the process started.
	allocs uint64
}

var heapSamples = []string{"/memory/classes/heap/objects:bytes", "/gc/heap/goal:bytes", "/gc/heap/allocs:bytes"}

// readHeap reads the heap's state.
func readHeap() heapState {
	s := make([]metrics.Sample, len(heapSamples))
	for i, name := range heapSamples {
		s[i].Name = name
	}
	metrics.Read(s)
	var v [3]uint64
	for i := range s {
		if s[i].Value.Kind() == metrics.KindUint64 {
			v[i] = s[i].Value.Uint64()
		}
	}
	return heapState{inUse: v[0], goal: v[1], allocs: v[2]}
}

// collectAhead reports whether the heap is to be collected before the
// next preparation, which allocates about what the last one did
// (lastPrep): when its room before the goal is less than twice that (the
// collector starts before the goal, and the commit allocates too). With
// nothing known (no preparation yet, no goal) it is not.
func collectAhead(h heapState, lastPrep uint64) bool {
	return lastPrep > 0 && h.goal > 0 && h.inUse+2*lastPrep >= h.goal
}

// collectBefore starts a collection on a goroutine of its own when the
// heap needs one (collectAhead) and the prepared pass is not due yet: the
// collection runs while the watcher waits for it. One at a time; the
// loop goes on.
func (w *watcher) collectBefore(due time.Time) {
	if time.Now().Before(due) && collectAhead(w.heap(), w.prepAlloc) {
		aside(&w.collecting, w.collect)
	}
}
