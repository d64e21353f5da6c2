package learn

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
)

// Tests of the audit against the learning sources, one per numbered rule,
// each with the arithmetic written out.

func evAt(target, kind string, v float64) Event {
	return Event{TS: t0, Target: target, Kind: kind, Value: v}
}

// Rule 2: neutral events count neither in the "≥ 3 events" gate nor in the
// harmful ratio.
func TestNeutralEventsOutsideGateAndRatio(t *testing.T) {
	// 3 edits: helpful + harmful = 0 < 3 → candidate (was established).
	s := Fold([]Event{evAt("e", KindEdited, 1), evAt("e", KindEdited, 1), evAt("e", KindEdited, 1)}, t0)["e"]
	if s.Level != LevelCandidate || s.EventCount() != 0 {
		t.Errorf("3 edits: %s with %d counted events, want candidate, 0", s.Level, s.EventCount())
	}
	// 2 cited, 1 deleted, 2 edited: helpful 2, harmful 1 → 3 events ≥ 3;
	// ratio 1/(2+1) = 0.333 > 0.3 → deprecated (with edits in the ratio it
	// was 1/5 = 0.2: established).
	evs := []Event{evAt("e", KindCited, 1), evAt("e", KindCited, 1), evAt("e", KindDeleted, 1), evAt("e", KindEdited, 1), evAt("e", KindEdited, 1)}
	s = Fold(evs, t0)["e"]
	if !near(s.HarmfulRatio(), 1.0/3) || s.Level != LevelDeprecated {
		t.Errorf("2 cited/1 deleted/2 edited: ratio %v level %s, want 0.333 deprecated", s.HarmfulRatio(), s.Level)
	}
}

// The maturity ladder with neutral events, as a table.
func TestMaturityLadderWithNeutralEvents(t *testing.T) {
	cases := []struct {
		name  string
		kinds []string
		want  Level
		why   string
	}{
		{"2 kept + 5 edited", append(rep(KindKept, 2), rep(KindEdited, 5)...), LevelCandidate, "2 counted events < 3; edits do not count"},
		{"3 kept + 4 edited", append(rep(KindKept, 3), rep(KindEdited, 4)...), LevelEstablished, "3 ≥ 3, ratio 0, helpful 3 < 5"},
		{"5 kept + 10 edited", append(rep(KindKept, 5), rep(KindEdited, 10)...), LevelProven, "helpful 5 ≥ 5, ratio 0/5 < 0.15 (edits would have made it 0)"},
		{"6 kept + 1 deleted + 6 edited", append(append(rep(KindKept, 6), KindDeleted), rep(KindEdited, 6)...), LevelProven, "ratio 1/7 = 0.143 < 0.15"},
		{"5 kept + 1 deleted + 9 edited", append(append(rep(KindKept, 5), KindDeleted), rep(KindEdited, 9)...), LevelEstablished, "ratio 1/6 = 0.167 ≥ 0.15 (with edits: 1/15 = 0.067, proven)"},
		{"7 kept + 3 deleted + 5 edited", append(append(rep(KindKept, 7), rep(KindDeleted, 3)...), rep(KindEdited, 5)...), LevelEstablished, "ratio 3/10 = 0.3, not above 0.3"},
		{"2 kept + 1 deleted + 10 edited", append(append(rep(KindKept, 2), KindDeleted), rep(KindEdited, 10)...), LevelDeprecated, "ratio 1/3 = 0.333 > 0.3 (with edits 1/13: established)"},
		{"1 deleted + 1 false positive + 3 edited", append([]string{KindDeleted, KindFalsePositive}, rep(KindEdited, 3)...), LevelCandidate, "2 counted events < 3"},
		{"3 deleted + 3 edited", append(rep(KindDeleted, 3), rep(KindEdited, 3)...), LevelDeprecated, "3 events, ratio 3/3 = 1 > 0.3"},
	}
	for _, c := range cases {
		s := Fold(manyEvents("e", t0, c.kinds...), t0)["e"]
		if s.Level != c.want {
			t.Errorf("%s: %s, want %s (%s)", c.name, s.Level, c.want, c.why)
		}
	}
	// Neutral outcome runs (0.4 < score < 0.7) are neutral events too: 3
	// neutral runs (score 0.6 each: failed but clean) leave an entry a candidate.
	var runs []Event
	for i := 0; i < 3; i++ {
		runs = append(runs, Event{TS: t0, Target: "e", Kind: KindOutcome, Value: 0.6, Reason: "timeout"})
	}
	if s := Fold(runs, t0)["e"]; s.Level != LevelDeprecated || !Inverted(s) {
		// 3 failed runs out of 3 are an anti-pattern whatever their score.
		t.Errorf("3 failed neutral runs: %s inverted=%v", s.Level, Inverted(s))
	}
	for i := range runs {
		runs[i].Reason = "" // succeeded, but slowly: still neutral
	}
	if s := Fold(runs, t0)["e"]; s.Level != LevelCandidate {
		t.Errorf("3 neutral successful runs: %s, want candidate", s.Level)
	}
}

