package learn

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/learnwatch/learnwatch/codec"
)

// The fold state is a Folder's raw (undecayed) per-target sums exactly as
// Add leaves them, in a compact binary form a snapshot can hold and read
// back in well under a millisecond per thousand targets. Floats keep their
// bits; times go through time.Time's own binary form, which reads back
// with the very zone rules time.Parse applied to the journal line (UTC
// for "Z", the local zone when the offset matches it, else a fixed zone),
// so a folder read back continues exactly where it stopped.
//
//	"lwfold2" events:varint newest:time targets:uvarint
//	  target... (sorted by id): id type helpful harmful neutral
//	  helpful_events harmful_events neutral_events last_feedback last_use
//	  reinforcements outcomes outcome_failures regression aged via
//	  deleted:uvarint (float of)... manual manual_reason manual_at reset_at
//
// strings and times are uvarint-length-prefixed bytes, floats 8 bytes
// little-endian IEEE 754, ints signed varints, bools one byte. "lwfold1",
// written before deletions were named (Event.Of), is read too: its
// deletions in force hold a magnitude only. Compaction bases in journals
// keep it, so it is never refused.
const (
	foldMagic   = "lwfold2"
	foldMagicV1 = "lwfold1"
)

// maxFoldTargets bounds the targets a fold state may claim.
const maxFoldTargets = 1 << 22

// MarshalBinary encodes the folder's raw state, targets sorted by id. A
// sum that is not a finite number (absurd values added up to infinity)
// cannot be kept: an error, the state is recomputed instead.
func (f *Folder) MarshalBinary() ([]byte, error) {
	ids := make([]string, 0, len(f.stats))
	for id := range f.stats {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	e := codec.NewEncoder(foldMagic, 64+len(ids)*160)
	e.Varint(int64(f.events))
	if err := appendTime(e, f.newest); err != nil {
		return nil, err
	}
	e.Uvarint(uint64(len(ids)))
	for _, id := range ids {
		s := f.stats[id]
		sums := []float64{s.Helpful, s.Harmful, s.Neutral}
		for _, d := range s.deleted {
			sums = append(sums, d.mag)
		}
		for _, v := range sums {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("fold state: %s has a sum that is not a finite number", id)
			}
		}
		e.String(s.Target)
		e.String(s.Type)
		e.Float64(s.Helpful)
		e.Float64(s.Harmful)
		e.Float64(s.Neutral)
		for _, n := range []int{s.HelpfulEvents, s.HarmfulEvents, s.NeutralEvents} {
			e.Varint(int64(n))
		}
		for _, t := range []time.Time{s.LastFeedback, s.LastUse} {
			if err := appendTime(e, t); err != nil {
				return nil, err
			}
		}
		for _, n := range []int{s.Reinforcements, s.Outcomes, s.OutcomeFailures} {
			e.Varint(int64(n))
		}
		e.Bool(s.Regression)
		e.Varint(int64(s.Aged))
		e.String(s.Via)
		e.Uvarint(uint64(len(s.deleted)))
		for _, d := range s.deleted {
			e.Float64(d.mag)
			e.String(d.of)
		}
		e.String(string(s.Manual))
		e.String(s.ManualReason)
		for _, t := range []time.Time{s.ManualAt, s.ResetAt} {
			if err := appendTime(e, t); err != nil {
				return nil, err
			}
		}
	}
	return e.Appended(), nil
}

