package learn

import (
	"math"
	"sort"
	"time"
)

// Feedback event kinds (the `kind` field of .memory/feedback.jsonl).
const (
	KindDeleted       = "deleted"        // artifact or knowledge anchor removed by a person: harmful
	KindEdited        = "edited"         // artifact edited by a person: neutral
	KindKept          = "kept"           // artifact survived a session unchanged: helpful
	KindCited         = "cited"          // entry cited in a session / reinforced by a PASS verdict: helpful
	KindOutcome       = "outcome"        // entry cited by a recorded run: Value is the implicit score
	KindFalsePositive = "false_positive" // a validator flagged the entry as a false positive: harmful
	KindManual        = "manual"         // human override: Value +1 promote, -1 deprecate, 0 reset
	KindAged          = "aged"           // not reinforced by a validator PASS that reinforced others: one step older
)

// AgeStepDays is how much older (in days since use) one aged event makes an
// entry that is not immune: a validator PASS that found it irrelevant counts
// as one more day unused.
const AgeStepDays = 1.0

// Kinds lists every known kind.
var Kinds = []string{KindDeleted, KindEdited, KindKept, KindCited, KindOutcome, KindFalsePositive, KindManual, KindAged, KindRestored}

// Manual override values (Event.Value of a KindManual event).
const (
	ManualPromote   = 1
	ManualDeprecate = -1
	ManualReset     = 0
)

// HalfLifeDays is the half-life of feedback: value·0.5^(age_days/90).
const HalfLifeDays = 90.0

// Event is one feedback event, one line of .memory/feedback.jsonl.
type Event struct {
	TS     time.Time
	Target string // obs_… id or ADR-NNN / PF-NNN
	Kind   string // one of Kinds
	// Value is the event's magnitude (>0; 0 means 1) for every kind except
	// outcome, where it is the implicit score 0..1, and manual, where it is
	// ManualPromote, ManualDeprecate or ManualReset.
	Value  float64
	Source string // who produced it: "reconcile", "outcome:<run>", "verdict:<run>", "cli"…
	Type   string // artifact type of the target (workflow|procedural|decision|pitfall), when known
	// Reason qualifies the event: for deleted the failure reason
	// ("deleted", "anchor-lost", "stale", "duplicate"); for outcome the run's
	// failure type, empty when the run succeeded; for manual the human's reason.
	Reason string
	// Retries is the retry_count of the run an outcome event comes from
	// (0 for every other kind): per-type reliability averages it.
	Retries int
	// Role is the validator role of a verdict event (cited by a PASS, or
	// false_positive), when the verdict named one.
	Role string
	// Of names the deletion a deleted or restored event records: the
	// rendering that was removed (reconcile: a digest of the manifest
	// entry's path, anchor, render time and hash). Two passes that record
	// one deletion — two clones reconciling the same pulled commit, one
	// memory reconciled on two branches — give the same Of, and while that
	// deletion is in force the second record counts for nothing (fold and
	// tally). A restored event with Of cancels that deletion only. Empty
	// (older lines, other sources): every event counts, as before.
	Of string
	// Base is set on a compaction's base line (Kind KindCompacted): the
	// fold of the events it replaced.
	Base *Base
}

// Class is how an event counts.
type Class int

// Event classes.
const (
	Neutral Class = iota
	Helpful
	Harmful
	Override // manual events: not feedback
	Unknown  // a kind this version does not know: ignored
	Aging    // aged events: not feedback, only recency
)

// Classify returns the class and the magnitude an event contributes.
func Classify(e Event) (Class, float64) {
	mag := e.Value
	if !(mag > 0) || math.IsInf(mag, 0) {
		mag = 1
	}
	switch e.Kind {
	case KindDeleted, KindFalsePositive:
		return Harmful, mag
	case KindKept, KindCited:
		return Helpful, mag
	case KindEdited:
		return Neutral, mag
	case KindOutcome:
		return outcomeWeight(e.Value)
	case KindManual:
		return Override, 0
	case KindAged:
		return Aging, 0
	}
	return Unknown, 0
}

// outcomeWeight classifies an outcome event by its implicit score and
// weighs it by the score: a helpful (or neutral) run adds its score (a 0.70
// run adds 0.70 helpful); a harmful run adds 1 − score, how far it fell short
// of a perfect run (a 0.38 run adds 0.62 harmful, the worst possible run,
// 0.12, adds 0.88) — weighing a harmful run by its own score would make the
// worst runs count least.
func outcomeWeight(score float64) (Class, float64) {
	if math.IsNaN(score) || math.IsInf(score, 0) {
		score = 0
	}
	score = math.Min(1, math.Max(0, score))
	_, c := classifyScore(score)
	if c == Harmful {
		return c, 1 - score
	}
	return c, score
}

