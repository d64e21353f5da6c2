// Package textsafe owns what repository text may look like once it reaches
// a terminal or an agent's context. A cloned repository is untrusted: its
// titles, ids, statuses and log lines can carry escape sequences, bidi
// overrides and invisible characters. Line and Block remove them and bound
// the length; every printer of repository text goes through them.
package textsafe

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Ellipsis ends a string cut to its bound.
const Ellipsis = "…"

// Forbidden reports whether r must never be printed: C0 and C1 controls
// (tab and newline included: callers map them first), DEL, the bidi
// controls (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069), the line and
// paragraph separators, and every format character (category Cf: zero-width
// spaces and joiners, U+2060, U+FEFF, soft hyphen, …).
func Forbidden(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r == '\u2028', r == '\u2029':
		return true
	case r == utf8.RuneError:
		return false
	}
	return unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Bidi_Control, r)
}

// Line returns s as a single line safe to print: tabs, newlines and the
// Unicode line separators become a space, other forbidden runes are dropped,
// invalid UTF-8 becomes U+FFFD, and the result is cut to max runes (the
// last one "…") when longer. max <= 0 means no bound.
func Line(s string, max int) string { return clean(s, max, false) }

// Block is Line for multi-line text: newlines are kept ("\r\n" and "\r"
// become "\n"); everything else is as in Line. max bounds the runes of the
// whole text.
func Block(s string, max int) string { return clean(s, max, true) }

// Quote returns s sanitised and bounded as by Line, in double quotes, for
// error messages that quote repository content.
func Quote(s string, max int) string { return strconv.Quote(Line(s, max)) }

// Safe reports whether s is already what Line(s, 0) returns.
func Safe(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if Forbidden(r) {
			return false
		}
	}
	return true
}

func clean(s string, max int, multiline bool) string {
	if max <= 0 && Safe(s) && (!multiline || !strings.ContainsRune(s, '\r')) {
		return s
	}
	var b strings.Builder
	if max > 0 {
		b.Grow(min(len(s), 4*max+8))
	} else {
		b.Grow(len(s))
	}
	n := 0 // runes written
	// A cut needs one rune of room for the ellipsis: runes are buffered
	// until it is known whether the text goes past max.
	var pending []rune
	emit := func(r rune) bool {
		if max <= 0 {
			b.WriteRune(r)
			return true
		}
		if n < max-1 {
			b.WriteRune(r)
			n++
			return true
		}
		pending = append(pending, r)
		if len(pending) > 1 {
			return false // more than max runes: cut
		}
		return true
	}
	prevCR := false
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		cr := false
		switch {
		case r == '\r' && multiline:
			r, cr = '\n', true
		case r == '\n' && multiline:
			if prevCR {
				prevCR = false
				continue // the "\n" of "\r\n"
			}
		case r == '\t', r == '\n', r == '\r', r == '\u2028', r == '\u2029':
			r = ' '
		case Forbidden(r):
			prevCR = false
			continue
		}
		prevCR = cr
		if !emit(r) {
			b.WriteString(Ellipsis)
			return b.String()
		}
	}
	for _, r := range pending {
		b.WriteRune(r)
	}
	return b.String()
}
