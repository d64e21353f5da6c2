package index

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/markdown"
)

// The index never exceeds its budget, except to show the single best entry;
// lines are never cut; the best entries are the ones kept.
func TestBuildBudgetProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 2000; trial++ {
		n := 1 + rng.IntN(40)
		var entries []Entry
		for i := 0; i < n; i++ {
			kind := markdown.ADR
			if rng.IntN(2) == 0 {
				kind = markdown.PF
			}
			title := strings.Repeat("word ", 1+rng.IntN(20))
			entries = append(entries, Entry{ID: fmt.Sprintf("%s-%03d", kind, i+1), Kind: kind, Title: title,
				Status: "Accepted", Area: "src/x", Score: 0.1 + rng.Float64(), Order: i})
		}
		var avoid []string
		if rng.IntN(4) == 0 {
			avoid = []string{"AVOID: something. Failed 3/4 times (75% failure rate)"}
		}
		budget := 1 + rng.IntN(400)
		res := Build(entries, avoid, budget, 0.1)
		shown := len(res.Entries) + len(res.Avoid)
		if res.Tokens > budget && shown > 1 {
			t.Fatalf("trial %d: %d tokens > budget %d with %d items shown:\n%s", trial, res.Tokens, budget, shown, res.Text)
		}
		if shown == 0 {
			t.Fatalf("trial %d: nothing shown with budget %d", trial, budget)
		}
		if res.Tokens != Tokens(res.Text) {
			t.Fatalf("trial %d: tokens %d, text has %d", trial, res.Tokens, Tokens(res.Text))
		}
		// Every shown entry line is whole.
		for _, e := range res.Entries {
			if !strings.Contains(res.Text, Line(e)+"\n") && !strings.HasSuffix(res.Text, Line(e)) {
				t.Fatalf("trial %d: line of %s cut or missing:\n%s", trial, e.ID, res.Text)
			}
		}
		// The best entry is always among those shown when there are no
		// anti-patterns taking the room.
		if len(avoid) == 0 {
			best := entries[0]
			for _, e := range entries {
				if e.Score > best.Score {
					best = e
				}
			}
			found := false
			for _, e := range res.Entries {
				found = found || e.ID == best.ID
			}
			if !found {
				t.Fatalf("trial %d: best entry %s not shown (budget %d)", trial, best.ID, budget)
			}
		}
	}
}

func TestBuildNone(t *testing.T) {
	res := Build(nil, nil, 800, 0.1)
	if res.Text != "Knowledge index: (none)" || len(res.Entries) != 0 {
		t.Fatalf("%+v", res)
	}
	res = Build([]Entry{{ID: "ADR-001", Kind: markdown.ADR, Title: "x", Score: 0.05}}, nil, 800, 0.1)
	if res.Text != "Knowledge index: (none)" || res.Omitted != 1 {
		t.Fatalf("below the minimum score must be left out: %+v", res)
	}
}
