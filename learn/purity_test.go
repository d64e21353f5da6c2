package learn

import (
	"reflect"
	"slices"
	"testing"
	"time"
)

// fixture builds a full set of inputs; every call returns an equal, fresh
// copy, so a function's input can be compared with an untouched twin.
type fixture struct {
	events   []Event
	stats    map[string]Stats
	tallies  map[string]TypeStats
	policy   Policy
	entries  []Candidate
	outcomes []Outcome
	errs     []RunError
	changed  []string
	verdict  Verdict
}

func mkFixture() fixture {
	evs := []Event{
		{TS: t0.Add(time.Hour), Target: "ADR-001", Kind: KindCited, Type: "decision"},
		{TS: t0, Target: "ADR-001", Kind: KindKept, Type: "decision"},
		{TS: t0, Target: "ADR-001", Kind: KindKept, Type: "decision"},
		{TS: t0.Add(2 * time.Hour), Target: "ADR-001", Kind: KindFalsePositive, Value: 1.5, Type: "decision"},
		{TS: t0, Target: "PF-001", Kind: KindDeleted, Type: "pitfall", Reason: "anchor-lost"},
		{TS: t0, Target: "obs_a", Kind: KindOutcome, Value: 0.3, Type: "workflow", Reason: "timeout"},
		{TS: t0, Target: "obs_a", Kind: KindOutcome, Value: 0.3, Type: "workflow", Reason: "timeout"},
		{TS: t0, Target: "obs_a", Kind: KindOutcome, Value: 0.9, Type: "workflow"},
		{TS: t0.Add(-time.Hour), Target: "obs_b", Kind: KindManual, Value: ManualPromote},
		{TS: t0, Target: "obs_c", Kind: "future-kind"},
	}
	return fixture{
		events: evs,
		stats:  Fold(slices.Clone(evs), t0),
		tallies: map[string]TypeStats{
			"decision": {Successes: 1, Failures: 3, N: 4, QualitySum: 1, FailureReasons: map[string]int{"deleted": 3}},
			"workflow": {Successes: 9, N: 9, QualitySum: 9},
		},
		policy: Policy{
			Overlays:  map[string]Overlay{"pitfall": {ThresholdMultiplier: 1.4, RequiresApproval: true, UpdatedAt: t0.Add(-40 * 24 * time.Hour)}},
			Approvals: append(make([]string, 0, 8), "obs_z"),
			Resets:    map[string]time.Time{"procedural": t0.Add(-time.Hour)},
		},
		entries: []Candidate{
			{ID: "ADR-001", Type: "decision", Title: "Use locks", Refs: []string{"a/b.go"}, BaseScore: 1, Created: t0.Add(-24 * time.Hour)},
			{ID: "obs_a", Type: "workflow", Pattern: "deploy on friday", Area: "deploy", BaseScore: 0.7},
		},
		outcomes: []Outcome{{RunID: "r", Cited: []string{"ADR-001", "ADR-001"}, Strategy: "s"}, {RunID: "q", Success: true}},
		errs:     []RunError{{ID: "e2", RunID: "r", Type: "timeout", TS: t0.Add(time.Second)}, {ID: "e1", RunID: "r", Type: "timeout", TS: t0}},
		changed:  []string{"./a/b.go:3", "deploy/x.sh"},
		verdict:  Verdict{RunID: "r", Pass: true, EvidenceLevel: 1, FalsePositives: []string{"use locks"}, Cited: []string{"obs_a", "ADR-001"}},
	}
}

