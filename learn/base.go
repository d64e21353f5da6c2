package learn

import "time"

// KindCompacted is the kind of the base line a compaction of the feedback
// journal writes first: the fold of every event older than its cut, in
// place of those events. It is not feedback; Folder and Tally start from it.
const KindCompacted = "compacted"

// Base is what a compacted journal keeps of the events it folded away:
// the fold's raw state and the per-type tally (since Since, the policy's
// resets at the time of the compaction) of every event older than Cut.
type Base struct {
	Cut   time.Time
	Fold  *Folder
	Tally map[string]TypeStats
	Since map[string]time.Time
}

// IsBase reports whether e is a compaction's base line.
func IsBase(e Event) bool { return e.Kind == KindCompacted && e.Base != nil }

// sortKey orders a fold: a base before every event (the events it holds
// are all older than the ones left in the journal), events by time.
func sortKey(e Event) time.Time {
	if IsBase(e) {
		return time.Time{}
	}
	return e.TS
}

// addBase starts (or, for a second base line, which a compaction never
// writes, extends) the folder's state from a base: sums and counts add,
// times keep the newest, deletions in force concatenate.
func (f *Folder) addBase(b *Base) {
	for id, bs := range b.Fold.stats {
		s, ok := f.stats[id]
		if !ok {
			f.stats[id] = bs
			continue
		}
		s.Helpful += bs.Helpful
		s.Harmful += bs.Harmful
		s.Neutral += bs.Neutral
		s.HelpfulEvents += bs.HelpfulEvents
		s.HarmfulEvents += bs.HarmfulEvents
		s.NeutralEvents += bs.NeutralEvents
		s.Reinforcements += bs.Reinforcements
		s.Outcomes += bs.Outcomes
		s.OutcomeFailures += bs.OutcomeFailures
		s.Regression = s.Regression || bs.Regression
		s.Aged += bs.Aged
		s.deleted = append(append([]inForce(nil), bs.deleted...), s.deleted...)
		for _, p := range []struct{ dst, src *time.Time }{{&s.LastFeedback, &bs.LastFeedback}, {&s.LastUse, &bs.LastUse}, {&s.ResetAt, &bs.ResetAt}} {
			if p.src.After(*p.dst) {
				*p.dst = *p.src
			}
		}
		if s.Type == "" {
			s.Type = bs.Type
		}
		if s.Via == "" {
			s.Via = bs.Via
		}
		if s.Manual == "" {
			s.Manual, s.ManualReason, s.ManualAt = bs.Manual, bs.ManualReason, bs.ManualAt
		}
		f.stats[id] = s
	}
	f.events += b.Fold.events
	if b.Fold.newest.After(f.newest) {
		f.newest = b.Fold.newest
	}
}

// tallyBase adds a base's tally for the types whose reset is the one the
// base was tallied since (the usual case). A type reset at or after the
// cut counts none of the base's events, exactly as Tally would skip them.
// A type whose reset moved to a time before the cut since the compaction
// counts the base whole: the base no longer knows which of its events
// came after that reset (docs/learning.md, compaction).
func tallyBase(out map[string]TypeStats, b *Base, since map[string]time.Time) {
	for typ, bt := range b.Tally {
		if t, ok := since[typ]; ok && !b.Cut.After(t) {
			continue
		}
		ts := out[typ]
		ts.Successes += bt.Successes
		ts.Failures += bt.Failures
		ts.Retries += bt.Retries
		ts.QualitySum += bt.QualitySum
		ts.N += bt.N
		for r, n := range bt.FailureReasons {
			if ts.FailureReasons == nil {
				ts.FailureReasons = map[string]int{}
			}
			ts.FailureReasons[r] += n
		}
		for of, r := range bt.Deleted {
			if ts.Deleted == nil {
				ts.Deleted = map[string]string{}
			}
			ts.Deleted[of] = r
		}
		out[typ] = ts
	}
}
