package learn

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// Policy is the adaptive render policy (.memory/learning-policy.json).
type Policy struct {
	// Overlays by artifact type.
	Overlays map[string]Overlay `json:"overlays"`
	// Approvals are observation ids a human let through a held type.
	Approvals []string `json:"approvals"`
	// Resets records when a human last reset a type: tallies only count
	// events after it, so a reset overlay does not come straight back.
	Resets map[string]time.Time `json:"resets"`
}

// Multiplier is the promote-threshold multiplier of observation type typ
// under p: its overlay's, else 1.
func (p Policy) Multiplier(typ string) float64 {
	if o, ok := p.Overlays[typ]; ok && o.ThresholdMultiplier > 0 {
		return o.ThresholdMultiplier
	}
	return 1
}

// Overlay tightens the rendering of one artifact type.
type Overlay struct {
	ThresholdMultiplier float64 `json:"threshold_multiplier"`
	RequiresApproval    bool    `json:"requires_approval"`
	Reason              string  `json:"reason"`
	// Reliability is the type's reliability at the last refresh.
	Reliability float64 `json:"reliability"`
	// UpdatedAt is when the overlay last changed (tightened).
	UpdatedAt time.Time `json:"updated_at"`
	// RelaxedBy is set when a person relaxed the type (`policy relax`): the
	// multiplier below 1 is theirs, and refreshes keep it while the type's
	// reliability stays above 0.9.
	RelaxedBy string `json:"relaxed_by,omitempty"`
}

// Overlay rules (DESIGN.md §6).
const (
	OverlayMinSamples  = 3    // a type needs this many successes+failures before an overlay
	LowReliability     = 0.7  // below: threshold ×1.4
	HighReliability    = 0.9  // above: a person may relax the type to ×0.9 (policy relax)
	ApprovalBelow      = 0.75 // below: render waits for approve
	ApprovalFailures   = 3    // this many failures of one reason: render waits for approve
	TightenMultiplier  = 1.4
	RelaxMultiplier    = 0.9
	ThresholdCap       = 0.95
	StaleOverlayMaxAge = 30 * 24 * time.Hour
)

// Types are the artifact types.
var Types = []string{"workflow", "procedural", "decision", "pitfall"}

// Clone returns a deep copy of p.
func (p Policy) Clone() Policy {
	q := Policy{Approvals: slices.Clone(p.Approvals)}
	if p.Overlays != nil {
		q.Overlays = make(map[string]Overlay, len(p.Overlays))
		for k, v := range p.Overlays {
			q.Overlays[k] = v
		}
	}
	if p.Resets != nil {
		q.Resets = make(map[string]time.Time, len(p.Resets))
		for k, v := range p.Resets {
			q.Resets[k] = v
		}
	}
	return q
}

// Overlays recomputes the overlays from per-type tallies (built with
// Tally(events, prev.Resets)) and returns the new policy; prev is not
// modified. A type with fewer than 3 samples gets nothing new. For the rest:
//
//	multiplier = 1.4 if reliability < 0.7, else 1.0
//	requires_approval = reliability < 0.75 or ≥3 failures of one reason
//
// Overlays only tighten: an existing overlay's multiplier never goes down and
// requires_approval never goes from true to false, and no multiplier below
// 1 is ever computed here — the source's ×0.9 for a reliability above 0.9 is
// a person's decision (Relax); a relaxed overlay keeps its ×0.9 while the
// type's reliability stays above 0.9 and is tightened back (×1.0, or ×1.4)
// when it drops. Only ResetType and Relax (a human) loosen. A type without
// an overlay whose computed multiplier is 1.0 and that needs no approval gets
// none. UpdatedAt and Reason change only when the multiplier or
// requires_approval change; Reliability is refreshed always.
func Overlays(prev Policy, tallies map[string]TypeStats, now time.Time) Policy {
	next := prev.Clone()
	for _, typ := range slices.Sorted(maps.Keys(tallies)) {
		t := tallies[typ]
		if t.Total() < OverlayMinSamples {
			continue
		}
		r := Reliability(t)
		m := 1.0
		if r < LowReliability-eps {
			m = TightenMultiplier
		}
		worst, worstN := worstReason(t.FailureReasons)
		req := r < ApprovalBelow-eps || worstN >= ApprovalFailures
		old, had := next.Overlays[typ]
		if had {
			switch {
			case old.RelaxedBy != "" && r > HighReliability+eps:
				// A person's relaxation stands while the type stays reliable.
				m = old.ThresholdMultiplier
			default:
				m = math.Max(old.ThresholdMultiplier, m)
			}
			req = req || old.RequiresApproval
		} else if m == 1 && !req {
			continue
		}
		o := old
		o.Reliability = round4(r)
		if !had || m != old.ThresholdMultiplier || req != old.RequiresApproval {
			o.ThresholdMultiplier, o.RequiresApproval, o.UpdatedAt = m, req, now
			o.Reason = overlayReason(typ, t, r, worst, worstN)
			if m >= 1 {
				o.RelaxedBy = ""
			}
		}
		if next.Overlays == nil {
			next.Overlays = map[string]Overlay{}
		}
		next.Overlays[typ] = o
	}
	return next
}

