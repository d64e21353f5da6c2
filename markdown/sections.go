// Package markdown owns the Markdown side of learnwatch's memory: it finds the ADR/PF
// sections of the knowledge files (.memory/knowledge/decisions.md and pitfalls.md) with
// goldmark, gives their byte ranges for content hashing, and renders the four artifact
// kinds (command, skill, decision entry, pitfall entry) including YAML frontmatter produced
// by the YAML encoder and the TL;DR line of knowledge files.
//
// Everything here is a pure function over bytes and plain structs; reading and writing
// files, locking and hashing belong to the callers.
package markdown

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
)

// Kind of knowledge entry.
const (
	ADR = "ADR" // decisions.md, "## ADR-NNN: title"
	PF  = "PF"  // pitfalls.md,  "## PF-NNN: title"
)

// maxIDDigits bounds the digits of an entry number; a longer number is not an entry ID
// (it would not fit an int on every platform and no tool writes such numbers).
const maxIDDigits = 9

// Section is one ADR/PF entry of a knowledge file.
type Section struct {
	ID        string // "ADR-007", as written in the heading
	Kind      string // ADR or PF
	Number    int    // 7
	Title     string // raw source text of the heading after "ADR-007: " (trimmed), not rendered
	Status    string // value of the "- **Status**: X" bullet, "" if absent
	Area      string // value of "- **Area**: X", "" if absent
	Source    string // obs id from "- **Source**: self-learning:<id>" ("" if absent)
	HasMarker bool   // the body carries "- **Source**: self-learning:" (even if the id part is empty)
	Start     int    // byte offset of the "## " that starts the heading line
	End       int    // start of the line of the next level-1/2 heading, or len(src)
	LegacyEnd int    // end of the text the legacy djb2 hash covers (see DESIGN.md §1 Manifest)
	Line      int    // 1-based line number of the heading
}

// Active reports whether the entry counts as active: its Status does not start with the
// word Deprecated or Superseded (case-insensitive; "Superseded by ADR-009" is superseded,
// so is "**Deprecated** (2024-05)").
func (s Section) Active() bool {
	w := strings.ToLower(firstWord(s.Status))
	return w != "deprecated" && w != "superseded"
}

// firstWord returns the first run of letters of s, skipping any leading non-letters
// (emphasis markers, backticks, brackets).
func firstWord(s string) string {
	start := strings.IndexFunc(s, isLetter)
	if start < 0 {
		return ""
	}
	rest := s[start:]
	if end := strings.IndexFunc(rest, func(r rune) bool { return !isLetter(r) }); end >= 0 {
		return rest[:end]
	}
	return rest
}

