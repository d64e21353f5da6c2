package index

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/textsafe"
)

// The index never exceeds its budget, anti-pattern lines included; lines are
// never cut; the best entries are the ones kept; when nothing fits, the
// one-line summary (or nothing, when even that does not fit).
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
		// Repository text of any length: long statuses and areas, huge
		// anti-pattern lines.
		if rng.IntN(5) == 0 {
			entries[rng.IntN(n)].Status = strings.Repeat("Accepted ", rng.IntN(300))
		}
		if rng.IntN(5) == 0 {
			entries[rng.IntN(n)].Area = strings.Repeat("src/", rng.IntN(300))
		}
		var avoid []string
		if rng.IntN(4) == 0 {
			avoid = []string{"AVOID: something. Failed 3/4 times (75% failure rate)"}
		}
		if rng.IntN(4) == 0 {
			avoid = append(avoid, "AVOID: "+strings.Repeat("x", rng.IntN(5000))+". Failed 5/6 times")
		}
		budget := 1 + rng.IntN(400)
		res := Build(entries, avoid, budget, 0.1)
		if res.Tokens > budget {
			t.Fatalf("trial %d: %d tokens > budget %d:\n%s", trial, res.Tokens, budget, res.Text)
		}
		shown := len(res.Entries) + len(res.Avoid)
		if shown == 0 {
			if res.Text != Summary(len(entries), len(avoid)) && res.Text != "" {
				t.Fatalf("trial %d: nothing shown and neither the summary nor nothing with budget %d:\n%s", trial, budget, res.Text)
			}
			continue
		}
		for _, l := range res.Avoid {
			if len([]rune(l)) > MaxAvoid {
				t.Fatalf("trial %d: anti-pattern line of %d characters", trial, len([]rune(l)))
			}
		}
		for _, l := range strings.Split(res.Text, "\n") {
			if len([]rune(l)) > 2+MaxID+2+MaxTitle+1+3+MaxStatus+len(" (area: )")+MaxArea && len([]rune(l)) > 2+MaxAvoid {
				t.Fatalf("trial %d: line of %d characters: %.80q", trial, len([]rune(l)), l)
			}
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
		best := entries[0]
		for _, e := range entries {
			if e.Score > best.Score {
				best = e
			}
		}
		// ... when its line fits at all.
		if len(avoid) == 0 && Tokens(renderBlocks(nil, []Entry{best}, n-1)) <= budget {
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

// Repository text reaches the agent without controls, bidi or invisible
// characters, and bounded, from the knowledge file through Load and Build.
func TestIndexSanitised(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory", "knowledge"), 0o755); err != nil {
		t.Fatal(err)
	}
	pf := "# Pitfalls\n\n## PF-001: Clock\x1b]0;owned\x07 in tests\u202e\n\n" +
		"- **Area**: src/\u200bsched\x1b[2J" + strings.Repeat(" very long area", 500) + "\n" +
		"- **Status**: Active\u2066\u009b31m" + strings.Repeat("!", 5000) + "\n" +
		"- **Issue**: tests depend on the wall clock.\n"
	if err := os.WriteFile(filepath.Join(root, ".memory", "knowledge", "pitfalls.md"), []byte(pf), 0o644); err != nil {
		t.Fatal(err)
	}
	entries, err := Load(root)
	if err != nil || len(entries) != 1 {
		t.Fatalf("%v %+v", err, entries)
	}
	res := Build(entries, []string{"AVOID: \x1b[31mrm -rf\u202e " + strings.Repeat("y", 1<<20)}, 800, 0)
	if res.Tokens > 800 {
		t.Fatalf("%d tokens", res.Tokens)
	}
	for _, r := range res.Text {
		if r != '\n' && textsafe.Forbidden(r) {
			t.Fatalf("forbidden %U in index:\n%q", r, res.Text)
		}
	}
	for _, want := range []string{"- PF-001: Clock]0;owned in tests [Active31m!!!", "(area: src/sched[2J very long area", "AVOID: [31mrm -rf yyy"} {
		if !strings.Contains(res.Text, want) {
			t.Errorf("index lacks %q:\n%s", want, res.Text)
		}
	}
}
