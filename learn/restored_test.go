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
