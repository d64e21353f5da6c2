package learn

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestRank(t *testing.T) {
	var evs []Event
	evs = append(evs, manyEvents("ADR-002", t0, rep(KindCited, 5)...)...)              // proven, reinforced
	evs = append(evs, manyEvents("PF-001", t0, KindKept, KindDeleted, KindDeleted)...) // deprecated
	evs = append(evs, manyEvents("obs_e", t0.Add(-days(100)), rep(KindKept, 3)...)...) // reinforced 3, decayed to candidate
	evs = append(evs, manyEvents("obs_f", t0.Add(-days(7)), KindCited, KindCited)...)  // used 7 days ago, 2 reinforcements
	evs = append(evs, manyEvents("obs_h", t0.Add(-days(30)), KindKept)...)             // last feedback 30 days ago, never cited
	entries := []Candidate{
		{ID: "ADR-001", BaseScore: 1, Created: t0.Add(-days(14))},
		{ID: "ADR-002", BaseScore: 0.8, Refs: []string{"src/auth/login.go:12"}},
		{ID: "ADR-003", BaseScore: 1, Created: t0.Add(-days(30))},
		{ID: "PF-001", BaseScore: 1},
		{ID: "obs_e", BaseScore: 1, Created: t0.Add(-days(400))},
		{ID: "obs_f", BaseScore: 1, Created: t0.Add(-days(400))},
		{ID: "obs_g", BaseScore: 1},
		{ID: "obs_h", BaseScore: 1},
	}
	got := Rank(entries, Fold(evs, t0), t0, []string{"src/auth/login.go", "README.md"})
	want := []struct {
		id    string
		score float64
	}{
		// ADRs are rules (category ×1.3); observations ×1.0.
		{"ADR-002", 0.8 * 1.5 * 1.2 * 1.3}, // proven, no recency decay, context boost: 1.872
		{"obs_e", 1.0},                     // established, reinforced 3 times: recency 1 after 100 days
		{"ADR-001", 0.5 * 1.3},             // candidate, no feedback at all: nothing to decay, recency 1
		{"ADR-003", 0.5 * 1.3},             // likewise, whatever its age
		{"obs_g", 0.5},                     // likewise, created unknown
		{"obs_f", 0.5 * math.Exp(-0.5)},    // 7 days since use
		// obs_h: never used, last feedback 30 days ago: 0.5·e^(−30/14) = 0.059 < 0.1 dropped;
		// PF-001 deprecated ×0 dropped.
	}
	if len(got) != len(want) {
		t.Fatalf("Rank returned %d entries: %+v", len(got), got)
	}
	for i, w := range want {
		if got[i].ID != w.id || math.Abs(got[i].Score-w.score) > 1e-4 {
			t.Errorf("rank %d = %s %.4f, want %s %.4f", i, got[i].ID, got[i].Score, w.id, w.score)
		}
	}
	if got[0].Boost != 1.2 || got[0].Category != 1.3 || got[0].Level != LevelProven || got[5].DaysSinceUse != 7 {
		t.Errorf("factors: %+v / %+v", got[0], got[5])
	}
}

func TestOverlaps(t *testing.T) {
	changed := []string{"src/auth/login.go", "./docs/guide.md", "lib\\util.py"}
	cases := []struct {
		c    Candidate
		want bool
	}{
		{Candidate{Refs: []string{"src/auth/login.go"}}, true},
		{Candidate{Refs: []string{"./src/auth/login.go:40"}}, true},
		{Candidate{Refs: []string{"src/auth"}}, true},
		{Candidate{Refs: []string{"src/auth/"}}, true},
		{Candidate{Refs: []string{"src/authz/x.go"}}, false},
		{Candidate{Refs: []string{"docs/guide.md"}}, true},
		{Candidate{Refs: []string{"lib/util.py"}}, true},
		{Candidate{Area: "auth"}, true},
		{Candidate{Area: "Auth, sessions"}, true},
		{Candidate{Area: "login"}, true},
		{Candidate{Area: "`src/auth`"}, true},
		{Candidate{Area: "billing"}, false},
		{Candidate{Area: "a"}, false},
		{Candidate{}, false},
	}
	for _, c := range cases {
		if got := Overlaps(c.c, changed); got != c.want {
			t.Errorf("Overlaps(%+v) = %v, want %v", c.c, got, c.want)
		}
	}
	if Overlaps(Candidate{Area: "auth"}, nil) {
		t.Error("overlap with no changed files")
	}
}