// Rule 3: an outcome event weighs the run's implicit score.
func TestOutcomeWeightIsTheScore(t *testing.T) {
	o := Outcome{RunID: "r", Success: true, DurationMS: 10 * 60 * 1000, RetryCount: 1, ErrorCount: 0, Cited: []string{"ADR-001"}}
	// 0.4 + 0.2·0.6 (10 min) + 0.2·1 (0 errors) + 0.2·0.7 (1 retry) = 0.4+0.12+0.2+0.14 = 0.86.
	score, verdict := ImplicitScore(o)
	if !near(score, 0.86) || verdict != VerdictHelpful {
		t.Fatalf("score %v %s", score, verdict)
	}
	evs := OutcomeEvents(o, score, nil, t0)
	s := Fold(evs, t0)["ADR-001"]
	if !near(s.Helpful, 0.86) {
		t.Errorf("a 0.86 run added %v helpful, want 0.86", s.Helpful)
	}
	// A 0.70 run adds 0.70 helpful.
	if c, w := Classify(Event{Kind: KindOutcome, Value: 0.7}); c != Helpful || !near(w, 0.7) {
		t.Errorf("0.70 run: %v %v", c, w)
	}
	// A harmful 0.38 run adds 1 − 0.38 = 0.62 harmful; the worst run, 0.12
	// (0 + 0.2·0.2·3), adds 0.88.
	if c, w := Classify(Event{Kind: KindOutcome, Value: 0.38}); c != Harmful || !near(w, 0.62) {
		t.Errorf("0.38 run: %v %v", c, w)
	}
	if c, w := Classify(Event{Kind: KindOutcome, Value: 0.12}); c != Harmful || !near(w, 0.88) {
		t.Errorf("0.12 run: %v %v", c, w)
	}
	// Five helpful 0.86 runs: decayed helpful 5·0.86 = 4.3 < 5: established,
	// not proven (with weight 1 each it was 5: proven).
	var five []Event
	for i := 0; i < 5; i++ {
		five = append(five, Event{TS: t0, Target: "x", Kind: KindOutcome, Value: 0.86})
	}
	if s := Fold(five, t0)["x"]; !near(s.Helpful, 4.3) || s.Level != LevelEstablished {
		t.Errorf("five 0.86 runs: helpful %v %s, want 4.3 established", s.Helpful, s.Level)
	}
}

// Rule 4: without error_count a run counts all its errors, resolved ones
// included; unresolved ones are only the retry context.
func TestErrorCountIsTheTotal(t *testing.T) {
	errs := []RunError{
		{ID: "e1", RunID: "r", Type: "timeout"},
		{ID: "e2", RunID: "r", Type: "timeout", Resolved: true},
		{ID: "e3", RunID: "r", Type: "validation", Resolved: true},
		{ID: "e4", RunID: "other", Type: "conflict"},
	}
	st := BuildErrorStats(errs, "r")
	// total 3 (e1, e2, e3), unresolved 1 (e1), by type timeout 2, validation 1.
	if st.Total != 3 || st.Unresolved != 1 || st.ByType["timeout"] != 2 || st.ByType["validation"] != 1 || len(st.ByType) != 2 {
		t.Errorf("stats %+v", st)
	}
	if rc := BuildRetryContext(errs, "r"); rc.Unresolved != 1 || len(rc.Groups) != 1 || rc.Groups[0].Type != "timeout" {
		t.Errorf("retry context %+v", rc)
	}
	// 3 errors → errors term 0.2: 0.4 + 0.2 + 0.2·0.2 + 0.2 = 0.84 (with the
	// unresolved count, 1 → 0.6: 0.92).
	score, _ := ImplicitScore(Outcome{Success: true, DurationMS: 1000, ErrorCount: st.Total})
	if !near(score, 0.84) {
		t.Errorf("score %v, want 0.84", score)
	}
}

