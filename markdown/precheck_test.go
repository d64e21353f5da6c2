package markdown

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestDepth(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int
	}{
		{"plain text", 0},
		{"## ADR-001: Title", 0},
		{"- item", 1},
		{"  - nested item", 2},
		{"    - third level", 3},
		{"> quote", 1},
		{"> > quote in quote", 2},
		{"> - list in quote", 2},
		{"1. first", 1},
		{"   2) second", 2},
		{"-not a marker", 0},
		{"**bold** text", 0},
		{"12345678901. too many digits", 0},
		{"\t- tab indented", 3},
		{"---", 0},
		{"* * *", 3}, // a thematic break counts like a list: harmless at 3
		{strings.Repeat("> ", 40) + "x", MaxDepth + 1},
	} {
		got := depth([]byte(tc.line))
		if tc.want > MaxDepth {
			if got <= MaxDepth {
				t.Errorf("depth(%q) = %d, want > %d", tc.line, got, MaxDepth)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("depth(%q) = %d, want %d", tc.line, got, tc.want)
		}
	}
}

// nestingBombs are 160 KB inputs that take goldmark from seconds to minutes.
func nestingBombs() map[string]string {
	bombs := map[string]string{}
	head := "# Architectural Decisions\n\n## ADR-001: Bomb\n\n- **Status**: Accepted\n\n"
	fill := func(unit string) string {
		return head + strings.Repeat(unit, (160<<10)/len(unit)) + "x\n"
	}
	bombs["block quotes on one line"] = fill("> ")
	bombs["list and quote on one line"] = fill("- > ")
	bombs["quote and list on one line"] = fill("> - ")
	var b strings.Builder
	for i := 0; b.Len() < 160<<10; i++ {
		b.WriteString(strings.Repeat("  ", i) + "- level\n")
	}
	bombs["indented lists"] = head + b.String()
	b.Reset()
	for i := 0; b.Len() < 160<<10; i++ {
		b.WriteString(strings.Repeat("> ", i%200) + "- a\n")
	}
	bombs["quotes growing per line"] = head + b.String()
	return bombs
}

func TestCheckRefusesBombs(t *testing.T) {
	for name, src := range nestingBombs() {
		start := time.Now()
		err := Check([]byte(src))
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(err.Error(), "more than 32 levels deep") {
			t.Errorf("%s: %v", name, err)
		}
		if el := time.Since(start); el > 100*time.Millisecond {
			t.Errorf("%s: check took %s", name, el)
		}
	}
	err := Check([]byte(strings.Repeat("a", MaxSize+1)))
	if err == nil || !strings.Contains(err.Error(), "over the 4194304-byte limit") {
		t.Errorf("oversize: %v", err)
	}
}

// Real knowledge files pass: the repository's own seeds of the format and a
// long file of ordinary entries with nested lists, quotes and code.
func TestCheckAcceptsRealFiles(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Pitfalls\n\n")
	for i := 1; i <= 2000; i++ {
		fmt.Fprintf(&b, "## PF-%03d: Tests depend on the wall clock (%d)\n\n- **Area**: internal/sched\n- **Status**: Active\n"+
			"- **Issue**: a cron job\n  - fires twice\n    - around DST\n      1. in CI\n\n> Note: see `src/sched/clock.go`.\n> > quoted reply\n\n"+
			"```go\n"+strings.Repeat("\t", 12)+"return x\n```\n\n", i, i)
	}
	if err := Check([]byte(b.String())); err != nil {
		t.Fatal(err)
	}
}

// Sections is linear in the number of entries (no quadratic step): eight
// times the entries take far less than 64 times as long (the bound leaves
// room for a loaded machine and the garbage collector on a larger heap).
func TestSectionsLinear(t *testing.T) {
	file := func(n int) []byte {
		var b strings.Builder
		for i := 1; i <= n; i++ {
			fmt.Fprintf(&b, "## ADR-%03d: Decision number %d\n\n- **Status**: Accepted\n- **Context**: text\n\n", i, i)
		}
		return []byte(b.String())
	}
	small, big := file(5000), file(40000)
	measure := func(src []byte) time.Duration {
		best := time.Duration(1 << 62)
		for i := 0; i < 3; i++ {
			start := time.Now()
			if n := len(Sections(src)); n == 0 {
				t.Fatal("no sections")
			}
			best = min(best, time.Since(start))
		}
		return best
	}
	ts, tb := measure(small), measure(big)
	if tb > 40*ts {
		t.Fatalf("5000 entries %s, 40000 entries %s: not linear", ts, tb)
	}
}

func FuzzCheck(f *testing.F) {
	for _, s := range []string{"- a\n  - b\n", "> > x", "1. a\n", strings.Repeat("> ", 50)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := Check([]byte(s)); err != nil {
			return
		}
		// Accepted input parses (it must not panic) in bounded time.
		Sections([]byte(s))
	})
}