func TestMatchFalsePositive(t *testing.T) {
	entries := []Candidate{
		{ID: "ADR-001", Title: "Use mkdir locks for the learning log", Text: "Decision: every writer takes .memory/.learning.lock"},
		{ID: "PF-001", Title: "Frontmatter pasted by hand breaks on colons", Area: "render"},
		{ID: "PF-002", Title: "Worktree status hashes every file", Text: "go-git Worktree.Status is slow on large repos"},
	}
	cases := []struct {
		text string
		want string
	}{
		{"every writer takes .memory/.learning.lock", "ADR-001"},                           // exact substring of the text
		{"EVERY   writer takes .memory/.learning.lock", "ADR-001"},                         // case and spaces
		{"The validator cited Frontmatter pasted by hand breaks on colons here", "PF-001"}, // title inside the text
		{"flagged per PF-002 although not relevant", "PF-002"},                             // id mention
		{"hand pasted frontmatter breaks", "PF-001"},                                       // overlap 4/4
		{"worktree status slow on huge monorepo", "PF-002"},                                // 3 of worktree,status,slow,huge,monorepo = 0.6
		{"worktree status is fine on huge monorepos everywhere", ""},                       // 2/6
		{"totally unrelated complaint about billing", ""},
	}
	for _, c := range cases {
		got, ok := MatchFalsePositive(c.text, entries)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("MatchFalsePositive(%q) = %q %v, want %q", c.text, got, ok, c.want)
		}
	}
	if got, ok := MatchFalsePositive("see PF-777 and ADR-001", entries); !ok || got != "ADR-001" {
		t.Errorf("listed mention: %q", got)
	}
	if got, ok := MatchFalsePositive("see PF-777", nil); !ok || got != "PF-777" {
		t.Errorf("unlisted mention: %q", got)
	}
	// Ties: the lowest id wins.
	dup := []Candidate{{ID: "PF-009", Title: "same words here"}, {ID: "PF-003", Title: "same words here"}}
	if got, _ := MatchFalsePositive("same words here", dup); got != "PF-003" {
		t.Errorf("tie → %s", got)
	}
	if got := overlap(matchTokens("worktree status slow on huge monorepo"), matchTokens(entryText(entries[2]))); math.Abs(got-0.6) > 1e-9 {
		t.Errorf("overlap = %v, want 0.6", got)
	}
}

