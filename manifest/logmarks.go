package manifest

// Staleness marks without a decode. The staleness pass sets three fields
// of an observation (mayBeStale, needsReview, staleReason); a first pass
// sets them on most lines of the log. Decoding each of those lines to set
// them, and re-encoding every field to write them, was a fifth of a cold
// first reconcile's CPU at 10,000 observations and 60 MB of the 100,000
// observations' peak heap. A line the scan read and nothing decoded keeps
// its new marks aside (SetMarks), and its bytes are patched when the log
// is written: the three members replaced, every other byte as read —
// exactly the bytes decoding, setting and re-encoding give (patchMarks
// declines any line where they would differ: a value encoding/json would
// write otherwise, a null, a member missing; those lines go the decoding
// way).

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// Marks are an observation's staleness marks.
type Marks struct {
	MayBeStale, NeedsReview bool
	StaleReason             string
}

// Marks returns the line's marks without decoding it.
func (ln *Line) Marks() Marks {
	return Marks{MayBeStale: ln.MayBeStale(), NeedsReview: ln.NeedsReview(), StaleReason: ln.StaleReason()}
}

// SetMarks sets the line's staleness marks: on its observation when it is
// decoded, aside otherwise (the write patches the line's bytes; a later
// decode takes them). The line must parse. A line whose marks a write
// patched in takes the file's bytes first (materialize): new marks are
// patched into those, as into the file read again.
func (ln *Line) SetMarks(m Marks) {
	if ln.written != nil && ln.obs == nil && (ln.marks == nil || *ln.marks != m) {
		ln.materialize()
	}
	if ln.obs != nil || !ln.parsed {
		if o := ln.Observation(); o != nil {
			o.MayBeStale, o.NeedsReview, o.StaleReason = m.MayBeStale, m.NeedsReview, m.StaleReason
		}
		return
	}
	if m == (Marks{MayBeStale: ln.idx.mayBeStale, NeedsReview: ln.idx.needsReview, StaleReason: ln.idx.staleReason}) {
		ln.marks = nil // as written
		return
	}
	ln.marks = &m
}

// ResolutionKey is the member in which a person's resolution of an
// observation's staleness marks is kept (package lifecycle writes and reads
// it); the scan notes whether a line has one, so that the staleness pass
// decodes only those lines.
const ResolutionKey = "resolved"

// HasResolution reports whether the line's object has a ResolutionKey
// member, without decoding it.
func (ln *Line) HasResolution() bool {
	if ln.obs != nil {
		_, ok := ln.obs.Extra(ResolutionKey)
		return ok
	}
	return ln.idx.resolved
}

// takeMarks gives o the marks set aside, once o is decoded.
func (ln *Line) takeMarks(o *Observation) {
	if ln.marks != nil {
		o.MayBeStale, o.NeedsReview, o.StaleReason = ln.marks.MayBeStale, ln.marks.NeedsReview, ln.marks.StaleReason
		ln.marks = nil
	}
}

// markedBytes returns the bytes of a line not decoded with marks m
// patched in (ok); or, when patchMarks declines, its observation decoded
// (not kept: the log is only read while it is written) and marked, for
// the caller to encode; or neither when the full decoder refuses it.
func (ln *Line) markedBytes(m Marks) (b []byte, o *Observation, ok bool) {
	body := bytes.TrimSpace(ln.Raw())
	if b, _, ok := patchMarks(make([]byte, 0, markedRoom(body, m)), body, m); ok {
		return b, nil, true
	}
	o = new(Observation)
	if !o.decodeScanned(body) {
		*o = Observation{}
		if err := o.decode(body); err != nil {
			return nil, nil, false // the scan vouched for it: written as read
		}
	}
	o.MayBeStale, o.NeedsReview, o.StaleReason = m.MayBeStale, m.NeedsReview, m.StaleReason
	return nil, o, false
}

