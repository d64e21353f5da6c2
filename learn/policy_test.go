package learn

import (
	"strings"
	"testing"
	"time"
)

func TestOverlays(t *testing.T) {
	deleted3 := TypeStats{Failures: 3, N: 3, FailureReasons: map[string]int{"deleted": 3}}
	p := Overlays(Policy{}, map[string]TypeStats{"decision": deleted3}, t0)
	o, ok := p.Overlays["decision"]
	if !ok || o.ThresholdMultiplier != 1.4 || !o.RequiresApproval || !o.UpdatedAt.Equal(t0) || !near(o.Reliability, 0.2) {
		t.Fatalf("three deletions: %+v", p)
	}
	if !strings.Contains(o.Reason, "reliability 0.20") || !strings.Contains(o.Reason, "decision::deleted ×3") {
		t.Errorf("reason %q", o.Reason)
	}

	// Fewer than 3 samples: nothing.
	if p := Overlays(Policy{}, map[string]TypeStats{"decision": {Failures: 2, N: 2}}, t0); len(p.Overlays) != 0 {
		t.Errorf("2 samples made an overlay: %+v", p)
	}
	// Middling reliability without approval conditions: nothing.
	mid := TypeStats{Successes: 8, Failures: 2, N: 10, QualitySum: 8, FailureReasons: map[string]int{"deleted": 2}} // 0.48+0.2+0.16 = 0.84
	if p := Overlays(Policy{}, map[string]TypeStats{"decision": mid}, t0); len(p.Overlays) != 0 {
		t.Errorf("reliability 0.84 made an overlay: %+v", p)
	}
	// High reliability (1.0 = 0.6 + 0.2 + 0.2): base thresholds, no overlay —
	// the source's ×0.9 is never applied automatically (tighten-only).
	high := TypeStats{Successes: 10, N: 10, QualitySum: 10}
	if p := Overlays(Policy{}, map[string]TypeStats{"workflow": high}, t0); len(p.Overlays) != 0 {
		t.Errorf("high reliability made an overlay: %+v", p.Overlays)
	}
	// 0.7 ≤ r < 0.75: multiplier 1.0 but approval required.
	r72 := TypeStats{Successes: 2, Failures: 1, N: 3, QualitySum: 2, Retries: 1} // 0.4 + 0.2·(1−1/9) + 0.1333 = 0.7111
	if o := Overlays(Policy{}, map[string]TypeStats{"pitfall": r72}, t0).Overlays["pitfall"]; o.ThresholdMultiplier != 1 || !o.RequiresApproval {
		t.Errorf("r=%.4f: %+v", Reliability(r72), o)
	}
	// ≥3 failures of one reason require approval even when reliable.
	reliable := TypeStats{Successes: 30, Failures: 3, N: 33, QualitySum: 30, FailureReasons: map[string]int{"stale": 3}}
	// 30/33 succeeded, no retries, quality 30/33: 0.6·0.909 + 0.2 + 0.2·0.909 = 0.927 > 0.9, still ×1.0.
	if o := Overlays(Policy{}, map[string]TypeStats{"decision": reliable}, t0).Overlays["decision"]; !o.RequiresApproval || o.ThresholdMultiplier != 1 {
		t.Errorf("3 stale failures: %+v", o)
	}

	// Tighten only: good news never loosens an overlay; UpdatedAt stays.
	later := t0.Add(48 * time.Hour)
	p2 := Overlays(p, map[string]TypeStats{"decision": high}, later)
	o2 := p2.Overlays["decision"]
	if o2.ThresholdMultiplier != 1.4 || !o2.RequiresApproval || !o2.UpdatedAt.Equal(t0) || o2.Reason != o.Reason {
		t.Errorf("overlay loosened by good news: %+v", o2)
	}
	if !near(o2.Reliability, 1) {
		t.Errorf("reliability not refreshed: %v", o2.Reliability)
	}
	// A person's ×0.9 (Relax) stands while the type stays above 0.9 and is
	// tightened back when it drops.
	p3, err := Relax(Policy{}, "workflow", high, "alice", "reviewed the last ten", t0)
	if err != nil || p3.Overlays["workflow"].ThresholdMultiplier != 0.9 {
		t.Fatalf("relax: %v %+v", err, p3)
	}
	p3 = Overlays(p3, map[string]TypeStats{"workflow": high}, later)
	if o := p3.Overlays["workflow"]; o.ThresholdMultiplier != 0.9 || o.RelaxedBy != "alice" {
		t.Errorf("relaxed overlay undone while reliable: %+v", o)
	}
	p3 = Overlays(p3, map[string]TypeStats{"workflow": mid}, later) // 0.84 ≤ 0.9
	if o := p3.Overlays["workflow"]; o.ThresholdMultiplier != 1 || o.RelaxedBy != "" {
		t.Errorf("relaxed overlay kept at reliability 0.84: %+v", o)
	}
	p3 = Overlays(p3, map[string]TypeStats{"workflow": deleted3}, later.Add(time.Hour))
	if o := p3.Overlays["workflow"]; o.ThresholdMultiplier != 1.4 {
		t.Errorf("not tightened by three deletions: %+v", o)
	}
	// Property: for any sequence, the multiplier never decreases once set and approval never clears.
	seq := []TypeStats{high, mid, deleted3, high, r72, reliable, high}
	var pp Policy
	prevM, prevReq := 0.0, false
	for i, ts := range seq {
		pp = Overlays(pp, map[string]TypeStats{"decision": ts}, t0.Add(time.Duration(i)*time.Hour))
		o := pp.Overlays["decision"]
		if o.ThresholdMultiplier < prevM || (prevReq && !o.RequiresApproval) {
			t.Fatalf("step %d loosened: %+v (before ×%v req %v)", i, o, prevM, prevReq)
		}
		prevM, prevReq = o.ThresholdMultiplier, o.RequiresApproval
	}
}

