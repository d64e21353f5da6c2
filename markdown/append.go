package markdown

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tldrPrefix starts the first line of a knowledge file rendered by learnwatch.
const tldrPrefix = "<!-- TL;DR:"

// TLDR returns "<!-- TL;DR: N decisions. Key: ADR-003, ADR-004 -->" for kind ADR
// ("N pitfalls" for PF): N is the number of active entries of that kind, Key lists the
// last five active IDs in file order, comma-separated ("Key: none" when there is none).
func TLDR(src []byte, kind string) string {
	return tldrOf(Sections(src), kind)
}

func tldrOf(secs []Section, kind string) string {
	var ids []string
	for _, s := range secs {
		if s.Kind == kind && s.Active() {
			ids = append(ids, s.ID)
		}
	}
	n := len(ids)
	if len(ids) > 5 {
		ids = ids[len(ids)-5:]
	}
	key := "none"
	if len(ids) > 0 {
		key = strings.Join(ids, ", ")
	}
	noun := "decisions"
	if kind == PF {
		noun = "pitfalls"
	}
	return fmt.Sprintf("%s %d %s. Key: %s -->", tldrPrefix, n, noun, key)
}

// Append appends a rendered section to a knowledge file's content and returns the new
// content; file is not modified.
//
// An empty file (nil, whitespace only, or only a TL;DR line) becomes the TL;DR line, "# Architectural
// Decisions" (ADR) or "# Known Pitfalls" (PF), a blank line, one sentence, a blank line and
// the section. Otherwise the section goes after the existing bytes, separated by one blank
// line (existing trailing blank lines are kept and count as the separator). The first line
// is then (re)written as the TL;DR comment: replaced when it already starts with
// "<!-- TL;DR:", inserted before the file's first line otherwise (after a UTF-8 BOM).
// A file whose first line ends in "\r\n" gets "\r\n" line endings in every line Append
// writes. Existing bytes other than the TL;DR line are never changed. The result ends with
// a newline.
func Append(file []byte, kind string, section []byte) []byte {
	nl := "\n"
	if i := bytes.IndexByte(file, '\n'); i > 0 && file[i-1] == '\r' {
		nl = "\r\n"
	}
	sec := bytes.TrimRight(section, " \t\r\n")
	if nl == "\r\n" {
		sec = bytes.ReplaceAll(bytes.ReplaceAll(sec, []byte("\r\n"), []byte("\n")), []byte("\n"), []byte("\r\n"))
	}

	var body []byte // everything after the TL;DR line
	var bom []byte
	rest := file
	if bytes.HasPrefix(rest, []byte("\xEF\xBB\xBF")) {
		bom, rest = rest[:3], rest[3:]
	}
	first, after, _ := bytes.Cut(rest, []byte("\n"))
	isTLDR := bytes.HasPrefix(bytes.TrimLeft(first, " \t"), []byte(tldrPrefix))
	if isTLDR && len(bytes.TrimSpace(after)) == 0 || len(bytes.TrimSpace(rest)) == 0 {
		title, sentence := "# Architectural Decisions", "Architectural decisions learned from this repository's sessions, one ADR per section."
		if kind == PF {
			title, sentence = "# Known Pitfalls", "Pitfalls learned from this repository's sessions, one PF per section."
		}
		body = []byte(title + nl + nl + sentence + nl + nl)
	} else {
		if isTLDR {
			body = append([]byte(nil), after...)
		} else {
			body = append([]byte(nil), rest...)
		}
		switch {
		case !bytes.HasSuffix(body, []byte("\n")):
			body = append(body, nl+nl...)
		case !endsWithBlankLine(body):
			body = append(body, nl...)
		}
	}
	body = append(body, sec...)
	body = append(body, nl...)

	out := make([]byte, 0, len(bom)+len(body)+80)
	out = append(out, bom...)
	out = append(out, tldrOf(Sections(body), kind)...)
	out = append(out, nl...)
	return append(out, body...)
}

// endsWithBlankLine reports whether b (ending in "\n") ends with a whitespace-only line.
func endsWithBlankLine(b []byte) bool {
	t := b[:len(b)-1]
	i := bytes.LastIndexByte(t, '\n')
	return len(bytes.TrimSpace(t[i+1:])) == 0
}

// yamlLine finds the line number in a yaml.v3 error message.
var yamlLine = regexp.MustCompile(`line (\d+)`)

// Frontmatter parses the YAML frontmatter of a rendered command or skill: a first line
// "---" and the next line that is "---" or "..." (trailing spaces and "\r" ignored). The
// YAML between them is decoded with go.yaml.in/yaml/v3 into a map; body is what follows
// the closing line. It returns (nil, src, nil) when src has no frontmatter, and an error
// naming the file line when the YAML is invalid, is not a mapping, or is not closed.
func Frontmatter(src []byte) (map[string]any, []byte, error) {
	rest, ok := cutDelimiter(src)
	if !ok {
		return nil, src, nil
	}
	yamlStart := len(src) - len(rest)
	off := yamlStart
	for off <= len(src) {
		line, _, _ := bytes.Cut(src[off:], []byte("\n"))
		if _, ok := cutDelimiter(src[off:]); ok || isDots(line) {
			next := off + len(line)
			if next < len(src) {
				next++ // the "\n"
			}
			m := map[string]any{}
			if err := yaml.Unmarshal(src[yamlStart:off], &m); err != nil {
				return nil, nil, frontmatterError(err)
			}
			if m == nil { // an empty or null document
				m = map[string]any{}
			}
			return m, src[next:], nil
		}
		if off+len(line) >= len(src) {
			break
		}
		off += len(line) + 1
	}
	return nil, nil, errors.New("frontmatter: line 1: \"---\" is never closed")
}

// cutDelimiter reports whether src starts with a "---" line and returns what follows it.
func cutDelimiter(src []byte) ([]byte, bool) {
	line, rest, _ := bytes.Cut(src, []byte("\n"))
	if string(bytes.TrimRight(line, " \t\r")) != "---" {
		return nil, false
	}
	return rest, true
}

func isDots(line []byte) bool { return string(bytes.TrimRight(line, " \t\r")) == "..." }

// frontmatterError rewrites a yaml error's line numbers to lines of the file (the YAML
// starts on line 2); an error without a line is reported at line 2.
func frontmatterError(err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg = strings.Join(te.Errors, "; ")
	}
	if !yamlLine.MatchString(msg) {
		return fmt.Errorf("frontmatter: line 2: %s", msg)
	}
	msg = yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, convErr := strconv.Atoi(m[len("line "):])
		if convErr != nil {
			return m
		}
		return "line " + strconv.Itoa(n+1)
	})
	return fmt.Errorf("frontmatter: %s", msg)
}