func TestVerdictEvents(t *testing.T) {
	entries := []Candidate{{ID: "PF-001", Type: "pitfall", Title: "Never retry a failed migration"}, {ID: "ADR-001", Title: "Locks"}}
	v := Verdict{RunID: "r1", Pass: true, Role: "Security", EvidenceLevel: 1,
		FalsePositives: []string{"never retry a failed migration", "Never retry a failed migration!", "nothing like this"},
		Cited:          []string{"ADR-001", "obs_x", "ADR-001", "PF-001"}}
	evs, unmatched := VerdictEvents(v, entries, []string{"security"}, t0)
	if len(unmatched) != 1 || unmatched[0] != "nothing like this" {
		t.Errorf("unmatched = %v", unmatched)
	}
	want := []Event{
		{TS: t0, Target: "PF-001", Kind: KindFalsePositive, Value: 1.5, Source: "verdict:r1", Role: "security", Type: "pitfall", Reason: "never retry a failed migration"},
		{TS: t0, Target: "ADR-001", Kind: KindCited, Value: 1, Source: "verdict:r1", Role: "security", Type: "decision"},
		{TS: t0, Target: "obs_x", Kind: KindCited, Value: 1, Source: "verdict:r1", Role: "security"},
	}
	if fmt.Sprint(evs) != fmt.Sprint(want) {
		t.Errorf("events\n got %+v\nwant %+v", evs, want)
	}
	for _, c := range []struct {
		pass       bool
		level      int
		role       string
		reinforced int
		penalty    float64
	}{{true, 2, "", 1, 1}, {true, 3, "", 0, 1}, {false, 1, "other", 0, 1}, {true, 1, "SECURITY", 1, 1.5}} {
		v := Verdict{RunID: "r", Pass: c.pass, EvidenceLevel: c.level, Role: c.role, Cited: []string{"ADR-001"}, FalsePositives: []string{"never retry a failed migration"}}
		evs, _ := VerdictEvents(v, entries, []string{"security"}, t0)
		n := 0
		for _, e := range evs {
			if e.Kind == KindCited {
				n++
			}
			if e.Kind == KindFalsePositive && e.Value != c.penalty {
				t.Errorf("%+v: penalty %v", c, e.Value)
			}
		}
		if n != c.reinforced {
			t.Errorf("%+v: %d reinforced", c, n)
		}
	}
}

func TestOutcomeEvents(t *testing.T) {
	o := Outcome{RunID: "r9", Success: false, Cited: []string{"ADR-001", "PF-002", "ADR-001", "obs_q"}}
	evs := OutcomeEvents(o, 0.6, []Candidate{{ID: "obs_q", Type: "workflow"}}, t0)
	if len(evs) != 3 || evs[0].Type != "decision" || evs[1].Type != "pitfall" || evs[2].Type != "workflow" ||
		evs[0].Reason != "unknown" || evs[0].Value != 0.6 || evs[0].Source != "outcome:r9" || evs[0].Kind != KindOutcome {
		t.Errorf("OutcomeEvents = %+v", evs)
	}
	o.Success, o.FailureType = true, "timeout"
	if evs := OutcomeEvents(o, 1, nil, t0); evs[0].Reason != "" || OutcomeFailed(evs[0]) {
		t.Errorf("successful run recorded as failure: %+v", evs[0])
	}
}

func TestRetryContext(t *testing.T) {
	errs := []RunError{
		{ID: "e1", RunID: "r", Type: "timeout", TS: t0.Add(2 * time.Second)},
		{ID: "e2", RunID: "r", Type: "validation", TS: t0},
		{ID: "e3", RunID: "r", Type: "timeout", TS: t0.Add(time.Second)},
		{ID: "e4", RunID: "r", Type: "conflict", Resolved: true},
		{ID: "e5", RunID: "other", Type: "timeout"},
	}
	rc := BuildRetryContext(errs, "r")
	if rc.Unresolved != 3 || rc.Resolved != 1 || len(rc.Groups) != 2 || rc.Groups[0].Type != "timeout" ||
		rc.Groups[0].Errors[0].ID != "e3" || rc.Groups[1].Type != "validation" {
		t.Errorf("BuildRetryContext = %+v", rc)
	}
	// An outcome without error_count counts every error of its run, the
	// resolved one too; one that gave a count keeps it.
	for _, c := range []struct {
		in   Outcome
		want int
	}{
		{Outcome{RunID: "r"}, 4},
		{Outcome{RunID: "none"}, 0},
		{Outcome{RunID: "r", ErrorCount: 1, ErrorCountSet: true}, 1},
		{Outcome{RunID: "r", ErrorCountSet: true}, 0},
	} {
		if o := WithErrorCount(c.in, errs); o.ErrorCount != c.want || !o.ErrorCountSet {
			t.Errorf("WithErrorCount(%+v) = %d (set %v), want %d", c.in, o.ErrorCount, o.ErrorCountSet, c.want)
		}
	}
}
