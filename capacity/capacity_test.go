package capacity

import (
	"reflect"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

var t0 = time.Date(2026, 1, 5, 9, 30, 0, 0, time.UTC)

func intp(v int) *int { return &v }

// The sequence 49 → 50 → 69 → 70 → 90 → 100, each step one run of
// appends, with a dismissal after 70 that the next threshold re-fires.
func TestSequence(t *testing.T) {
	type step struct {
		prev, next int
		dismiss    bool // dismiss (as devflow's HUD does) before this step
		fire       bool
		want       manifest.Notification
	}
	created := Stamp(t0)
	steps := []step{
		{prev: 48, next: 49},
		{prev: 49, next: 50, fire: true, want: manifest.Notification{Active: true, Threshold: 50, Count: 50, Ceiling: 100, Severity: "dim", CreatedAt: created}},
		{prev: 50, next: 69, fire: true, want: manifest.Notification{Active: true, Threshold: 60, Count: 69, Ceiling: 100, Severity: "dim", CreatedAt: created}},
		{prev: 69, next: 70, fire: true, want: manifest.Notification{Active: true, Threshold: 70, Count: 70, Ceiling: 100, Severity: "warning", CreatedAt: created}},
		{prev: 70, next: 71},
		{prev: 71, next: 90, dismiss: true, fire: true, want: manifest.Notification{Active: true, Threshold: 90, Count: 90, Ceiling: 100, Severity: "error", CreatedAt: created}},
		{prev: 90, next: 100, fire: true, want: manifest.Notification{Active: true, Threshold: 100, Count: 100, Ceiling: 100, Severity: "error", CreatedAt: created}},
	}
	var stored *manifest.Notification
	now := t0
	for _, s := range steps {
		if s.dismiss {
			if len(Shown(fileWith(stored))) != 1 {
				t.Fatalf("before the dismissal the notification is not shown: %+v", stored)
			}
			stored.Active = false
			stored.DismissedAtThreshold = intp(stored.Threshold)
			if len(Shown(fileWith(stored))) != 0 {
				t.Fatalf("a dismissed notification is shown: %+v", stored)
			}
		}
		got, fire := AfterAppend(stored, s.prev, s.next, now)
		if fire != s.fire {
			t.Fatalf("%d → %d: fire = %v, want %v", s.prev, s.next, fire, s.fire)
		}
		if !fire {
			continue
		}
		if !reflect.DeepEqual(got, s.want) {
			t.Errorf("%d → %d:\n got %+v\nwant %+v", s.prev, s.next, got, s.want)
		}
		if len(Shown(fileWith(&got))) != 1 {
			t.Errorf("%d → %d: fired notification not shown", s.prev, s.next)
		}
		stored = &got
		now = now.Add(time.Hour) // created_at stays the first one
	}
}

func fileWith(n *manifest.Notification) *manifest.Notifications {
	f, _ := manifest.ParseNotifications([]byte("{}"))
	if n != nil {
		f.Set(KeyDecisions, *n)
	}
	return f
}

func TestAfterAppend(t *testing.T) {
	tests := []struct {
		name       string
		existing   *manifest.Notification
		prev, next int
		fire       bool
		threshold  int
		severity   string
		dismissed  *int
	}{
		{name: "first run at 49: nothing", prev: 48, next: 49},
		{name: "first run on a file already at 75 counts from 0", prev: 74, next: 75, fire: true, threshold: 70, severity: "warning"},
		{name: "first run at 50", prev: 49, next: 50, fire: true, threshold: 50, severity: "dim"},
		{name: "with a stored one, no seeding", existing: &manifest.Notification{Threshold: 70}, prev: 74, next: 75},
		{name: "91 is its own threshold", existing: &manifest.Notification{Threshold: 90}, prev: 90, next: 91, fire: true, threshold: 91, severity: "error"},
		{name: "89 → 90 is an error", existing: &manifest.Notification{Threshold: 80}, prev: 89, next: 90, fire: true, threshold: 90, severity: "error"},
		{name: "79 → 80 a warning", existing: &manifest.Notification{Threshold: 70}, prev: 79, next: 80, fire: true, threshold: 80, severity: "warning"},
		{name: "dismissed at 70, crossing 80 re-fires", existing: &manifest.Notification{Threshold: 70, DismissedAtThreshold: intp(70)}, prev: 79, next: 80, fire: true, threshold: 80, severity: "warning"},
		{name: "dismissed at 95, re-crossing 90 keeps the dismissal", existing: &manifest.Notification{Threshold: 95, DismissedAtThreshold: intp(95)}, prev: 89, next: 90, fire: true, threshold: 90, severity: "error", dismissed: intp(95)},
		{name: "a count that fell: no crossing", existing: &manifest.Notification{Threshold: 60}, prev: 65, next: 64},
	}
	for _, tt := range tests {
		got, fire := AfterAppend(tt.existing, tt.prev, tt.next, t0)
		if fire != tt.fire {
			t.Errorf("%s: fire = %v", tt.name, fire)
			continue
		}
		if !fire {
			continue
		}
		if got.Threshold != tt.threshold || got.Severity != tt.severity || got.Count != tt.next || !got.Active || got.Ceiling != 100 {
			t.Errorf("%s: %+v", tt.name, got)
		}
		if !reflect.DeepEqual(got.DismissedAtThreshold, tt.dismissed) {
			t.Errorf("%s: dismissed_at_threshold %v, want %v", tt.name, got.DismissedAtThreshold, tt.dismissed)
		}
	}
}

func TestAtCeilingAndShown(t *testing.T) {
	n := AtCeiling(100, t0)
	want := manifest.Notification{Active: true, Threshold: 100, Count: 100, Ceiling: 100, Severity: "error", CreatedAt: "2026-01-05T09:30:00.000Z"}
	if !reflect.DeepEqual(n, want) {
		t.Errorf("AtCeiling = %+v", n)
	}
	f, err := manifest.ParseNotifications([]byte(`{
  "knowledge-capacity-pitfalls": {"active": true, "threshold": 60, "count": 61, "ceiling": 100, "dismissed_at_threshold": null, "severity": "\u001b[31mred", "created_at": "x"},
  "knowledge-capacity-decisions": {"active": true, "threshold": 80, "count": 80, "ceiling": 100, "dismissed_at_threshold": 80, "severity": "warning", "created_at": "x"},
  "other": {"active": true}
}`))
	if err != nil {
		t.Fatal(err)
	}
	got := Shown(f)
	if len(got) != 1 || got[0].File != "pitfalls.md" || got[0].Severity != "dim" {
		t.Errorf("Shown = %+v, want only pitfalls, its severity recomputed", got)
	}
}