// OutcomeFailed reports whether an outcome event records a failed run.
func OutcomeFailed(e Event) bool { return e.Kind == KindOutcome && e.Reason != "" }

// Stats is the folded state of one target. Counts restart at a manual reset.
type Stats struct {
	Target string
	Type   string // last non-empty Event.Type seen

	// Decayed sums (raw sums × Decay).
	Helpful, Harmful, Neutral float64
	// Raw (undecayed) event counts since the last reset.
	HelpfulEvents, HarmfulEvents, NeutralEvents int
	// Decay is 0.5^(days since LastFeedback / 90): the target's clock.
	Decay        float64
	LastFeedback time.Time // newest non-manual event: starts the decay clock
	LastUse      time.Time // newest cited or outcome event (zero: never used)
	// Reinforcements counts helpful events since the last reset.
	Reinforcements int
	// Outcomes and OutcomeFailures count outcome events (runs citing the entry).
	Outcomes, OutcomeFailures int
	// Regression: a false positive arrived after ≥3 reinforcements.
	Regression bool
	// Aged counts aged events since the last use (or reset): steps of
	// AgeStepDays added to the days since use.
	Aged int
	// Via is the role of the newest validator verdict that reinforced the
	// entry ("" when none named a role).
	Via string

	// deleted holds the deleted events not cancelled by a restored event,
	// oldest first.
	deleted []inForce

	Manual       Level // LevelProven (promote), LevelDeprecated, or "" (none)
	ManualReason string
	ManualAt     time.Time
	ResetAt      time.Time // last manual reset (zero: never)

	// Derived by Fold with Weight and Maturity.
	Weight     float64
	Level      Level
	Multiplier float64

	// params are the engine parameters the stats were folded with (zero:
	// the defaults); At and Maturity use them.
	params Params
}

// Events counts the decayed helpful and harmful evidence: helpful + harmful.
// Neutral events (edits, neutral runs) are evidence of neither and count in
// neither the maturity gate nor the harmful ratio.
func (s Stats) Events() float64 { return s.Helpful + s.Harmful }

// EventCount counts the helpful and harmful feedback events since the last
// reset (undecayed); neutral events are not counted.
func (s Stats) EventCount() int { return s.HelpfulEvents + s.HarmfulEvents }

// HarmfulRatio is decayed harmful / (decayed helpful + decayed harmful), 0
// with no such evidence.
func (s Stats) HarmfulRatio() float64 {
	if t := s.Events(); t > 0 {
		return s.Harmful / t
	}
	return 0
}

// DecayFactor is 0.5^(age/90 days); a negative age counts as 0.
func DecayFactor(age time.Duration) float64 { return decayFactor(age, HalfLifeDays) }

func decayFactor(age time.Duration, halfLife float64) float64 {
	if age <= 0 {
		return 1
	}
	return math.Pow(0.5, age.Hours()/24/halfLife)
}

// Fold folds events (in any order; they are processed by timestamp, ties in
// input order) into per-target stats as of now.
//
// Decay and revalidation: each target has one clock, started by its newest
// feedback event (any kind but manual). All of the target's events weigh
// value·0.5^(clock_days/90), so an entry nobody touches fades — 50 % after 90
// days, 25 % after 180 — and any new feedback resets the clock, revalidating
// its whole history. Because all events of a target share the clock, the
// weight (a ratio) is unaffected by decay; maturity (absolute counts) is not.
//
// A manual reset discards everything the target had before it.
func Fold(events []Event, now time.Time) map[string]Stats { return FoldWith(events, now, Params{}) }

// FoldWith is Fold with the engine parameters p (zero fields: defaults).
func FoldWith(events []Event, now time.Time, p Params) map[string]Stats {
	f := NewFolder()
	f.Add(events)
	return f.Result(now, p)
}

// Folder is Fold in steps: Add folds batches of events into raw per-target
// sums, Result applies the decay clock as of a time. Folding a journal's
// events in one batch, or its first lines in one batch and the lines
// appended later in another, gives the same result bit for bit — as long
// as no later event is older than one already folded (Add refuses such a
// batch). Decay is applied only by Result, so the raw state does not
// depend on the fold time or the parameters: it can be kept (MarshalJSON)
// and resumed (UnmarshalJSON) by a snapshot.
type Folder struct {
	stats  map[string]Stats // raw sums
	newest time.Time        // newest event timestamp folded
	events int              // events folded
}

// NewFolder returns an empty folder.
func NewFolder() *Folder { return &Folder{stats: map[string]Stats{}} }

// Events is the number of events folded so far.
func (f *Folder) Events() int { return f.events }

// Newest is the timestamp of the newest event folded (zero: none).
func (f *Folder) Newest() time.Time { return f.newest }

