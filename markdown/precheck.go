package markdown

import (
	"bytes"
	"fmt"
)

// Markdown from a repository is untrusted: deeply nested block quotes and
// lists make a CommonMark parser take minutes on a few hundred kilobytes.
// Check runs before goldmark sees a knowledge file or a Markdown source, in
// one linear pass over the bytes.

// MaxSize is the largest Markdown input parsed, in bytes (a knowledge file
// of about 60,000 entries).
const MaxSize = 4 << 20

// MaxDepth is the deepest nesting of block quotes and list items accepted
// on one line: each '>' and each list marker at the start of a line counts
// one level, and so do every two columns of indentation before them.
const MaxDepth = 32

// RefusedError says why Markdown input was not parsed.
type RefusedError struct {
	Reason string
}

func (e *RefusedError) Error() string { return "markdown not parsed: " + e.Reason }

// Check reports whether src may be parsed: nil, or a *RefusedError naming
// the size or the line nesting too deep.
func Check(src []byte) error {
	if len(src) > MaxSize {
		return &RefusedError{fmt.Sprintf("%d bytes, over the %d-byte limit", len(src), MaxSize)}
	}
	line := 1
	for len(src) > 0 {
		end := bytes.IndexByte(src, '\n')
		if end < 0 {
			end = len(src)
		}
		if d := depth(src[:end]); d > MaxDepth {
			return &RefusedError{fmt.Sprintf("line %d nests block quotes or lists more than %d levels deep", line, MaxDepth)}
		}
		src = src[min(end+1, len(src)):]
		line++
	}
	return nil
}

// depth counts the container levels a line opens: '>' markers, list
// markers ("-", "*", "+", "1." or "1)" followed by a space or the end of the
// line; the space is part of the marker) and indentation (two columns a
// level, a tab four columns), stopping
// at the first other character. It stops early past MaxDepth.
func depth(line []byte) int {
	d, cols := 0, 0
	for i := 0; i < len(line) && d+cols/2 <= MaxDepth; {
		c := line[i]
		switch {
		case c == ' ':
			cols++
			i++
		case c == '\t':
			cols += 4
			i++
		case c == '>':
			d++
			i = skipSeparator(line, i+1)
		case c == '-' || c == '*' || c == '+':
			if !markerEnd(line, i+1) {
				return d + cols/2
			}
			d++
			i = skipSeparator(line, i+1)
		case c >= '0' && c <= '9':
			j := i
			for j < len(line) && j-i < 9 && line[j] >= '0' && line[j] <= '9' {
				j++
			}
			if j >= len(line) || (line[j] != '.' && line[j] != ')') || !markerEnd(line, j+1) {
				return d + cols/2
			}
			d++
			i = skipSeparator(line, j+1)
		default:
			return d + cols/2
		}
	}
	return d + cols/2
}

// skipSeparator skips the one space or tab after a marker: it is part of
// the marker, not indentation.
func skipSeparator(line []byte, i int) int {
	if i < len(line) && (line[i] == ' ' || line[i] == '\t') {
		return i + 1
	}
	return i
}

// markerEnd reports whether a list marker ending before line[i] is one: at
// the end of the line or followed by a space or a tab.
func markerEnd(line []byte, i int) bool {
	return i >= len(line) || line[i] == ' ' || line[i] == '\t'
}
