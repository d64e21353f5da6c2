package lifecycle

import (
	"sort"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// UnseenDays and LowConfidence define "long-unseen low-confidence": an
// observation still observing, not seen for UnseenDays, below LowConfidence.
const (
	UnseenDays    = 30
	LowConfidence = 0.5
)

// Attention is an observation that needs a human's look, with why.
type Attention struct {
	ID         string   `json:"id"`
	Type       string   `json:"type"`
	Pattern    string   `json:"pattern"`
	Confidence float64  `json:"confidence"`
	Reasons    []string `json:"reasons"`
}

// Review lists the observations needing attention: needsReview, mayBeStale
// (with the reason), ready without quality_ok (render skips those),
// softCapExceeded, and long-unseen low-confidence ones.
func Review(obs []*manifest.Observation, now time.Time) []Attention {
	var out []Attention
	for _, o := range obs {
		var why []string
		if o.NeedsReview {
			why = append(why, "needs review (learnwatch edit "+o.ID+" to change it, learnwatch resolve "+o.ID+" --reason … to clear the flag)")
		}
		if o.MayBeStale {
			r := "may be stale"
			if o.StaleReason != "" {
				r += ": " + o.StaleReason
			}
			why = append(why, r)
		}
		if o.Status == manifest.Ready && !o.QualityOK {
			why = append(why, "ready but quality_ok is not true: render skips it")
		}
		if o.SoftCapExceeded {
			why = append(why, "knowledge file full (100 active entries): deprecate an entry to make room")
		}
		if o.Status == manifest.Observing && o.Confidence < LowConfidence {
			if last, err := time.Parse(time.RFC3339, o.LastSeen); err == nil && now.Sub(last) > UnseenDays*24*time.Hour {
				why = append(why, PurgeReason+": consider purging")
			}
		}
		if len(why) > 0 {
			out = append(out, Attention{ID: o.ID, Type: o.Type, Pattern: o.Pattern, Confidence: o.Confidence, Reasons: why})
		}
	}
	return out
}

// PurgeReason starts the reason of an observation listed only as a purge
// candidate.
const PurgeReason = "not seen for over 30 days with low confidence"

// ByConfidence returns obs sorted by confidence, highest first (stable).
func ByConfidence(obs []*manifest.Observation) []*manifest.Observation {
	out := append([]*manifest.Observation(nil), obs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Confidence > out[j].Confidence })
	return out
}

// Counts tallies observations by type and by status.
type Counts struct {
	Total    int                       `json:"total"`
	ByType   map[string]int            `json:"by_type"`
	ByStatus map[string]int            `json:"by_status"`
	Matrix   map[string]map[string]int `json:"by_type_status"`
	Corrupt  int                       `json:"corrupt"`
	Invalid  int                       `json:"invalid"`
	Review   int                       `json:"need_review"`
}

// Count tallies the log.
func Count(log *manifest.Log, now time.Time) Counts {
	c := Counts{ByType: map[string]int{}, ByStatus: map[string]int{}, Matrix: map[string]map[string]int{}}
	obs := log.Observations()
	for _, o := range obs {
		c.Total++
		c.ByType[o.Type]++
		c.ByStatus[o.Status]++
		if c.Matrix[o.Type] == nil {
			c.Matrix[o.Type] = map[string]int{}
		}
		c.Matrix[o.Type][o.Status]++
	}
	c.Corrupt = log.Corrupt()
	c.Invalid = log.InvalidCount()
	c.Review = len(Review(obs, now))
	return c
}
