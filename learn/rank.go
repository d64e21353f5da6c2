package learn

import (
	"fmt"
	"math"
	"path"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// Candidate is an entry the index may show, filled by the caller from the
// knowledge files and the log.
type Candidate struct {
	ID     string   `json:"id"`               // ADR-001, PF-002, obs_…
	Type   string   `json:"type,omitempty"`   // workflow|procedural|decision|pitfall
	Title  string   `json:"title,omitempty"`  // heading title or pattern
	Status string   `json:"status,omitempty"` // as written (Accepted, Active, ready, created…)
	Area   string   `json:"area,omitempty"`   // the Area bullet of a pitfall, if any
	Refs   []string `json:"refs,omitempty"`   // repo paths the entry references (":LINE" allowed)
	// BaseScore is the entry's own confidence before learning: the
	// observation's confidence, or 1.0 for a human-written entry.
	BaseScore float64   `json:"base_score"`
	Pattern   string    `json:"pattern,omitempty"` // the observation's pattern (anti-pattern text)
	Text      string    `json:"-"`                 // the entry's full text (false-positive matching)
	Created   time.Time `json:"created,omitzero"`  // zero when unknown
}

// Ranked is a candidate with its score and the factors that made it.
type Ranked struct {
	Candidate
	Score      float64 `json:"score"`
	Weight     float64 `json:"weight"`
	Level      Level   `json:"level"`
	Multiplier float64 `json:"multiplier"`
	Recency    float64 `json:"recency"`
	Boost      float64 `json:"boost"`
	// Category is the category weight (CategoryWeight): rule 1.3, causal
	// 1.1, observation 1.0.
	Category     float64 `json:"category"`
	DaysSinceUse float64 `json:"days_since_use"`
}

// Category weights (the pattern learning loop: "a rule is multiplied by 1.3
// and a causal link by 1.1").
const (
	RuleWeight   = 1.3
	CausalWeight = 1.1
)

// Categories of an entry.
const (
	CategoryRule        = "rule"
	CategoryCausal      = "causal"
	CategoryObservation = "observation"
)

// CategoryOf is the category of an artifact type: a decision (an accepted
// ADR: what the team decided must be done) is a rule; a pitfall (an issue,
// its cause and its impact) is a causal link; workflows, procedures and
// anything else are observations.
func CategoryOf(typ string) string {
	switch typ {
	case "decision":
		return CategoryRule
	case "pitfall":
		return CategoryCausal
	}
	return CategoryObservation
}

// CategoryWeight is 1.3 for a rule, 1.1 for a causal link, else 1.
func CategoryWeight(typ string) float64 {
	switch CategoryOf(typ) {
	case CategoryRule:
		return RuleWeight
	case CategoryCausal:
		return CausalWeight
	}
	return 1
}

// Ranking constants (DESIGN.md §6).
const (
	RecencyDays        = 14.0 // exp(−days_since_use/14)
	ReinforcedNoDecay  = 3    // reinforcements after which recency no longer decays
	ContextBoost       = 1.2
	MinScore           = 0.1
	CharsPerToken      = 4
	DefaultBudgetToken = 800
)

// Rank scores candidates and returns those scoring ≥0.1, best first (ties by
// ID):
//
//	score = BaseScore × Weight × maturity multiplier × recency × boost × category
//
// Weight and maturity come from the target's stats (an entry without stats
// is a candidate, weight 1). recency = exp(−days_since_use/14), where
// days_since_use counts from the last cited/outcome event, else from the
// last feedback; no feedback counts as 0 days; each aged event since the
// last use adds AgeStepDays. An entry reinforced (helpful events) ≥3 times
// has recency 1. boost is 1.2 when the
// entry's Area or Refs overlap changedFiles (see Overlaps), else 1.
// category is CategoryWeight of the entry's type (its Type, else from its ID:
// ADR a decision, PF a pitfall).
func Rank(entries []Candidate, stats map[string]Stats, now time.Time, changedFiles []string) []Ranked {
	return RankWith(entries, stats, now, changedFiles, Params{})
}

// RankWith is Rank with the engine parameters p (recency time constant and
// immunity count; zero fields: defaults).
func RankWith(entries []Candidate, stats map[string]Stats, now time.Time, changedFiles []string, p Params) []Ranked {
	p = p.withDefaults()
	changed := normalisePaths(changedFiles)
	out := make([]Ranked, 0, len(entries))
	for _, c := range entries {
		s, ok := stats[c.ID]
		if !ok {
			s = finish(Stats{Target: c.ID, params: p}, now)
		}
		r := Ranked{Candidate: c, Weight: s.Weight, Level: s.Level, Multiplier: s.Multiplier, Recency: 1, Boost: 1}
		typ := c.Type
		if typ == "" {
			typ = TypeOf(c.ID, nil)
		}
		r.Category = CategoryWeight(typ)
		// Days since use: since the last citation or outcome, else since the
		// last feedback of any kind (a kept artifact is in use). An entry with
		// no feedback at all has no evidence to decay: recency 1 (the
		// candidate ×0.5 already discounts it), so a quiet repository's
		// knowledge does not vanish from the index after three weeks.
		since := s.LastUse
		if since.IsZero() {
			since = s.LastFeedback
		}
		if !since.IsZero() {
			r.DaysSinceUse = math.Max(0, now.Sub(since).Hours()/24)
		}
		immune := s.Reinforcements >= p.Immunity
		if !immune && s.Aged > 0 {
			// Validator passes that reinforced other entries age this one.
			r.DaysSinceUse += float64(s.Aged) * AgeStepDays
		}
		if !immune && (!since.IsZero() || s.Aged > 0) {
			r.Recency = math.Exp(-r.DaysSinceUse / p.RecencyDays)
		}
		if overlaps(c, changed) {
			r.Boost = ContextBoost
		}
		r.Score = c.BaseScore * r.Weight * r.Multiplier * r.Recency * r.Boost * r.Category
		if r.Score < MinScore-eps {
			continue
		}
		r.Score = round4(r.Score)
		r.DaysSinceUse = math.Round(r.DaysSinceUse*10) / 10
		r.Recency = round4(r.Recency)
		out = append(out, r)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// Overlaps reports whether a candidate's Refs or Area touch any of the
// changed files (repo-relative, "/" separated). A ref matches a file when,
// without ":LINE" and "./", it equals it or one is a directory of the other.
// The Area matches when one of its words (split on spaces, commas,
// semicolons) matches the same way or equals a directory name or the file
// name without extension of a changed file, ignoring case.
func Overlaps(c Candidate, changedFiles []string) bool {
	return overlaps(c, normalisePaths(changedFiles))
}

func overlaps(c Candidate, changed []string) bool {
	if len(changed) == 0 {
		return false
	}
	for _, ref := range c.Refs {
		r := normalisePath(ref)
		for _, f := range changed {
			if pathMatch(r, f) {
				return true
			}
		}
	}
	for _, w := range strings.FieldsFunc(strings.ToLower(c.Area), func(r rune) bool {
		return r == ' ' || r == ',' || r == ';' || r == '\t' || r == '(' || r == ')'
	}) {
		w = normalisePath(strings.Trim(w, "`'\"."))
		if len(w) < 2 {
			continue
		}
		for _, f := range changed {
			if pathMatch(w, strings.ToLower(f)) || segmentMatch(w, strings.ToLower(f)) {
				return true
			}
		}
	}
	return false
}

func normalisePaths(ps []string) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		if n := normalisePath(p); n != "" {
			out = append(out, n)
		}
	}
	return out
}

func normalisePath(p string) string {
	p = strings.TrimSpace(p)
	if i := strings.LastIndexByte(p, ':'); i > 0 && isDigits(p[i+1:]) {
		p = p[:i]
	}
	p = strings.ReplaceAll(p, "\\", "/")
	for strings.HasPrefix(p, "./") {
		p = p[2:]
	}
	return strings.TrimSuffix(p, "/")
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

func pathMatch(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return a == b || strings.HasPrefix(b, a+"/") || strings.HasPrefix(a, b+"/")
}

func segmentMatch(word, file string) bool {
	if strings.Contains(word, "/") {
		return false
	}
	segs := strings.Split(file, "/")
	last := segs[len(segs)-1]
	segs[len(segs)-1] = strings.TrimSuffix(last, path.Ext(last))
	for _, s := range segs {
		if s == word {
			return true
		}
	}
	return false
}

// Tokens estimates the tokens of text at 4 characters a token, rounded up.
func Tokens(text string) int {
	n := utf8.RuneCountInString(text)
	return (n + CharsPerToken - 1) / CharsPerToken
}

// EvidenceTags are the track record an index line carries (the pattern
// learning loop's "5x validated", "via:auditor"):
//   - "N× validated" — N helpful events since the last reset (kept, cited,
//     helpful runs, validator reinforcements);
//   - "N× flagged" — N harmful events (deletions, false positives, harmful
//     runs);
//   - "via: ROLE" — the validator role that last reinforced the entry, when
//     it is not the role the index is for;
//   - "avoid" — harmful evidence at least as heavy as helpful (decayed sums).
func EvidenceTags(s Stats, role string) []string {
	var out []string
	if s.HelpfulEvents > 0 {
		out = append(out, fmt.Sprintf("%d× validated", s.HelpfulEvents))
	}
	if s.HarmfulEvents > 0 {
		out = append(out, fmt.Sprintf("%d× flagged", s.HarmfulEvents))
	}
	// A role read from a repository's journal reaches the agent only when
	// it is one plain word.
	if ValidRole(s.Via) && !strings.EqualFold(s.Via, strings.TrimSpace(role)) {
		out = append(out, "via: "+s.Via)
	}
	if s.Harmful > 0 && s.Harmful >= s.Helpful {
		out = append(out, "avoid")
	}
	return out
}
