package learn

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// foldState is the JSON form of a Folder: the raw (undecayed) per-target
// sums, exactly as Add leaves them. Floats are written in the shortest form
// that reads back to the same bits, times in RFC 3339 with nanoseconds, so
// a folder read back continues exactly where it stopped.
type foldState struct {
	Newest  stamp      `json:"newest"`
	Events  int        `json:"events"`
	Targets []rawStats `json:"targets"`
}

type rawStats struct {
	Target          string    `json:"target"`
	Type            string    `json:"type,omitempty"`
	Helpful         float64   `json:"helpful"`
	Harmful         float64   `json:"harmful"`
	Neutral         float64   `json:"neutral"`
	HelpfulEvents   int       `json:"helpful_events"`
	HarmfulEvents   int       `json:"harmful_events"`
	NeutralEvents   int       `json:"neutral_events"`
	LastFeedback    stamp     `json:"last_feedback"`
	LastUse         stamp     `json:"last_use"`
	Reinforcements  int       `json:"reinforcements"`
	Outcomes        int       `json:"outcomes"`
	OutcomeFailures int       `json:"outcome_failures"`
	Regression      bool      `json:"regression,omitempty"`
	Aged            int       `json:"aged,omitempty"`
	Via             string    `json:"via,omitempty"`
	Deleted         []float64 `json:"deleted,omitempty"`
	Manual          Level     `json:"manual,omitempty"`
	ManualReason    string    `json:"manual_reason,omitempty"`
	ManualAt        stamp     `json:"manual_at"`
	ResetAt         stamp     `json:"reset_at"`
}

// MarshalJSON encodes the folder's raw state, targets sorted by id. It
// fails on sums that JSON cannot hold (an infinite sum from absurd values):
// such a folder cannot be kept, only recomputed.
func (f *Folder) MarshalJSON() ([]byte, error) {
	st := foldState{Newest: stamp(f.newest), Events: f.events, Targets: make([]rawStats, 0, len(f.stats))}
	for _, s := range f.stats {
		st.Targets = append(st.Targets, rawStats{
			Target: s.Target, Type: s.Type,
			Helpful: s.Helpful, Harmful: s.Harmful, Neutral: s.Neutral,
			HelpfulEvents: s.HelpfulEvents, HarmfulEvents: s.HarmfulEvents, NeutralEvents: s.NeutralEvents,
			LastFeedback: stamp(s.LastFeedback), LastUse: stamp(s.LastUse),
			Reinforcements: s.Reinforcements, Outcomes: s.Outcomes, OutcomeFailures: s.OutcomeFailures,
			Regression: s.Regression, Aged: s.Aged, Via: s.Via, Deleted: s.deleted,
			Manual: s.Manual, ManualReason: s.ManualReason, ManualAt: stamp(s.ManualAt), ResetAt: stamp(s.ResetAt),
		})
	}
	sort.Slice(st.Targets, func(i, j int) bool { return st.Targets[i].Target < st.Targets[j].Target })
	return json.Marshal(st)
}

// UnmarshalJSON restores a folder written by MarshalJSON. A state naming a
// target twice or a target without id is an error.
func (f *Folder) UnmarshalJSON(b []byte) error {
	var st foldState
	if err := json.Unmarshal(b, &st); err != nil {
		return err
	}
	if st.Events < 0 {
		return fmt.Errorf("fold state: negative event count %d", st.Events)
	}
	stats := make(map[string]Stats, len(st.Targets))
	for _, r := range st.Targets {
		if r.Target == "" {
			return fmt.Errorf("fold state: a target without id")
		}
		if _, dup := stats[r.Target]; dup {
			return fmt.Errorf("fold state: target %q twice", r.Target)
		}
		if len(r.Deleted) == 0 {
			r.Deleted = nil // one representation of "none", as cancelDeleted leaves it
		}
		stats[r.Target] = Stats{
			Target: r.Target, Type: r.Type,
			Helpful: r.Helpful, Harmful: r.Harmful, Neutral: r.Neutral,
			HelpfulEvents: r.HelpfulEvents, HarmfulEvents: r.HarmfulEvents, NeutralEvents: r.NeutralEvents,
			LastFeedback: time.Time(r.LastFeedback), LastUse: time.Time(r.LastUse),
			Reinforcements: r.Reinforcements, Outcomes: r.Outcomes, OutcomeFailures: r.OutcomeFailures,
			Regression: r.Regression, Aged: r.Aged, Via: r.Via, deleted: r.Deleted,
			Manual: r.Manual, ManualReason: r.ManualReason, ManualAt: time.Time(r.ManualAt), ResetAt: time.Time(r.ResetAt),
		}
	}
	*f = Folder{stats: stats, newest: time.Time(st.Newest), events: st.Events}
	return nil
}

// TallyInto is Tally adding events (in file order) to out, which may hold
// the tally of earlier lines computed with the same since: tallying a
// journal at once or its lines in two runs gives the same result.
func TallyInto(out map[string]TypeStats, events []Event, since map[string]time.Time) {
	tallyInto(out, events, since)
}

// stamp is a time in the fold state. It reads back exactly as the journal
// line it came from was read: time.Parse gives UTC for "Z" and, for an
// offset, the local zone when it matches, else a fixed zone — so a UTC
// time is written with "Z" and any other with its numeric offset (even
// +00:00), never collapsing a fixed zone into UTC.
type stamp time.Time

const offsetLayout = "2006-01-02T15:04:05.999999999-07:00"

func (s stamp) MarshalJSON() ([]byte, error) {
	t := time.Time(s)
	if y := t.Year(); y < 0 || y > 9999 {
		return nil, fmt.Errorf("fold state: time %v outside the years 0000-9999", t)
	}
	layout := offsetLayout
	if t.Location() == time.UTC {
		layout = time.RFC3339Nano
	}
	return json.Marshal(t.Format(layout))
}

func (s *stamp) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	t, err := time.Parse(time.RFC3339Nano, str)
	if err != nil {
		return fmt.Errorf("fold state: %w", err)
	}
	*s = stamp(t)
	return nil
}
