package watch

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/manifest"
)

func TestCollectAhead(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		name     string
		h        heapState
		lastPrep uint64
		want     bool
	}{
		{"no preparation yet", heapState{inUse: 290 * mb, goal: 300 * mb}, 0, false},
		{"no goal known", heapState{inUse: 290 * mb}, 60 * mb, false},
		{"room for two preparations", heapState{inUse: 150 * mb, goal: 300 * mb}, 60 * mb, false},
		{"room for one preparation only", heapState{inUse: 200 * mb, goal: 300 * mb}, 60 * mb, true},
		{"exactly two preparations' room", heapState{inUse: 180 * mb, goal: 300 * mb}, 60 * mb, true},
		{"past the goal", heapState{inUse: 310 * mb, goal: 300 * mb}, 1, true},
		{"a small heap with room", heapState{inUse: 3 * mb, goal: 8 * mb}, 1 * mb, false},
	} {
		if got := collectAhead(tc.h, tc.lastPrep); got != tc.want {
			t.Errorf("%s: collectAhead(%+v, %d) = %v, want %v", tc.name, tc.h, tc.lastPrep, got, tc.want)
		}
	}
}

func TestReadHeap(t *testing.T) {
	a := readHeap()
	sink = make([]byte, 1<<20)
	b := readHeap()
	if a.inUse == 0 || a.goal == 0 || b.allocs < a.allocs+1<<20 {
		t.Fatalf("heap states %+v then %+v after a 1 MiB allocation", a, b)
	}
}

var sink []byte

// TestCollectBeforeDue: once an edit's pass is prepared, the watcher
// collects the heap while the pass waits for its debounce to end when the
// heap has less room than two preparations (as the runtime says), and not
// when it has more; the edit is committed as prepared either way.
func TestCollectBeforeDue(t *testing.T) {
	for _, short := range []bool{true, false} {
		t.Run(fmt.Sprintf("short=%v", short), func(t *testing.T) {
			root := fixture(t, 3, 1)
			var collected, prepared, committed atomic.Int32
			var allocs atomic.Uint64
			r := start(t, root, Options{Debounce: debounce}, func(w *watcher) {
				w.heap = func() heapState {
					// Every read sees a megabyte more allocated: a
					// preparation allocates one or more.
					h := heapState{inUse: 100 << 20, goal: 1 << 40, allocs: allocs.Add(1 << 20)}
					if short {
						h.goal = h.inUse
					}
					return h
				}
				w.collect = func() { collected.Add(1) }
				w.afterPrepare = func(burst bool) {
					if burst && w.eng.HasPrepared() {
						prepared.Add(1)
					}
				}
				w.reconcile = countPrepared(w.reconcile, func(rep engine.Report) bool { return rep.Edits > 0 }, &committed)
			})
			for i := range 3 {
				b := []byte(fmt.Sprintf("# edited\n\nby a person, %d\n", i))
				if err := os.WriteFile(abs(root, cmdRel(0)), b, 0o644); err != nil {
					t.Fatal(err)
				}
				r.waitFor(debounce+margin, "the edit recorded", func() bool {
					e, ok := entry(t, root, "obs_c0")
					return ok && e.ContentHash == manifest.Hash(b)
				})
			}
			r.stop()
			if committed.Load() == 0 {
				t.Fatalf("no edit committed as prepared (%d bursts prepared)", prepared.Load())
			}
			switch n := collected.Load(); {
			case short && n == 0:
				t.Fatalf("%d passes prepared with the heap short of room, no collection", prepared.Load())
			case !short && n != 0:
				t.Fatalf("%d collections with the heap's room ample", n)
			}
		})
	}
}
