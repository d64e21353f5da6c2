// Package parallel runs independent work over the indexes of a slice on
// every core. A pass at 10,000 observations or more does several such
// jobs — scanning log lines, reading artifacts, extracting references,
// decoding and encoding changed lines — each item on its own, so each
// goroutine takes a contiguous range and writes only what belongs to it;
// the caller then reads the results in order, and what a pass decides is
// the same on any number of cores.
package parallel

import (
	"runtime"
	"sync"
)

// Workers is how many goroutines n items are worth when each goroutine
// should get at least share of them (share ≥ 1): one per core, at most
// n/share, at least one.
func Workers(n, share int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/max(share, 1)))
}

// Ranges calls f(lo, hi) for contiguous ranges that cover [0, n) once,
// on workers goroutines and returns when all are done; with one worker
// (or n small) f runs once, on the caller's goroutine, with the whole
// range. f must touch only what belongs to its range, and what every
// call reads.
func Ranges(n, workers int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	if workers <= 1 || n == 1 {
		f(0, n)
		return
	}
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(lo+per, n)
		wg.Go(func() { f(lo, hi) })
	}
	wg.Wait()
}
