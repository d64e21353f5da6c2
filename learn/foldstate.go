package learn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"
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
	b := append(make([]byte, 0, 64+len(ids)*160), foldMagic...)
	b = binary.AppendVarint(b, int64(f.events))
	var err error
	if b, err = appendTime(b, f.newest); err != nil {
		return nil, err
	}
	b = binary.AppendUvarint(b, uint64(len(ids)))
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
		b = appendString(b, s.Target)
		b = appendString(b, s.Type)
		b = appendFloat(b, s.Helpful)
		b = appendFloat(b, s.Harmful)
		b = appendFloat(b, s.Neutral)
		for _, n := range []int{s.HelpfulEvents, s.HarmfulEvents, s.NeutralEvents} {
			b = binary.AppendVarint(b, int64(n))
		}
		for _, t := range []time.Time{s.LastFeedback, s.LastUse} {
			if b, err = appendTime(b, t); err != nil {
				return nil, err
			}
		}
		for _, n := range []int{s.Reinforcements, s.Outcomes, s.OutcomeFailures} {
			b = binary.AppendVarint(b, int64(n))
		}
		b = append(b, boolByte(s.Regression))
		b = binary.AppendVarint(b, int64(s.Aged))
		b = appendString(b, s.Via)
		b = binary.AppendUvarint(b, uint64(len(s.deleted)))
		for _, d := range s.deleted {
			b = appendFloat(b, d.mag)
			b = appendString(b, d.of)
		}
		b = appendString(b, string(s.Manual))
		b = appendString(b, s.ManualReason)
		for _, t := range []time.Time{s.ManualAt, s.ResetAt} {
			if b, err = appendTime(b, t); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// UnmarshalBinary restores a folder written by MarshalBinary. Anything
// else — truncated, trailing bytes, a target twice or without id, targets
// out of order — is an error and leaves f unchanged.
func (f *Folder) UnmarshalBinary(data []byte) error {
	v1 := len(data) >= len(foldMagicV1) && string(data[:len(foldMagicV1)]) == foldMagicV1
	if !v1 && (len(data) < len(foldMagic) || string(data[:len(foldMagic)]) != foldMagic) {
		return errors.New("fold state: not a fold state of this version")
	}
	d := decoder{b: data[len(foldMagic):]}
	events := d.int()
	newest := d.time()
	n := d.uvarint()
	if d.err == nil && (events < 0 || n > maxFoldTargets || n > uint64(len(d.b))) {
		d.fail()
	}
	stats := make(map[string]Stats, min(n, 1<<16))
	prev := ""
	for i := uint64(0); i < n && d.err == nil; i++ {
		var s Stats
		s.Target = d.string()
		s.Type = d.string()
		s.Helpful, s.Harmful, s.Neutral = d.float(), d.float(), d.float()
		s.HelpfulEvents, s.HarmfulEvents, s.NeutralEvents = d.int(), d.int(), d.int()
		s.LastFeedback, s.LastUse = d.time(), d.time()
		s.Reinforcements, s.Outcomes, s.OutcomeFailures = d.int(), d.int(), d.int()
		s.Regression = d.bool()
		s.Aged = d.int()
		s.Via = d.string()
		if k := d.uvarint(); k > 0 {
			if k > uint64(len(d.b))/8 {
				d.fail()
				break
			}
			s.deleted = make([]inForce, k)
			for j := range s.deleted {
				s.deleted[j].mag = d.float()
				if !v1 {
					s.deleted[j].of = d.string()
				}
			}
		}
		s.Manual = Level(d.string())
		s.ManualReason = d.string()
		s.ManualAt, s.ResetAt = d.time(), d.time()
		if d.err == nil && (s.Target == "" || (i > 0 && s.Target <= prev)) {
			d.err = fmt.Errorf("fold state: target %q empty, repeated or out of order", s.Target)
		}
		if d.err == nil && !plausible(s) {
			d.err = fmt.Errorf("fold state: target %q has negative sums or counts, which no fold gives", s.Target)
		}
		prev = s.Target
		stats[s.Target] = s
	}
	if d.err == nil && len(d.b) != 0 {
		d.err = errors.New("fold state: trailing bytes")
	}
	if d.err != nil {
		return d.err
	}
	*f = Folder{stats: stats, newest: newest, events: events}
	return nil
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendFloat(b []byte, v float64) []byte {
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
}

func appendTime(b []byte, t time.Time) ([]byte, error) {
	tb, err := t.MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("fold state: %w", err)
	}
	b = binary.AppendUvarint(b, uint64(len(tb)))
	return append(b, tb...), nil
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// decoder reads the fold state; the first error sticks and every later
// read returns a zero value.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) fail() {
	if d.err == nil {
		d.err = errors.New("fold state: truncated or malformed")
	}
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) int() int {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 || v != int64(int(v)) {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return int(v)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.fail()
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) float() float64 {
	if d.err != nil {
		return 0
	}
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	if math.IsNaN(v) || math.IsInf(v, 0) {
		d.err = errors.New("fold state: a sum that is not a finite number")
		return 0
	}
	return v
}

func (d *decoder) bool() bool {
	if d.err != nil {
		return false
	}
	if len(d.b) < 1 || d.b[0] > 1 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

func (d *decoder) time() time.Time {
	b := d.bytes()
	if d.err != nil || string(b) == zeroTime {
		return time.Time{}
	}
	var t time.Time
	if err := t.UnmarshalBinary(b); err != nil {
		d.err = fmt.Errorf("fold state: %w", err)
		return time.Time{}
	}
	// Only what an RFC 3339 journal line can hold: years 0000-9999 in
	// UTC, an offset of whole minutes under a day.
	if _, off := t.Zone(); t.UTC().Year() < 0 || t.UTC().Year() > 9999 || off%60 != 0 || off <= -86400 || off >= 86400 {
		d.err = fmt.Errorf("fold state: time %v is not one a journal line can hold", t.UTC())
		return time.Time{}
	}
	return t
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
