package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
)

// Report says what a merge did that a person should know about. Conflict
// is set when the result needs a person (git is told so by the driver's exit
// code); Notes explain fallbacks and kept lines.
type Report struct {
	Conflict bool
	Notes    []string
	// Renumbered lists the incoming knowledge entries that took a new
	// number because both sides had used theirs (knowledge files only).
	Renumbered []Renumber
}

func (r *Report) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// statusRank orders the lifecycle: a merge keeps the status furthest along
// (deprecated wins). Unknown statuses rank lowest.
var statusRank = map[string]int{manifest.Observing: 1, manifest.Ready: 2, manifest.Created: 3, manifest.Deprecated: 4}

// logSide is one side of a log merge: observations by id and the other
// non-blank lines (corrupt, or without an id) as raw bytes.
type logSide struct {
	order []logItem
	byID  map[string]*manifest.Line
	raw   map[string]bool
}

type logItem struct {
	id  string // "" for a raw line
	raw []byte
}

func splitLog(data []byte) logSide {
	s := logSide{byID: map[string]*manifest.Line{}, raw: map[string]bool{}}
	for _, ln := range manifest.ParseLog(data).Lines {
		if len(bytes.TrimSpace(ln.Raw())) == 0 {
			continue
		}
		// The scan's id: a line is decoded only when the merge compares
		// or merges it (the scan vouches for the decode: a 50,000-line
		// log's three versions were 150,000 decodes, most of a merge).
		if id := ln.ID(); ln.Parsed() && id != "" {
			if _, dup := s.byID[id]; !dup {
				s.byID[id] = ln
				s.order = append(s.order, logItem{id: id, raw: ln.Raw()})
				continue
			}
			// A second line with the same id is kept as it is.
		}
		s.raw[string(ln.Raw())] = true
		s.order = append(s.order, logItem{raw: ln.Raw()})
	}
	return s
}

// Log merges three versions of learning-log.jsonl by observation id
// (base may be empty, for a log both sides created). An observation on one
// side only is kept (unless the other side removed it unchanged from base);
// one on both sides is merged field by field (see mergeObservation). Lines
// that do not parse, or carry no id, are kept from either side unless the
// other side removed them. Order: ours' lines in ours' order, then theirs'
// new lines in theirs' order. The result never holds conflict markers.
func Log(base, ours, theirs []byte) ([]byte, Report) {
	return logWith(splitLog, base, ours, theirs)
}

// logWith is Log with the sides split by split (tests compare splitLog
// with a split that decodes every line).
func logWith(split func([]byte) logSide, base, ours, theirs []byte) ([]byte, Report) {
	var rep Report
	o, a, b := split(base), split(ours), split(theirs)
	var out bytes.Buffer
	line := func(raw []byte) {
		out.Write(raw)
		out.WriteByte('\n')
	}
	corrupt := 0
	for _, it := range a.order {
		if it.id == "" {
			if o.raw[string(it.raw)] && !b.raw[string(it.raw)] {
				continue // theirs removed it
			}
			if isCorrupt(it.raw) {
				corrupt++
			}
			line(it.raw)
			continue
		}
		la := a.byID[it.id]
		lb, inB := b.byID[it.id]
		lo, inO := o.byID[it.id]
		if !inB {
			if inO && sameLine(la, lo) {
				continue // theirs removed it, ours did not touch it
			}
			line(la.Raw())
			continue
		}
		switch {
		case bytes.Equal(la.Raw(), lb.Raw()), inO && sameLine(lb, lo):
			line(la.Raw()) // theirs did not change it
			continue
		case inO && sameLine(la, lo):
			line(lb.Raw()) // ours did not change it
			continue
		}
		var base *manifest.Observation
		if inO {
			base = lo.Observation()
		}
		m := mergeObservation(base, la.Observation(), lb.Observation())
		enc, err := json.Marshal(m)
		if err != nil {
			rep.note("observation %s: cannot encode the merge (%v); kept both sides' lines", it.id, err)
			line(la.Raw())
			line(lb.Raw())
			continue
		}
		line(enc)
	}
	for _, it := range b.order {
		if it.id == "" {
			if a.raw[string(it.raw)] || o.raw[string(it.raw)] {
				continue // ours has it, or ours removed it
			}
			if isCorrupt(it.raw) {
				corrupt++
			}
			line(it.raw)
			continue
		}
		if _, inA := a.byID[it.id]; inA {
			continue
		}
		lb := b.byID[it.id]
		if lo, inO := o.byID[it.id]; inO && sameLine(lb, lo) {
			continue // ours removed it, theirs did not touch it
		}
		line(lb.Raw())
	}
	if corrupt > 0 {
		rep.note("%d line(s) that do not parse kept as they are", corrupt)
	}
	return out.Bytes(), rep
}

// isCorrupt reports whether a raw log line does not parse as an object:
// those are counted in the report.
func isCorrupt(raw []byte) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal(raw, &v) != nil
}

func sameLine(x, y *manifest.Line) bool {
	if bytes.Equal(x.Raw(), y.Raw()) {
		return true
	}
	bx, err1 := json.Marshal(x.Observation())
	by, err2 := json.Marshal(y.Observation())
	return err1 == nil && err2 == nil && bytes.Equal(bx, by)
}

