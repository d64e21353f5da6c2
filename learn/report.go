package learn

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Report is the learning report (`learnwatch report`).
type Report struct {
	GeneratedAt     time.Time          `json:"generated_at"`
	Types           []TypeReport       `json:"types"` // strongest first
	Strongest       string             `json:"strongest,omitempty"`
	Weakest         string             `json:"weakest,omitempty"`
	FailurePatterns []FailurePattern   `json:"failure_patterns"` // top 10
	Overlays        []OverlayReport    `json:"overlays"`
	Maturity        map[Level]int      `json:"maturity"`
	Entries         map[Level][]string `json:"entries"`
	AntiPatterns    []AntiPattern      `json:"anti_patterns"`
	Regressions     []string           `json:"regressions"`
	Decay           []DecayBucket      `json:"decay"`
	Fading          []Fading           `json:"fading"`
	Strategies      []TypeReport       `json:"strategies"`
	// HalfLifeDays is the feedback half-life the report was built with.
	HalfLifeDays float64 `json:"half_life_days"`
}

// TypeReport is one type's (or strategy's) reliability.
type TypeReport struct {
	Name        string  `json:"name"`
	Reliability float64 `json:"reliability"`
	TypeStats
}

// OverlayReport is an active overlay.
type OverlayReport struct {
	Type string `json:"type"`
	Overlay
	Stale bool `json:"stale"`
}

// DecayBucket counts targets by days since their last feedback.
type DecayBucket struct {
	Range     string  `json:"range"`
	Targets   int     `json:"targets"`
	DecayFrom float64 `json:"decay_from"` // factor at the start of the range
	DecayTo   float64 `json:"decay_to"`   // factor at its end (0: open-ended)
}

// Fading is an entry that drops a maturity level within 30 days unless new
// feedback revalidates it.
type Fading struct {
	ID    string `json:"id"`
	Level Level  `json:"level"`
	In30d Level  `json:"level_in_30_days"`
}

// TopFailurePatterns is how many failure patterns a report lists.
const TopFailurePatterns = 10

// BuildReport summarises the learning state as of now. stats is Fold of
// the events; tallies is Tally of the events since the policy's resets.
func BuildReport(stats map[string]Stats, tallies map[string]TypeStats, outcomes []Outcome, p Policy, entries []Candidate, now time.Time) Report {
	r := Report{GeneratedAt: now, Maturity: CountByLevel(stats), Entries: map[Level][]string{},
		AntiPatterns: AntiPatterns(stats, entries), Regressions: Regressions(stats)}
	for _, typ := range Types {
		t := tallies[typ]
		r.Types = append(r.Types, TypeReport{Name: typ, Reliability: round4(Reliability(t)), TypeStats: t})
	}
	for typ, t := range tallies {
		if !IsType(typ) {
			r.Types = append(r.Types, TypeReport{Name: typ, Reliability: round4(Reliability(t)), TypeStats: t})
		}
	}
	sortReports(r.Types)
	var withData []TypeReport
	for _, t := range r.Types {
		if t.Total() > 0 {
			withData = append(withData, t)
		}
	}
	if len(withData) > 0 {
		r.Strongest, r.Weakest = withData[0].Name, withData[len(withData)-1].Name
	}
	r.FailurePatterns = FailurePatterns(tallies, RunFailures(outcomes, p.Resets))
	if len(r.FailurePatterns) > TopFailurePatterns {
		r.FailurePatterns = r.FailurePatterns[:TopFailurePatterns]
	}
	stale := map[string]bool{}
	for _, t := range StaleOverlays(p, now) {
		stale[t] = true
	}
	for typ, o := range p.Overlays {
		r.Overlays = append(r.Overlays, OverlayReport{Type: typ, Overlay: o, Stale: stale[typ]})
	}
	sort.Slice(r.Overlays, func(i, j int) bool { return r.Overlays[i].Type < r.Overlays[j].Type })

	ids := slices.Sorted(maps.Keys(stats))
	halfLife := HalfLifeDays
	if len(ids) > 0 {
		halfLife = stats[ids[0]].params.withDefaults().HalfLifeDays
	}
	bounds := []struct {
		name     string
		from, to float64 // days
	}{{"0-30 days", 0, 30}, {"30-90 days", 30, 90}, {"90-180 days", 90, 180}, {"180+ days", 180, math.Inf(1)}}
	for _, b := range bounds {
		d := DecayBucket{Range: b.name, DecayFrom: round4(math.Pow(0.5, b.from/halfLife))}
		if !math.IsInf(b.to, 1) {
			d.DecayTo = round4(math.Pow(0.5, b.to/halfLife))
		}
		r.Decay = append(r.Decay, d)
	}
	r.HalfLifeDays = halfLife
	later := now.Add(30 * 24 * time.Hour)
	for _, id := range ids {
		s := stats[id]
		r.Entries[s.Level] = append(r.Entries[s.Level], id)
		if !s.LastFeedback.IsZero() {
			days := now.Sub(s.LastFeedback).Hours() / 24
			for i, b := range bounds {
				if days < b.to || i == len(bounds)-1 {
					r.Decay[i].Targets++
					break
				}
			}
		}
		if l := s.At(later).Level; l != s.Level && s.Manual == "" {
			r.Fading = append(r.Fading, Fading{ID: id, Level: s.Level, In30d: l})
		}
	}
	for tag, t := range TallyOutcomes(outcomes) {
		r.Strategies = append(r.Strategies, TypeReport{Name: tag, Reliability: round4(Reliability(t)), TypeStats: t})
	}
	sortReports(r.Strategies)
	return r
}

