package learn

import (
	"slices"
	"strings"
	"time"
	"unicode"
)

// MinTokenOverlap is the share of a false-positive text's words an entry
// must contain to match it when no exact substring does.
const MinTokenOverlap = 0.6

var idMentionRe = lazyRegexp(`\b(?:ADR|PF)-[0-9]+\b|\bobs_[A-Za-z0-9_.:-]+`)

var stopwords = map[string]bool{
	"the": true, "and": true, "for": true, "that": true, "this": true, "with": true, "are": true,
	"was": true, "not": true, "but": true, "from": true, "has": true, "have": true, "its": true,
	"into": true, "when": true, "then": true, "than": true, "should": true, "must": true,
}

// matchTokens returns the distinct words (letters/digits, ≥3 long, no
// stopwords) of s, lowercased.
func matchTokens(s string) []string {
	var out []string
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	}) {
		if len([]rune(w)) < 3 || stopwords[w] || slices.Contains(out, w) {
			continue
		}
		out = append(out, w)
	}
	return out
}

func squash(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

func entryText(c Candidate) string {
	return strings.Join([]string{c.ID, c.Title, c.Pattern, c.Area, c.Text}, "\n")
}

// MatchFalsePositive finds the knowledge entry a validator's false-positive
// text is about, in this order:
//  1. the text names an entry id (ADR-003, PF-012, obs_…): the first one
//     listed in entries, else the first named (an explicit reference counts
//     even when entries does not list it);
//  2. exact substring, ignoring case and runs of white space: the text
//     (≥3 characters) occurs in the entry's title, pattern, area or text, or
//     the entry's title (≥3 characters) occurs in the text;
//  3. token overlap: the share of the text's words (≥3 letters, common
//     words left out) found in the entry is at least 0.6.
//
// Several matches at one step: the highest token overlap wins, then the
// lowest ID. ok is false when nothing matches.
func MatchFalsePositive(text string, entries []Candidate) (id string, ok bool) {
	byID := map[string]bool{}
	for _, c := range entries {
		byID[c.ID] = true
	}
	mentions := idMentionRe().FindAllString(text, -1)
	for _, m := range mentions {
		if byID[m] {
			return m, true
		}
	}
	if len(mentions) > 0 {
		return mentions[0], true
	}
	q := squash(text)
	qt := matchTokens(text)
	best, bestExact, bestOverlap := "", false, -1.0
	for _, c := range entries {
		body := squash(entryText(c))
		title := squash(c.Title)
		exact := (len(q) >= 3 && strings.Contains(body, q)) || (len(title) >= 3 && strings.Contains(q, title))
		ov := overlap(qt, matchTokens(entryText(c)))
		if !exact && ov < MinTokenOverlap-eps {
			continue
		}
		better := false
		switch {
		case best == "":
			better = true
		case exact != bestExact:
			better = exact
		case ov != bestOverlap:
			better = ov > bestOverlap
		default:
			better = c.ID < best
		}
		if better {
			best, bestExact, bestOverlap = c.ID, exact, ov
		}
	}
	return best, best != ""
}

// overlap is the share of q's tokens present in in.
func overlap(q, in []string) float64 {
	if len(q) == 0 {
		return 0
	}
	set := make(map[string]bool, len(in))
	for _, t := range in {
		set[t] = true
	}
	n := 0
	for _, t := range q {
		if set[t] {
			n++
		}
	}
	return float64(n) / float64(len(q))
}

// Penalty weights of a false positive.
const (
	FalsePositiveWeight    = 1.0
	HighConfidencePenalty  = 1.5
	ReinforcingEvidenceMax = 2 // evidence levels 1 (execution output) and 2 (file:line) reinforce
	VerdictSourcePrefix    = "verdict:"
	OutcomeSourcePrefix    = "outcome:"
)

// VerdictEvents turns a validator verdict into feedback events:
//   - each false-positive text matched to an entry (MatchFalsePositive) gives
//     a false_positive event of value 1.5 when the role is one of
//     highConfidenceRoles (case-insensitive), else 1.0; one event per entry
//     and verdict even when several texts match it;
//   - a PASS with evidence level 1 or 2 gives a cited event per cited entry
//     and per entry relevant to the run's files (Overlaps), and an aged event
//     (one step older) to every other entry of entries; level 3 (reasoning
//     only) and FAIL reinforce and age nothing. An entry flagged in the same
//     verdict is neither reinforced nor aged.
//
// Every event carries the verdict's role. unmatched lists the false-positive
// texts no entry matched.
func VerdictEvents(v Verdict, entries []Candidate, highConfidenceRoles []string, now time.Time) (events []Event, unmatched []string) {
	src := VerdictSourcePrefix + v.RunID
	role := strings.ToLower(strings.TrimSpace(v.Role))
	w := FalsePositiveWeight
	for _, r := range highConfidenceRoles {
		if role != "" && strings.EqualFold(strings.TrimSpace(r), role) {
			w = HighConfidencePenalty
		}
	}
	flagged := map[string]bool{}
	for _, fp := range v.FalsePositives {
		id, ok := MatchFalsePositive(fp, entries)
		if !ok {
			unmatched = append(unmatched, fp)
			continue
		}
		if flagged[id] {
			continue
		}
		flagged[id] = true
		events = append(events, Event{TS: now, Target: id, Kind: KindFalsePositive, Value: w, Source: src,
			Type: TypeOf(id, entries), Reason: fp, Role: role})
	}
	if !v.Pass || v.EvidenceLevel < 1 || v.EvidenceLevel > ReinforcingEvidenceMax {
		return events, unmatched
	}
	seen := map[string]bool{}
	reinforce := func(id string) {
		if seen[id] || flagged[id] {
			return
		}
		seen[id] = true
		events = append(events, Event{TS: now, Target: id, Kind: KindCited, Value: 1, Source: src, Type: TypeOf(id, entries), Role: role})
	}
	for _, id := range v.Cited {
		reinforce(id)
	}
	if len(v.Files) > 0 {
		changed := normalisePaths(v.Files)
		for _, c := range entries {
			if overlaps(c, changed) {
				reinforce(c.ID)
			}
		}
	}
	if len(seen) == 0 {
		return events, unmatched // nothing reinforced: nothing to age against
	}
	for _, c := range entries {
		if seen[c.ID] || flagged[c.ID] {
			continue
		}
		seen[c.ID] = true
		events = append(events, Event{TS: now, Target: c.ID, Kind: KindAged, Value: 1, Source: src, Type: c.Type, Role: role})
	}
	return events, unmatched
}