func isLetter(r rune) bool { return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' }

// blockParser is a goldmark parser with the CommonMark block parsers and no inline
// parsers: section structure depends only on blocks, and skipping inline parsing keeps a
// 10,000-entry file cheap. goldmark parsers hold no per-parse state and are safe for
// concurrent use.
var blockParser = parser.NewParser(
	parser.WithBlockParsers(parser.DefaultBlockParsers()...),
	parser.WithInlineParsers(),
	parser.WithParagraphTransformers(parser.DefaultParagraphTransformers()...),
)

// NewReader is the goldmark reader every parse of ours reads src through:
// src with no capacity past its end. goldmark's Segment.Value appends a
// newline to a code block's last line in place (an append to a subslice of
// the source), so a source with spare capacity had the byte after its end
// overwritten with "\n". A section's text is a window of its whole file,
// and Fields parsing it turned the byte after the window — a trailing
// space, a CRLF file's "\r", the first byte of a Unicode space — into a
// newline in the file's bytes (found by FuzzSections in CI).
func NewReader(src []byte) text.Reader { return text.NewReader(src[:len(src):len(src)]) }

// heading is a top-level level-1 or level-2 heading found by goldmark.
type heading struct {
	node      *ast.Heading
	lineStart int // offset of the first byte of the heading's (first) line
	start     int // offset of the first '#' (ATX) or lineStart (setext)
	atx       bool
}

// Sections parses src with goldmark and returns every ADR/PF entry in file order.
//
// An entry starts at a top-level ATX level-2 heading ("## ...") whose text is
// "ADR-<digits>" or "PF-<digits>" (1 to 9 digits, upper-case prefix) followed by the end
// of the heading, by ":", "—", "–", ". ", or by whitespace and an optional separator ":",
// "-", "–", "—" or "."; the title is what follows the separator. So "## ADR-007: Title",
// "## ADR-7 — Title" and "## ADR-007" are all entries, "## ADR-007a" and "## Adr-7" are not.
// Setext headings ("Title\n---") never start an entry, but like any top-level level-1 or
// level-2 heading they end the previous one. Headings inside code blocks, HTML blocks,
// block quotes or list items are not headings of the file. Duplicate IDs are all returned.
func Sections(src []byte) []Section {
	heads := topHeadings(src)
	var out []Section
	lineNo, lineAt := 1, 0 // line number of offset lineAt
	for i, h := range heads {
		if !h.atx || h.node.Level != 2 || h.start >= len(src) || src[h.start] != '#' {
			continue
		}
		if h.node.Lines().Len() == 0 {
			continue
		}
		kind, num, id, title, ok := parseHeadingText(lineValue(src, h.node, 0))
		if !ok {
			continue
		}
		s := Section{ID: id, Kind: kind, Number: num, Title: title, Start: h.start, End: len(src)}
		if i+1 < len(heads) {
			s.End = heads[i+1].lineStart
		}
		lineNo += bytes.Count(src[lineAt:h.start], []byte{'\n'})
		lineAt = h.start
		s.Line = lineNo
		readBullets(src, h.node, s.End, &s)
		out = append(out, s)
	}
	// LegacyEnd: up to, not including, the newline before the next entry heading; the
	// last entry runs to the end of the file with trailing whitespace removed.
	for i := range out {
		if i+1 < len(out) {
			next := lineStartOf(src, out[i+1].Start)
			out[i].LegacyEnd = max(next-1, out[i].Start)
		} else {
			out[i].LegacyEnd = max(len(bytes.TrimRightFunc(src, isSpaceRune)), out[i].Start)
		}
	}
	return out
}

// topHeadings returns the level-1 and level-2 headings that are direct children of the
// document, in order.
func topHeadings(src []byte) []heading {
	doc := blockParser.Parse(NewReader(src))
	var heads []heading
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok || h.Level > 2 {
			continue
		}
		pos := h.Pos()
		if h.Lines().Len() > 0 {
			if c := h.Lines().At(0).Start; pos < 0 || pos > c {
				pos = c
			}
		}
		if pos < 0 || pos >= len(src) {
			continue
		}
		ls := lineStartOf(src, pos)
		if !isATX(src, h) {
			heads = append(heads, heading{node: h, lineStart: ls, start: ls})
			continue
		}
		heads = append(heads, heading{node: h, lineStart: ls, start: pos, atx: true})
	}
	return heads
}

// isATX reports whether h is an ATX heading ("## title") rather than a setext one: goldmark
// puts an ATX heading's position on its first '#', before its content, and a setext
// heading's position on the start of its content.
func isATX(src []byte, h *ast.Heading) bool {
	pos := h.Pos()
	if pos < 0 || pos >= len(src) || src[pos] != '#' {
		return false
	}
	return h.Lines().Len() == 0 || pos < h.Lines().At(0).Start
}

// lineStartOf returns the offset of the first byte of the line containing off.
func lineStartOf(src []byte, off int) int {
	off = min(off, len(src))
	return bytes.LastIndexByte(src[:off], '\n') + 1
}