// Rule 5: false positives weigh 1.5 for sentinel and inspector by default.
func TestDefaultHighConfidenceRoles(t *testing.T) {
	roles := config.Default().Learn.HighConfidenceRoles
	entries := []Candidate{{ID: "ADR-001", Title: "Retry the flaky job"}}
	for role, want := range map[string]float64{"sentinel": 1.5, "Inspector": 1.5, "judge": 1.0, "": 1.0} {
		evs, _ := VerdictEvents(Verdict{RunID: "v", Role: role, FalsePositives: []string{"ADR-001"}, EvidenceLevel: 3}, entries, roles, t0)
		if len(evs) != 1 || evs[0].Value != want {
			t.Errorf("role %q: %+v, want value %v", role, evs, want)
		}
	}
	// Two false positives from sentinel against one cited: harmful 2·1.5 = 3,
	// helpful 1 → weight max(0.1, 1/4) = 0.25.
	evs := []Event{evAt("ADR-001", KindCited, 1), evAt("ADR-001", KindFalsePositive, 1.5), evAt("ADR-001", KindFalsePositive, 1.5)}
	if w := Fold(evs, t0)["ADR-001"].Weight; !near(w, 0.25) {
		t.Errorf("weight %v, want 0.25", w)
	}
}

// Rule 8: reliability uses the retries each run reported.
func TestReliabilityUsesReportedRetries(t *testing.T) {
	runs := []Outcome{
		{RunID: "a", Success: true, DurationMS: 1000, RetryCount: 1, Cited: []string{"ADR-001"}},
		{RunID: "b", Success: true, DurationMS: 1000, RetryCount: 2, Cited: []string{"ADR-001"}},
		{RunID: "c", Success: false, DurationMS: 1000, RetryCount: 3, FailureType: "timeout", Cited: []string{"ADR-001"}},
	}
	var evs []Event
	for _, o := range runs {
		s, _ := ImplicitScore(o)
		evs = append(evs, OutcomeEvents(o, s, nil, t0)...)
	}
	ts := Tally(evs, nil)["decision"]
	// Scores: a 0.4+0.2+0.2+0.14 = 0.94; b 0.4+0.2+0.2+0.06 = 0.86; c 0+0.2+0.2+0.06 = 0.46.
	// success rate 2/3; avg retries (1+2+3)/3 = 2 → 1 − 2/3 = 1/3; quality (0.94+0.86+0.46)/3 = 0.7533.
	// 0.6·0.6667 + 0.2·0.3333 + 0.2·0.7533 = 0.4 + 0.0667 + 0.1507 = 0.6173.
	if ts.Retries != 6 || ts.N != 3 {
		t.Fatalf("tally %+v", ts)
	}
	if r := Reliability(ts); !near(round4(r), 0.6173) {
		t.Errorf("reliability %v, want 0.6173 (with 0 retries it was 0.7507)", r)
	}
}

// Rule 9: failure patterns come from every failed run with a failure type.
func TestFailurePatternsFromUncitedRuns(t *testing.T) {
	outs := []Outcome{
		{RunID: "1", TS: t0, FailureType: "timeout", Type: "workflow"},
		{RunID: "2", TS: t0, FailureType: "timeout", Type: "workflow"},
		{RunID: "3", TS: t0, FailureType: "auth"},                                // no type: unknown::auth
		{RunID: "4", TS: t0, FailureType: "timeout", Cited: []string{"ADR-001"}}, // counted through its feedback event
		{RunID: "5", TS: t0}, // failed, no failure type: no pattern
		{RunID: "6", TS: t0, Success: true, FailureType: "timeout", Type: "workflow"}, // succeeded
		{RunID: "7", TS: t0.Add(-time.Hour), FailureType: "timeout", Type: "pitfall"}, // before pitfall's reset
	}
	tallies := map[string]TypeStats{"decision": {Failures: 1, N: 1, FailureReasons: map[string]int{"timeout": 1}}}
	fps := FailurePatterns(tallies, RunFailures(outs, map[string]time.Time{"pitfall": t0.Add(-time.Minute)}))
	got := map[string]float64{}
	for _, f := range fps {
		got[f.Key] = float64(f.Count)*10 + f.Confidence
	}
	// workflow::timeout 2 runs: confidence 0.55 + 0.05 = 0.60; the others once: 0.55.
	want := map[string]float64{"workflow::timeout": 20.60, "unknown::auth": 10.55, "decision::timeout": 10.55}
	if len(got) != len(want) {
		t.Fatalf("patterns %+v", fps)
	}
	for k, v := range want {
		if !near(got[k], v) {
			t.Errorf("%s: %v, want %v (%+v)", k, got[k], v, fps)
		}
	}
	if fps[0].Key != "workflow::timeout" {
		t.Errorf("most frequent first: %+v", fps)
	}
}