func sortReports(rs []TypeReport) {
	sort.SliceStable(rs, func(i, j int) bool {
		a, b := rs[i], rs[j]
		if (a.Total() > 0) != (b.Total() > 0) {
			return a.Total() > 0
		}
		if a.Reliability != b.Reliability {
			return a.Reliability > b.Reliability
		}
		return a.Name < b.Name
	})
}

// Markdown renders the report for people.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Learning report\n\nGenerated %s.\n\n", r.GeneratedAt.UTC().Format(time.RFC3339))
	b.WriteString("## Reliability by type\n\n")
	if r.Strongest != "" {
		fmt.Fprintf(&b, "Strongest: **%s**. Weakest: **%s**.\n\n", r.Strongest, r.Weakest)
	}
	b.WriteString("| type | reliability | successes | failures |\n|---|---|---|---|\n")
	for _, t := range r.Types {
		rel := fmt.Sprintf("%.2f", t.Reliability)
		if t.Total() == 0 {
			rel = "no evidence"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %d |\n", t.Name, rel, t.Successes, t.Failures)
	}
	b.WriteString("\n## Top failure patterns\n\n")
	if len(r.FailurePatterns) == 0 {
		b.WriteString("None.\n")
	}
	for _, f := range r.FailurePatterns {
		fmt.Fprintf(&b, "- `%s` ×%d (confidence %.2f)\n", f.Key, f.Count, f.Confidence)
	}
	b.WriteString("\n## Active overlays\n\n")
	if len(r.Overlays) == 0 {
		b.WriteString("None.\n")
	}
	for _, o := range r.Overlays {
		approve := ""
		if o.RequiresApproval {
			approve = ", render waits for `learnwatch approve`"
		}
		stale := ""
		if o.Stale {
			stale = " — older than 30 days, review it (`learnwatch policy reset " + o.Type + "`)"
		}
		fmt.Fprintf(&b, "- **%s**: threshold ×%.2f%s; %s; updated %s%s\n", o.Type, o.ThresholdMultiplier, approve,
			o.Reason, o.UpdatedAt.UTC().Format("2006-01-02"), stale)
	}
	b.WriteString("\n## Entries by maturity\n\n")
	for _, l := range Levels {
		fmt.Fprintf(&b, "- %s (×%.1f): %d", l, l.Multiplier(), r.Maturity[l])
		if ids := r.Entries[l]; len(ids) > 0 {
			fmt.Fprintf(&b, " — %s", strings.Join(ids, ", "))
		}
		b.WriteString("\n")
	}
	if len(r.AntiPatterns) > 0 {
		b.WriteString("\n## Anti-patterns\n\n")
		for _, a := range r.AntiPatterns {
			fmt.Fprintf(&b, "- %s (%s)\n", a.Text, a.ID)
		}
	}
	if len(r.Regressions) > 0 {
		fmt.Fprintf(&b, "\n## Regressions\n\nReinforced ≥3 times, then flagged as a false positive: %s\n", strings.Join(r.Regressions, ", "))
	}
	fmt.Fprintf(&b, "\n## Decay timeline\n\nFeedback halves every %s days without new feedback.\n\n", strconv.FormatFloat(r.HalfLifeDays, 'f', -1, 64))
	b.WriteString("| since last feedback | entries | weight of their history |\n|---|---|---|\n")
	for _, d := range r.Decay {
		to := "→ 0%"
		if d.DecayTo > 0 {
			to = fmt.Sprintf("→ %.0f%%", 100*d.DecayTo)
		}
		fmt.Fprintf(&b, "| %s | %d | %.0f%% %s |\n", d.Range, d.Targets, 100*d.DecayFrom, to)
	}
	if len(r.Fading) > 0 {
		b.WriteString("\nDropping a level within 30 days unless they get new feedback:\n\n")
		for _, f := range r.Fading {
			fmt.Fprintf(&b, "- %s: %s → %s\n", f.ID, f.Level, f.In30d)
		}
	}
	if len(r.Strategies) > 0 {
		b.WriteString("\n## Run outcomes by strategy\n\n| strategy | reliability | runs | failed |\n|---|---|---|---|\n")
		for _, s := range r.Strategies {
			fmt.Fprintf(&b, "| %s | %.2f | %d | %d |\n", s.Name, s.Reliability, s.Total(), s.Failures)
		}
	}
	return b.String()
}
