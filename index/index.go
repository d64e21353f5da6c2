// Package index builds the compact knowledge index an agent receives at
// session start: per knowledge file a "Decisions (n):" / "Pitfalls (n):"
// block with one line per active entry, best first, cut to a token budget
// on whole lines, and a footer saying how to read an entry in full.
package index

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// CharsPerToken is the token estimate of DESIGN.md §6.
const CharsPerToken = 4

// MaxTitle is the number of characters of a title shown before "…".
const MaxTitle = 60

// Entry is one active knowledge entry.
type Entry struct {
	ID     string  `json:"id"`
	Kind   string  `json:"-"`
	Title  string  `json:"title"`
	Status string  `json:"status"`
	Area   string  `json:"area,omitempty"`
	Score  float64 `json:"score"`
	// Refs and Source feed ranking; not printed.
	Source string   `json:"-"`
	Text   string   `json:"-"`
	Order  int      `json:"-"`
	Refs   []string `json:"-"`
	// Stale is the entry's first stale file reference as written ("" when
	// none): the line warns "[stale: ref]" before the agent follows it.
	Stale string `json:"stale,omitempty"`
}

// Load reads the active entries of both knowledge files under root, in file
// order, each with score 1. Missing files give no entries.
func Load(root string) ([]Entry, error) {
	p := manifest.PathsFor(root)
	var out []Entry
	for _, path := range []string{p.Decisions, p.Pitfalls} {
		rel, _ := filepath.Rel(root, path)
		if _, _, err := manifest.Resolve(root, filepath.ToSlash(rel)); err != nil {
			return nil, err
		}
		src, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		for _, s := range markdown.Sections(src) {
			if !s.Active() {
				continue
			}
			out = append(out, Entry{ID: s.ID, Kind: s.Kind, Title: s.Title, Status: s.Status, Area: s.Area,
				Score: 1, Source: s.Source, Text: string(markdown.SectionText(src, s)), Order: len(out)})
		}
	}
	return out, nil
}

// Result is a rendered index.
type Result struct {
	Text    string  `json:"-"`
	Entries []Entry `json:"entries"`
	// Avoid are the anti-pattern lines shown ("AVOID: …").
	Avoid   []string `json:"avoid,omitempty"`
	Tokens  int      `json:"tokens"`
	Omitted int      `json:"omitted"`
}

// Tokens estimates the tokens of s (4 characters a token, rounded up).
func Tokens(s string) int { return (len([]rune(s)) + CharsPerToken - 1) / CharsPerToken }

// Line formats one entry: ID, title cut at 60 characters with "…",
// [Status] or [unknown], and the area for pitfalls.
func Line(e Entry) string {
	title := strings.Join(strings.Fields(e.Title), " ")
	if r := []rune(title); len(r) > MaxTitle {
		title = string(r[:MaxTitle]) + "…"
	}
	status := e.Status
	if status == "" {
		status = "unknown"
	}
	line := fmt.Sprintf("- %s: %s [%s]", e.ID, title, status)
	if e.Kind == markdown.PF && e.Area != "" {
		line += " (area: " + strings.Join(strings.Fields(e.Area), " ") + ")"
	}
	if e.Stale != "" {
		line += " [stale: " + strings.Join(strings.Fields(e.Stale), " ") + "]"
	}
	return line
}

// Footer tells the agent where the entries live and how to read one.
const Footer = "Full entries: .memory/knowledge/decisions.md, .memory/knowledge/pitfalls.md — read one with: grep -n -A 12 '^## ADR-001' .memory/knowledge/decisions.md"