// Rule 7 (property): no automatic path ever loosens a threshold. Random
// sequences of tallies through Overlays, from random starting policies (some
// with a person's relaxation): a multiplier never goes down, is never set
// below 1 (a person's ×0.9 may only be kept), approval never clears, and an
// overlay never disappears.
func TestNoAutomaticPathLoosens(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 7))
	randTally := func() TypeStats {
		ts := TypeStats{Successes: rng.IntN(30), Failures: rng.IntN(30)}
		ts.N = ts.Successes + ts.Failures
		ts.Retries = rng.IntN(4 * (ts.N + 1))
		ts.QualitySum = rng.Float64() * float64(ts.N)
		if ts.Failures > 0 {
			ts.FailureReasons = map[string]int{"deleted": rng.IntN(ts.Failures + 1)}
		}
		return ts
	}
	for trial := 0; trial < 3000; trial++ {
		p := Policy{}
		switch rng.IntN(3) {
		case 0:
			p.Overlays = map[string]Overlay{"decision": {ThresholdMultiplier: []float64{1, 1.4}[rng.IntN(2)], RequiresApproval: rng.IntN(2) == 0}}
		case 1: // a person relaxed workflow
			p.Overlays = map[string]Overlay{"workflow": {ThresholdMultiplier: 0.9, RelaxedBy: "alice"}}
		}
		for step := 0; step < 8; step++ {
			tallies := map[string]TypeStats{}
			for _, typ := range Types {
				if rng.IntN(3) > 0 {
					tallies[typ] = randTally()
				}
			}
			next := Overlays(p, tallies, t0.Add(time.Duration(step)*time.Hour))
			for _, typ := range Types {
				before, had := p.Overlays[typ]
				after, has := next.Overlays[typ]
				if had && !has {
					t.Fatalf("trial %d step %d: %s overlay removed automatically", trial, step, typ)
				}
				if !has {
					continue
				}
				if after.ThresholdMultiplier < 1 && !(had && before.RelaxedBy != "" && after.ThresholdMultiplier == before.ThresholdMultiplier) {
					t.Fatalf("trial %d step %d: %s multiplier %v < 1 set automatically (reliability %v)", trial, step, typ, after.ThresholdMultiplier, Reliability(tallies[typ]))
				}
				if had && (after.ThresholdMultiplier < before.ThresholdMultiplier || (before.RequiresApproval && !after.RequiresApproval)) {
					t.Fatalf("trial %d step %d: %s loosened %+v → %+v", trial, step, typ, before, after)
				}
				if EffectiveThreshold(next, typ, 0.6) < EffectiveThreshold(p, typ, 0.6) {
					t.Fatalf("trial %d step %d: %s effective threshold went down", trial, step, typ)
				}
			}
			p = next
		}
	}
}

