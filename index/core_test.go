package index

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/markdown"
)

func TestLine(t *testing.T) {
	long := strings.Repeat("é", 59) + "xyz"
	for _, tc := range []struct {
		e    Entry
		want string
	}{
		{Entry{ID: "ADR-001", Kind: markdown.ADR, Title: "Short", Status: "Accepted"}, "- ADR-001: Short [Accepted]"},
		{Entry{ID: "ADR-002", Kind: markdown.ADR, Title: long, Status: ""}, "- ADR-002: " + strings.Repeat("é", 59) + "x… [unknown]"},
		{Entry{ID: "ADR-003", Kind: markdown.ADR, Title: strings.Repeat("a", 60), Status: "Accepted", Area: "ignored"}, "- ADR-003: " + strings.Repeat("a", 60) + " [Accepted]"},
		{Entry{ID: "PF-001", Kind: markdown.PF, Title: "Clock", Status: "Active", Area: "tests"}, "- PF-001: Clock [Active] (area: tests)"},
	} {
		if got := Line(tc.e); got != tc.want {
			t.Errorf("Line(%s) = %q, want %q", tc.e.ID, got, tc.want)
		}
	}
}

func TestLoadActiveOnly(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".memory", "knowledge")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "decisions.md"), []byte("# D\n\n## ADR-001: A\n\n- **Status**: Accepted\n\n## ADR-002: B\n\n- **Status**: Deprecated\n\n## ADR-003: C\n\n- **Status**: Superseded by ADR-004\n\n```\n## ADR-009: fenced\n```\n"), 0o644)
	entries, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].ID != "ADR-001" {
		t.Errorf("entries %+v, want ADR-001 only", entries)
	}
	if r := Build(nil, nil, 800, 0.1); !strings.Contains(r.Text, "(none)") || len(r.Entries) != 0 {
		t.Errorf("empty index: %+v", r)
	}
}

// Build fits the budget on whole lines: whatever the budget, the text is an
// exact sequence of headers, entry lines, the omitted note and the footer,
// within the budget as soon as more than one entry is shown.
func TestBuildBudget(t *testing.T) {
	var entries []Entry
	for i := 1; i <= 30; i++ {
		kind, id := markdown.ADR, fmt.Sprintf("ADR-%03d", i)
		if i%3 == 0 {
			kind, id = markdown.PF, fmt.Sprintf("PF-%03d", i)
		}
		entries = append(entries, Entry{ID: id, Kind: kind, Title: strings.Repeat("word ", i%15+1), Status: "Accepted", Area: "a", Score: float64(i%7) / 7, Order: i})
	}
	for budget := 5; budget <= 400; budget += 7 {
		r := Build(entries, nil, budget, 0.1)
		if len(r.Entries) > 1 && r.Tokens > budget {
			t.Errorf("budget %d: %d tokens for %d entries", budget, r.Tokens, len(r.Entries))
		}
		if r.Tokens != Tokens(r.Text) {
			t.Errorf("budget %d: Tokens %d, text has %d", budget, r.Tokens, Tokens(r.Text))
		}
		allowed := map[string]bool{Footer: true}
		for _, e := range r.Entries {
			allowed[Line(e)] = true
			if e.Score < 0.1 {
				t.Errorf("budget %d: %s scores %v < 0.1", budget, e.ID, e.Score)
			}
		}
		for _, l := range strings.Split(r.Text, "\n") {
			if !allowed[l] && !strings.HasPrefix(l, "Decisions (") && !strings.HasPrefix(l, "Pitfalls (") && !strings.HasSuffix(l, "left out to fit the budget)") {
				t.Errorf("budget %d: unexpected (cut?) line %q", budget, l)
			}
		}
		for i := 1; i < len(r.Entries); i++ {
			if r.Entries[i].Score > r.Entries[i-1].Score {
				t.Errorf("budget %d: entries not best first", budget)
			}
		}
	}
}
