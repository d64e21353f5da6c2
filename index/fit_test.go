package index

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/markdown"
)

// The budget is filled in score order and stops at the first entry that does
// not fit: a short, low-scored line is never shown while a longer,
// higher-scored one is dropped.
func TestBuildStopsAtFirstMisfit(t *testing.T) {
	long := strings.Repeat("x", 200)
	entries := []Entry{
		{ID: "ADR-001", Kind: markdown.ADR, Title: "Best", Status: "Accepted", Score: 0.9, Order: 0},
		{ID: "ADR-002", Kind: markdown.ADR, Title: long, Status: "Accepted", Score: 0.8, Order: 1},
		{ID: "ADR-003", Kind: markdown.ADR, Title: "Short", Status: "Accepted", Score: 0.7, Order: 2},
	}
	// Hand arithmetic (runes, each line with its newline): the footer 151+1 =
	// 152, "Decisions (n):" 15, the omitted note "(n more entries left out to
	// fit the budget)" 44, "- ADR-001: Best [Accepted]" 27.
	//   ADR-001 alone:  27 + 15 + 44 + 152 = 238 runes → 60 tokens ≤ 80.
	//   + ADR-002 (its title cut to 60 + "…": 86): 27+86 + 15 + 44 + 152 = 324 → 81 > 80: stop.
	//   + ADR-003 instead (28): 27+28 + 15 + 44 + 152 = 266 → 67 ≤ 80 — it would
	//     fit, but it scores below ADR-002, so it is not shown.
	res := Build(entries, nil, 80, 0.1)
	if len(res.Entries) != 1 || res.Entries[0].ID != "ADR-001" {
		t.Fatalf("shown %v, want only ADR-001:\n%s", ids(res.Entries), res.Text)
	}
	if strings.Contains(res.Text, "ADR-003") || res.Omitted != 2 {
		t.Fatalf("a lower-scored entry was shown or the count is wrong (omitted %d):\n%s", res.Omitted, res.Text)
	}
	if res.Tokens > 80 {
		t.Fatalf("%d tokens > 80", res.Tokens)
	}
}

// Property: the entries shown are always a prefix of the score order.
func TestBuildShowsAScorePrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 6))
	for trial := 0; trial < 1000; trial++ {
		var entries []Entry
		for i := range 1 + rng.IntN(30) {
			entries = append(entries, Entry{ID: fmt.Sprintf("ADR-%03d", i+1), Kind: markdown.ADR,
				Title: strings.Repeat("w ", 1+rng.IntN(60)), Status: "Accepted", Score: 0.1 + rng.Float64(), Order: i})
		}
		res := Build(entries, nil, 1+rng.IntN(300), 0.1)
		shown := map[string]bool{}
		minShown := 2.0
		for _, e := range res.Entries {
			shown[e.ID] = true
			minShown = min(minShown, e.Score)
		}
		for _, e := range entries {
			if !shown[e.ID] && e.Score > minShown {
				t.Fatalf("trial %d: %s (score %.3f) dropped while an entry scoring %.3f is shown", trial, e.ID, e.Score, minShown)
			}
		}
	}
}

func ids(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}
