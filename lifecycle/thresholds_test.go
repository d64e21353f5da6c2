package lifecycle

import (
	"testing"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// The per-type thresholds of learnwatch.yaml drive confidence and promotion.
func TestObserveWithConfiguredThresholds(t *testing.T) {
	sight := func() []*manifest.Observation {
		return []*manifest.Observation{{ID: "obs_wf_lint", Type: manifest.Workflow, Pattern: "Run make lint before pushing",
			Evidence: []string{"session: lint caught an unused import"}, QualityOK: true}}
	}
	cases := []struct {
		name      string
		cfg       map[string]config.TypeThreshold
		sightings int
		days      int // between sightings
		wantConf  float64
		wantReady bool
	}{
		// Defaults: required 3, promote 0.60, spread 3 days. Two sightings a
		// day apart: floor(2·100/3)/100 = 0.66 ≥ 0.60 but spread 1 < 3: observing.
		{"defaults", nil, 2, 1, 0.66, false},
		// required 2, spread 0: floor(2·100/2) = 100 → capped 0.95 ≥ 0.60: ready.
		{"required 2 spread 0", map[string]config.TypeThreshold{"workflow": {Required: 2, Promote: 0.6}}, 2, 1, 0.95, true},
		// required 4, promote 0.5: floor(2·100/4)/100 = 0.50 ≥ 0.50, spread 2 ≥ 1: ready.
		{"required 4 promote 0.5", map[string]config.TypeThreshold{"workflow": {Required: 4, Promote: 0.5, SpreadDays: 1}}, 2, 2, 0.5, true},
		// promote 0.9 with required 3: 3 sightings give 0.95 ≥ 0.9 but 2 give 0.66: observing.
		{"promote 0.9", map[string]config.TypeThreshold{"workflow": {Required: 3, Promote: 0.9}}, 2, 5, 0.66, false},
	}
	for _, c := range cases {
		log := &manifest.Log{}
		th := ThresholdsFrom(c.cfg)
		for i := 0; i < c.sightings; i++ {
			ObserveWith(log, sight(), day0.AddDate(0, 0, i*c.days), nil, th)
		}
		obs := log.Observations()
		if len(obs) != 1 {
			t.Fatalf("%s: %d observations", c.name, len(obs))
		}
		o := obs[0]
		if o.Confidence != c.wantConf || (o.Status == manifest.Ready) != c.wantReady {
			t.Errorf("%s: confidence %v status %s, want %v ready=%v", c.name, o.Confidence, o.Status, c.wantConf, c.wantReady)
		}
	}
	// Types the configuration does not name keep their rule.
	if got := ThresholdsFrom(map[string]config.TypeThreshold{"workflow": {Required: 9, Promote: 0.9}})[manifest.Procedural]; got != Thresholds[manifest.Procedural] {
		t.Errorf("procedural changed: %+v", got)
	}
}
