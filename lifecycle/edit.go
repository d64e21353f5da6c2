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
		switch {
		case f.v == nil:
		case len(*f.v) > MaxEditBytes:
			return fmt.Errorf("field %s: %d bytes, more than %d", f.name, len(*f.v), MaxEditBytes)
		case strings.ContainsRune(*f.v, 0):
			return fmt.Errorf("field %s: contains a NUL byte", f.name)
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
// (its "resolved" field): who cleared which flag, when and why.
type Resolution struct {
	At     string `json:"at"`
	Reason string `json:"reason"`
	// StaleReason is the staleness mark that was cleared: the staleness
	// pass does not set the same mark again.
	StaleReason string `json:"staleReason,omitempty"`
}

// Resolve clears o's review flags (needsReview, mayBeStale, staleReason)
// by hand and records why in o's "resolved" field. It reports whether
// there was anything to clear.
func Resolve(o *manifest.Observation, reason string, now time.Time) (bool, error) {
	if strings.TrimSpace(reason) == "" {
		return false, errors.New("--reason: say why the flag no longer applies")
	}
	if !o.NeedsReview && !o.MayBeStale && o.StaleReason == "" {
		return false, nil
	}
	r := Resolution{At: now.UTC().Format(time.RFC3339), Reason: reason, StaleReason: o.StaleReason}
	b, err := json.Marshal(r)
	if err != nil {
		return false, err
	}
	o.SetExtra("resolved", b)
	o.NeedsReview, o.MayBeStale, o.StaleReason = false, false, ""
	return true, nil
}

// ResolvedStale returns the staleness mark a person resolved on o ("" when
// none): the staleness pass leaves that mark off.
func ResolvedStale(o *manifest.Observation) string {
	raw, ok := o.Extra("resolved")
	if !ok {
		return ""
	}
	var r Resolution
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r.StaleReason
}