func isSpaceRune(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// parseHeadingText parses "ADR-007: title" (see Sections for the accepted forms).
func parseHeadingText(b []byte) (kind string, num int, id, title string, ok bool) {
	switch {
	case bytes.HasPrefix(b, []byte("ADR-")):
		kind = ADR
	case bytes.HasPrefix(b, []byte("PF-")):
		kind = PF
	default:
		return "", 0, "", "", false
	}
	i := len(kind) + 1
	d := i
	for d < len(b) && b[d] >= '0' && b[d] <= '9' {
		d++
	}
	if d == i || d-i > maxIDDigits {
		return "", 0, "", "", false
	}
	num, err := strconv.Atoi(string(b[i:d]))
	if err != nil {
		return "", 0, "", "", false
	}
	rest := b[d:]
	if len(rest) > 0 {
		r, _ := utf8.DecodeRune(rest)
		dot := r == '.' && (len(rest) == 1 || rest[1] == ' ' || rest[1] == '\t')
		if r != ':' && r != ' ' && r != '\t' && r != '—' && r != '–' && !dot {
			return "", 0, "", "", false
		}
	}
	rest = bytes.TrimLeft(rest, " \t")
	for _, sep := range []string{":", "—", "–", "-", "."} {
		if bytes.HasPrefix(rest, []byte(sep)) {
			rest = rest[len(sep):]
			break
		}
	}
	return kind, num, string(b[:d]), string(bytes.TrimSpace(rest)), true
}

// readBullets fills Status, Area, Source and HasMarker from the fields of the entry whose
// heading is h. The first bullet of each key wins.
func readBullets(src []byte, h *ast.Heading, end int, s *Section) {
	var haveStatus, haveArea, haveSource bool
	eachField(src, h.NextSibling(), end, func(key, val string) {
		switch key {
		case "status":
			if !haveStatus {
				s.Status, haveStatus = val, true
			}
		case "area":
			if !haveArea {
				s.Area, haveArea = val, true
			}
		case "source":
			if rest, ok := strings.CutPrefix(val, "self-learning:"); ok && !haveSource {
				haveSource = true
				s.HasMarker = true
				if f := strings.Fields(rest); len(f) > 0 {
					s.Source = f[0]
				}
			}
		}
	})
}

// eachField calls fn for every "**Key**: value" item of the top-level bullet lists from
// node n on, stopping at a level-1/2 heading or at offset end.
func eachField(src []byte, n ast.Node, end int, fn func(key, val string)) {
	for ; n != nil; n = n.NextSibling() {
		if hn, ok := n.(*ast.Heading); ok && hn.Level <= 2 {
			return
		}
		l, ok := n.(*ast.List)
		if !ok || l.IsOrdered() {
			continue
		}
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			first := it.FirstChild()
			if first == nil || first.Lines().Len() == 0 {
				continue
			}
			if first.Kind() != ast.KindParagraph && first.Kind() != ast.KindTextBlock {
				continue // "- ```" opens a code block, "- ## x" a heading: not a field
			}
			if first.Lines().At(0).Start >= end {
				return
			}
			if key, val, ok := bulletField(src, first); ok {
				fn(key, val)
			}
		}
	}
}

// bulletField reads "**Key**: value" (or "**Key:** value", or with "__") from the raw
// lines of a list item's first block; the value's lines are joined with single spaces.
func bulletField(src []byte, b ast.Node) (key, val string, ok bool) {
	first := bytes.TrimSpace(lineValue(src, b, 0))
	var mark []byte
	switch {
	case bytes.HasPrefix(first, []byte("**")):
		mark = []byte("**")
	case bytes.HasPrefix(first, []byte("__")):
		mark = []byte("__")
	default:
		return "", "", false
	}
	rest := first[2:]
	e := bytes.Index(rest, mark)
	if e <= 0 {
		return "", "", false
	}
	k := rest[:e]
	rest = rest[e+2:]
	switch {
	case bytes.HasSuffix(k, []byte(":")):
		k = k[:len(k)-1]
	case bytes.HasPrefix(rest, []byte(":")):
		rest = rest[1:]
	default:
		return "", "", false
	}
	var sb strings.Builder
	sb.Write(bytes.TrimSpace(rest))
	for i := 1; i < b.Lines().Len(); i++ {
		line := bytes.TrimSpace(lineValue(src, b, i))
		if len(line) == 0 {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte(' ')
		}
		sb.Write(line)
	}
	return strings.ToLower(string(bytes.TrimSpace(k))), sb.String(), true
}

// SectionText returns src[s.Start:s.End] with trailing whitespace removed: the text the
// sha256 content hash of a knowledge entry covers (so appending a following entry never
// changes an earlier entry's hash). Out-of-range offsets are clamped.
func SectionText(src []byte, s Section) []byte {
	start := min(max(s.Start, 0), len(src))
	end := min(max(s.End, start), len(src))
	return bytes.TrimRightFunc(src[start:end], isSpaceRune)
}

// NextNumber returns 1 + the highest number of that kind in sections (1 when none):
// numbering continues after a gap.
func NextNumber(sections []Section, kind string) int {
	n := 0
	for _, s := range sections {
		if s.Kind == kind && s.Number > n {
			n = s.Number
		}
	}
	return n + 1
}

// FormatID formats ADR-001 / PF-012 (three digits minimum, more when needed: ADR-1000).
func FormatID(kind string, n int) string {
	return fmt.Sprintf("%s-%03d", kind, n)
}

// lineValue returns the bytes of the i-th line segment goldmark recorded for n.
func lineValue(src []byte, n ast.Node, i int) []byte {
	seg := n.Lines().At(i)
	return seg.Value(src)
}
