package learn

import (
	"fmt"
	"math"
	"sort"
	"time"
)

// Outcome is one recorded run (a line of .memory/outcomes.jsonl).
type Outcome struct {
	TS         time.Time
	RunID      string
	Success    bool
	DurationMS int64
	ErrorCount int
	// ErrorCountSet is false when the input omitted error_count; the CLI then
	// uses the run's unresolved accumulated errors.
	ErrorCountSet bool
	RetryCount    int
	Quality       float64
	QualitySet    bool
	Cited         []string
	FailureType   string
	Strategy      string
	// Type is the artifact type the run worked on, when it says (optional
	// input "type"): a failed run that cites no entry counts its failure
	// pattern under it ("unknown" when empty).
	Type string
}

// Verdicts of an implicit score.
const (
	VerdictHelpful = "helpful"
	VerdictNeutral = "neutral"
	VerdictHarmful = "harmful"
)

// ImplicitScore scores a run: 0.4·success + 0.2·duration + 0.2·errors +
// 0.2·retries, rounded to two decimals (every term is a multiple of 0.02),
// where duration is 1.0 under 5 minutes, 0.6 under 30, else 0.2; errors 0 →
// 1.0, 1–2 → 0.6, 3+ → 0.2; retries 0 → 1.0, 1 → 0.7, 2+ → 0.3. A score
// ≥0.7 is helpful, ≤0.4 harmful, anything between neutral.
func ImplicitScore(o Outcome) (float64, string) {
	s := 0.0
	if o.Success {
		s += 0.4
	}
	switch {
	case o.DurationMS < 5*60*1000:
		s += 0.2 * 1.0
	case o.DurationMS < 30*60*1000:
		s += 0.2 * 0.6
	default:
		s += 0.2 * 0.2
	}
	switch {
	case o.ErrorCount <= 0:
		s += 0.2 * 1.0
	case o.ErrorCount <= 2:
		s += 0.2 * 0.6
	default:
		s += 0.2 * 0.2
	}
	switch {
	case o.RetryCount <= 0:
		s += 0.2 * 1.0
	case o.RetryCount == 1:
		s += 0.2 * 0.7
	default:
		s += 0.2 * 0.3
	}
	s = math.Round(s*100) / 100
	v, _ := classifyScore(s)
	return s, v
}

func classifyScore(s float64) (string, Class) {
	switch {
	case s >= 0.7-eps:
		return VerdictHelpful, Helpful
	case s <= 0.4+eps:
		return VerdictHarmful, Harmful
	}
	return VerdictNeutral, Neutral
}

// OutcomeEvents returns one outcome event per distinct cited entry: Value
// the score, Reason the failure type when the run failed ("unknown" when it
// did not say), Type looked up in entries (TypeOf).
func OutcomeEvents(o Outcome, score float64, entries []Candidate, now time.Time) []Event {
	reason := ""
	if !o.Success {
		reason = o.FailureType
		if reason == "" {
			reason = "unknown"
		}
	}
	var out []Event
	seen := map[string]bool{}
	for _, id := range o.Cited {
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, Event{TS: now, Target: id, Kind: KindOutcome, Value: score,
			Source: OutcomeSourcePrefix + o.RunID, Type: TypeOf(id, entries), Reason: reason, Retries: max(0, o.RetryCount)})
	}
	return out
}

// AntiPattern is an entry inverted by its outcomes.
type AntiPattern struct {
	ID       string  `json:"id"`
	Pattern  string  `json:"pattern"`
	Failures int     `json:"failures"`
	Outcomes int     `json:"outcomes"`
	Rate     float64 `json:"failure_rate"`
	Text     string  `json:"text"`
}

