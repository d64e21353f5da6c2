package parallel

import (
	"runtime"
	"sync"
	"testing"
)

// Every index is visited exactly once, in contiguous ranges, for any
// number of items and workers.
func TestRanges(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7, 100, 1001} {
		for _, workers := range []int{0, 1, 2, 3, 8, 2000} {
			seen := make([]int, n)
			var mu sync.Mutex
			calls := 0
			Ranges(n, workers, func(lo, hi int) {
				if lo >= hi || lo < 0 || hi > n {
					t.Errorf("n %d, %d workers: range [%d, %d)", n, workers, lo, hi)
				}
				mu.Lock()
				calls++
				mu.Unlock()
				for i := lo; i < hi; i++ {
					seen[i]++
				}
			})
			for i, c := range seen {
				if c != 1 {
					t.Fatalf("n %d, %d workers: index %d visited %d times", n, workers, i, c)
				}
			}
			if n > 0 && (calls < 1 || calls > max(workers, 1)) {
				t.Errorf("n %d, %d workers: %d ranges", n, workers, calls)
			}
		}
	}
}

func TestWorkers(t *testing.T) {
	procs := runtime.GOMAXPROCS(0)
	for _, c := range []struct{ n, share, want int }{
		{0, 10, 1}, {9, 10, 1}, {20, 10, min(2, procs)}, {1 << 20, 1, procs}, {5, 0, min(5, procs)},
	} {
		if got := Workers(c.n, c.share); got != c.want {
			t.Errorf("Workers(%d, %d) = %d, want %d", c.n, c.share, got, c.want)
		}
	}
}
