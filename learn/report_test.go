package learn

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestBuildReport(t *testing.T) {
	evs := append(manyEvents("ADR-001", t0, rep(KindKept, 6)...), outcomes("obs_a", 2, 5)...)
	evs = append(evs, manyEvents("PF-001", t0.Add(-days(100)), KindKept, KindKept, KindKept, KindKept)...)
	for i := range evs {
		switch evs[i].Target {
		case "ADR-001":
			evs[i].Type = "decision"
		case "obs_a":
			evs[i].Type = "workflow"
		}
	}
	p := Policy{Overlays: map[string]Overlay{"workflow": {ThresholdMultiplier: 1.4, RequiresApproval: true, Reason: "r", UpdatedAt: t0.Add(-days(40))}}}
	r := BuildReport(Fold(evs, t0), Tally(evs, nil), []Outcome{{RunID: "x", Success: true, Strategy: "tdd"}}, p,
		[]Candidate{{ID: "obs_a", Pattern: "deploy friday"}}, t0)
	if r.Strongest != "decision" || r.Weakest != "workflow" {
		t.Errorf("strongest %q weakest %q", r.Strongest, r.Weakest)
	}
	if len(r.FailurePatterns) != 1 || r.FailurePatterns[0].Key != "workflow::timeout" || r.FailurePatterns[0].Count != 5 {
		t.Errorf("failure patterns %+v", r.FailurePatterns)
	}
	if len(r.Overlays) != 1 || !r.Overlays[0].Stale {
		t.Errorf("overlays %+v", r.Overlays)
	}
	if r.Maturity[LevelProven] != 1 || r.Maturity[LevelDeprecated] != 1 || r.Maturity[LevelEstablished] != 1 {
		t.Errorf("maturity %v", r.Maturity)
	}
	if len(r.AntiPatterns) != 1 || r.AntiPatterns[0].Text != "AVOID: deploy friday. Failed 5/7 times (71% failure rate)" {
		t.Errorf("anti-patterns %+v", r.AntiPatterns)
	}
	if r.Decay[0].Targets != 2 || r.Decay[2].Targets != 1 || r.Decay[1].DecayTo != 0.5 {
		t.Errorf("decay %+v", r.Decay)
	}
	// PF-001: 4 events 100 days old: established, stays so. ADR-001: 6 helpful now
	// → in 30 days 6·0.794 = 4.76 helpful: proven → established.
	if len(r.Fading) != 1 || r.Fading[0].ID != "ADR-001" || r.Fading[0].In30d != LevelEstablished {
		t.Errorf("fading %+v", r.Fading)
	}
	md := r.Markdown()
	for _, want := range []string{"# Learning report", "Strongest: **decision**", "`workflow::timeout` ×5 (confidence 0.75)",
		"threshold ×1.40", "older than 30 days", "proven (×1.5): 1 — ADR-001", "AVOID: deploy friday", "| 90-180 days | 1 | 50% → 25% |",
		"ADR-001: proven → established", "| tdd | 1.00 | 1 | 0 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

func BenchmarkFold100k(b *testing.B) {
	kinds := []string{KindKept, KindCited, KindDeleted, KindEdited, KindOutcome, KindFalsePositive}
	evs := make([]Event, 100_000)
	for i := range evs {
		evs[i] = Event{TS: t0.Add(time.Duration(i) * time.Minute), Target: fmt.Sprintf("obs_%d", i%2000),
			Kind: kinds[i%len(kinds)], Value: float64(i%10) / 10, Type: Types[i%4]}
	}
	now := t0.Add(100_000 * time.Minute)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(Fold(evs, now)) != 2000 {
			b.Fatal("wrong fold")
		}
	}
}

func BenchmarkRank1k(b *testing.B) {
	var evs []Event
	entries := make([]Candidate, 1000)
	for i := range entries {
		id := fmt.Sprintf("ADR-%03d", i)
		entries[i] = Candidate{ID: id, Type: "decision", Title: "entry " + id, Area: "pkg" + fmt.Sprint(i%50),
			Refs: []string{fmt.Sprintf("pkg%d/file%d.go", i%50, i)}, BaseScore: 0.5 + float64(i%50)/100, Created: t0.Add(-days(float64(i % 60)))}
		for j := 0; j < i%8; j++ {
			evs = append(evs, Event{TS: t0.Add(-days(float64(j))), Target: id, Kind: KindCited})
		}
	}
	stats := Fold(evs, t0)
	changed := []string{"pkg3/file3.go", "pkg7/other.go", "README.md"}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if len(Rank(entries, stats, t0, changed)) == 0 {
			b.Fatal("nothing ranked")
		}
	}
}
