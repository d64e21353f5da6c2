package config

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultHighConfidenceRoles are the adversarial roles whose misfires lose
// ground faster (the pattern learning loop: sentinel and inspector).
var DefaultHighConfidenceRoles = []string{"sentinel", "inspector"}

// DefaultAdversarialRoles get the larger index budget (the pattern learning
// loop: auditor, judge, sentinel).
var DefaultAdversarialRoles = []string{"auditor", "judge", "sentinel"}

// Engine holds the learning engine's numbers, keys of the `learn:` section
// of learnwatch.yaml next to high_confidence_roles. Every key is optional;
// a key that is present must be valid (Validate), so a typo in a number is
// an error naming the key rather than a silent default.
type Engine struct {
	// HalfLifeDays: feedback weighs value·0.5^(days/half_life_days). 90.
	HalfLifeDays float64 `yaml:"half_life_days"`
	// RecencyDays: ranking recency is exp(−days_since_use/recency_days). 14.
	RecencyDays float64 `yaml:"recency_days"`
	// Immunity: an entry reinforced this many times no longer loses
	// recency. 3.
	Immunity int `yaml:"immunity"`
	// Maturity thresholds.
	Maturity Maturity `yaml:"maturity"`
	// Thresholds per observation type: sightings for full confidence,
	// confidence to promote, days between first and last sighting.
	Thresholds map[string]TypeThreshold `yaml:"thresholds"`
	// Budgets of the index per consumer role (`index --role R`).
	Budgets RoleBudgets `yaml:"budgets"`
}

// Maturity are the maturity ladder's thresholds.
type Maturity struct {
	// MinEvents helpful + harmful events leave candidate. 3.
	MinEvents int `yaml:"min_events"`
	// ProvenHelpful decayed helpful for proven. 5.
	ProvenHelpful float64 `yaml:"proven_helpful"`
	// ProvenMaxHarmful: the harmful ratio must be below it for proven. 0.15.
	ProvenMaxHarmful float64 `yaml:"proven_max_harmful"`
	// DeprecateHarmful: a harmful ratio above it deprecates. 0.3.
	DeprecateHarmful float64 `yaml:"deprecate_harmful"`
}

// TypeThreshold is the promotion rule of one observation type. A key left
// out of a type's entry keeps that type's default.
type TypeThreshold struct {
	Required   int     `yaml:"required"`
	Promote    float64 `yaml:"promote"`
	SpreadDays float64 `yaml:"spread_days"`
	// set records which keys the file gave (bit 1 required, 2 promote,
	// 4 spread_days, 8 read from a file); Validate fills the others from
	// the defaults.
	set uint8
}

// UnmarshalYAML records which keys are present. A key other than required,
// promote and spread_days is an error naming it and its line (a custom
// decoder does not inherit the file's strict decoding, so it checks itself).
func (t *TypeThreshold) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			switch k.Value {
			case "required", "promote", "spread_days":
			default:
				return fmt.Errorf("line %d: unknown key %q under a type of learn.thresholds (required, promote, spread_days)", k.Line, k.Value)
			}
		}
	}
	var raw struct {
		Required   *int     `yaml:"required"`
		Promote    *float64 `yaml:"promote"`
		SpreadDays *float64 `yaml:"spread_days"`
	}
	if err := n.Decode(&raw); err != nil {
		return err
	}
	*t = TypeThreshold{set: 8} // 8: read from the file
	if raw.Required != nil {
		t.Required, t.set = *raw.Required, t.set|1
	}
	if raw.Promote != nil {
		t.Promote, t.set = *raw.Promote, t.set|2
	}
	if raw.SpreadDays != nil {
		t.SpreadDays, t.set = *raw.SpreadDays, t.set|4
	}
	return nil
}

// MarshalYAML writes the three keys.
func (t TypeThreshold) MarshalYAML() (any, error) {
	return map[string]any{"required": t.Required, "promote": t.Promote, "spread_days": t.SpreadDays}, nil
}

// RoleBudgets are the index's token budgets per consumer role.
type RoleBudgets struct {
	// Adversarial is the budget of an adversarial role. 800.
	Adversarial int `yaml:"adversarial"`
	// Other is the budget of any other role. 500.
	Other int `yaml:"other"`
	// AdversarialRoles are the roles with the larger budget (auditor,
	// judge, sentinel).
	AdversarialRoles []string `yaml:"adversarial_roles"`
}

// DefaultThresholds are the promotion rules of the four observation types.
func DefaultThresholds() map[string]TypeThreshold {
	return map[string]TypeThreshold{
		"workflow":   {Required: 3, Promote: 0.60, SpreadDays: 3},
		"procedural": {Required: 4, Promote: 0.70, SpreadDays: 5},
		"decision":   {Required: 2, Promote: 0.65, SpreadDays: 0},
		"pitfall":    {Required: 2, Promote: 0.65, SpreadDays: 0},
	}
}

