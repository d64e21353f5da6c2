// Package jsonscan holds the byte scanners that learnwatch's fast JSON
// paths share — the learning log's line scan (manifest) and the feedback
// journal's event parser (journal): whitespace and numbers, by JSON's
// grammar. Both callers fall back to encoding/json for anything they do
// not accept, so these only ever need to be right, never complete.
package jsonscan

// SkipSpace returns the index of the first byte at or after i that is not
// JSON whitespace (space, tab, CR, LF).
func SkipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// NumberEnd returns the index after the JSON number starting at b[i], or
// -1 when none starts there:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func NumberEnd(b []byte, i int) int {
	digits := func(i int) int {
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}