// Relax is a person's explicit decision, only for a reliable type, with a
// reason, recorded in the overlay.
func TestRelaxByAPerson(t *testing.T) {
	high := TypeStats{Successes: 10, N: 10, QualitySum: 10} // 0.6 + 0.2 + 0.2 = 1.0
	p, err := Relax(Policy{}, "workflow", high, "alice", "ten clean runs", t0)
	if err != nil {
		t.Fatal(err)
	}
	o := p.Overlays["workflow"]
	// 0.60 × 0.9 = 0.54.
	if o.ThresholdMultiplier != 0.9 || o.RelaxedBy != "alice" || !o.UpdatedAt.Equal(t0) || !near(EffectiveThreshold(p, "workflow", 0.6), 0.54) {
		t.Errorf("relaxed %+v", o)
	}
	if want := "relaxed by alice: ten clean runs (reliability 1.00)"; o.Reason != want {
		t.Errorf("reason %q, want %q", o.Reason, want)
	}
	// A name that is not one word and control characters in the reason do
	// not reach the policy file or a terminal (ESC is dropped, "[2J" stays as text).
	q, _ := Relax(Policy{}, "workflow", high, "x\x1b[2J", " ten\n clean\x1b[2J runs ", t0)
	if got := q.Overlays["workflow"].Reason; got != "relaxed by a person: ten clean[2J runs (reliability 1.00)" {
		t.Errorf("reason %q", got)
	}
	mid := TypeStats{Successes: 8, Failures: 2, N: 10, QualitySum: 8} // 0.48 + 0.2 + 0.16 = 0.84
	for name, c := range map[string]struct {
		ts     TypeStats
		reason string
	}{"no reason": {high, " "}, "reliability 0.84": {mid, "x"}, "2 samples": {TypeStats{Successes: 2, N: 2, QualitySum: 2}, "x"}} {
		if _, err := Relax(Policy{}, "workflow", c.ts, "alice", c.reason, t0); err == nil {
			t.Errorf("%s: relaxed", name)
		}
	}
}

