package watch

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/manifest"
)

// A writer that found the lock busy queues an item: the watcher sees the
// inbox event and drains it (one reconcile), without triggering itself on
// the drain's own writes and removals. The inbox directory does not exist
// when the watcher starts.
func TestInboxDrainedOnEvent(t *testing.T) {
	root := fixture(t, 2, 0)
	r := start(t, root, Options{Debounce: debounce}, nil)
	before := r.count.Load()
	var o manifest.Observation
	if err := json.Unmarshal([]byte(`{"id":"obs_queued","type":"decision","pattern":"keep the queue on disk","evidence":["inbox"]}`), &o); err != nil {
		t.Fatal(err)
	}
	if _, err := inbox.Enqueue(root, time.Now(), []*manifest.Observation{&o}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "the queued observation merged", func() bool {
		return observations(t, root)["obs_queued"] != nil
	})
	if es, err := inbox.List(root); err != nil || len(es) != 0 {
		t.Fatalf("inbox after the drain: %v %v", es, err)
	}
	if n := r.quiet(10 * debounce); n != 0 {
		t.Fatalf("%d reconciles after the drain: the watcher triggers itself", n)
	}
	// A second item, now that the directory exists and is watched.
	o2 := o
	o2.ID = "obs_queued2"
	o2.Pattern = "a second queued decision"
	if _, err := inbox.Enqueue(root, time.Now(), []*manifest.Observation{&o2}); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "the second queued observation merged", func() bool {
		return observations(t, root)["obs_queued2"] != nil
	})
	if got := r.count.Load() - before; got != 2 {
		t.Errorf("two items caused %d reconciles, want 2", got)
	}
	r.stop()
	checkFiles(t, root)
}
