package learn

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func days(n float64) time.Duration { return time.Duration(n * 24 * float64(time.Hour)) }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReliabilityHandComputed(t *testing.T) {
	// 0.6·0.8 + 0.2·(1 − 1.5/3) + 0.2·0.8 = 0.48 + 0.10 + 0.16 = 0.74
	// (a source document quotes 0.616 for this case; its own formula gives 0.74).
	ts := TypeStats{Successes: 8, Failures: 2, Retries: 15, QualitySum: 8, N: 10}
	if got := Reliability(ts); !near(got, 0.74) {
		t.Fatalf("Reliability = %v, want 0.74", got)
	}
	cases := []struct {
		name string
		ts   TypeStats
		want float64
	}{
		{"no evidence", TypeStats{}, 1},
		{"all kept, no samples detail", TypeStats{Successes: 4}, 1},                             // 0.6 + 0.2 + 0.2·1
		{"three deletions", TypeStats{Failures: 3, N: 3}, 0.2},                                  // 0 + 0.2·1 + 0
		{"retries capped at 3", TypeStats{Successes: 1, Retries: 10, QualitySum: 1, N: 1}, 0.8}, // 0.6 + 0 + 0.2
		{"N=0 uses success rate as quality", TypeStats{Successes: 1, Failures: 1}, 0.6*0.5 + 0.2 + 0.2*0.5},
	}
	for _, c := range cases {
		if got := Reliability(c.ts); !near(got, c.want) {
			t.Errorf("%s: Reliability = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestDecayHalfLife(t *testing.T) {
	for _, c := range []struct {
		age  float64
		want float64
	}{{0, 1}, {90, 0.5}, {180, 0.25}, {270, 0.125}, {-5, 1}} {
		if got := DecayFactor(days(c.age)); !near(got, c.want) {
			t.Errorf("DecayFactor(%v days) = %v, want %v", c.age, got, c.want)
		}
	}
	// A single helpful event 90 / 180 days old counts 50 % / 25 %.
	for _, c := range []struct {
		age  float64
		want float64
	}{{90, 0.5}, {180, 0.25}} {
		s := Fold([]Event{{TS: t0.Add(-days(c.age)), Target: "ADR-001", Kind: KindKept, Value: 1}}, t0)["ADR-001"]
		if !near(s.Helpful, c.want) || s.HelpfulEvents != 1 {
			t.Errorf("day %v: decayed helpful = %v (%d events), want %v", c.age, s.Helpful, s.HelpfulEvents, c.want)
		}
	}
}

func TestNewFeedbackRevalidates(t *testing.T) {
	old := []Event{
		{TS: t0.Add(-days(200)), Target: "PF-001", Kind: KindCited},
		{TS: t0.Add(-days(180)), Target: "PF-001", Kind: KindCited},
	}
	s := Fold(old, t0)["PF-001"]
	if !near(s.Helpful, 0.5) { // 2 × 0.25: the clock started 180 days ago
		t.Fatalf("before revalidation: helpful = %v, want 0.5", s.Helpful)
	}
	s = Fold(append(old, Event{TS: t0, Target: "PF-001", Kind: KindEdited}), t0)["PF-001"]
	if !near(s.Helpful, 2) || !near(s.Neutral, 1) || !near(s.Decay, 1) {
		t.Fatalf("after revalidation: helpful %v neutral %v decay %v, want 2, 1, 1", s.Helpful, s.Neutral, s.Decay)
	}
	// Other targets keep their own clock.
	two := append(old, Event{TS: t0, Target: "PF-002", Kind: KindKept})
	if s := Fold(two, t0)["PF-001"]; !near(s.Helpful, 0.5) {
		t.Fatalf("PF-001 revalidated by PF-002's feedback: %v", s.Helpful)
	}
}

func TestWeight(t *testing.T) {
	cases := []struct {
		name string
		evs  []Event
		want float64
	}{
		{"no events", nil, 1},
		{"neutral only", []Event{{Kind: KindEdited}}, 1},
		{"1 helpful 1 harmful", []Event{{Kind: KindKept}, {Kind: KindDeleted}}, 0.5},
		{"3 helpful 1 harmful", []Event{{Kind: KindKept}, {Kind: KindCited}, {Kind: KindKept}, {Kind: KindDeleted}}, 0.75},
		{"floor 0.1", []Event{{Kind: KindDeleted}, {Kind: KindDeleted}}, 0.1},
		{"value is magnitude", []Event{{Kind: KindKept}, {Kind: KindFalsePositive, Value: 1.5}}, 0.4},
		{"outcome score classes", []Event{{Kind: KindOutcome, Value: 0.9}, {Kind: KindOutcome, Value: 0.3}, {Kind: KindOutcome, Value: 0.5}}, 0.5},
	}
	for _, c := range cases {
		evs := make([]Event, len(c.evs))
		for i, e := range c.evs {
			e.TS, e.Target = t0, "x"
			evs[i] = e
		}
		s := Fold(evs, t0)["x"]
		if got := Weight(s); !near(got, c.want) {
			t.Errorf("%s: Weight = %v, want %v", c.name, got, c.want)
		}
	}
}

func manyEvents(target string, at time.Time, kinds ...string) []Event {
	var out []Event
	for _, k := range kinds {
		out = append(out, Event{TS: at, Target: target, Kind: k, Value: 1})
	}
	return out
}

func rep(k string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = k
	}
	return out
}

func TestMaturityThresholds(t *testing.T) {
	cases := []struct {
		name  string
		kinds []string
		want  Level
		mult  float64
	}{
		{"no events", nil, LevelCandidate, 0.5},
		{"2 events", rep(KindKept, 2), LevelCandidate, 0.5},
		{"3 events", rep(KindKept, 3), LevelEstablished, 1},
		{"3 neutral", rep(KindEdited, 3), LevelEstablished, 1},
		{"4 helpful", rep(KindKept, 4), LevelEstablished, 1},
		{"5 helpful", rep(KindKept, 5), LevelProven, 1.5},
		{"5 helpful 1 harmful (0.167)", append(rep(KindKept, 5), KindDeleted), LevelEstablished, 1},
		{"6 helpful 1 harmful (0.143)", append(rep(KindKept, 6), KindDeleted), LevelProven, 1.5},
		{"2 helpful 1 harmful (0.333)", append(rep(KindKept, 2), KindDeleted), LevelDeprecated, 0},
		{"7 helpful 3 harmful (0.3, not above)", append(rep(KindKept, 7), rep(KindDeleted, 3)...), LevelEstablished, 1},
		{"2 harmful (fewer than 3)", rep(KindDeleted, 2), LevelCandidate, 0.5},
	}
	for _, c := range cases {
		s := Fold(manyEvents("e", t0, c.kinds...), t0)["e"]
		l, m := Maturity(s)
		if l != c.want || m != c.mult {
			t.Errorf("%s: Maturity = %s ×%v, want %s ×%v", c.name, l, m, c.want, c.mult)
		}
		if len(c.kinds) > 0 && (s.Level != l || s.Multiplier != m) {
			t.Errorf("%s: Fold stored %s ×%v", c.name, s.Level, s.Multiplier)
		}
	}
	// Helpful is decayed: 6 helpful are 4.76 after 30 idle days → proven fades to established.
	if l, _ := Maturity(Fold(manyEvents("e", t0, rep(KindKept, 6)...), t0.Add(days(30)))["e"]); l != LevelEstablished {
		t.Errorf("6 helpful 30 days old: %s, want established", l)
	}
	// The 3-event gate is not decayed: established and deprecated entries stay so while idle.
	if l, _ := Maturity(Fold(manyEvents("e", t0, rep(KindKept, 3)...), t0.Add(days(1)))["e"]); l != LevelEstablished {
		t.Errorf("3 events a day old: %s, want established", l)
	}
	if l, _ := Maturity(Fold(manyEvents("e", t0, KindKept, KindDeleted, KindDeleted), t0.Add(days(365)))["e"]); l != LevelDeprecated {
		t.Errorf("deprecated entry a year later: %s, want deprecated", l)
	}
}

func TestManualOverrides(t *testing.T) {
	good := manyEvents("e", t0, rep(KindKept, 6)...)
	bad := append(manyEvents("e", t0, rep(KindKept, 2)...), Event{TS: t0, Target: "e", Kind: KindDeleted})
	man := func(v float64, at time.Time) Event {
		return Event{TS: at, Target: "e", Kind: KindManual, Value: v, Reason: "why"}
	}
	t1 := t0.Add(time.Hour)
	if s := Fold(append(good, man(ManualDeprecate, t1)), t1)["e"]; s.Level != LevelDeprecated || s.ManualReason != "why" {
		t.Errorf("deprecate over proven data: %s", s.Level)
	}
	if s := Fold(append(bad, man(ManualPromote, t1)), t1)["e"]; s.Level != LevelProven {
		t.Errorf("promote: %s", s.Level)
	}
	// Reset drops history and override: a candidate again, then data counts afresh.
	evs := append(append(bad, man(ManualDeprecate, t1)), man(ManualReset, t1.Add(time.Hour)))
	s := Fold(evs, t1.Add(time.Hour))["e"]
	if s.Level != LevelCandidate || s.Manual != "" || s.Harmful != 0 || s.HarmfulEvents != 0 || s.ResetAt.IsZero() {
		t.Errorf("after reset: %+v", s)
	}
	// Manual events do not reset the decay clock.
	s = Fold(append(good, man(ManualPromote, t0.Add(days(90)))), t0.Add(days(90)))["e"]
	if !near(s.Helpful, 3) {
		t.Errorf("manual event revalidated: helpful %v, want 3", s.Helpful)
	}
}

func TestRegression(t *testing.T) {
	fp := Event{TS: t0.Add(time.Hour), Target: "ADR-001", Kind: KindFalsePositive, Value: 1}
	if s := Fold(append(manyEvents("ADR-001", t0, rep(KindCited, 3)...), fp), t0)["ADR-001"]; !s.Regression {
		t.Error("false positive after 3 reinforcements: no regression")
	}
	if s := Fold(append(manyEvents("ADR-001", t0, rep(KindCited, 2)...), fp), t0)["ADR-001"]; s.Regression {
		t.Error("false positive after 2 reinforcements: regression")
	}
	// Order is by timestamp, not by position in the file.
	evs := append([]Event{fp}, manyEvents("ADR-001", t0, rep(KindCited, 3)...)...)
	if s := Fold(evs, t0)["ADR-001"]; !s.Regression {
		t.Error("events out of file order: no regression")
	}
	stats := Fold(append(manyEvents("ADR-001", t0, rep(KindCited, 3)...), fp), t0)
	if got := Regressions(stats); len(got) != 1 || got[0] != "ADR-001" {
		t.Errorf("Regressions = %v", got)
	}
}

func TestImplicitScoreBoundaries(t *testing.T) {
	const min = 60 * 1000
	cases := []struct {
		o       Outcome
		score   float64
		verdict string
	}{
		{Outcome{Success: true}, 1.0, VerdictHelpful},
		{Outcome{Success: true, DurationMS: 5*min - 1}, 1.0, VerdictHelpful},
		{Outcome{Success: true, DurationMS: 5 * min}, 0.92, VerdictHelpful},
		{Outcome{Success: true, DurationMS: 30*min - 1}, 0.92, VerdictHelpful},
		{Outcome{Success: true, DurationMS: 30 * min}, 0.84, VerdictHelpful},
		{Outcome{Success: true, ErrorCount: 1}, 0.92, VerdictHelpful},
		{Outcome{Success: true, ErrorCount: 2}, 0.92, VerdictHelpful},
		{Outcome{Success: true, ErrorCount: 3}, 0.84, VerdictHelpful},
		{Outcome{Success: true, RetryCount: 1}, 0.94, VerdictHelpful},
		{Outcome{Success: true, RetryCount: 2}, 0.86, VerdictHelpful},
		// exactly 0.70 is helpful: 0.4 + 0.12 + 0.12 + 0.06
		{Outcome{Success: true, DurationMS: 5 * min, ErrorCount: 1, RetryCount: 2}, 0.70, VerdictHelpful},
		// 0.68 is neutral: 0.4 + 0.04 + 0.04 + 0.2
		{Outcome{Success: true, DurationMS: 30 * min, ErrorCount: 3}, 0.68, VerdictNeutral},
		// a clean failed run is 0.6: neutral
		{Outcome{Success: false}, 0.60, VerdictNeutral},
		// 0.44 neutral, 0.38 harmful (0.4 itself is not reachable)
		{Outcome{DurationMS: 5 * min, ErrorCount: 1, RetryCount: 0}, 0.44, VerdictNeutral},
		{Outcome{DurationMS: 5 * min, ErrorCount: 1, RetryCount: 1}, 0.38, VerdictHarmful},
		{Outcome{DurationMS: 60 * min, ErrorCount: 9, RetryCount: 9}, 0.14, VerdictHarmful},
	}
	for _, c := range cases {
		s, v := ImplicitScore(c.o)
		if !near(s, c.score) || v != c.verdict {
			t.Errorf("ImplicitScore(%+v) = %v %s, want %v %s", c.o, s, v, c.score, c.verdict)
		}
	}
	if _, c := classifyScore(0.4); c != Harmful {
		t.Error("0.4 is not harmful")
	}
	if _, c := classifyScore(0.7); c != Helpful {
		t.Error("0.7 is not helpful")
	}
}

func outcomes(id string, ok, failed int) []Event {
	var out []Event
	for i := 0; i < ok; i++ {
		out = append(out, Event{TS: t0, Target: id, Kind: KindOutcome, Value: 1})
	}
	for i := 0; i < failed; i++ {
		out = append(out, Event{TS: t0, Target: id, Kind: KindOutcome, Value: 0.3, Reason: "timeout"})
	}
	return out
}

func TestAntiPatterns(t *testing.T) {
	if got := AvoidText("retry the deploy", 5, 7); got != "AVOID: retry the deploy. Failed 5/7 times (71% failure rate)" {
		t.Fatalf("AvoidText = %q", got)
	}
	cases := []struct {
		ok, failed int
		inverted   bool
	}{{2, 5, true}, {0, 2, false}, {1, 2, true}, {2, 3, true}, {3, 4, false}, {2, 1, false}, {0, 3, true}}
	for _, c := range cases {
		stats := Fold(outcomes("obs_a", c.ok, c.failed), t0)
		got := AntiPatterns(stats, []Candidate{{ID: "obs_a", Pattern: "retry the deploy"}})
		if (len(got) == 1) != c.inverted {
			t.Errorf("%d ok %d failed: anti-patterns %v, want inverted=%v", c.ok, c.failed, got, c.inverted)
			continue
		}
		if c.inverted {
			if l := stats["obs_a"].Level; l != LevelDeprecated {
				t.Errorf("%d/%d: inverted entry is %s, not deprecated", c.failed, c.ok+c.failed, l)
			}
			want := AvoidText("retry the deploy", c.failed, c.ok+c.failed)
			if got[0].Text != want {
				t.Errorf("text %q, want %q", got[0].Text, want)
			}
		}
	}
	stats := Fold(outcomes("obs_a", 2, 5), t0)
	if got := AntiPatterns(stats, nil); got[0].Text != "AVOID: obs_a. Failed 5/7 times (71% failure rate)" {
		t.Errorf("no candidate: %q", got[0].Text)
	}
	// Counts keep updating; a manual promote suppresses the inversion.
	more := append(outcomes("obs_a", 2, 5), outcomes("obs_a", 0, 1)...)
	if got := AntiPatterns(Fold(more, t0), nil); got[0].Text != "AVOID: obs_a. Failed 6/8 times (75% failure rate)" {
		t.Errorf("updated: %q", got[0].Text)
	}
	promoted := append(outcomes("obs_a", 2, 5), Event{TS: t0, Target: "obs_a", Kind: KindManual, Value: ManualPromote})
	if got := AntiPatterns(Fold(promoted, t0), nil); len(got) != 0 {
		t.Errorf("promoted entry inverted: %v", got)
	}
}

func TestPatternConfidence(t *testing.T) {
	for _, c := range []struct {
		n    int
		want float64
	}{{0, 0}, {1, 0.55}, {2, 0.60}, {5, 0.75}, {8, 0.90}, {9, 0.95}, {10, 0.95}, {1000, 0.95}} {
		if got := PatternConfidence(c.n); !near(got, c.want) {
			t.Errorf("PatternConfidence(%d) = %v, want %v", c.n, got, c.want)
		}
	}
	fps := FailurePatterns(map[string]TypeStats{
		"decision": {FailureReasons: map[string]int{"deleted": 12, "stale": 1}},
		"workflow": {FailureReasons: map[string]int{"timeout": 3}},
	})
	want := []FailurePattern{
		{"decision::deleted", "decision", "deleted", 12, 0.95},
		{"workflow::timeout", "workflow", "timeout", 3, 0.65},
		{"decision::stale", "decision", "stale", 1, 0.55},
	}
	if len(fps) != len(want) {
		t.Fatalf("FailurePatterns = %+v", fps)
	}
	for i := range want {
		if fps[i].Key != want[i].Key || fps[i].Count != want[i].Count || !near(fps[i].Confidence, want[i].Confidence) {
			t.Errorf("pattern %d = %+v, want %+v", i, fps[i], want[i])
		}
	}
}

func TestTally(t *testing.T) {
	evs := []Event{
		{TS: t0, Target: "ADR-001", Kind: KindKept, Type: "decision"},
		{TS: t0, Target: "ADR-002", Kind: KindDeleted, Type: "decision"},
		{TS: t0, Target: "ADR-003", Kind: KindDeleted, Type: "decision", Reason: "anchor-lost"},
		{TS: t0, Target: "ADR-003", Kind: KindEdited, Type: "decision"},
		{TS: t0, Target: "PF-001", Kind: KindFalsePositive, Type: "pitfall", Value: 1.5},
		{TS: t0, Target: "obs_w", Kind: KindOutcome, Type: "workflow", Value: 0.5, Reason: "timeout"},
		{TS: t0, Target: "obs_w", Kind: KindOutcome, Type: "workflow", Value: 0.9},
		{TS: t0, Target: "obs_x", Kind: KindKept}, // no type: skipped
		{TS: t0.Add(-time.Hour), Target: "obs_p", Kind: KindDeleted, Type: "procedural"},
	}
	got := Tally(evs, map[string]time.Time{"procedural": t0.Add(-time.Minute)})
	d := got["decision"]
	if d.Successes != 1 || d.Failures != 2 || d.N != 3 || d.QualitySum != 1 || d.FailureReasons["deleted"] != 1 || d.FailureReasons["anchor-lost"] != 1 {
		t.Errorf("decision = %+v", d)
	}
	if p := got["pitfall"]; p.Failures != 1 || p.FailureReasons["false-positive"] != 1 {
		t.Errorf("pitfall = %+v", p)
	}
	if w := got["workflow"]; w.Successes != 1 || w.Failures != 1 || !near(w.QualitySum, 1.4) || w.FailureReasons["timeout"] != 1 {
		t.Errorf("workflow = %+v", w)
	}
	if p, ok := got["procedural"]; ok {
		t.Errorf("procedural counted events before its reset: %+v", p)
	}
	s := TallyOutcomes([]Outcome{
		{Success: true, RetryCount: 1, Quality: 0.8, QualitySet: true, Strategy: "tdd"},
		{Success: false, RetryCount: 2, FailureType: "timeout", Strategy: "tdd"},
		{Success: true},
	})
	if tdd := s["tdd"]; tdd.Successes != 1 || tdd.Failures != 1 || tdd.Retries != 3 || tdd.N != 2 || tdd.FailureReasons["timeout"] != 1 {
		t.Errorf("tdd = %+v", tdd)
	}
	if def := s["default"]; def.Successes != 1 || !near(def.QualitySum, 1) {
		t.Errorf("default = %+v", def)
	}
}