func TestPureFunctionsDoNotMutateInputs(t *testing.T) {
	calls := map[string]func(f *fixture){
		"Fold":               func(f *fixture) { Fold(f.events, t0) },
		"Weight":             func(f *fixture) { Weight(f.stats["ADR-001"]) },
		"Maturity":           func(f *fixture) { Maturity(f.stats["ADR-001"]) },
		"Stats.At":           func(f *fixture) { f.stats["ADR-001"].At(t0.Add(1000 * time.Hour)) },
		"CountByLevel":       func(f *fixture) { CountByLevel(f.stats) },
		"Regressions":        func(f *fixture) { Regressions(f.stats) },
		"ImplicitScore":      func(f *fixture) { ImplicitScore(f.outcomes[0]) },
		"OutcomeEvents":      func(f *fixture) { OutcomeEvents(f.outcomes[0], 0.5, f.entries, t0) },
		"AntiPatterns":       func(f *fixture) { AntiPatterns(f.stats, f.entries) },
		"FailurePatterns":    func(f *fixture) { FailurePatterns(f.tallies) },
		"Reliability":        func(f *fixture) { Reliability(f.tallies["decision"]) },
		"Tally":              func(f *fixture) { Tally(f.events, f.policy.Resets) },
		"TallyOutcomes":      func(f *fixture) { TallyOutcomes(f.outcomes) },
		"Overlays":           func(f *fixture) { Overlays(f.policy, f.tallies, t0) },
		"EffectiveThreshold": func(f *fixture) { EffectiveThreshold(f.policy, "pitfall", 0.65) },
		"Held":               func(f *fixture) { Held(f.policy, "pitfall", "obs_z") },
		"Approve":            func(f *fixture) { Approve(f.policy, "obs_new") },
		"ResetType":          func(f *fixture) { ResetType(f.policy, "pitfall", t0) },
		"StaleOverlays":      func(f *fixture) { StaleOverlays(f.policy, t0) },
		"Rank":               func(f *fixture) { Rank(f.entries, f.stats, t0, f.changed) },
		"Overlaps":           func(f *fixture) { Overlaps(f.entries[1], f.changed) },
		"MatchFalsePositive": func(f *fixture) { MatchFalsePositive("use locks", f.entries) },
		"VerdictEvents":      func(f *fixture) { VerdictEvents(f.verdict, f.entries, []string{"qa"}, t0) },
		"BuildRetryContext":  func(f *fixture) { BuildRetryContext(f.errs, "r") },
		"WithErrorCount":     func(f *fixture) { WithErrorCount(Outcome{RunID: "r"}, f.errs) },
		"BuildErrorStats":    func(f *fixture) { BuildErrorStats(f.errs, "r") },
		"RunFailures":        func(f *fixture) { RunFailures(f.outcomes, f.policy.Resets) },
		"FailurePatterns+runs": func(f *fixture) {
			FailurePatterns(f.tallies, RunFailures(f.outcomes, nil))
		},
		"PolicyDiff": func(f *fixture) { PolicyDiff(f.policy, Overlays(f.policy, f.tallies, t0)) },
		"Relax": func(f *fixture) {
			Relax(f.policy, "decision", TypeStats{Successes: 9, N: 9, QualitySum: 9}, "a", "r", t0)
		},
		"RunRetryBudgets": func(f *fixture) { RunRetryBudgets(f.policy, f.outcomes[0], f.events) },
		"FoldWith":        func(f *fixture) { FoldWith(f.events, t0, Params{HalfLifeDays: 10}) },
		"RankWith":        func(f *fixture) { RankWith(f.entries, f.stats, t0, f.changed, Params{RecencyDays: 3}) },
		"BuildReport": func(f *fixture) {
			BuildReport(f.stats, f.tallies, f.outcomes, f.policy, f.entries, t0).Markdown()
		},
	}
	for name, call := range calls {
		f, twin := mkFixture(), mkFixture()
		call(&f)
		if !reflect.DeepEqual(f, twin) {
			t.Errorf("%s modified its input", name)
		}
	}
	// Appending to a returned policy must not reach the input's spare capacity.
	f := mkFixture()
	p := Approve(f.policy, "obs_new")
	p.Approvals[0] = "changed"
	if f.policy.Approvals[:cap(f.policy.Approvals)][0] != "obs_z" || len(f.policy.Approvals[:2][1]) != 0 {
		t.Error("Approve shares the input's backing array")
	}
	o := Overlays(f.policy, f.tallies, t0)
	o.Overlays["new"] = Overlay{}
	if _, ok := f.policy.Overlays["new"]; ok {
		t.Error("Overlays shares the input's map")
	}
}