func TestThresholdHoldApproveReset(t *testing.T) {
	p := Policy{Overlays: map[string]Overlay{
		"decision": {ThresholdMultiplier: 1.4, RequiresApproval: true},
		"workflow": {ThresholdMultiplier: 0.9},
	}}
	for _, c := range []struct {
		typ        string
		base, want float64
	}{{"decision", 0.65, 0.91}, {"decision", 0.70, 0.95}, {"workflow", 0.60, 0.54}, {"pitfall", 0.65, 0.65}} {
		if got := EffectiveThreshold(p, c.typ, c.base); !near(got, c.want) {
			t.Errorf("EffectiveThreshold(%s, %v) = %v, want %v", c.typ, c.base, got, c.want)
		}
	}
	if !Held(p, "decision", "obs_1") || Held(p, "workflow", "obs_1") || Held(p, "pitfall", "obs_1") {
		t.Error("Held wrong before approval")
	}
	p2 := Approve(Approve(p, "obs_1"), "obs_1")
	if Held(p2, "decision", "obs_1") || !Held(p2, "decision", "obs_2") || len(p2.Approvals) != 1 {
		t.Errorf("after approve: %+v", p2)
	}
	p3 := ResetType(p2, "decision", t0)
	if _, ok := p3.Overlays["decision"]; ok || Held(p3, "decision", "obs_2") || !p3.Resets["decision"].Equal(t0) {
		t.Errorf("after reset: %+v", p3)
	}
	// After a reset, the old evidence no longer counts.
	evs := manyEvents("ADR-001", t0.Add(-time.Hour), rep(KindDeleted, 3)...)
	for i := range evs {
		evs[i].Type = "decision"
	}
	if p4 := Overlays(p3, Tally(evs, p3.Resets), t0.Add(time.Hour)); len(p4.Overlays["decision"].Reason) != 0 {
		t.Errorf("overlay came back after reset: %+v", p4.Overlays)
	}
	if p4 := Overlays(Policy{}, Tally(evs, nil), t0); !p4.Overlays["decision"].RequiresApproval {
		t.Errorf("no overlay without reset: %+v", p4.Overlays)
	}
}

func TestStaleOverlays(t *testing.T) {
	p := Policy{Overlays: map[string]Overlay{
		"decision": {UpdatedAt: t0.Add(-31 * 24 * time.Hour)},
		"pitfall":  {UpdatedAt: t0.Add(-29 * 24 * time.Hour)},
		"workflow": {},
	}}
	if got := StaleOverlays(p, t0); len(got) != 1 || got[0] != "decision" {
		t.Errorf("StaleOverlays = %v", got)
	}
}

func TestCountByLevel(t *testing.T) {
	evs := append(manyEvents("a", t0, rep(KindKept, 5)...), manyEvents("b", t0, KindKept)...)
	evs = append(evs, manyEvents("c", t0, KindDeleted, KindDeleted, KindDeleted)...)
	got := CountByLevel(Fold(evs, t0))
	if got[LevelProven] != 1 || got[LevelCandidate] != 1 || got[LevelDeprecated] != 1 || got[LevelEstablished] != 0 {
		t.Errorf("CountByLevel = %v", got)
	}
}

func TestMultiplier(t *testing.T) {
	p := Policy{Overlays: map[string]Overlay{
		"workflow": {ThresholdMultiplier: 1.5},
		"decision": {ThresholdMultiplier: 0.8, RelaxedBy: "ana"},
		"pitfall":  {RequiresApproval: true}, // no multiplier of its own
	}}
	for typ, want := range map[string]float64{"workflow": 1.5, "decision": 0.8, "pitfall": 1, "procedural": 1} {
		if got := p.Multiplier(typ); got != want {
			t.Errorf("%s: multiplier %v, want %v", typ, got, want)
		}
	}
	if got := (Policy{}).Multiplier("workflow"); got != 1 {
		t.Errorf("no policy: multiplier %v, want 1", got)
	}
}