// mergeObservation merges the two sides of one observation (base nil when
// both added it). Starting from ours (its key order and unknown fields):
// observations = ours + theirs − base (at least 1); first_seen the earliest,
// last_seen the latest; evidence the union, newest kept under the cap;
// status the furthest along the lifecycle (deprecated wins, with the
// earliest deprecated_at); confidence recomputed from the merged sightings
// (with the deletion penalty when deprecated); quality_ok sticky; the review
// flags three-way (a flag one side cleared and the other left as in base
// stays cleared) and OR-ed when both changed them; other fields and unknown
// fields three-way, ours winning when both changed them.
func mergeObservation(base, a, b *manifest.Observation) *manifest.Observation {
	m := a.Clone()
	baseN := 0
	if base != nil {
		baseN = base.Observations
	}
	m.Observations = max(a.Observations+b.Observations-baseN, 1)
	m.FirstSeen = pickTime(a.FirstSeen, b.FirstSeen, false)
	m.LastSeen = pickTime(a.LastSeen, b.LastSeen, true)
	m.Evidence = unionEvidence(a.Evidence, b.Evidence)
	if ra, rb := statusRank[a.Status], statusRank[b.Status]; rb > ra || rb == ra && b.Status > a.Status {
		m.Status = b.Status // two unknown statuses: the same pick whichever side is ours
	}
	m.QualityOK = a.QualityOK || b.QualityOK

	str := func(get func(*manifest.Observation) string) string {
		va, vb := get(a), get(b)
		if base != nil && va == get(base) {
			return vb
		}
		if va == "" {
			return vb
		}
		return va
	}
	flag := func(get func(*manifest.Observation) bool) bool {
		va, vb := get(a), get(b)
		if base != nil {
			vo := get(base)
			if va == vo {
				return vb
			}
			if vb == vo {
				return va
			}
		}
		return va || vb
	}
	m.Type = str(func(o *manifest.Observation) string { return o.Type })
	m.Pattern = str(func(o *manifest.Observation) string { return o.Pattern })
	m.Details = str(func(o *manifest.Observation) string { return o.Details })
	m.ArtifactPath = str(func(o *manifest.Observation) string { return o.ArtifactPath })
	m.NeedsReview = flag(func(o *manifest.Observation) bool { return o.NeedsReview })
	m.MayBeStale = flag(func(o *manifest.Observation) bool { return o.MayBeStale })
	m.SoftCapExceeded = flag(func(o *manifest.Observation) bool { return o.SoftCapExceeded })
	m.StaleReason = ""
	if m.MayBeStale {
		m.StaleReason = str(func(o *manifest.Observation) string { return o.StaleReason })
	}
	if m.Status == manifest.Created && b.Status == manifest.Created && a.Status != manifest.Created {
		m.ArtifactPath = b.ArtifactPath
	}

	m.Confidence = lifecycle.Confidence(m.Type, m.Observations)
	m.DeprecatedAt = ""
	if m.Status == manifest.Deprecated {
		m.Confidence = lifecycle.Round2(m.Confidence * lifecycle.DeletionFactor)
		var at []string
		for _, o := range []*manifest.Observation{a, b} {
			if o.Status == manifest.Deprecated && o.DeprecatedAt != "" {
				at = append(at, o.DeprecatedAt)
			}
		}
		if len(at) > 0 {
			m.DeprecatedAt = at[0]
			if len(at) == 2 {
				m.DeprecatedAt = pickTime(at[0], at[1], false)
			}
		}
	}
	mergeUnknown(m, base, a, b)
	return m
}

// pickTime returns the later (latest) or earlier of two RFC3339 stamps; a
// stamp that does not parse loses to one that does, and "" to anything.
func pickTime(x, y string, latest bool) string {
	tx, ex := time.Parse(time.RFC3339, x)
	ty, ey := time.Parse(time.RFC3339, y)
	switch {
	case ex != nil && ey != nil:
		if x == "" || y != "" && (y > x) == latest && y != x {
			return y
		}
		return x
	case ex != nil:
		return y
	case ey != nil:
		return x
	}
	if latest && ty.After(tx) || !latest && ty.Before(tx) || ty.Equal(tx) && y < x {
		return y
	}
	return x
}

// unionEvidence keeps ours' items, then theirs' new ones, then the newest
// lifecycle.MaxEvidence.
func unionEvidence(a, b []string) []string {
	out := append([]string{}, a...)
	seen := map[string]bool{}
	for _, e := range a {
		seen[e] = true
	}
	for _, e := range b {
		if e != "" && !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	if len(out) > lifecycle.MaxEvidence {
		out = append([]string{}, out[len(out)-lifecycle.MaxEvidence:]...)
	}
	if a == nil && b == nil {
		return nil
	}
	return out
}

// mergeUnknown sets on m (a clone of ours) the fields learnwatch does not
// know: theirs' value where ours left the base value, theirs' new fields
// after ours'.
func mergeUnknown(m, base, a, b *manifest.Observation) {
	bt, err := json.Marshal(b)
	if err != nil {
		return
	}
	keys, err := objectKeyOrder(bt)
	if err != nil {
		return
	}
	for _, k := range keys {
		if manifest.SpellsKnown(k) {
			// A typed field in other letter cases ("stAtus"): its value
			// is the field's, merged above. Taken from theirs after the
			// field, it would be what a reader decodes (encoding/json
			// takes the last of the keys it matches), whichever the merge
			// picked, and merge(a, b) would read otherwise than merge(b, a).
			continue
		}
		vb, ok := b.Extra(k)
		if !ok {
			continue
		}
		va, inA := a.Extra(k)
		if !inA {
			if base != nil {
				if _, inO := base.Extra(k); inO {
					continue // ours removed it
				}
			}
			m.SetExtra(k, vb)
			continue
		}
		if base != nil {
			if vo, inO := base.Extra(k); inO && bytes.Equal(compact(va), compact(vo)) && !bytes.Equal(compact(vb), compact(vo)) {
				m.SetExtra(k, vb)
			}
		}
	}
}
