package learn

import (
	"testing"
	"time"
)

// TestRestoredCancelsDeleted: a restored event takes back exactly one
// deleted event of its target (an undone deletion is no deletion); a
// restored event with no deletion before it changes nothing, and false
// positives are not cancelled.
func TestRestoredCancelsDeleted(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(d int, kind string) Event {
		return Event{TS: t0.Add(time.Duration(d) * time.Hour), Target: "obs_a", Kind: kind, Value: 1, Type: "workflow"}
	}
	now := t0.Add(48 * time.Hour)
	base := Fold([]Event{ev(0, KindKept)}, now)["obs_a"]
	undone := Fold([]Event{ev(0, KindKept), ev(1, KindDeleted), ev(2, KindRestored)}, now)["obs_a"]
	if undone.HarmfulEvents != 0 || undone.Harmful != 0 || undone.Weight != base.Weight {
		t.Fatalf("deleted then restored: harmful %d/%v weight %v, want as before the deletion (weight %v)", undone.HarmfulEvents, undone.Harmful, undone.Weight, base.Weight)
	}
	twice := Fold([]Event{ev(1, KindDeleted), ev(2, KindRestored), ev(3, KindDeleted)}, now)["obs_a"]
	if twice.HarmfulEvents != 1 {
		t.Fatalf("deleted, restored, deleted: %d harmful events, want 1", twice.HarmfulEvents)
	}
	alone := Fold([]Event{ev(0, KindRestored), ev(1, KindFalsePositive)}, now)["obs_a"]
	if alone.HarmfulEvents != 1 {
		t.Fatalf("restored without a deletion cancelled a false positive: %+v", alone)
	}
	tally := Tally([]Event{ev(1, KindDeleted), ev(2, KindRestored)}, nil)["workflow"]
	if tally.Failures != 0 || tally.N != 0 || len(tally.FailureReasons) != 0 {
		t.Fatalf("tally after an undone deletion: %+v", tally)
	}
}

// TestNamedDeletionCountsOnce: deleted events naming one deletion (Of) —
// two clones, or two branches, each recording the same removal — count
// once while it is in force, in the fold and in the tally; a restore
// naming it takes it out of force (so the same rendering deleted again
// counts again), a restore naming another deletion cancels nothing, and
// events without a name count as they always did.
func TestNamedDeletionCountsOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ev := func(d int, kind, of string) Event {
		return Event{TS: t0.Add(time.Duration(d) * time.Hour), Target: "obs_a", Kind: kind, Value: 1, Type: "workflow", Of: of}
	}
	del := func(d int, of string) Event { return ev(d, KindDeleted, of) }
	res := func(d int, of string) Event { return ev(d, KindRestored, of) }
	cases := []struct {
		name   string
		events []Event
		want   int // harmful events in the fold, failures in the tally
	}{
		{"one deletion recorded twice", []Event{del(1, "k"), del(2, "k")}, 1},
		{"recorded twice, then restored", []Event{del(1, "k"), del(2, "k"), res(3, "k")}, 0},
		{"restored, and the restore recorded twice", []Event{del(1, "k"), res(2, "k"), res(3, "k")}, 0},
		{"deleted again after a restore", []Event{del(1, "k"), res(2, "k"), del(3, "k")}, 1},
		{"two deletions", []Event{del(1, "k"), del(2, "j")}, 2},
		{"a restore of another deletion", []Event{del(1, "k"), res(2, "j")}, 1},
		{"the restore names the older of two", []Event{del(1, "k"), del(2, "j"), res(3, "k"), del(4, "j")}, 1},
		{"unnamed, as before", []Event{del(1, ""), del(2, "")}, 2},
		{"an unnamed restore cancels the newest", []Event{del(1, "k"), del(2, "j"), res(3, ""), del(4, "k")}, 1},
	}
	now := t0.Add(48 * time.Hour)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Fold(c.events, now)["obs_a"]
			if s.HarmfulEvents != c.want {
				t.Errorf("fold: %d harmful events, want %d", s.HarmfulEvents, c.want)
			}
			if got := Tally(c.events, nil)["workflow"]; got.Failures != c.want || got.N != c.want {
				t.Errorf("tally: %+v, want %d failures", got, c.want)
			}
			// The same, folded in two batches through a snapshot.
			for cut := 1; cut < len(c.events); cut++ {
				f := NewFolder()
				f.Add(c.events[:cut])
				b, err := f.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				g := NewFolder()
				if err := g.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				g.Add(c.events[cut:])
				if got := g.Result(now, Params{})["obs_a"].HarmfulEvents; got != c.want {
					t.Errorf("cut at %d: %d harmful events, want %d", cut, got, c.want)
				}
				tally := Tally(c.events[:cut], nil)
				TallyInto(tally, c.events[cut:], nil)
				if got := tally["workflow"].Failures; got != c.want {
					t.Errorf("tally cut at %d: %d failures, want %d", cut, got, c.want)
				}
			}
		})
	}
}
