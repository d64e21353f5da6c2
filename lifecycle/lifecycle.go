// Package lifecycle owns the observation lifecycle of DESIGN.md §2: how a
// new sighting is matched to an existing observation, merged, and promoted
// to ready. It works on a manifest.Log in memory and does no I/O.
package lifecycle

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// Threshold is the promotion rule of one observation type.
type Threshold struct {
	Required   int     // sightings for full confidence
	SpreadDays float64 // minimum days between first and last sighting
	Promote    float64 // confidence needed for ready
}

// Thresholds per type (DESIGN.md §2).
var Thresholds = map[string]Threshold{
	manifest.Workflow:   {Required: 3, SpreadDays: 3, Promote: 0.60},
	manifest.Procedural: {Required: 4, SpreadDays: 5, Promote: 0.70},
	manifest.Decision:   {Required: 2, SpreadDays: 0, Promote: 0.65},
	manifest.Pitfall:    {Required: 2, SpreadDays: 0, Promote: 0.65},
}

// Constants of the lifecycle.
const (
	FirstConfidence = 0.33
	MaxConfidence   = 0.95
	MaxEvidence     = 10
	DeletionFactor  = 0.3
)

// Normalize lowercases s and keeps only [a-z0-9 ] (other whitespace becomes
// a space first, so a pattern rendered on one line still matches), trimmed.
// A pattern in ASCII (nearly all of them) is done byte by byte, in one
// allocation: Unicode's lower case maps no other byte into [a-z0-9].
func Normalize(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			return normalizeUnicode(s)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+('a'-'A'))
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == ' ':
			b = append(b, c)
		case c == '\t' || c == '\n' || c == '\r':
			b = append(b, ' ')
		}
	}
	return string(bytes.Trim(b, " "))
}

// normalizeUnicode is Normalize of any text: lowered as Unicode lowers it
// (the Kelvin sign is a k, a dotted capital I an i and a combining dot).
func normalizeUnicode(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == ' ':
			b.WriteRune(r)
		case r == '\t' || r == '\n' || r == '\r':
			b.WriteByte(' ')
		}
	}
	return strings.TrimSpace(b.String())
}

// Confidence for count sightings of a type: min(floor(count*100/required), 95)/100.
func Confidence(typ string, count int) float64 { return confidence(Thresholds[typ], count) }

func confidence(th Threshold, count int) float64 {
	req := th.Required
	if req <= 0 {
		req = 1
	}
	pct := count * 100 / req
	if pct > 95 {
		pct = 95
	}
	return float64(pct) / 100
}

// Round2 rounds to two decimals.
func Round2(v float64) float64 { return math.Round(v*100) / 100 }

// Penalize applies the deletion penalty of DESIGN.md §4 to o.
func Penalize(o *manifest.Observation, now time.Time) {
	o.Confidence = Round2(o.Confidence * DeletionFactor)
	o.Status = manifest.Deprecated
	o.DeprecatedAt = now.UTC().Format(time.RFC3339)
}

// Ready reports whether o meets the promotion rule, with the type's promote
// threshold multiplied by mult (1 when no policy overlay applies; the result
// is capped at MaxConfidence).
func Ready(o *manifest.Observation, mult float64) bool { return ReadyWith(o, mult, nil) }

// ReadyWith is Ready with the promotion rules th (per type; nil or a type
// missing from it: Thresholds).
func ReadyWith(o *manifest.Observation, mult float64, th map[string]Threshold) bool {
	t, ok := thresholdOf(th, o.Type)
	if !ok || !o.QualityOK {
		return false
	}
	if mult <= 0 {
		mult = 1
	}
	promote := math.Min(t.Promote*mult, MaxConfidence)
	if o.Confidence+1e-9 < promote {
		return false
	}
	first, err1 := time.Parse(time.RFC3339, o.FirstSeen)
	last, err2 := time.Parse(time.RFC3339, o.LastSeen)
	if err1 != nil || err2 != nil {
		return t.SpreadDays == 0
	}
	return last.Sub(first).Hours()/24 >= t.SpreadDays
}

