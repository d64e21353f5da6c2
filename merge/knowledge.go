package merge

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/learnwatch/learnwatch/markdown"
)

// Renumber records one incoming knowledge entry that took the next free
// number because both sides had added an entry under the same number.
type Renumber struct {
	From   string `json:"from"`             // the number it had on its branch, "ADR-002"
	To     string `json:"to"`               // the number it has now, "ADR-003"
	Source string `json:"source,omitempty"` // the observation of its Source marker
	Title  string `json:"title,omitempty"`
}

// Labels name the sides in conflict markers.
type Labels struct{ Ours, Theirs string }

// chunk is one entry of a knowledge file: from its heading up to the next
// entry's heading (so text under a non-entry heading travels with the entry
// before it).
type chunk struct {
	key  string // the ID, "#n" appended for a repeated ID
	sec  markdown.Section
	text []byte // trimmed of trailing whitespace
}

type kfile struct {
	bom     []byte
	hadTLDR bool
	pre     []byte // text before the first entry, without the TL;DR line
	chunks  []chunk
	byKey   map[string]int
}

const bomBytes = "\xEF\xBB\xBF"

func parseKnowledge(src []byte) kfile {
	f := kfile{byKey: map[string]int{}}
	if bytes.HasPrefix(src, []byte(bomBytes)) {
		f.bom, src = src[:3], src[3:]
	}
	if first, rest, _ := bytes.Cut(src, []byte("\n")); bytes.HasPrefix(bytes.TrimLeft(first, " \t"), []byte("<!-- TL;DR:")) {
		f.hadTLDR = true
		src = rest
	}
	secs := markdown.Sections(src)
	if len(secs) == 0 {
		f.pre = src
		return f
	}
	f.pre = src[:secs[0].Start]
	seen := map[string]int{}
	for i, s := range secs {
		end := len(src)
		if i+1 < len(secs) {
			end = secs[i+1].Start
		}
		key := s.ID
		if n := seen[s.ID]; n > 0 {
			key = fmt.Sprintf("%s#%d", s.ID, n)
		}
		seen[s.ID]++
		f.byKey[key] = len(f.chunks)
		f.chunks = append(f.chunks, chunk{key: key, sec: s, text: bytes.TrimRight(src[s.Start:end], " \t\r\n")})
	}
	return f
}

func (f kfile) get(key string) (chunk, bool) {
	i, ok := f.byKey[key]
	if !ok {
		return chunk{}, false
	}
	return f.chunks[i], true
}