// Build renders entries (already scored) into the index, best score first,
// fitting budget tokens (0: no limit) on whole lines. Entries scoring below
// minScore are left out. The best entry is always shown, even when it alone
// exceeds the budget. avoid are anti-pattern lines ("AVOID: …"): they come
// first, in an "Anti-patterns (n):" block, as far as the budget allows.
func Build(entries []Entry, avoid []string, budget int, minScore float64) Result {
	var keep []Entry
	for _, e := range entries {
		if e.Score >= minScore {
			keep = append(keep, e)
		}
	}
	sort.SliceStable(keep, func(i, j int) bool {
		if keep[i].Score != keep[j].Score {
			return keep[i].Score > keep[j].Score
		}
		return keep[i].Order > keep[j].Order // newer first on ties
	})
	omittedBelow := len(entries) - len(keep)
	if len(keep) == 0 && len(avoid) == 0 {
		text := "Knowledge index: (none)"
		return Result{Text: text, Entries: []Entry{}, Tokens: Tokens(text), Omitted: omittedBelow}
	}
	// Anti-patterns first, as many as fit in half the budget.
	var avoidShown []string
	avoidSize := 0
	for _, l := range avoid {
		n := len([]rune("- "+l)) + 1
		if budget > 0 && (avoidSize+n+len("Anti-patterns (00):\n"))/CharsPerToken > budget/2 && len(avoidShown) > 0 {
			break
		}
		avoidShown = append(avoidShown, l)
		avoidSize += n
	}
	if len(avoidShown) > 0 {
		avoidSize += len(fmt.Sprintf("Anti-patterns (%d):\n", len(avoidShown)))
	}
	// Choose entries best first while the whole rendering fits. The size
	// is tracked incrementally: block headers, lines, the omitted note and
	// the footer.
	lines := make([]string, len(keep))
	for i, e := range keep {
		lines[i] = Line(e)
	}
	var chosen []Entry
	perKind := map[string]int{}
	body := 0 // runes of the entry lines, newline included
	for i, e := range keep {
		n := len([]rune(lines[i])) + 1
		perKind[e.Kind]++
		size := avoidSize + body + n + headersSize(perKind) + omittedSize(len(keep)-len(chosen)-1) + len([]rune(Footer)) + 1
		if budget > 0 && (size+CharsPerToken-1)/CharsPerToken > budget && (len(chosen) > 0 || len(avoidShown) > 0) {
			perKind[e.Kind]--
			continue // a shorter later line may still fit
		}
		chosen = append(chosen, e)
		body += n
	}
	omitted := len(keep) - len(chosen)
	text := render(avoidShown, chosen, omitted)
	if budget > 0 && Tokens(text) > budget {
		// Drop the footer before the best entry.
		text = renderBlocks(avoidShown, chosen, omitted)
	}
	if chosen == nil {
		chosen = []Entry{}
	}
	return Result{Text: text, Entries: chosen, Avoid: avoidShown, Tokens: Tokens(text), Omitted: omitted + omittedBelow}
}

// headersSize is the size of the "Decisions (n):" / "Pitfalls (n):" lines.
func headersSize(perKind map[string]int) int {
	n := 0
	if c := perKind[markdown.ADR]; c > 0 {
		n += len(fmt.Sprintf("Decisions (%d):\n", c))
	}
	if c := perKind[markdown.PF]; c > 0 {
		n += len(fmt.Sprintf("Pitfalls (%d):\n", c))
	}
	return n
}

// omittedSize is the size of the "(n more entries …)" line.
func omittedSize(n int) int {
	if n <= 0 {
		return 0
	}
	return len(fmt.Sprintf("(%d more entries left out to fit the budget)\n", n))
}

func render(avoid []string, chosen []Entry, omitted int) string {
	return renderBlocks(avoid, chosen, omitted) + "\n" + Footer
}

// renderBlocks prints the Decisions and Pitfalls blocks, entries in the
// order given (best first).
func renderBlocks(avoid []string, chosen []Entry, omitted int) string {
	var b strings.Builder
	if len(avoid) > 0 {
		fmt.Fprintf(&b, "Anti-patterns (%d):\n", len(avoid))
		for _, l := range avoid {
			b.WriteString("- " + l + "\n")
		}
	}
	for _, kind := range []string{markdown.ADR, markdown.PF} {
		var lines []string
		for _, e := range chosen {
			if e.Kind == kind {
				lines = append(lines, Line(e))
			}
		}
		if len(lines) == 0 {
			continue
		}
		name := "Decisions"
		if kind == markdown.PF {
			name = "Pitfalls"
		}
		fmt.Fprintf(&b, "%s (%d):\n", name, len(lines))
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
	}
	if omitted > 0 {
		fmt.Fprintf(&b, "(%d more entries left out to fit the budget)\n", omitted)
	}
	return strings.TrimRight(b.String(), "\n")
}