// thresholdOf returns typ's rule from th, else from Thresholds.
func thresholdOf(th map[string]Threshold, typ string) (Threshold, bool) {
	if t, ok := th[typ]; ok && t.Required > 0 {
		return t, true
	}
	t, ok := Thresholds[typ]
	return t, ok
}

// pitfallKey returns the first 40 normalised characters of Area and Issue.
func pitfallKey(details string) (area, issue string) {
	d := markdown.ParseDetails(details)
	return prefix40(Normalize(d["area"])), prefix40(Normalize(d["issue"]))
}

func prefix40(s string) string {
	if len(s) > 40 {
		return s[:40]
	}
	return s
}

// PitfallKey is the dedupe key of a pitfall (normalised Area and Issue
// prefixes); empty when both are empty.
func PitfallKey(area, issue string) string {
	a, i := prefix40(Normalize(area)), prefix40(Normalize(issue))
	if a == "" && i == "" {
		return ""
	}
	return a + "\x00" + i
}

// matcher finds the observation a sighting merges into (DESIGN.md §2): the
// first in the log's order with its id, of its type and not deprecated;
// else the first not deprecated, of its type, whose normalised pattern is
// the sighting's or, for a pitfall, whose normalised area and issue
// prefixes are the sighting's (both non-empty). It indexes the log's
// observations (those of the batch's types and ids: Observer.cover) once
// per batch instead of comparing each sighting with every one of them, which
// normalised both patterns each time: 20,000 sightings into an empty log
// took 2 min 50 s.
type matcher struct {
	byID      map[string][]*indexed
	byPattern map[patternKey]*indexed // the first not deprecated
	byPitfall map[[2]string]*indexed  // the first not deprecated
	n         int
	used      map[string]bool // usedIDs, once asked for
}

// indexed is an observation and its place in the log's order.
type indexed struct {
	o   *manifest.Observation
	pos int
}

type patternKey struct{ typ, norm string }

// newMatcher indexes obs, in the log's order.
func newMatcher(obs []*manifest.Observation) *matcher {
	m := &matcher{byID: make(map[string][]*indexed, len(obs)), byPattern: make(map[patternKey]*indexed, len(obs)),
		byPitfall: map[[2]string]*indexed{}}
	for _, o := range obs {
		m.add(o)
	}
	return m
}

// usedIDs returns the ids of every line of log that holds an observation,
// valid or not, and of those the batch added: made when a sighting first
// needs an id of its own, then kept up to date by add (a batch whose ids
// all belong to observations of another type made it once per sighting).
func (m *matcher) usedIDs(log *manifest.Log) map[string]bool {
	if m.used == nil {
		m.used = make(map[string]bool, len(log.Lines))
		for _, ln := range log.Lines {
			if ln.Parsed() {
				m.used[ln.ID()] = true
			}
		}
	}
	return m.used
}

// add notes o, the last observation of the log.
func (m *matcher) add(o *manifest.Observation) {
	if m.used != nil {
		m.used[o.ID] = true
	}
	e := &indexed{o: o, pos: m.n}
	m.n++
	m.byID[o.ID] = append(m.byID[o.ID], e)
	if o.Status == manifest.Deprecated {
		return // never matched (a merge never deprecates)
	}
	if k := (patternKey{o.Type, Normalize(o.Pattern)}); m.byPattern[k] == nil {
		m.byPattern[k] = e
	}
	m.notePitfall(e)
}

// notePitfall notes e's pitfall key, if it has one, where e comes first.
func (m *matcher) notePitfall(e *indexed) {
	if e.o.Type != manifest.Pitfall {
		return
	}
	a, i := pitfallKey(e.o.Details)
	if a == "" || i == "" {
		return
	}
	if k := [2]string{a, i}; m.byPitfall[k] == nil || m.byPitfall[k].pos > e.pos {
		m.byPitfall[k] = e
	}
}

