package config

import (
	"fmt"
	"time"
)

// The repository's config is untrusted (it is committed, so a clone brings
// it): every numeric setting is held to a safe range. A value outside its
// range is clamped to the nearest bound with a warning naming the key, never
// an error, so a hook still runs. Zero or a negative value means the
// default. The ranges are documented in docs/config.md.

// IntRange is the safe range of an integer setting.
type IntRange struct {
	Key      string
	Min, Max int
}

// DurationRange is the safe range of a duration setting.
type DurationRange struct {
	Key      string
	Min, Max time.Duration
}

// Safe ranges of the numeric settings.
var (
	BudgetRange      = IntRange{"index.budget", 50, 4000}
	RenameDepthRange = IntRange{"staleness.rename_depth", 1, 10000}
	DebounceRange    = DurationRange{"watch.debounce", 10 * time.Millisecond, 10 * time.Second}
	MaxDelayRange    = DurationRange{"watch.max_delay", 100 * time.Millisecond, time.Minute}
	RescanRange      = DurationRange{"watch.rescan", 5 * time.Second, time.Hour}
	GraceRange       = DurationRange{"watch.grace", 100 * time.Millisecond, 10 * time.Minute}
	LockTimeoutRange = DurationRange{"lock.timeout", 100 * time.Millisecond, time.Minute}
)

// Clamp holds every numeric setting of c to its safe range and returns one
// warning per value it changed, naming the key, the value and what is used
// instead. Values <= 0 become 0, the default (Load applies it).
func (c *Config) Clamp() []string {
	var warn []string
	BudgetRange.clamp(&c.Index.Budget, &warn)
	RenameDepthRange.clamp(&c.Staleness.RenameDepth, &warn)
	DebounceRange.clamp(&c.Watch.Debounce.Duration, &warn)
	MaxDelayRange.clamp(&c.Watch.MaxDelay.Duration, &warn)
	RescanRange.clamp(&c.Watch.Rescan.Duration, &warn)
	GraceRange.clamp(&c.Watch.Grace.Duration, &warn)
	LockTimeoutRange.clamp(&c.Lock.Timeout.Duration, &warn)
	return warn
}

func (r IntRange) clamp(v *int, warn *[]string) {
	if *v <= 0 {
		*v = 0 // the default
		return
	}
	to := min(max(*v, r.Min), r.Max)
	if to != *v {
		*warn = append(*warn, fmt.Sprintf("%s: %s %d is outside the safe range %d–%d; using %d", FileName, r.Key, *v, r.Min, r.Max, to))
		*v = to
	}
}

func (r DurationRange) clamp(v *time.Duration, warn *[]string) {
	if *v <= 0 {
		*v = 0 // the default
		return
	}
	to := min(max(*v, r.Min), r.Max)
	if to != *v {
		*warn = append(*warn, fmt.Sprintf("%s: %s %s is outside the safe range %s–%s; using %s", FileName, r.Key, *v, r.Min, r.Max, to))
		*v = to
	}
}