// Knowledge merges three versions of a knowledge file (decisions.md or
// pitfalls.md; kind ADR or PF, "" to infer it from the entries) as a union
// of entries by anchor:
//   - an entry one side added is kept; one side changed, the change is kept;
//     one side removed and the other left as in base, it is removed;
//   - both sides added an entry under the same number with different
//     content (both rendered "the next ADR"): ours keeps the number, theirs
//     takes the next free number (after every number used by any side) and
//     is recorded in the report;
//   - both sides changed the same entry: merged line by line (diff3); lines
//     both changed differently, an entry one side changed and the other
//     removed, or different text both added for the same observation are a
//     conflict confined to that entry, with git's conflict markers around
//     the two versions; the rest of the file merges.
//
// The text before the first entry merges the same way. Ours' entries come
// first in ours' order, then theirs' new ones in theirs' order. The TL;DR
// line is rebuilt when a side had one.
func Knowledge(base, ours, theirs []byte, kind string, labels Labels) ([]byte, Report) {
	var rep Report
	o, a, b := parseKnowledge(base), parseKnowledge(ours), parseKnowledge(theirs)
	if kind == "" {
		kind = inferKind(a, b, o)
	}
	next := map[string]int{}
	for _, f := range []kfile{o, a, b} {
		for _, c := range f.chunks {
			next[c.sec.Kind] = max(next[c.sec.Kind], c.sec.Number+1)
		}
	}
	var pieces [][]byte
	conflict := func(what string, x, y []byte) []byte {
		rep.Conflict = true
		rep.note("%s: both sides changed it; conflict markers around that part only", what)
		return conflictBlock(x, y, labels)
	}
	// both merges a part both sides changed line by line; only the lines
	// both changed differently end up between markers.
	both := func(what string, o, x, y []byte) []byte {
		out, ok := mergeLines(o, x, y, labels)
		if !ok {
			rep.Conflict = true
			rep.note("%s: both sides changed the same lines; conflict markers around them", what)
		}
		return out
	}
	renumber := map[string]bool{}
	for _, ca := range a.chunks {
		cb, inB := b.get(ca.key)
		co, inO := o.get(ca.key)
		switch {
		case inB && bytes.Equal(ca.text, cb.text):
			pieces = append(pieces, ca.text)
		case inB && inO && bytes.Equal(ca.text, co.text):
			pieces = append(pieces, cb.text)
		case inB && inO && bytes.Equal(cb.text, co.text):
			pieces = append(pieces, ca.text)
		case inB && inO:
			pieces = append(pieces, both(ca.sec.ID, co.text, ca.text, cb.text))
		case inB && ca.sec.Source != "" && ca.sec.Source == cb.sec.Source:
			pieces = append(pieces, conflict(ca.sec.ID+" (the same observation on both sides)", ca.text, cb.text))
		case inB:
			pieces = append(pieces, ca.text)
			renumber[ca.key] = true
		case inO && bytes.Equal(ca.text, co.text):
			// theirs removed it
		case inO:
			pieces = append(pieces, conflict(ca.sec.ID+" (changed on one side, removed on the other)", ca.text, nil))
		default:
			pieces = append(pieces, ca.text)
		}
	}
	for _, cb := range b.chunks {
		_, inA := a.get(cb.key)
		co, inO := o.get(cb.key)
		switch {
		case renumber[cb.key]:
			n := next[cb.sec.Kind]
			next[cb.sec.Kind] = n + 1
			id := markdown.FormatID(cb.sec.Kind, n)
			pieces = append(pieces, retitle(cb, id))
			rep.Renumbered = append(rep.Renumbered, Renumber{From: cb.sec.ID, To: id, Source: cb.sec.Source, Title: cb.sec.Title})
		case inA:
			// merged above
		case inO && bytes.Equal(cb.text, co.text):
			// ours removed it
		case inO:
			pieces = append(pieces, conflict(cb.sec.ID+" (removed on one side, changed on the other)", nil, cb.text))
		default:
			pieces = append(pieces, cb.text)
		}
	}
	var pre []byte
	switch pa, pb, po := trimEnd(a.pre), trimEnd(b.pre), trimEnd(o.pre); {
	case bytes.Equal(pa, pb), bytes.Equal(pb, po):
		pre = pa
	case bytes.Equal(pa, po):
		pre = pb
	default:
		pre = both("the text before the first entry", po, pa, pb)
	}
	var body bytes.Buffer
	if len(pre) > 0 {
		body.Write(pre)
		body.WriteString("\n")
		if len(pieces) > 0 {
			body.WriteString("\n")
		}
	}
	for i, p := range pieces {
		if i > 0 {
			body.WriteString("\n")
		}
		body.Write(p)
		body.WriteString("\n")
	}
	var out bytes.Buffer
	out.Write(a.bom)
	if a.hadTLDR || b.hadTLDR {
		out.WriteString(markdown.TLDR(body.Bytes(), kind))
		out.WriteString("\n")
	}
	out.Write(body.Bytes())
	return out.Bytes(), rep
}

func trimEnd(b []byte) []byte { return bytes.TrimRight(b, " \t\r\n") }

func inferKind(files ...kfile) string {
	for _, f := range files {
		for _, c := range f.chunks {
			return c.sec.Kind
		}
	}
	return markdown.ADR
}

// retitle returns the entry's text with its heading's ID replaced by id.
func retitle(c chunk, id string) []byte {
	line, rest, hasRest := bytes.Cut(c.text, []byte("\n"))
	i := bytes.Index(line, []byte(c.sec.ID))
	if i < 0 {
		return c.text
	}
	var b bytes.Buffer
	b.Write(line[:i])
	b.WriteString(id)
	b.Write(line[i+len(c.sec.ID):])
	if hasRest {
		b.WriteByte('\n')
		b.Write(rest)
	}
	return b.Bytes()
}

// conflictBlock is git's conflict notation around the two versions of one
// part of the file (a nil side is a removal).
func conflictBlock(x, y []byte, labels Labels) []byte {
	lo, lt := labels.Ours, labels.Theirs
	if lo == "" {
		lo = "ours"
	}
	if lt == "" {
		lt = "theirs"
	}
	var b bytes.Buffer
	b.WriteString("<<<<<<< " + oneLine(lo) + "\n")
	if len(x) > 0 {
		b.Write(x)
		b.WriteString("\n")
	}
	b.WriteString("=======\n")
	if len(y) > 0 {
		b.Write(y)
		b.WriteString("\n")
	}
	b.WriteString(">>>>>>> " + oneLine(lt))
	return b.Bytes()
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
