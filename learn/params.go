package learn

import "github.com/learnwatch/learnwatch/config"

// Params are the tunable numbers of the learning engine: learnwatch.yaml's
// learn section (config.Learn, converted by ParamsFrom). The zero value
// means "the defaults": every function that takes Params treats a zero
// field as its default, so Fold and Rank without parameters behave as the
// sources specify.
type Params struct {
	// HalfLifeDays of feedback: value·0.5^(days/HalfLifeDays). Default 90.
	HalfLifeDays float64
	// RecencyDays is the time constant of recency exp(−days/RecencyDays).
	// Default 14.
	RecencyDays float64
	// Immunity is the number of reinforcements after which recency no
	// longer decays. Default 3.
	Immunity int
	// MinEvents is the number of helpful + harmful events an entry needs to
	// leave candidate (and to be deprecated by its ratio). Default 3.
	MinEvents int
	// ProvenHelpful is the decayed helpful sum for proven. Default 5.
	ProvenHelpful float64
	// ProvenMaxHarmful: the harmful ratio must be below it for proven.
	// Default 0.15.
	ProvenMaxHarmful float64
	// DeprecateHarmful: a harmful ratio above it deprecates. Default 0.3.
	DeprecateHarmful float64
}

// DefaultParams returns the values of the sources.
func DefaultParams() Params {
	return Params{
		HalfLifeDays:     HalfLifeDays,
		RecencyDays:      RecencyDays,
		Immunity:         ReinforcedNoDecay,
		MinEvents:        EstablishedEvents,
		ProvenHelpful:    ProvenHelpful,
		ProvenMaxHarmful: ProvenMaxHarmful,
		DeprecateHarmful: DeprecateMinHarmful,
	}
}

// withDefaults fills every zero (or negative) field with its default.
func (p Params) withDefaults() Params {
	d := DefaultParams()
	if !(p.HalfLifeDays > 0) {
		p.HalfLifeDays = d.HalfLifeDays
	}
	if !(p.RecencyDays > 0) {
		p.RecencyDays = d.RecencyDays
	}
	if p.Immunity <= 0 {
		p.Immunity = d.Immunity
	}
	if p.MinEvents <= 0 {
		p.MinEvents = d.MinEvents
	}
	if !(p.ProvenHelpful > 0) {
		p.ProvenHelpful = d.ProvenHelpful
	}
	if !(p.ProvenMaxHarmful > 0) {
		p.ProvenMaxHarmful = d.ProvenMaxHarmful
	}
	if !(p.DeprecateHarmful > 0) {
		p.DeprecateHarmful = d.DeprecateHarmful
	}
	return p
}

// ParamsFrom converts the learn section of learnwatch.yaml.
func ParamsFrom(c config.Learn) Params {
	return Params{
		HalfLifeDays:     c.HalfLifeDays,
		RecencyDays:      c.RecencyDays,
		Immunity:         c.Immunity,
		MinEvents:        c.Maturity.MinEvents,
		ProvenHelpful:    c.Maturity.ProvenHelpful,
		ProvenMaxHarmful: c.Maturity.ProvenMaxHarmful,
		DeprecateHarmful: c.Maturity.DeprecateHarmful,
	}
}