// AntiPatterns returns one AVOID entry per inverted target (≥3 outcomes,
// failure ratio ≥0.6), with the current counts: "AVOID: <pattern>. Failed
// x/y times (z% failure rate)", z rounded to a whole percent. The pattern is
// the entry's Pattern, else its Title, else its ID. A manually promoted entry
// is not inverted. Sorted by failures, then ID.
func AntiPatterns(stats map[string]Stats, entries []Candidate) []AntiPattern {
	byID := make(map[string]Candidate, len(entries))
	for _, c := range entries {
		byID[c.ID] = c
	}
	var out []AntiPattern
	for id, s := range stats {
		if !Inverted(s) || s.Manual == LevelProven {
			continue
		}
		p := id
		if c, ok := byID[id]; ok {
			switch {
			case c.Pattern != "":
				p = c.Pattern
			case c.Title != "":
				p = c.Title
			}
		}
		out = append(out, AntiPattern{ID: id, Pattern: p, Failures: s.OutcomeFailures, Outcomes: s.Outcomes,
			Rate: float64(s.OutcomeFailures) / float64(s.Outcomes), Text: AvoidText(p, s.OutcomeFailures, s.Outcomes)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Failures != out[j].Failures {
			return out[i].Failures > out[j].Failures
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// AvoidText formats an anti-pattern line.
func AvoidText(pattern string, failures, total int) string {
	pct := 0
	if total > 0 {
		pct = int(math.Round(100 * float64(failures) / float64(total)))
	}
	return fmt.Sprintf("AVOID: %s. Failed %d/%d times (%d%% failure rate)", pattern, failures, total, pct)
}

// TypeStats are plain per-type tallies: kept artifacts and successful runs
// are successes, deleted artifacts, false positives and failed runs failures.
type TypeStats struct {
	Successes int `json:"successes"`
	Failures  int `json:"failures"`
	// Retries and QualitySum are totals over N samples.
	Retries    int     `json:"retries"`
	QualitySum float64 `json:"quality_sum"`
	N          int     `json:"n"`
	// FailureReasons counts failures by reason (deleted, stale, anchor-lost,
	// duplicate, outcome failure types…).
	FailureReasons map[string]int `json:"failure_reasons,omitempty"`
	// Deleted are the named deletions (Event.Of) counted and not restored,
	// with the reason they were counted under: a second record of one is
	// not counted again, a restore naming it takes back that reason.
	// Bookkeeping of the tally, not a figure: reports and the policy leave
	// it out; the journal keeps it where it keeps a tally to resume.
	Deleted map[string]string `json:"-"`
}

// Total is Successes + Failures.
func (t TypeStats) Total() int { return t.Successes + t.Failures }

// Reliability is 0.6·success rate + 0.2·(1 − min(avg retries, 3)/3) +
// 0.2·quality, with avg retries = Retries/N and quality = QualitySum/N.
// With N = 0 the retry term is 1 and quality is the success rate; with no
// successes or failures at all reliability is 1 (no evidence, no overlay).
func Reliability(t TypeStats) float64 {
	total := t.Total()
	if total <= 0 {
		return 1
	}
	rate := float64(t.Successes) / float64(total)
	retry, quality := 1.0, rate
	if t.N > 0 {
		retry = 1 - math.Min(float64(t.Retries)/float64(t.N), 3)/3
		quality = math.Min(1, math.Max(0, t.QualitySum/float64(t.N)))
	}
	return 0.6*rate + 0.2*retry + 0.2*quality
}

// FailurePattern is one `<type>::<reason>` failure pattern.
type FailurePattern struct {
	Key        string  `json:"key"`
	Type       string  `json:"type"`
	Reason     string  `json:"reason"`
	Count      int     `json:"count"`
	Confidence float64 `json:"confidence"`
}

// PatternConfidence is 0.55 for the first occurrence, +0.05 for each further
// one, capped at 0.95 (reached at the 9th).
func PatternConfidence(count int) float64 {
	if count <= 0 {
		return 0
	}
	return math.Min(0.95, math.Round((0.55+0.05*float64(count-1))*100)/100)
}

// UnknownType is the type a failed run that cites no entry and names no
// type is counted under.
const UnknownType = "unknown"

// RunFailures counts the failed runs that cite no entry and name a failure
// type, by the run's Type (UnknownType when empty) and failure type, counting
// only runs after the type's reset in since. Runs that cite entries are
// counted through their outcome feedback events (Tally) instead, so no run is
// counted twice.
func RunFailures(outcomes []Outcome, since map[string]time.Time) map[string]map[string]int {
	out := map[string]map[string]int{}
	for _, o := range outcomes {
		if o.Success || o.FailureType == "" || len(o.Cited) > 0 {
			continue
		}
		typ := o.Type
		if typ == "" {
			typ = UnknownType
		}
		if t, ok := since[typ]; ok && !o.TS.After(t) {
			continue
		}
		if out[typ] == nil {
			out[typ] = map[string]int{}
		}
		out[typ][o.FailureType]++
	}
	return out
}

// FailurePatterns lists every type::reason with its count and confidence,
// most frequent first (then by key), from the feedback tallies and the
// failed runs that cite no entry (RunFailures; nil: none).
func FailurePatterns(tallies map[string]TypeStats, runs ...map[string]map[string]int) []FailurePattern {
	merged := map[string]map[string]int{}
	add := func(typ, reason string, n int) {
		if merged[typ] == nil {
			merged[typ] = map[string]int{}
		}
		merged[typ][reason] += n
	}
	for typ, t := range tallies {
		for reason, n := range t.FailureReasons {
			add(typ, reason, n)
		}
	}
	for _, r := range runs {
		for typ, m := range r {
			for reason, n := range m {
				add(typ, reason, n)
			}
		}
	}
	var out []FailurePattern
	for typ, reasons := range merged {
		for reason, n := range reasons {
			if n <= 0 {
				continue
			}
			out = append(out, FailurePattern{Key: typ + "::" + reason, Type: typ, Reason: reason, Count: n, Confidence: PatternConfidence(n)})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Key < out[j].Key
	})
	return out
}

// Tally builds per-type tallies from feedback events newer than the type's
// reset time in since (a policy reset starts a type afresh). Events without
// a Type are skipped. Each counted event is one sample (N):
//   - kept, cited: success, quality 1;
//   - deleted: failure (reason Event.Reason, else "deleted"), quality 0;
//   - false_positive: failure "false-positive", quality 0;
//   - outcome: success when the run succeeded, else failure with the run's
//     failure type; quality is the run's implicit score.
//
// edited and manual events are not samples. Retries are the retry_count of
// the run an outcome event comes from (Event.Retries); other kinds have none
// and count 0.
func Tally(events []Event, since map[string]time.Time) map[string]TypeStats {
	out := map[string]TypeStats{}
	tallyInto(out, events, since)
	return out
}

func tallyInto(out map[string]TypeStats, events []Event, since map[string]time.Time) {
	for _, e := range events {
		if IsBase(e) {
			tallyBase(out, e.Base, since)
			continue
		}
		if e.Type == "" {
			continue
		}
		if t, ok := since[e.Type]; ok && !e.TS.After(t) {
			continue
		}
		ts := out[e.Type]
		fail := ""
		switch e.Kind {
		case KindKept, KindCited:
			ts.Successes++
			ts.QualitySum++
		case KindDeleted:
			if _, counted := ts.Deleted[e.Of]; counted && e.Of != "" {
				continue // a second record of a deletion in force
			}
			fail = e.Reason
			if fail == "" {
				fail = KindDeleted
			}
			if e.Of != "" {
				if ts.Deleted == nil {
					ts.Deleted = map[string]string{}
				}
				ts.Deleted[e.Of] = fail
			}
		case KindRestored:
			// The deletion was undone: take back its failure (one deleted
			// failure when the event does not name it).
			r := KindDeleted
			if e.Of != "" {
				var counted bool
				if r, counted = ts.Deleted[e.Of]; !counted {
					continue // not in force here: restored already, or before a reset
				}
				if delete(ts.Deleted, e.Of); len(ts.Deleted) == 0 {
					ts.Deleted = nil
				}
			} else if ts.FailureReasons[r] == 0 {
				r = "anchor-lost"
			}
			if ts.FailureReasons[r] > 0 && ts.N > 0 {
				if ts.FailureReasons[r]--; ts.FailureReasons[r] == 0 {
					delete(ts.FailureReasons, r)
				}
				if len(ts.FailureReasons) == 0 {
					ts.FailureReasons = nil // as if never failed: one representation
				}
				ts.N--
				ts.Failures--
				out[e.Type] = ts
			} else if e.Of != "" {
				out[e.Type] = ts // the deletion named is no longer in force
			}
			continue
		case KindFalsePositive:
			fail = "false-positive"
		case KindOutcome:
			ts.Retries += max(0, e.Retries)
			ts.QualitySum += math.Min(1, math.Max(0, e.Value))
			if OutcomeFailed(e) {
				fail = e.Reason
			} else {
				ts.Successes++
			}
		default:
			continue
		}
		ts.N++
		if fail != "" {
			ts.Failures++
			if ts.FailureReasons == nil {
				ts.FailureReasons = map[string]int{}
			}
			ts.FailureReasons[fail]++
		}
		out[e.Type] = ts
	}
}

// TallyOutcomes builds per-strategy tallies from recorded outcomes (runs
// without a strategy count under "default"): success rate, retries and
// quality (the run's quality when given, else its implicit score).
func TallyOutcomes(outcomes []Outcome) map[string]TypeStats {
	out := map[string]TypeStats{}
	for _, o := range outcomes {
		key := o.Strategy
		if key == "" {
			key = "default"
		}
		t := out[key]
		t.N++
		t.Retries += max(0, o.RetryCount)
		if o.QualitySet {
			t.QualitySum += o.Quality
		} else {
			s, _ := ImplicitScore(o)
			t.QualitySum += s
		}
		if o.Success {
			t.Successes++
		} else {
			t.Failures++
			reason := o.FailureType
			if reason == "" {
				reason = "unknown"
			}
			if t.FailureReasons == nil {
				t.FailureReasons = map[string]int{}
			}
			t.FailureReasons[reason]++
		}
		out[key] = t
	}
	return out
}
