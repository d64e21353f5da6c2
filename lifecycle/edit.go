package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// Change is what `learnwatch edit` sets on an observation: nil leaves a
// field as it is.
type Change struct {
	Details *string `json:"details,omitempty"`
	Pattern *string `json:"pattern,omitempty"`
}

// MaxEditBytes bounds an edited pattern or details text.
const MaxEditBytes = 64 << 10

// ParseChange reads a Change from a JSON object ({"details": …,
// "pattern": …}); any other key, or a value that is not a string, is an
// error naming it.
func ParseChange(data []byte) (Change, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(bytes.TrimSpace(data), &raw); err != nil {
		return Change{}, fmt.Errorf("input is not a JSON object with details and/or pattern: %w", err)
	}
	var c Change
	for _, k := range slices.Sorted(maps.Keys(raw)) {
		var s string
		if err := json.Unmarshal(raw[k], &s); err != nil {
			return Change{}, fmt.Errorf("field %s: not a string", k)
		}
		switch k {
		case "details":
			c.Details = &s
		case "pattern":
			c.Pattern = &s
		default:
			return Change{}, fmt.Errorf("field %s: edit changes only details and pattern", k)
		}
	}
	return c, nil
}

// Edit applies c to o, validated like an observed observation: a pattern
// must not be blank, neither text may exceed MaxEditBytes or hold a NUL.
// Nothing is changed when an error is returned. Every other field of o,
// unknown ones included, is kept.
func Edit(o *manifest.Observation, c Change) error {
	if c.Details == nil && c.Pattern == nil {
		return errors.New("nothing to change: give --details, --pattern or a JSON object on stdin")
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"pattern", c.Pattern}, {"details", c.Details}} {
		if f.v != nil {
			if err := checkText(f.name, *f.v); err != nil {
				return err
			}
		}
	}
	next := o.Clone()
	if c.Pattern != nil {
		next.Pattern = *c.Pattern
	}
	if c.Details != nil {
		next.Details = *c.Details
	}
	if err := next.Validate(); err != nil {
		return err
	}
	o.Pattern, o.Details = next.Pattern, next.Details
	return nil
}

// Resolution is the record `learnwatch resolve` keeps on an observation
// (its "resolved" field): when, why, and which staleness marks a person
// declared fine.
type Resolution struct {
	At     string `json:"at"`
	Reason string `json:"reason"`
	// StaleReasons are the staleness marks resolved so far: the staleness
	// pass and the pre-commit check do not raise them again.
	StaleReasons []string `json:"staleReasons,omitempty"`
}

// Resolve clears o's review flags (needsReview, mayBeStale, staleReason)
// by hand and records why in o's "resolved" field, with the staleness mark
// it cleared. staleReason, when not empty, names a mark to resolve that is
// not set yet (a reference the pre-commit check reports before any
// reconcile marked it). It reports whether anything changed.
func Resolve(o *manifest.Observation, reason, staleReason string, now time.Time) (bool, error) {
	if strings.TrimSpace(reason) == "" {
		return false, errors.New("--reason: say why the flag no longer applies")
	}
	if staleReason == "" {
		staleReason = o.StaleReason
	}
	if !o.NeedsReview && !o.MayBeStale && staleReason == "" {
		return false, nil
	}
	r := resolution(o)
	r.At, r.Reason = now.UTC().Format(time.RFC3339), reason
	if staleReason != "" && !slices.Contains(r.StaleReasons, staleReason) {
		r.StaleReasons = append(r.StaleReasons, staleReason)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	o.SetExtra(manifest.ResolutionKey, b)
	o.NeedsReview, o.MayBeStale, o.StaleReason = false, false, ""
	return true, nil
}

func resolution(o *manifest.Observation) Resolution {
	var r Resolution
	if raw, ok := o.Extra(manifest.ResolutionKey); ok {
		_ = json.Unmarshal(raw, &r) // a hand-made record that does not fit starts over
	}
	return r
}

// Resolved reports whether a person resolved the staleness mark
// staleReason on o: the staleness pass leaves it off, the pre-commit check
// does not report it.
func Resolved(o *manifest.Observation, staleReason string) bool {
	return slices.Contains(resolution(o).StaleReasons, staleReason)
}
