package heal

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
)

// kinds lists the kinds of evs.
func kinds(evs []learn.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Kind)
	}
	return out
}

// A pass outside a session leaves kept events out of its result (only a
// session's pass records them, journal.SelectEvents): the unchanged
// artifacts are still reported kept, and a session's pass still has its
// kept events.
func TestKeptEventsOnlyInASession(t *testing.T) {
	root, arts := movedRepo(t)
	if err := os.Remove(filepath.Join(root, arts["obs_b"])); err != nil {
		t.Fatal(err)
	}
	res := runReconcile(t, root)
	if got := kinds(res.Events); !slices.Equal(got, []string{learn.KindDeleted}) {
		t.Fatalf("events of a pass outside a session: %v, want only the deletion", got)
	}
	if !slices.Equal(res.Kept, []string{"obs_a", "obs_c"}) {
		t.Fatalf("kept %v, want obs_a and obs_c", res.Kept)
	}
	res, err := Reconcile(context.Background(), root, Options{Now: testNow.Add(time.Hour), LockTimeout: 10 * time.Second, Session: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := kinds(res.Events); !slices.Equal(got, []string{learn.KindKept, learn.KindKept}) {
		t.Fatalf("events of a session's pass: %v, want two kept", got)
	}
}

// A pass that keeps no state for a next one lets its plan go before the
// staleness pass, which then holds the log's references (at 100,000
// observations the two together were the peak); a pass that keeps its
// state (the watcher's) or renders after it keeps the plan.
func TestPlanLetGoBeforeTheStalenessPass(t *testing.T) {
	root, arts := movedRepo(t)
	if err := os.Remove(filepath.Join(root, arts["obs_b"])); err != nil {
		t.Fatal(err)
	}
	p := manifest.PathsFor(root)
	for _, c := range []struct {
		name   string
		opts   Options
		letGo  bool
		render bool
	}{
		{"a one-shot pass", Options{}, true, false},
		{"a pass that keeps its state", Options{Warm: &Warm{}}, false, false},
		{"a pass that renders after it", Options{Render: true}, false, true},
		{"a pass without the staleness pass", Options{}, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := c.opts
			opts.Now, opts.Feedback = testNow, true
			if c.name != "a pass without the staleness pass" {
				opts.Staleness = &config.Staleness{}
			}
			pr, res, err := prepareLocked(context.Background(), root, p, opts)
			if err != nil || pr == nil {
				t.Fatalf("prepare: %v %v", pr, err)
			}
			defer pr.drop()
			if let := pr.st.Manifest == nil; let != c.letGo {
				t.Fatalf("plan let go: %v, want %v", let, c.letGo)
			}
			if c.letGo && (pr.st.Files != nil || pr.st.Rel != nil || pr.manifestBytes != nil || pr.manifestSum == "") {
				t.Fatalf("after letting the plan go: files %v, rel %v, manifest bytes held %v, sum %q",
					pr.st.Files != nil, pr.st.Rel != nil, pr.manifestBytes != nil, pr.manifestSum)
			}
			if res.Deletions != 1 || pr.manifestW == nil || pr.logW == nil {
				t.Fatalf("deletions %d, manifest staged %v, log staged %v", res.Deletions, pr.manifestW != nil, pr.logW != nil)
			}
		})
	}
}

// The stats the caller took before the pass (Options.Known) are taken by
// it and emptied once it has loaded: the caller's map goes with them.
func TestKnownEmptiedOnceLoaded(t *testing.T) {
	root, arts := movedRepo(t)
	abs := filepath.Join(root, arts["obs_a"])
	st, typ := statcache.LstatRaw(abs)
	if typ == 0 {
		t.Fatal("no stat of", abs)
	}
	known := statcache.NewKnown([]string{abs}, []statcache.KnownStat{{Stat: st, Type: typ}})
	res, err := Reconcile(context.Background(), root, Options{Now: testNow, LockTimeout: 10 * time.Second, Known: &known})
	if err != nil {
		t.Fatal(err)
	}
	if known.Len() != 0 {
		t.Fatalf("the caller's stats are still held after the pass: %v", known)
	}
	if res.Unchanged != 3 {
		t.Fatalf("unchanged %d, want 3", res.Unchanged)
	}
}