func worstReason(m map[string]int) (string, int) {
	best, n := "", 0
	for k, v := range m {
		if v > n || (v == n && k < best) {
			best, n = k, v
		}
	}
	return best, n
}

func overlayReason(typ string, t TypeStats, r float64, worst string, worstN int) string {
	s := fmt.Sprintf("reliability %.2f (%d/%d succeeded)", r, t.Successes, t.Total())
	if worstN > 0 {
		s += fmt.Sprintf("; %s::%s ×%d", typ, worst, worstN)
	}
	return s
}

func round4(x float64) float64 { return math.Round(x*10000) / 10000 }

// EffectiveThreshold is the promote threshold of typ under p: base ×
// multiplier, capped at 0.95 (a base already above the cap is left as is).
func EffectiveThreshold(p Policy, typ string, base float64) float64 {
	o, ok := p.Overlays[typ]
	if !ok || o.ThresholdMultiplier <= 0 {
		return base
	}
	v := base * o.ThresholdMultiplier
	if v > ThresholdCap {
		v = math.Max(base, ThresholdCap)
	}
	return math.Round(v*10000) / 10000
}

// Held reports whether render must hold a ready observation of typ: its
// type's overlay requires approval and obsID has not been approved.
func Held(p Policy, typ, obsID string) bool {
	o, ok := p.Overlays[typ]
	return ok && o.RequiresApproval && !slices.Contains(p.Approvals, obsID)
}

// Approve returns p with obsID approved (idempotent, approvals sorted).
func Approve(p Policy, obsID string) Policy {
	q := p.Clone()
	if !slices.Contains(q.Approvals, obsID) {
		q.Approvals = append(q.Approvals, obsID)
		sort.Strings(q.Approvals)
	}
	return q
}

// ResetType returns p without typ's overlay and with typ's reset time set
// to now, so that tallies start afresh from now.
func ResetType(p Policy, typ string, now time.Time) Policy {
	q := p.Clone()
	delete(q.Overlays, typ)
	if q.Resets == nil {
		q.Resets = map[string]time.Time{}
	}
	q.Resets[typ] = now
	return q
}

// StaleOverlays returns the types whose overlay has not changed for more
// than 30 days (review warns about them), sorted.
func StaleOverlays(p Policy, now time.Time) []string {
	var out []string
	for typ, o := range p.Overlays {
		if !o.UpdatedAt.IsZero() && now.Sub(o.UpdatedAt) > StaleOverlayMaxAge {
			out = append(out, typ)
		}
	}
	sort.Strings(out)
	return out
}

// IsType reports whether s is an artifact type.
func IsType(s string) bool { return slices.Contains(Types, s) }

// TypeOf returns the artifact type of an entry id: from entries when listed
// there, else decision for ADR-…, pitfall for PF-…, else "".
func TypeOf(id string, entries []Candidate) string {
	for _, c := range entries {
		if c.ID == id && c.Type != "" {
			return c.Type
		}
	}
	switch {
	case strings.HasPrefix(id, "ADR-"):
		return "decision"
	case strings.HasPrefix(id, "PF-"):
		return "pitfall"
	}
	return ""
}

// RelaxError says why a type cannot be relaxed.
type RelaxError struct{ Msg string }

func (e *RelaxError) Error() string { return e.Msg }

