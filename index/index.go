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
	"github.com/learnwatch/learnwatch/safefs"
	"github.com/learnwatch/learnwatch/textsafe"
)

// CharsPerToken is the token estimate of DESIGN.md §6.
const CharsPerToken = 4

// MaxTitle is the number of characters of a title shown before "…".
const MaxTitle = 60

// Bounds, in characters, of the other repository text on an index line:
// the id, the status, the area and a whole anti-pattern line ("…" ends a
// cut). Every piece is also stripped of control, bidi and format characters
// (package textsafe): the index goes into the agent's context.
const (
	MaxID     = 40
	MaxStatus = 24
	MaxArea   = 40
	MaxAvoid  = 160
)

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
	// Tags are the entry's evidence ("5× validated", "via: sentinel",
	// "avoid"), printed after its line.
	Tags []string `json:"tags,omitempty"`
	// Stale is the entry's first stale file reference as written ("" when
	// none): the line warns "[stale: ref]" before the agent follows it.
	Stale string `json:"stale,omitempty"`
}

// Load reads the active entries of both knowledge files under root, in file
// order, each with score 1. Missing files give no entries.
func Load(root string) ([]Entry, error) {
	files, err := ReadKnowledge(root)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, f := range files {
		es, err := Parse(f.Path, f.Src)
		if err != nil {
			return nil, err
		}
		out = Append(out, es)
	}
	return out, nil
}

// KnowledgeFile is a knowledge file as read: its path and bytes.
type KnowledgeFile struct {
	Path string
	Src  []byte
}

// ReadKnowledge reads both knowledge files under root (decisions, then
// pitfalls), each bounded and refused through a symlink (safefs); a
// missing file is left out.
func ReadKnowledge(root string) ([]KnowledgeFile, error) {
	p := manifest.PathsFor(root)
	var out []KnowledgeFile
	for _, path := range []string{p.Decisions, p.Pitfalls} {
		rel, _ := filepath.Rel(root, path)
		if _, _, err := manifest.Resolve(root, filepath.ToSlash(rel)); err != nil {
			return nil, err
		}
		src, err := safefs.ReadFile(path, safefs.MaxKnowledge)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		out = append(out, KnowledgeFile{Path: path, Src: src})
	}
	return out, nil
}