// DefaultEngine returns the engine's defaults: the values of the sources.
func DefaultEngine() Engine {
	return Engine{
		HalfLifeDays: 90, RecencyDays: 14, Immunity: 3,
		Maturity:   Maturity{MinEvents: 3, ProvenHelpful: 5, ProvenMaxHarmful: 0.15, DeprecateHarmful: 0.3},
		Thresholds: DefaultThresholds(),
		Budgets:    RoleBudgets{Adversarial: 800, Other: 500, AdversarialRoles: append([]string(nil), DefaultAdversarialRoles...)},
	}
}

// Validate checks every learning key and fills what a partial thresholds
// entry left out from the type's defaults. The error names the key
// ("learn.maturity.proven_max_harmful: must be from 0 to 1, got 1.5").
func (e *Engine) Validate() error {
	pos := func(key string, v, max float64) error {
		if math.IsNaN(v) || v <= 0 || v > max {
			return fmt.Errorf("learn.%s: must be a number above 0 and at most %g, got %g", key, max, v)
		}
		return nil
	}
	ratio := func(key string, v float64) error {
		if math.IsNaN(v) || v <= 0 || v >= 1 {
			return fmt.Errorf("learn.%s: must be a number between 0 and 1 (exclusive), got %g", key, v)
		}
		return nil
	}
	count := func(key string, v, max int) error {
		if v < 1 || v > max {
			return fmt.Errorf("learn.%s: must be a whole number from 1 to %d, got %d", key, max, v)
		}
		return nil
	}
	checks := []error{
		pos("half_life_days", e.HalfLifeDays, 3650),
		pos("recency_days", e.RecencyDays, 3650),
		count("immunity", e.Immunity, 1000),
		count("maturity.min_events", e.Maturity.MinEvents, 1000),
		pos("maturity.proven_helpful", e.Maturity.ProvenHelpful, 1e6),
		ratio("maturity.proven_max_harmful", e.Maturity.ProvenMaxHarmful),
		ratio("maturity.deprecate_harmful", e.Maturity.DeprecateHarmful),
		count("budgets.adversarial", e.Budgets.Adversarial, 100000),
		count("budgets.other", e.Budgets.Other, 100000),
	}
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if e.Maturity.ProvenMaxHarmful > e.Maturity.DeprecateHarmful {
		return fmt.Errorf("learn.maturity.proven_max_harmful (%g) must not be above learn.maturity.deprecate_harmful (%g)",
			e.Maturity.ProvenMaxHarmful, e.Maturity.DeprecateHarmful)
	}
	for i, r := range e.Budgets.AdversarialRoles {
		if strings.TrimSpace(r) == "" {
			return fmt.Errorf("learn.budgets.adversarial_roles[%d]: must not be empty", i)
		}
	}
	defaults := DefaultThresholds()
	merged := DefaultThresholds()
	for typ, th := range e.Thresholds {
		d, ok := defaults[typ]
		if !ok {
			return fmt.Errorf("learn.thresholds.%s: not an observation type (one of %s)", typ, strings.Join(slices.Sorted(mapsKeys(defaults)), ", "))
		}
		// A key left out of a type's entry keeps its default. An entry built
		// in Go (set == 0) is taken as it is.
		if th.set != 0 {
			if th.set&1 == 0 {
				th.Required = d.Required
			}
			if th.set&2 == 0 {
				th.Promote = d.Promote
			}
			if th.set&4 == 0 {
				th.SpreadDays = d.SpreadDays
			}
			th.set = 0
		}
		if err := count("thresholds."+typ+".required", th.Required, 1000); err != nil {
			return err
		}
		if math.IsNaN(th.Promote) || th.Promote <= 0 || th.Promote > 0.95 {
			return fmt.Errorf("learn.thresholds.%s.promote: must be above 0 and at most 0.95 (the confidence cap), got %g", typ, th.Promote)
		}
		if math.IsNaN(th.SpreadDays) || th.SpreadDays < 0 || th.SpreadDays > 3650 {
			return fmt.Errorf("learn.thresholds.%s.spread_days: must be from 0 to 3650, got %g", typ, th.SpreadDays)
		}
		merged[typ] = th
	}
	e.Thresholds = merged
	return nil
}

func mapsKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// For returns the index budget of a consumer role: Adversarial for a role
// listed in AdversarialRoles (ignoring case), else Other.
func (b RoleBudgets) For(role string) int {
	for _, r := range b.AdversarialRoles {
		if strings.EqualFold(strings.TrimSpace(r), strings.TrimSpace(role)) {
			return b.Adversarial
		}
	}
	return b.Other
}