// merged notes that o took a sighting: merge may have given it details
// (and so a pitfall key) it had none of; its type, pattern and status
// (deprecated or not) stay.
func (m *matcher) merged(o *manifest.Observation) {
	for _, e := range m.byID[o.ID] {
		if e.o == o {
			m.notePitfall(e)
		}
	}
}

// find returns the observation in merges into (nil: none), and whether an
// observation has in's id.
func (m *matcher) find(in *manifest.Observation) (target *manifest.Observation, idTaken bool) {
	for _, e := range m.byID[in.ID] {
		idTaken = true
		if e.o.Type == in.Type && e.o.Status != manifest.Deprecated {
			return e.o, true
		}
	}
	best := m.byPattern[patternKey{in.Type, Normalize(in.Pattern)}]
	if in.Type == manifest.Pitfall {
		if a, i := pitfallKey(in.Details); a != "" && i != "" {
			if e := m.byPitfall[[2]string{a, i}]; e != nil && (best == nil || e.pos < best.pos) {
				best = e
			}
		}
	}
	if best == nil {
		return nil, idTaken
	}
	return best.o, idTaken
}

// Result of merging incoming observations into a log.
type Result struct {
	Created  int      `json:"created"`
	Merged   int      `json:"merged"`
	Skipped  int      `json:"skipped"`
	IDs      []string `json:"ids"`
	Promoted []string `json:"promoted,omitempty"`
	// Messages explain each skipped observation, naming it and the field.
	Messages []string `json:"messages,omitempty"`
}

// Observe merges incoming sightings into log (DESIGN.md §2). mult returns
// the promote-threshold multiplier of a type (nil: 1). The incoming
// observations are not modified.
func Observe(log *manifest.Log, incoming []*manifest.Observation, now time.Time, mult func(typ string) float64) Result {
	return ObserveWith(log, incoming, now, mult, nil)
}

// ObserveWith is Observe with the promotion rules th (learnwatch.yaml's
// learn.thresholds; nil: Thresholds): a sighting's confidence counts
// towards th's required, and promotion uses th's promote and spread days.
func ObserveWith(log *manifest.Log, incoming []*manifest.Observation, now time.Time, mult func(typ string) float64, th map[string]Threshold) Result {
	return NewObserver(log, incoming, mult, th).Observe(incoming, now)
}

// An Observer merges batches of sightings into one log, one batch after
// the other, each with its own clock: for each batch what ObserveWith
// does, with the log indexed once for all of them. The inbox drain merges
// its queued items so, in their order; indexed again for every item, 100
// items took 0.3 s at 10k.
type Observer struct {
	log        *manifest.Log
	mult       func(typ string) float64
	th         map[string]Threshold
	types, ids map[string]bool // the lines the index holds (cover)
	idx        *matcher        // made at the first valid sighting
}

// NewObserver prepares to merge into log the batches whose sightings are
// among all, with the multiplier and promotion rules ObserveWith takes.
// A batch with a sighting of another type or id is merged all the same:
// the log is then indexed again.
func NewObserver(log *manifest.Log, all []*manifest.Observation, mult func(typ string) float64, th map[string]Threshold) *Observer {
	ob := &Observer{log: log, mult: mult, th: th, types: map[string]bool{}, ids: map[string]bool{}}
	ob.cover(all)
	return ob
}

// cover widens the lines to index to those a sighting of batch can merge
// into or must not take the id of: those of its types and those of its
// ids. No other line can match one of them, so the others are not
// decoded (a sighting into a 10k memory decoded all 10,000, and the write
// then checked each for changes). It reports whether it had to widen.
func (ob *Observer) cover(batch []*manifest.Observation) bool {
	widened := false
	for _, in := range batch {
		if in == nil || ob.types[in.Type] && ob.ids[in.ID] {
			continue
		}
		ob.types[in.Type], ob.ids[in.ID] = true, true
		widened = true
	}
	return widened
}