// Rule 14: the policy change a run caused, and the retry budget.
func TestPolicyDiffAndRetryBudget(t *testing.T) {
	deleted3 := TypeStats{Failures: 3, N: 3, FailureReasons: map[string]int{"deleted": 3}} // 0 + 0.2 + 0 = 0.2 < 0.7
	prev := Policy{}
	next := Overlays(prev, map[string]TypeStats{"decision": deleted3}, t0)
	d := PolicyDiff(prev, next)
	if len(d) != 1 || d[0].Type != "decision" || d[0].Before != 1 || d[0].After != 1.4 || d[0].ApprovalBefore || !d[0].ApprovalAfter {
		t.Fatalf("diff %+v", d)
	}
	if d[0].Reason != "reliability 0.20 (0/3 succeeded); decision::deleted ×3" {
		t.Errorf("reason %q", d[0].Reason)
	}
	if d := PolicyDiff(next, Overlays(next, map[string]TypeStats{"decision": deleted3}, t0)); len(d) != 0 {
		t.Errorf("no change reported as %+v", d)
	}
	if d := PolicyDiff(next, ResetType(next, "decision", t0)); len(d) != 1 || d[0].Reason != "overlay removed" || d[0].After != 1 {
		t.Errorf("reset diff %+v", d)
	}
	// Retry budget: 2, 1 under a tightening overlay, 2 under a relaxed one.
	relaxed, _ := Relax(next, "workflow", TypeStats{Successes: 10, N: 10, QualitySum: 10}, "alice", "x", t0)
	got := RunRetryBudgets(relaxed, Outcome{Type: "pitfall"}, []Event{{Type: "decision"}, {Type: "workflow"}})
	if want := map[string]int{"pitfall": 2, "decision": 1, "workflow": 2}; !mapsEqual(got, want) {
		t.Errorf("budgets %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// The engine parameters of learnwatch.yaml change the formulas.
func TestParamsFromConfig(t *testing.T) {
	c := config.Default().Learn
	if ParamsFrom(c).withDefaults() != DefaultParams() {
		t.Fatalf("config defaults %+v differ from the engine's %+v", ParamsFrom(c), DefaultParams())
	}
	c.HalfLifeDays = 30
	c.Maturity.MinEvents = 2
	p := ParamsFrom(c)
	// 2 kept, 30 days ago, half-life 30: helpful 2·0.5 = 1; 2 events ≥ 2: established.
	s := FoldWith(manyEvents("e", t0, KindKept, KindKept), t0.Add(days(30)), p)["e"]
	if !near(s.Helpful, 1) || s.Level != LevelEstablished {
		t.Errorf("half-life 30, min events 2: helpful %v %s", s.Helpful, s.Level)
	}
	// The report's decay timeline uses the configured half-life: the 30-day
	// boundary is 0.5^(30/30) = 50 % (with 90 days: 0.5^(1/3) = 79 %).
	if r := BuildReport(FoldWith(manyEvents("e", t0, KindKept), t0, p), nil, nil, Policy{}, nil, t0); r.HalfLifeDays != 30 || !near(r.Decay[1].DecayFrom, 0.5) {
		t.Errorf("report half-life %v, 30-day factor %v", r.HalfLifeDays, r.Decay[1].DecayFrom)
	}
	// Recency 7 days, immunity 5: an entry cited 3 times 7 days ago has
	// recency e^(−7/7) = 0.3679 (with immunity 3 it would be 1).
	c.RecencyDays, c.Immunity = 7, 5
	p = ParamsFrom(c)
	evs := manyEvents("ADR-001", t0, KindCited, KindCited, KindCited)
	r := RankWith([]Candidate{{ID: "ADR-001", BaseScore: 1}}, FoldWith(evs, t0.Add(days(7)), p), t0.Add(days(7)), nil, p)
	if len(r) != 1 || !near(r[0].Recency, 0.3679) {
		t.Errorf("recency %+v", r)
	}
	if !slices.Equal(config.Default().Learn.HighConfidenceRoles, []string{"sentinel", "inspector"}) {
		t.Error("high-confidence roles")
	}
}

// Rule 12: category weights — a rule ×1.3, a causal link ×1.1.
func TestCategoryWeights(t *testing.T) {
	entries := []Candidate{
		{ID: "ADR-001", BaseScore: 1},                   // rule: 0.5 (candidate) × 1.3 = 0.65
		{ID: "PF-001", BaseScore: 1},                    // causal: 0.5 × 1.1 = 0.55
		{ID: "obs_w", Type: "workflow", BaseScore: 1},   // observation: 0.5
		{ID: "obs_d", Type: "decision", BaseScore: 0.4}, // an observation-born decision is a rule: 0.4 × 0.5 × 1.3 = 0.26
	}
	got := Rank(entries, nil, t0, nil)
	want := []struct {
		id    string
		score float64
	}{{"ADR-001", 0.65}, {"PF-001", 0.55}, {"obs_w", 0.5}, {"obs_d", 0.26}}
	for i, w := range want {
		if got[i].ID != w.id || !near(got[i].Score, w.score) {
			t.Errorf("rank %d: %s %.4f, want %s %.4f", i, got[i].ID, got[i].Score, w.id, w.score)
		}
	}
}

// Rule 11: a PASS at evidence level 1–2 reinforces the entries relevant to
// the run's files and ages the others one step.
func TestPassReinforcesRelevantAndAgesOthers(t *testing.T) {
	entries := []Candidate{
		{ID: "ADR-001", Type: "decision", Title: "Sessions expire", Refs: []string{"src/auth/login.go:12"}, BaseScore: 1},
		{ID: "ADR-002", Type: "decision", Title: "Keep migrations small", BaseScore: 1},
		{ID: "PF-001", Type: "pitfall", Title: "Clock skew", Area: "auth", BaseScore: 1},
		{ID: "PF-002", Type: "pitfall", Title: "Rounding", Area: "billing", BaseScore: 1},
	}
	v := Verdict{RunID: "v", Pass: true, EvidenceLevel: 2, Role: "Inspector", Files: []string{"src/auth/login.go"}}
	evs, _ := VerdictEvents(v, entries, nil, t0)
	kinds := map[string]string{}
	for _, e := range evs {
		kinds[e.Target] = e.Kind
		if e.Role != "inspector" {
			t.Errorf("%s: role %q", e.Target, e.Role)
		}
	}
	// ADR-001 by its ref, PF-001 by its area ("auth" is a directory of the file).
	want := map[string]string{"ADR-001": KindCited, "PF-001": KindCited, "ADR-002": KindAged, "PF-002": KindAged}
	if !reflectEqual(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	st := Fold(evs, t0)
	r := Rank(entries, st, t0, nil)
	score := map[string]float64{}
	for _, x := range r {
		score[x.ID] = x.Score
	}
	// ADR-001: 1 cited now: candidate 0.5 × weight 1 × recency 1 × rule 1.3 = 0.65.
	// ADR-002: aged one step = 1 day unused: 0.5 × e^(−1/14) × 1.3 = 0.5 × 0.9311 × 1.3 = 0.6052.
	// PF-002: 0.5 × 0.9311 × 1.1 = 0.5121.
	for id, w := range map[string]float64{"ADR-001": 0.65, "ADR-002": 0.6052, "PF-002": 0.5121} {
		if !near(score[id], w) {
			t.Errorf("%s: %.4f, want %.4f", id, score[id], w)
		}
	}
	if st["ADR-001"].Via != "inspector" || st["ADR-002"].Via != "" {
		t.Errorf("via %q %q", st["ADR-001"].Via, st["ADR-002"].Via)
	}
	// A later use clears the aging: ADR-002 cited → recency 1 again.
	evs2 := append(slices.Clip(evs), Event{TS: t0, Target: "ADR-002", Kind: KindCited, Value: 1})
	if s := Fold(evs2, t0)["ADR-002"]; s.Aged != 0 {
		t.Errorf("aged %d after a use", s.Aged)
	}
	// Level 3, a FAIL, or a PASS that reinforces nothing: nothing aged.
	for _, v := range []Verdict{
		{RunID: "a", Pass: true, EvidenceLevel: 3, Files: []string{"src/auth/login.go"}},
		{RunID: "b", Pass: false, EvidenceLevel: 1, Files: []string{"src/auth/login.go"}},
		{RunID: "c", Pass: true, EvidenceLevel: 1, Files: []string{"docs/unrelated.md"}},
	} {
		if evs, _ := VerdictEvents(v, entries, nil, t0); len(evs) != 0 {
			t.Errorf("%s: %+v", v.RunID, evs)
		}
	}
	// Immunity: an entry reinforced 3 times does not age.
	imm := append(manyEvents("ADR-002", t0.Add(-days(10)), rep(KindCited, 3)...), Event{TS: t0, Target: "ADR-002", Kind: KindAged, Value: 1})
	if r := Rank(entries[1:2], Fold(imm, t0), t0, nil); len(r) != 1 || r[0].Recency != 1 {
		t.Errorf("immune entry aged: %+v", r)
	}
}

func reflectEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Rule 10: the evidence tags of an index line.
func TestEvidenceTags(t *testing.T) {
	ev := func(kind string, v float64, role string) Event {
		return Event{TS: t0, Target: "e", Kind: kind, Value: v, Role: role}
	}
	cases := []struct {
		name string
		evs  []Event
		role string
		want string
	}{
		{"nothing", []Event{ev(KindEdited, 1, "")}, "", ""},
		// 5 helpful events: "5× validated".
		{"validated", []Event{ev(KindKept, 1, ""), ev(KindKept, 1, ""), ev(KindCited, 1, ""), ev(KindCited, 1, ""), ev(KindCited, 1, "sentinel")}, "", "5× validated, via: sentinel"},
		{"own role", []Event{ev(KindCited, 1, "sentinel")}, "Sentinel", "1× validated"},
		// helpful 1 vs harmful 1.5 (a sentinel false positive): 1.5 ≥ 1 → avoid.
		{"avoid", []Event{ev(KindCited, 1, ""), ev(KindFalsePositive, 1.5, "sentinel")}, "", "1× validated, 1× flagged, avoid"},
		// helpful 2 vs harmful 1: not avoid.
		{"flagged", []Event{ev(KindCited, 1, ""), ev(KindKept, 1, ""), ev(KindDeleted, 1, "")}, "", "2× validated, 1× flagged"},
	}
	for _, c := range cases {
		got := strings.Join(EvidenceTags(Fold(c.evs, t0)["e"], c.role), ", ")
		if got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// Rule 13: error details are one line (the stack keeps its lines), without
// control characters, bounded; a message is required.
func TestCleanRunError(t *testing.T) {
	e, err := CleanRunError(RunError{Message: " Type\terror\n in  x ", Tool: "type\x1bcheck", Context: "after\r\nOAuth", Stack: "at a\r\n\tat b\x00\n\n"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Message != "Type error in x" || e.Tool != "typecheck" || e.Context != "after OAuth" || e.Stack != "at a\n\tat b" {
		t.Errorf("%q %q %q %q", e.Message, e.Tool, e.Context, e.Stack)
	}
	for _, c := range []struct {
		e     RunError
		field string
	}{
		{RunError{Message: " \n "}, "message"},
		{RunError{Message: "x", Tool: strings.Repeat("t", MaxErrorTool+1)}, "tool"},
		{RunError{Message: "x", Stack: strings.Repeat("s", MaxErrorStack+1)}, "stack"},
	} {
		_, err := CleanRunError(c.e)
		if fe, ok := err.(*FieldError); !ok || fe.Field != c.field {
			t.Errorf("%s: %v", c.field, err)
		}
	}
}
