package markdown

import (
	"bytes"
	"regexp"
	"strconv"
	"time"
)

// MarkerPrefix starts the line devflow writes as the last line of the
// frontmatter of every command and skill it renders; devflow's own cleanup
// (`devflow learn` reset and purge) finds self-learning artifacts by it.
const MarkerPrefix = "# devflow-learning: auto-generated"

// Marker returns the artifact marker line (without a newline):
// "# devflow-learning: auto-generated (<YYYY-MM-DD>, confidence: <c>, obs: <n>)",
// the date in UTC and the confidence printed the way a JavaScript number
// prints (0.8, 1, 0.65), as devflow writes it.
func Marker(date time.Time, confidence float64, observations int) string {
	return MarkerPrefix + " (" + date.UTC().Format("2006-01-02") +
		", confidence: " + strconv.FormatFloat(confidence, 'f', -1, 64) +
		", obs: " + strconv.Itoa(observations) + ")"
}

// markerLine matches a marker line as devflow writes it, at the start of a
// line (an indented one belongs to a block scalar, not to the frontmatter).
var markerLine = regexp.MustCompile(`(?m)^# devflow-learning: auto-generated(?: \([^)\n]*\))?[ \t]*\r?$`)

// HasMarker reports whether the frontmatter of a command or skill (the
// lines between a leading "---" line and the next "---" line) carries the
// artifact marker line.
func HasMarker(doc []byte) bool {
	fm, _, ok := frontmatterBlock(doc)
	return ok && markerLine.Match(fm)
}

// ArtifactDescription returns the frontmatter description of a command or
// skill that carries the artifact marker: the pattern a self-learning
// renderer wrote it for (as written; devflow's skills phrase it "This
// skill should be used when <pattern>"). false for a file without the
// marker (a human's), or whose frontmatter does not parse.
func ArtifactDescription(doc []byte) (string, bool) {
	if !HasMarker(doc) {
		return "", false
	}
	fm, _, err := Frontmatter(doc)
	if err != nil {
		return "", false
	}
	d, _ := fm["description"].(string)
	return d, true
}

// WithoutMarker returns doc with the marker line of its frontmatter
// removed, so two renders of one observation on different days or at
// different confidences compare equal. A document without one is returned
// unchanged.
func WithoutMarker(doc []byte) []byte {
	fm, at, ok := frontmatterBlock(doc)
	if !ok {
		return doc
	}
	loc := markerLine.FindIndex(fm)
	if loc == nil {
		return doc
	}
	start, end := at+loc[0], at+loc[1]
	if end < len(doc) && doc[end] == '\n' {
		end++
	}
	out := make([]byte, 0, len(doc)-(end-start))
	out = append(out, doc[:start]...)
	return append(out, doc[end:]...)
}

// frontmatterBlock returns the lines between a leading "---" line and the
// next line that is exactly "---" (each with its newline), and its offset in
// doc.
func frontmatterBlock(doc []byte) ([]byte, int, bool) {
	first, rest, ok := bytes.Cut(doc, []byte("\n"))
	if !ok || string(bytes.TrimRight(first, " \t\r")) != "---" {
		return nil, 0, false
	}
	for off := 0; off < len(rest); {
		line := rest[off:]
		n := bytes.IndexByte(line, '\n')
		if n >= 0 {
			line = line[:n]
		}
		if string(bytes.TrimRight(line, " \t\r")) == "---" {
			return rest[:off], len(first) + 1, true
		}
		if n < 0 {
			break
		}
		off += n + 1
	}
	return nil, 0, false
}