// markedRoom is room for body with marks m's members: one allocation per
// line (a first pass patches every line of the log).
func markedRoom(body []byte, m Marks) int {
	return len(body) + len(`,"needsReview":true,"mayBeStale":true,"staleReason":""`) + 2*len(m.StaleReason)
}

// sameMarks reports whether a and b stand for the same marks (nil: the
// line's own).
func sameMarks(a, b *Marks) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// textSpans are where a patched line's details and evidence values are in
// its new bytes.
type textSpans struct {
	details, evidence span
}

// materialize makes a line whose marks a write patched into the file's
// bytes (written) hold those bytes as Raw, as a decode needs them: the
// scan's fields are the same but for the marks and the texts' places, so
// nothing is scanned again. Marks set since stay aside.
func (ln *Line) materialize() {
	w := ln.written
	if w == nil {
		return
	}
	ln.written = nil
	// The marks the line is to have: those set aside, or Raw's own.
	want := Marks{MayBeStale: ln.idx.mayBeStale, NeedsReview: ln.idx.needsReview, StaleReason: ln.idx.staleReason}
	if ln.marks != nil {
		want = *ln.marks
	}
	body := bytes.TrimSpace(ln.Raw())
	b, at, ok := patchMarks(make([]byte, 0, markedRoom(body, *w)), body, *w)
	if !ok {
		// Not reached: the write patched this line (it was not declined
		// then), and a patch depends on the line and the marks only. Were
		// it, the line stays as read with the marks it is to have aside,
		// so the next write writes them.
		ln.marks = &want
		return
	}
	ln.setRaw(b)
	ln.idx.mayBeStale, ln.idx.needsReview, ln.idx.staleReason = w.MayBeStale, w.NeedsReview, w.StaleReason
	ln.idx.details, ln.idx.evidence = at.details, at.evidence
	ln.marks = nil // as written
	if want != *w {
		ln.marks = &want // set since the write: still to be written
	}
}

// patchMarks appends to dst what appendJSON writes for body's observation
// (body a line scanFields accepts) with marks m: body's members in order,
// the marks' replaced (or dropped when zero), missing fields after them,
// as appendJSON orders them. ok is false when that would not keep every
// other member's bytes: a value appendJSON writes otherwise (an escape it
// writes differently, a number it formats otherwise, whitespace, a null),
// a field it adds. at is where the details and evidence values are in
// what it appends.
func patchMarks(dst, body []byte, m Marks) (out []byte, at textSpans, ok bool) {
	var buf [24]member
	ms, ok := members(buf[:0], body)
	if !ok {
		return dst, at, false
	}
	start := len(dst)
	marks := Observation{MayBeStale: m.MayBeStale, NeedsReview: m.NeedsReview, StaleReason: m.StaleReason}
	b := append(dst, '{')
	wrote := false
	member := func(key, val []byte) {
		if wrote {
			b = append(b, ',')
		}
		wrote = true
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		switch string(key) {
		case "details":
			at.details = span{int32(len(b) - start), int32(len(val))}
		case "evidence":
			at.evidence = span{int32(len(b) - start), int32(len(val))}
		}
		b = append(b, val...)
	}
	var seen uint32
	for _, mb := range ms {
		if !plainKey(mb.key) {
			return dst, at, false
		}
		k := knownIndex(mb.key)
		if k >= 0 {
			seen |= 1 << k
		}
		switch k {
		case kNeedsReview, kMayBeStale, kStaleReason:
			if v, present := marks.appendField(nil, k); present {
				member(mb.key, v)
			}
			continue
		case -1:
			// Unknown: appendRaw keeps a value that needs no compacting.
			if needsCompact(mb.val) {
				return dst, at, false
			}
			member(mb.key, mb.val)
			continue
		}
		keep, drop := canonicalKnown(k, mb.val)
		if !keep {
			return dst, at, false
		}
		if !drop {
			member(mb.key, mb.val)
		}
	}
	var zero Observation
	for k := range knownKeys {
		if seen&(1<<k) != 0 {
			continue
		}
		src := &zero
		switch k {
		case kNeedsReview, kMayBeStale, kStaleReason:
			src = &marks
		}
		if v, present := src.appendField(nil, k); present {
			if src == &zero {
				return dst, at, false // appendJSON writes a field the line lacks
			}
			member([]byte(knownKeys[k]), v)
		}
	}
	return append(b, '}'), at, true
}