// Add folds events (in any order; processed by timestamp, ties in input
// order) after the ones already folded. It reports false and changes
// nothing when an event is older than the newest already folded: the full
// fold would process it earlier, so the caller must fold from scratch.
func (f *Folder) Add(events []Event) bool {
	if len(events) == 0 {
		return true
	}
	order := make([]int, len(events))
	for i := range order {
		order[i] = i
	}
	less := func(a, b int) bool { return sortKey(events[order[a]]).Before(sortKey(events[order[b]])) }
	if !sort.SliceIsSorted(order, less) {
		sort.SliceStable(order, less)
	}
	if f.events > 0 && sortKey(events[order[0]]).Before(f.newest) {
		return false
	}
	if f.stats == nil {
		f.stats = map[string]Stats{}
	}
	out := f.stats
	for _, i := range order {
		e := events[i]
		if IsBase(e) {
			f.addBase(e.Base)
			continue
		}
		f.events++
		if f.events == 1 || e.TS.After(f.newest) {
			f.newest = e.TS
		}
		if e.Target == "" {
			continue
		}
		out[e.Target] = foldOne(out[e.Target], e)
	}
	return true
}

// Result returns the per-target stats as of now with the parameters p
// (zero fields: defaults). f is unchanged and may be added to afterwards.
func (f *Folder) Result(now time.Time, p Params) map[string]Stats {
	p = p.withDefaults()
	out := make(map[string]Stats, len(f.stats))
	for k, s := range f.stats {
		s.params = p
		out[k] = finish(s, now)
	}
	return out
}

// foldOne folds one event into its target's raw state.
func foldOne(s Stats, e Event) Stats {
	s.Target = e.Target
	if e.Type != "" {
		s.Type = e.Type
	}
	if e.Kind == KindRestored {
		return cancelDeleted(s, e)
	}
	class, mag := Classify(e)
	switch class {
	case Unknown:
		return s
	case Aging:
		s.Aged++
		return s
	case Override:
		switch {
		case e.Value > 0:
			s.Manual, s.ManualReason, s.ManualAt = LevelProven, e.Reason, e.TS
		case e.Value < 0:
			s.Manual, s.ManualReason, s.ManualAt = LevelDeprecated, e.Reason, e.TS
		default:
			s = Stats{Target: e.Target, Type: s.Type, ResetAt: e.TS}
		}
		return s
	case Helpful:
		s.Helpful += mag
		s.HelpfulEvents++
		s.Reinforcements++
	case Harmful:
		if e.Kind == KindDeleted {
			if s.deletionAt(e.Of) >= 0 {
				return s // a second record of a deletion in force
			}
			s.deleted = append(s.deleted, inForce{mag, e.Of})
		}
		if e.Kind == KindFalsePositive && s.Reinforcements >= 3 {
			s.Regression = true
		}
		s.Harmful += mag
		s.HarmfulEvents++
	case Neutral:
		s.Neutral += mag
		s.NeutralEvents++
	}
	if e.TS.After(s.LastFeedback) {
		s.LastFeedback = e.TS
	}
	if e.Kind == KindCited || e.Kind == KindOutcome {
		if e.TS.After(s.LastUse) {
			s.LastUse = e.TS
		}
		s.Aged = 0
	}
	if class == Helpful && e.Role != "" {
		s.Via = e.Role
	}
	if e.Kind == KindOutcome {
		s.Outcomes++
		if OutcomeFailed(e) {
			s.OutcomeFailures++
		}
	}
	return s
}

// finish applies the decay clock and derives weight and maturity. The sums
// held in s are raw; the result holds decayed sums.
func finish(s Stats, now time.Time) Stats {
	s.Decay = 1
	if !s.LastFeedback.IsZero() {
		s.Decay = decayFactor(now.Sub(s.LastFeedback), s.params.withDefaults().HalfLifeDays)
	}
	s.Helpful *= s.Decay
	s.Harmful *= s.Decay
	s.Neutral *= s.Decay
	s.Weight = Weight(s)
	s.Level, s.Multiplier = Maturity(s)
	return s
}

// At returns s as it will be at time t if no new feedback arrives (t after
// the fold time): used for the decay timeline.
func (s Stats) At(t time.Time) Stats {
	if s.LastFeedback.IsZero() || s.Decay <= 0 {
		return s
	}
	raw := s
	raw.Helpful /= s.Decay
	raw.Harmful /= s.Decay
	raw.Neutral /= s.Decay
	return finish(raw, t)
}

// Weight is max(0.1, helpful/(helpful+harmful)) over decayed sums. With no
// helpful or harmful evidence (no events, or only neutral ones) it is 1.0:
// an unproven entry is discounted by its maturity (candidate ×0.5), not twice.
func Weight(s Stats) float64 {
	d := s.Helpful + s.Harmful
	if d <= 0 {
		return 1
	}
	return math.Max(0.1, s.Helpful/d)
}