// Observe merges incoming into the log at now (ObserveWith). The
// incoming observations are not modified.
func (ob *Observer) Observe(incoming []*manifest.Observation, now time.Time) Result {
	var res Result
	res.IDs = []string{}
	stamp := now.UTC().Format(time.RFC3339)
	if ob.cover(incoming) {
		ob.idx = nil // index again, with the lines of the new types and ids
	}
	log, th := ob.log, ob.th
	m := func(t string) float64 {
		if ob.mult == nil {
			return 1
		}
		return ob.mult(t)
	}
	for i, in := range incoming {
		if msg := SightingProblem(i, in); msg != "" {
			res.Skipped++
			res.Messages = append(res.Messages, msg)
			continue
		}
		if ob.idx == nil {
			ob.idx = newMatcher(log.Select(func(e manifest.LogEntry) bool { return ob.types[e.Type] || ob.ids[e.ID] }))
		}
		idx := ob.idx
		target, idTaken := idx.find(in)
		if target != nil {
			merge(target, in, stamp, th)
			idx.merged(target)
			if target.Status == manifest.Observing && ReadyWith(target, m(target.Type), th) {
				target.Status = manifest.Ready
				res.Promoted = append(res.Promoted, target.ID)
			}
			res.Merged++
			res.IDs = append(res.IDs, target.ID)
			continue
		}
		o := in.Clone()
		if idTaken {
			o.ID = freeID(idx.usedIDs(log), in.ID)
		}
		o.Confidence = FirstConfidence
		o.Observations = 1
		o.FirstSeen, o.LastSeen = stamp, stamp
		o.Status = manifest.Observing
		o.Evidence = mergeEvidence(nil, in.Evidence)
		o.ArtifactPath, o.DeprecatedAt = "", ""
		if ReadyWith(o, m(o.Type), th) {
			o.Status = manifest.Ready
			res.Promoted = append(res.Promoted, o.ID)
		}
		log.Append(o)
		idx.add(o)
		res.Created++
		res.IDs = append(res.IDs, o.ID)
	}
	return res
}

// freeID returns id with a suffix (_b, _c, …) that no id in used is, the
// id cut short when needed so that the result stays a valid id.
func freeID(used map[string]bool, id string) string {
	if len(id) > manifest.MaxIDLen-12 {
		id = id[:manifest.MaxIDLen-12]
	}
	for c := 'b'; c <= 'z'; c++ {
		cand := id + "_" + string(c)
		if !used[cand] {
			return cand
		}
	}
	for n := 2; ; n++ {
		cand := fmt.Sprintf("%s_%d", id, n)
		if !used[cand] {
			return cand
		}
	}
}

func merge(o, in *manifest.Observation, stamp string, th map[string]Threshold) {
	o.Observations++
	t, _ := thresholdOf(th, o.Type)
	o.Confidence = confidence(t, o.Observations)
	o.Evidence = mergeEvidence(o.Evidence, in.Evidence)
	o.LastSeen = stamp
	if in.QualityOK {
		o.QualityOK = true
	}
	if strings.TrimSpace(o.Details) == "" && in.Details != "" {
		o.Details = in.Details
	}
}

// mergeEvidence appends new items not already present, keeping the newest
// MaxEvidence (oldest dropped first).
func mergeEvidence(old, add []string) []string {
	out := append([]string{}, old...)
	seen := map[string]bool{}
	for _, e := range out {
		seen[e] = true
	}
	for _, e := range add {
		if e == "" || seen[e] {
			continue
		}
		seen[e] = true
		out = append(out, e)
	}
	if len(out) > MaxEvidence {
		out = append([]string{}, out[len(out)-MaxEvidence:]...)
	}
	return out
}
