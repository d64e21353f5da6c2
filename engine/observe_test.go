package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/manifest"
)

// Observe merges with the engine's promotion rules and the policy's
// multipliers, creates the log of a memory that has none, drains the
// inbox first, and says a busy lock is busy (observe then queues).
func TestObserve(t *testing.T) {
	root := t.TempDir()
	cfg := config.Default()
	cfg.Learn.Thresholds = map[string]config.TypeThreshold{manifest.Decision: {Required: 5, Promote: 0.65}}
	e := New(root, cfg, nil)
	sighting := func() []*manifest.Observation {
		return []*manifest.Observation{{ID: "obs_db", Type: manifest.Decision, Pattern: "Use SQLite for the cache",
			Details: "context: one process; decision: sqlite; rationale: one file", Evidence: []string{"ADR review"}, QualityOK: true}}
	}
	if _, err := inbox.Enqueue(root, testNow, sighting()); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		res, warn, err := e.Observe(context.Background(), sighting(), testNow.Add(time.Duration(i)*time.Hour), time.Second)
		if err != nil || len(warn) != 0 || len(res.Result.IDs) != 1 {
			t.Fatalf("observe %d: %+v %v %v", i, res, warn, err)
		}
		if i == 0 && res.Inbox.Drained != 1 {
			t.Errorf("the queued sighting was not drained first: %+v", res.Inbox)
		}
	}
	log, err := manifest.ReadLog(manifest.PathsFor(root).Log)
	if err != nil {
		t.Fatal(err)
	}
	// Three sightings of five required: 0.6, still observing (the
	// defaults, two required, would have made it ready).
	if o := log.Find("obs_db"); o == nil || o.Observations != 3 || o.Confidence != 0.6 || o.Status != manifest.Observing {
		t.Fatalf("obs_db = %+v", o)
	}
	lock := filepath.Join(root, ".memory", manifest.LearningLock)
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Observe(context.Background(), sighting(), testNow, 50*time.Millisecond); !errors.Is(err, manifest.ErrLockTimeout) {
		t.Fatalf("a busy lock: %v, want a lock timeout", err)
	}
}
