package learn

import "sort"

// Level is an entry's maturity.
type Level string

// Maturity levels, weakest first.
const (
	LevelCandidate   Level = "candidate"
	LevelEstablished Level = "established"
	LevelProven      Level = "proven"
	LevelDeprecated  Level = "deprecated"
)

// Levels lists the levels in report order.
var Levels = []Level{LevelProven, LevelEstablished, LevelCandidate, LevelDeprecated}

// Multiplier returns the ranking multiplier of a level.
func (l Level) Multiplier() float64 {
	switch l {
	case LevelEstablished:
		return 1.0
	case LevelProven:
		return 1.5
	case LevelDeprecated:
		return 0
	}
	return 0.5
}

// Maturity thresholds (DESIGN.md §6).
const (
	EstablishedEvents   = 3    // helpful + harmful events since the last reset for established / deprecated
	ProvenHelpful       = 5.0  // decayed helpful for proven
	ProvenMaxHarmful    = 0.15 // harmful ratio must be below this for proven
	DeprecateMinHarmful = 0.3  // harmful ratio above this deprecates
	AntiPatternMinRuns  = 3    // outcomes before an entry can be inverted
	AntiPatternRatio    = 0.6  // failure ratio that inverts an entry
)

const eps = 1e-9

// Maturity returns the entry's level and its ranking multiplier, in this
// order of precedence:
//  1. a manual promote (proven ×1.5) or deprecate (×0) — a human's word
//     stands until `promote --reset`;
//  2. inverted into an anti-pattern (≥3 outcomes, failure ratio ≥0.6) →
//     deprecated;
//  3. fewer than 3 helpful + harmful events since the last reset →
//     candidate ×0.5 (neutral events — edits, neutral runs — do not count);
//  4. harmful ratio > 0.3 → deprecated ×0;
//  5. decayed helpful ≥ 5 and harmful ratio < 0.15 → proven ×1.5;
//  6. otherwise established ×1.0.
//
// The harmful ratio is decayed harmful / (decayed helpful + decayed harmful);
// helpful is decayed, so a proven entry nobody uses fades to established.
// The 3-event gate counts events, not decayed sums: a decayed gate would
// demote an entry with exactly 3 events the moment after its last one, and
// would turn a deprecated entry back into a candidate just by time passing.
func Maturity(s Stats) (Level, float64) {
	l := maturity(s)
	return l, l.Multiplier()
}

func maturity(s Stats) Level {
	p := s.params.withDefaults()
	if s.Manual != "" {
		return s.Manual
	}
	if Inverted(s) {
		return LevelDeprecated
	}
	if s.EventCount() < p.MinEvents {
		return LevelCandidate
	}
	r := s.HarmfulRatio()
	if r > p.DeprecateHarmful+eps {
		return LevelDeprecated
	}
	if s.Helpful >= p.ProvenHelpful-eps && r < p.ProvenMaxHarmful-eps {
		return LevelProven
	}
	return LevelEstablished
}

// Inverted reports whether an entry has become an anti-pattern: at least 3
// outcomes, of which at least 60 % failed.
func Inverted(s Stats) bool {
	return s.Outcomes >= AntiPatternMinRuns && 5*s.OutcomeFailures >= 3*s.Outcomes
}

// CountByLevel counts targets per level (every level present, maybe 0).
func CountByLevel(stats map[string]Stats) map[Level]int {
	out := map[Level]int{}
	for _, l := range Levels {
		out[l] = 0
	}
	for _, s := range stats {
		out[s.Level]++
	}
	return out
}

// Regressions returns the targets flagged as regressions (a false positive
// after ≥3 reinforcements), sorted.
func Regressions(stats map[string]Stats) []string {
	var out []string
	for id, s := range stats {
		if s.Regression {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