// plainKey reports whether appendString writes key (a member's key as
// members split it: no backslash, ASCII) between quotes as it is.
func plainKey(key []byte) bool {
	return plainEnd(key, 0) == len(key)
}

// canonicalKnown reports whether appendJSON writes known field k, whose
// value in a line scanFields accepted is v, as v (keep), or leaves it out
// (keep and drop: an empty optional field).
func canonicalKnown(k int, v []byte) (keep, drop bool) {
	if v[0] == 'n' {
		return false, false // null: appendJSON writes the zero value
	}
	switch k {
	case kConfidence:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil || f != f {
			return false, false
		}
		var tmp [32]byte
		return bytes.Equal(appendFloat(tmp[:0], f), v), false
	case kObservations:
		n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
		if err != nil {
			return false, false
		}
		var tmp [24]byte
		return bytes.Equal(strconv.AppendInt(tmp[:0], n, 10), v), false
	case kQualityOK:
		return true, false
	case kSoftCapExceeded:
		return true, v[0] == 'f'
	case kEvidence:
		return canonicalStrings(v), false
	case kArtifactPath, kDeprecatedAt:
		return canonicalString(v), len(v) == 2
	}
	return canonicalString(v), false
}

// canonicalStrings reports whether v, a JSON array of strings, is written
// by appendField as it is: no whitespace, every string canonical.
func canonicalStrings(v []byte) bool {
	if len(v) < 2 || v[0] != '[' {
		return false
	}
	if len(v) == 2 {
		return v[1] == ']'
	}
	i := 1
	for {
		if i >= len(v) || v[i] != '"' {
			return false
		}
		end, _ := skipString(v, i)
		if end < 0 || !canonicalString(v[i:end]) || end >= len(v) {
			return false
		}
		switch v[end] {
		case ']':
			return end == len(v)-1
		case ',':
			i = end + 1
		default:
			return false
		}
	}
}

// canonicalString reports whether appendString writes the string that the
// JSON string literal v (valid) decodes to as v: every escape one it
// writes, nothing it escapes left unescaped, valid UTF-8.
func canonicalString(v []byte) bool {
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return false
	}
	s := v[1 : len(v)-1]
	for i := 0; i < len(s); {
		if i = plainEnd(s, i); i == len(s) {
			break // most of a text: eight bytes at a time (plainEnd)
		}
		c := s[i]
		switch {
		case c == '\\':
			if i+1 >= len(s) {
				return false
			}
			switch s[i+1] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
				i += 2
				continue
			case 'u':
				if i+6 > len(s) {
					return false
				}
				cp, err := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
				if err != nil || !uEscaped(rune(cp), s[i+2:i+6]) {
					return false
				}
				i += 6
				continue
			}
			return false // \/ decodes to '/', which appendString writes as is
		case c < 0x20, c == '"', c == '<', c == '>', c == '&':
			return false
		case c < utf8.RuneSelf:
			i++
		default:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 || r == '\u2028' || r == '\u2029' {
				return false
			}
			i += n
		}
	}
	return true
}

// uEscaped reports whether appendString writes rune r as the \u escape
// with hex digits h.
func uEscaped(r rune, h []byte) bool {
	var want string
	switch {
	case r == '\b', r == '\f', r == '\n', r == '\r', r == '\t':
		return false // written as \b, \f, \n, \r, \t
	case r < 0x20, r == '<', r == '>', r == '&':
		want = string([]byte{'0', '0', hexDigits[r>>4], hexDigits[r&0xF]})
	case r == '\u2028':
		want = "2028"
	case r == '\u2029':
		want = "2029"
	default:
		return false
	}
	return string(h) == want
}
