package staleness

import (
	"bytes"
	"path"
	"regexp"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
	"github.com/yuin/goldmark/ast"

	"github.com/learnwatch/learnwatch/markdown"
)

// Source files: Markdown files outside .memory/knowledge whose references
// are checked read-only — the configured staleness.sources globs and the
// presets detected automatically.

// adrDirs are the directories architecture decision records live in
// (adr-tools uses doc/adr, MADR docs/decisions, many projects docs/adr).
var adrDirs = []string{"docs/adr/", "doc/adr/", "docs/decisions/"}

// adrName matches the adr-tools and MADR numbering: NNNN-title.md.
var adrName = regexp.MustCompile(`^[0-9]{4}-[^/]+\.md$`)

// knowledgeName is the feature knowledge file name found anywhere.
const knowledgeName = "KNOWLEDGE.md"

// maxSourceFile bounds the size of one source file read.
const maxSourceFile = 1 << 20

// maxSources bounds how many source files one scan reads, and
// maxSourceBytes how much it reads in all (a hook must stay fast).
const (
	maxSources     = 5000
	maxSourceBytes = 16 << 20
)

// SourceFile is one source file to check: its root-relative path and
// whether it is one section (an ADR) or one section per heading.
type SourceFile struct {
	Path  string
	Whole bool
}

// SourceSection is one part of a source file: the heading that starts it
// ("" before the first heading) and its text.
type SourceSection struct {
	Heading string
	Text    []byte
}

// isADR reports a root-relative path that is an ADR of a preset directory.
func isADR(p string) bool {
	for _, d := range adrDirs {
		if strings.HasPrefix(p, d) && adrName.MatchString(p[len(d):]) {
			return true
		}
	}
	return false
}

// SelectSources picks the source files among the root-relative paths of
// the checked tree: those matching one of globs (gitignore syntax, "**"
// allowed, matched from the root) and, unless noPresets, the ADRs of
// docs/adr/, doc/adr/ and docs/decisions/ and every KNOWLEDGE.md. Only .md
// files count, never those under .memory/ nor names with control
// characters. The result is sorted and at
// most maxSources long.
func SelectSources(paths []string, globs []string, noPresets bool) []SourceFile {
	var pats []gitignore.Pattern
	for _, g := range globs {
		g = strings.TrimSpace(g)
		if g == "" || strings.HasPrefix(g, "#") {
			continue
		}
		pats = append(pats, gitignore.ParsePattern(g, nil))
	}
	var m gitignore.Matcher
	if len(pats) > 0 {
		m = gitignore.NewMatcher(pats)
	}
	var out []SourceFile
	for _, p := range paths {
		if !strings.EqualFold(path.Ext(p), ".md") || strings.HasPrefix(p, ".memory/") ||
			!utf8.ValidString(p) || strings.ContainsFunc(p, unicode.IsControl) {
			// A name with control characters would reach a terminal.
			continue
		}
		switch {
		case !noPresets && isADR(p):
			out = append(out, SourceFile{Path: p, Whole: true})
		case !noPresets && path.Base(p) == knowledgeName:
			out = append(out, SourceFile{Path: p})
		case m != nil && m.Match(strings.Split(p, "/"), false):
			out = append(out, SourceFile{Path: p})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	if len(out) > maxSources {
		out = out[:maxSources]
	}
	return out
}

// SplitSections cuts a Markdown document at its headings (parsed with
// goldmark, so "#" lines in code blocks do not count). whole keeps it one
// section named by its first heading (an ADR's title).
func SplitSections(src []byte, whole bool) []SourceSection {
	doc := mdParser.Parse(markdown.NewReader(src))
	type cut struct {
		at      int
		heading string
	}
	var cuts []cut
	last, from := 0, 0 // the last cut; where to look for an empty heading
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		h, ok := n.(*ast.Heading)
		if !ok {
			if l := n.Lines(); l.Len() > 0 {
				from = max(from, l.At(l.Len()-1).Stop)
			}
			continue
		}
		at := headingStart(h, src, from)
		if at < last || (len(cuts) > 0 && at == last) {
			continue
		}
		cuts = append(cuts, cut{at, headingText(h, src)})
		last = at
		from = lineEnd(src, at)
	}
	if whole {
		title := ""
		if len(cuts) > 0 {
			title = cuts[0].heading
		}
		return []SourceSection{{Heading: title, Text: src}}
	}
	var out []SourceSection
	start, heading := 0, ""
	for _, c := range cuts {
		if c.at > start {
			out = append(out, SourceSection{Heading: heading, Text: src[start:c.at]})
		}
		start, heading = c.at, c.heading
	}
	if start < len(src) {
		out = append(out, SourceSection{Heading: heading, Text: src[start:]})
	}
	return out
}

// headingText is a heading's text as written on its line(s), on one line,
// without control characters, at most 200 bytes.
func headingText(h *ast.Heading, src []byte) string {
	var b strings.Builder
	lines := h.Lines()
	for i := 0; i < lines.Len(); i++ {
		seg := lines.At(i)
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.Write(seg.Value(src))
	}
	// Untrusted text bound for a terminal: no control characters.
	s := strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == utf8.RuneError {
			return ' '
		}
		return r
	}, b.String())
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = strings.ToValidUTF8(s[:200], "")
	}
	return s
}

// headingStart is the offset of the start of the line a heading begins
// on. An empty ATX heading ("#") has no text: its line is the first line
// from offset from that starts with '#' after at most three spaces.
func headingStart(h *ast.Heading, src []byte, from int) int {
	if lines := h.Lines(); lines.Len() > 0 {
		at := min(lines.At(0).Start, len(src))
		for at > 0 && src[at-1] != '\n' {
			at--
		}
		return at
	}
	for at := lineStart(src, min(from, len(src))); at < len(src); at = lineEnd(src, at) {
		rest := src[at:]
		k := 0
		for k < 3 && k < len(rest) && rest[k] == ' ' {
			k++
		}
		if k < len(rest) && rest[k] == '#' {
			return at
		}
	}
	return len(src)
}

// lineStart returns the offset of the start of the line holding offset at.
func lineStart(src []byte, at int) int {
	for at > 0 && src[at-1] != '\n' {
		at--
	}
	return at
}

// lineEnd returns the offset just after the end of the line starting at at.
func lineEnd(src []byte, at int) int {
	if i := bytes.IndexByte(src[at:], '\n'); i >= 0 {
		return at + i + 1
	}
	return len(src)
}