// Relax is a person's decision to loosen typ's promote threshold to ×0.9
// (the source's "reliability > 0.9 relaxes"; learnwatch never does it by
// itself). It is allowed only when the type has at least 3 samples and a
// reliability above 0.9 now (t is Tally's tallies of the type); the overlay
// records the multiplier, who relaxed it (one plain word, else "a person")
// and why (one line, control characters dropped), drops requires_approval
// only if the reliability would not set it, and keeps everything else of the
// policy. reason is required.
func Relax(p Policy, typ string, t TypeStats, who, reason string, now time.Time) (Policy, error) {
	reason = strings.Join(strings.Fields(dropControls(reason, false)), " ")
	if reason == "" {
		return p, &RelaxError{"a reason is required"}
	}
	if !ValidRole(who) {
		who = "a person"
	}
	r := Reliability(t)
	if t.Total() < OverlayMinSamples {
		return p, &RelaxError{fmt.Sprintf("%s has %d sample(s) since its last reset; relaxing needs at least %d", typ, t.Total(), OverlayMinSamples)}
	}
	if !(r > HighReliability+eps) {
		return p, &RelaxError{fmt.Sprintf("%s has reliability %.2f; relaxing needs more than %.2f", typ, r, HighReliability)}
	}
	_, worstN := worstReason(t.FailureReasons)
	q := p.Clone()
	if q.Overlays == nil {
		q.Overlays = map[string]Overlay{}
	}
	q.Overlays[typ] = Overlay{ThresholdMultiplier: RelaxMultiplier, RequiresApproval: worstN >= ApprovalFailures,
		Reason:      fmt.Sprintf("relaxed by %s: %s (reliability %.2f)", who, reason, r),
		Reliability: round4(r), UpdatedAt: now, RelaxedBy: who}
	return q, nil
}

// OverlayChange is one type's overlay moving between two policies.
type OverlayChange struct {
	Type           string  `json:"type"`
	Before         float64 `json:"multiplier_before"` // 1: no overlay
	After          float64 `json:"multiplier_after"`
	ApprovalBefore bool    `json:"requires_approval_before"`
	ApprovalAfter  bool    `json:"requires_approval_after"`
	Reason         string  `json:"reason"`
}

// PolicyDiff lists the types whose multiplier or approval differ between
// prev and next (sorted by type): what a refresh changed and why (the new
// overlay's reason, or "overlay removed").
func PolicyDiff(prev, next Policy) []OverlayChange {
	types := map[string]bool{}
	for t := range prev.Overlays {
		types[t] = true
	}
	for t := range next.Overlays {
		types[t] = true
	}
	out := []OverlayChange{}
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		a, hadA := prev.Overlays[typ]
		b, hadB := next.Overlays[typ]
		c := OverlayChange{Type: typ, Before: 1, After: 1}
		if hadA && a.ThresholdMultiplier > 0 {
			c.Before = a.ThresholdMultiplier
		}
		if hadB && b.ThresholdMultiplier > 0 {
			c.After = b.ThresholdMultiplier
		}
		c.ApprovalBefore, c.ApprovalAfter = hadA && a.RequiresApproval, hadB && b.RequiresApproval
		if c.Before == c.After && c.ApprovalBefore == c.ApprovalAfter {
			continue
		}
		c.Reason = b.Reason
		if !hadB {
			c.Reason = "overlay removed"
		}
		out = append(out, c)
	}
	return out
}

// Retry budgets of the adaptive policy.
const (
	BaseRetries      = 2 // what a run of a type may retry by default
	TightenedRetries = 1 // under an overlay that tightens the type
)

// SuggestedRetries is the retry budget the policy suggests for a run of
// typ: 2, or 1 when the type's overlay tightens it (multiplier above 1 or
// approval required). A relaxed overlay keeps 2.
func SuggestedRetries(p Policy, typ string) int {
	o, ok := p.Overlays[typ]
	if ok && (o.ThresholdMultiplier > 1+eps || o.RequiresApproval) {
		return TightenedRetries
	}
	return BaseRetries
}

// RunRetryBudgets is the suggested retry budget (SuggestedRetries) of every
// type a recorded run touched: the types of the entries it cited (its
// outcome events) and the run's own Type.
func RunRetryBudgets(p Policy, o Outcome, events []Event) map[string]int {
	out := map[string]int{}
	if o.Type != "" {
		out[o.Type] = SuggestedRetries(p, o.Type)
	}
	for _, e := range events {
		if e.Type != "" {
			out[e.Type] = SuggestedRetries(p, e.Type)
		}
	}
	return out
}
