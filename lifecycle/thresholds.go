package lifecycle

import "github.com/learnwatch/learnwatch/config"

// ThresholdsFrom converts learnwatch.yaml's learn.thresholds (validated and
// completed by config.Load) to promotion rules; types it does not name keep
// Thresholds.
func ThresholdsFrom(c map[string]config.TypeThreshold) map[string]Threshold {
	out := make(map[string]Threshold, len(Thresholds))
	for typ, t := range Thresholds {
		out[typ] = t
	}
	for typ, t := range c {
		if t.Required > 0 {
			out[typ] = Threshold{Required: t.Required, SpreadDays: t.SpreadDays, Promote: t.Promote}
		}
	}
	return out
}
