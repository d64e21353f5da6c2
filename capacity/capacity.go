// Package capacity decides the knowledge-capacity notifications devflow's
// HUD shows (.memory/.notifications.json): which threshold an append to
// decisions.md or pitfalls.md crosses, the severity, the hard-ceiling
// notification, and which notifications are still to be shown. Plain
// functions over plain data; reading and writing the file is manifest's.
package capacity

import (
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// Ceiling is the number of active entries a knowledge file takes at most.
const Ceiling = 100

// SoftStart is the first threshold: a first notification for a file that
// already holds at least this many entries counts from 0.
const SoftStart = 50

// Thresholds are the active-entry counts whose crossing by an append fires
// a notification.
var Thresholds = []int{50, 60, 70, 80, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, 100}

// Notification keys of the two knowledge files.
const (
	KeyDecisions = "knowledge-capacity-decisions"
	KeyPitfalls  = "knowledge-capacity-pitfalls"
)

// Severity of a threshold: dim below 70, warning from 70, error from 90.
func Severity(threshold int) string {
	switch {
	case threshold >= 90:
		return "error"
	case threshold >= 70:
		return "warning"
	}
	return "dim"
}

// Stamp formats t as JavaScript's toISOString does (UTC, milliseconds).
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// AfterAppend returns the notification to store after an append took a
// knowledge file from previous to next active entries, given the one stored
// under its key (existing is nil when there is none), and false when no
// threshold was crossed (the stored one is left as it is).
//
// With no stored notification and next ≥ 50, counting starts from 0, so a
// first run on a full file fires. The highest threshold crossed wins. The
// stored created_at is kept, and so is dismissed_at_threshold unless the new
// threshold is higher (a dismissal at a lower threshold re-fires).
func AfterAppend(existing *manifest.Notification, previous, next int, now time.Time) (manifest.Notification, bool) {
	from := previous
	if existing == nil && next >= SoftStart {
		from = 0
	}
	highest := 0
	for _, t := range Thresholds {
		if t > from && t <= next {
			highest = t
		}
	}
	if highest == 0 {
		return manifest.Notification{}, false
	}
	n := manifest.Notification{
		Active:    true,
		Threshold: highest,
		Count:     next,
		Ceiling:   Ceiling,
		Severity:  Severity(highest),
		CreatedAt: Stamp(now),
	}
	if existing != nil {
		if existing.CreatedAt != "" {
			n.CreatedAt = existing.CreatedAt
		}
		if d := existing.DismissedAtThreshold; d != nil && *d != 0 && highest <= *d {
			v := *d
			n.DismissedAtThreshold = &v
		}
	}
	return n, true
}

// AtCeiling returns the notification stored when an append is refused
// because the file already holds count ≥ 100 active entries: an error,
// undismissed, created now.
func AtCeiling(count int, now time.Time) manifest.Notification {
	return manifest.Notification{
		Active:    true,
		Threshold: Ceiling,
		Count:     count,
		Ceiling:   Ceiling,
		Severity:  "error",
		CreatedAt: Stamp(now),
	}
}

// Notice is a notification to show, with the file it is about.
type Notice struct {
	Key  string `json:"key"`
	File string `json:"file"` // decisions.md or pitfalls.md
	manifest.Notification
}

// Shown returns the knowledge-capacity notifications to show: active, and
// not dismissed at their threshold or a higher one. Decisions come first.
func Shown(n *manifest.Notifications) []Notice {
	var out []Notice
	for _, k := range []struct{ key, file string }{{KeyDecisions, "decisions.md"}, {KeyPitfalls, "pitfalls.md"}} {
		v, ok := n.Get(k.key)
		if !ok || !v.Active {
			continue
		}
		if d := v.DismissedAtThreshold; d != nil && *d != 0 && *d >= v.Threshold {
			continue
		}
		if s := v.Severity; s != "dim" && s != "warning" && s != "error" {
			v.Severity = Severity(v.Threshold) // never print what a file says unchecked
		}
		out = append(out, Notice{Key: k.key, File: k.file, Notification: v})
	}
	return out
}