// Parse returns the active entries of the knowledge file at path whose
// bytes are src, in file order, each with score 1 (Order is set by
// Append).
func Parse(path string, src []byte) ([]Entry, error) {
	if err := markdown.Check(src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []Entry
	for _, s := range markdown.Sections(src) {
		if !s.Active() {
			continue
		}
		out = append(out, Clean(Entry{ID: s.ID, Kind: s.Kind, Title: s.Title, Status: s.Status, Area: s.Area,
			Source: s.Source, Text: string(markdown.SectionText(src, s))}))
	}
	return out, nil
}

// Clean returns e as Parse makes an entry: what the index prints of it
// made safe (textsafe), score 1, and what Parse leaves unset unset. The
// entries a cache kept of a file (the engine's) go through it again: the
// cache is in the clone.
func Clean(e Entry) Entry {
	return Entry{ID: textsafe.Line(e.ID, 0), Kind: e.Kind, Title: textsafe.Line(e.Title, 0),
		Status: textsafe.Line(e.Status, 0), Area: textsafe.Line(e.Area, 0),
		Score: 1, Source: e.Source, Text: e.Text}
}

// Append appends a file's entries to out, numbering them (Order) after
// those already there.
func Append(out, entries []Entry) []Entry {
	for _, e := range entries {
		e.Order = len(out)
		out = append(out, e)
	}
	return out
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
	title := strings.Join(strings.Fields(textsafe.Line(e.Title, 0)), " ")
	if r := []rune(title); len(r) > MaxTitle {
		title = string(r[:MaxTitle]) + "…"
	}
	status := field(e.Status, MaxStatus)
	if status == "" {
		status = "unknown"
	}
	line := fmt.Sprintf("- %s: %s [%s]", field(e.ID, MaxID), title, status)
	if area := field(e.Area, MaxArea); e.Kind == markdown.PF && area != "" {
		line += " (area: " + area + ")"
	}
	if len(e.Tags) > 0 {
		line += " — " + strings.Join(e.Tags, ", ")
	}
	if e.Stale != "" {
		line += " [stale: " + strings.Join(strings.Fields(e.Stale), " ") + "]"
	}
	return line
}

// Header is the index's first line: what follows and in which order.
func Header(role string) string {
	if role = strings.Join(strings.Fields(role), " "); role != "" {
		return "Knowledge index for " + role + " (best first):"
	}
	return "Knowledge index (best first):"
}

// Summary is the one line shown when not even the best entry fits the
// budget: how many entries there are and how to see them.
func Summary(entries, avoid int) string {
	s := fmt.Sprintf("Knowledge index: %d entries", entries)
	if avoid > 0 {
		s += fmt.Sprintf(" and %d anti-patterns", avoid)
	}
	return s + " do not fit the budget; run: learnwatch index"
}

// Options of BuildWith.
type Options struct {
	Budget   int     // tokens; 0: no limit
	MinScore float64 // entries scoring below are left out
	Role     string  // the consumer role named in the header ("" none)
}

// field is one piece of repository text on a line: sanitised, spaces
// collapsed, cut to max characters.
func field(s string, max int) string {
	return textsafe.Line(strings.Join(strings.Fields(textsafe.Line(s, 0)), " "), max)
}

// AvoidLine is an anti-pattern line as the index shows it: sanitised and
// cut to MaxAvoid characters.
func AvoidLine(s string) string { return field(s, MaxAvoid) }

// Footer tells the agent where the entries live and how to read one.
const Footer = "Full entries: .memory/knowledge/decisions.md, .memory/knowledge/pitfalls.md — read one with: grep -n -A 12 '^## ADR-001' .memory/knowledge/decisions.md"

// Build renders entries (already scored) into the index, best score first,
// fitting budget tokens (0: no limit) on whole lines. Entries scoring below
// minScore are left out. The budget is never exceeded: an entry whose line
// does not fit is left out (counted in "n more entries"), even the best
// one; with a budget too small for any line the text keeps the leading
// lines that fit, possibly none (lines are never cut).
// avoid are anti-pattern lines ("AVOID: …", cut to MaxAvoid characters):
// they come first, in an "Anti-patterns (n):" block, in at most half the
// budget.
func Build(entries []Entry, avoid []string, budget int, minScore float64) Result {
	return BuildWith(entries, avoid, Options{Budget: budget, MinScore: minScore})
}

// BuildWith is Build with a header naming the role (Header) first. When not
// even the best line fits the budget, the index is the one-line Summary
// instead of nothing.
func BuildWith(entries []Entry, avoid []string, o Options) Result {
	budget, minScore := o.Budget, o.MinScore
	header := Header(o.Role)
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
		text := wholeLines("Knowledge index: (none)", budget)
		return Result{Text: text, Entries: []Entry{}, Tokens: Tokens(text), Omitted: omittedBelow}
	}
	// Anti-patterns first, as many as fit in half the budget.
	var avoidShown []string
	avoidSize := 0
	for _, l := range avoid {
		l = AvoidLine(l)
		n := len([]rune("- "+l)) + 1
		if budget > 0 && (avoidSize+n+len("Anti-patterns (00):\n"))/CharsPerToken > budget/2 {
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
	footer := len([]rune(Footer)) + 1
	for i, e := range keep {
		n := len([]rune(lines[i])) + 1
		perKind[e.Kind]++
		size := len([]rune(header)) + 1 + avoidSize + body + n + headersSize(perKind) + omittedSize(len(keep)-len(chosen)-1)
		if budget > 0 && len(chosen) == 0 && (size+footer+CharsPerToken-1)/CharsPerToken > budget {
			footer = 0 // the footer goes before the best entry
		}
		size += footer
		if budget > 0 && (size+CharsPerToken-1)/CharsPerToken > budget {
			// Stop at the first entry that does not fit: a shorter,
			// lower-scored line is never shown while a better one is dropped.
			perKind[e.Kind]--
			break
		}
		chosen = append(chosen, e)
		body += n
	}
	omitted := len(keep) - len(chosen)
	text := header + "\n" + render(avoidShown, chosen, omitted)
	if budget > 0 && Tokens(text) > budget {
		// Drop the footer before the best entry.
		text = header + "\n" + renderBlocks(avoidShown, chosen, omitted)
	}
	if budget > 0 && (Tokens(text) > budget || len(chosen)+len(avoidShown) == 0) {
		// Not even the best line fits: one line saying what there is
		// (itself left out when even it does not fit).
		text = Summary(len(keep), len(avoid))
		chosen, avoidShown, omitted = nil, nil, len(keep)
	}
	// The estimate above is exact for the usual case; whatever it missed,
	// the budget is a hard bound: drop entries from the worst, then the
	// anti-patterns, then cut the text.
	for budget > 0 && Tokens(text) > budget && len(chosen)+len(avoidShown) > 0 {
		if len(chosen) > 0 {
			chosen = chosen[:len(chosen)-1]
			omitted++
		} else {
			avoidShown = avoidShown[:len(avoidShown)-1]
		}
		text = header + "\n" + renderBlocks(avoidShown, chosen, omitted)
	}
	text = wholeLines(text, budget)
	if chosen == nil {
		chosen = []Entry{}
	}
	return Result{Text: text, Entries: chosen, Avoid: avoidShown, Tokens: Tokens(text), Omitted: omitted + omittedBelow}
}

// wholeLines keeps the leading lines of text that fit budget tokens (0: no
// limit).
func wholeLines(text string, budget int) string {
	for budget > 0 && Tokens(text) > budget {
		i := strings.LastIndexByte(text, '\n')
		if i < 0 {
			return ""
		}
		text = text[:i]
	}
	return text
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