// UnmarshalBinary restores a folder written by MarshalBinary. Anything
// else — truncated, trailing bytes, a target twice or without id, targets
// out of order — is an error and leaves f unchanged.
func (f *Folder) UnmarshalBinary(data []byte) error {
	v1 := len(data) >= len(foldMagicV1) && string(data[:len(foldMagicV1)]) == foldMagicV1
	if !v1 && (len(data) < len(foldMagic) || string(data[:len(foldMagic)]) != foldMagic) {
		return errors.New("fold state: not a fold state of this version")
	}
	d := decoder{Decoder: codec.NewDecoder(data[len(foldMagic):])}
	events := d.int()
	newest := d.time()
	n := d.Count(1)
	if d.ok() && (events < 0 || n > maxFoldTargets) {
		d.err = errors.New("fold state: a count no fold gives")
	}
	stats := make(map[string]Stats, min(n, 1<<16))
	prev := ""
	for i := 0; i < n && d.ok(); i++ {
		var s Stats
		s.Target = d.String()
		s.Type = d.String()
		s.Helpful, s.Harmful, s.Neutral = d.float(), d.float(), d.float()
		s.HelpfulEvents, s.HarmfulEvents, s.NeutralEvents = d.int(), d.int(), d.int()
		s.LastFeedback, s.LastUse = d.time(), d.time()
		s.Reinforcements, s.Outcomes, s.OutcomeFailures = d.int(), d.int(), d.int()
		s.Regression = d.Bool()
		s.Aged = d.int()
		s.Via = d.String()
		if k := d.Count(8); k > 0 {
			s.deleted = make([]inForce, k)
			for j := range s.deleted {
				s.deleted[j].mag = d.float()
				if !v1 {
					s.deleted[j].of = d.String()
				}
			}
		}
		s.Manual = Level(d.String())
		s.ManualReason = d.String()
		s.ManualAt, s.ResetAt = d.time(), d.time()
		if d.ok() && (s.Target == "" || (i > 0 && s.Target <= prev)) {
			d.err = fmt.Errorf("fold state: target %q empty, repeated or out of order", s.Target)
		}
		if d.ok() && !plausible(s) {
			d.err = fmt.Errorf("fold state: target %q has negative sums or counts, which no fold gives", s.Target)
		}
		prev = s.Target
		stats[s.Target] = s
	}
	switch {
	case d.err != nil:
		return d.err
	case d.Failed():
		return errors.New("fold state: truncated or malformed")
	case !d.OK():
		return errors.New("fold state: trailing bytes")
	}
	*f = Folder{stats: stats, newest: newest, events: events}
	return nil
}

// appendTime appends t in time.Time's own binary form.
func appendTime(e *codec.Encoder, t time.Time) error {
	tb, err := t.MarshalBinary()
	if err != nil {
		return fmt.Errorf("fold state: %w", err)
	}
	e.Bytes(tb)
	return nil
}

// decoder reads the fold state: the codec's fields, and the fold's own
// checks on them. The first failure, of either, sticks.
type decoder struct {
	*codec.Decoder
	err error // the fold's own checks
}

func (d *decoder) ok() bool { return d.err == nil && !d.Failed() }

// int reads a varint that fits an int.
func (d *decoder) int() int {
	v := d.Varint()
	if v != int64(int(v)) {
		d.setErr(errors.New("fold state: a count past an int"))
		return 0
	}
	return int(v)
}

// float reads a finite float64.
func (d *decoder) float() float64 {
	v := d.Float64()
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.setErr(errors.New("fold state: a sum that is not a finite number"))
		return 0
	}
	return v
}

// time reads a time an RFC 3339 journal line can hold.
func (d *decoder) time() time.Time {
	b := d.Fixed(d.Count(1))
	if !d.ok() || string(b) == zeroTime {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		d.setErr(fmt.Errorf("fold state: %w", err))
		return time.Time{}
	}
	// Only what an RFC 3339 journal line can hold: years 0000-9999 in
	// UTC, an offset of whole minutes under a day.
	if _, off := t.Zone(); t.UTC().Year() < 0 || t.UTC().Year() > 9999 || off%60 != 0 || off <= -86400 || off >= 86400 {
		d.setErr(fmt.Errorf("fold state: time %v is not one a journal line can hold", t.UTC()))
		return time.Time{}
	}
	return t
}

func (d *decoder) setErr(err error) {
	if d.ok() {
		d.err = err
	}
}

// zeroTime is the zero time.Time's binary form, which reads back as the
// zero time.Time itself: most of a target's times are zero (never
// decided by hand, never reset), and a snapshot holds four per target.
var zeroTime = func() string {
	b, _ := time.Time{}.MarshalBinary() // never fails for the zero time
	return string(b)
}()

// TallyInto is Tally adding events (in file order) to out, which may hold
// the tally of earlier lines computed with the same since: tallying a
// journal at once or its lines in two runs gives the same result.
func TallyInto(out map[string]TypeStats, events []Event, since map[string]time.Time) {
	tallyInto(out, events, since)
}

// plausible reports whether s could come out of a fold: sums and counts
// are never negative, deletions in force are positive magnitudes, each
// named at most once.
func plausible(s Stats) bool {
	for _, v := range []float64{s.Helpful, s.Harmful, s.Neutral} {
		if v < 0 {
			return false
		}
	}
	for _, n := range []int{s.HelpfulEvents, s.HarmfulEvents, s.NeutralEvents, s.Reinforcements, s.Outcomes, s.OutcomeFailures, s.Aged} {
		if n < 0 {
			return false
		}
	}
	for i, d := range s.deleted {
		if !(d.mag > 0) || d.of != "" && s.deletionAt(d.of) != i {
			return false // a magnitude no event gives, or one deletion twice
		}
	}
	return true
}
