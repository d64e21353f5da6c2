package journal

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/learnwatch/learnwatch/learn"
)

// eventLine is the on-disk form of a feedback event.
type eventLine struct {
	TS     string   `json:"ts"`
	Target string   `json:"target"`
	Kind   string   `json:"kind"`
	Value  *float64 `json:"value"`
	Source string   `json:"source"`
	Type   string   `json:"type,omitempty"`
	Reason string   `json:"reason,omitempty"`
	// Retries is the run's retry_count on an outcome event.
	Retries *float64 `json:"retries,omitempty"`
	// Role is the validator role of a verdict event.
	Role string `json:"role,omitempty"`
	// Pass is the id of the reconcile that recorded the event (pass.go).
	Pass string `json:"pass,omitempty"`
	// Of names the deletion a deleted or restored event records
	// (learn.Event.Of).
	Of string `json:"of,omitempty"`
	// Base, Tally and Since are a compaction's base line (kind
	// "compacted"): the fold state (base64 of learn.Folder.MarshalBinary),
	// the per-type tally and the resets it was tallied since.
	Base  string               `json:"base,omitempty"`
	Tally keptTally            `json:"tally,omitempty"`
	Since map[string]time.Time `json:"since,omitempty"`
}

// MarshalEvent returns the feedback.jsonl line of e (no newline):
// {"ts","target","kind","value","source"} plus "type", "reason", "retries",
// "role" and "of" when set, and "base", "tally", "since" on a compaction's base
// line.
func MarshalEvent(e learn.Event) ([]byte, error) {
	return marshalEventPass(e, "")
}

// marshalEventPass is MarshalEvent with the id of the pass that records e.
func marshalEventPass(e learn.Event, pass string) ([]byte, error) {
	if e.Target == "" || e.Kind == "" || e.TS.IsZero() {
		return nil, fmt.Errorf("feedback event needs ts, target and kind: %+v", e)
	}
	if math.IsNaN(e.Value) || math.IsInf(e.Value, 0) {
		return nil, fmt.Errorf("feedback event %s/%s: value %v is not a number", e.Target, e.Kind, e.Value)
	}
	v := e.Value
	l := eventLine{TS: formatTS(e.TS), Target: e.Target, Kind: e.Kind, Value: &v, Source: e.Source, Type: e.Type, Reason: e.Reason, Role: e.Role, Pass: pass, Of: e.Of}
	if e.Retries > 0 {
		r := float64(e.Retries)
		l.Retries = &r
	}
	if e.Base != nil {
		if e.Kind != learn.KindCompacted {
			return nil, fmt.Errorf("feedback event %s/%s: a base on a line of another kind", e.Target, e.Kind)
		}
		state, err := e.Base.Fold.MarshalBinary()
		if err != nil {
			return nil, err
		}
		l.Base, l.Tally, l.Since = base64.StdEncoding.EncodeToString(state), keep(e.Base.Tally), e.Base.Since
	}
	return encode(l)
}

// ParseEvent parses one feedback.jsonl line. ts (RFC3339), target and kind
// are required; value defaults to 0; unknown fields are ignored and kinds
// this version does not know are returned as they are (Fold ignores them).
func ParseEvent(line []byte) (learn.Event, error) { return parseEvent(line, interner{}) }

func parseEvent(line []byte, in interner) (learn.Event, error) {
	l, ok := parseEventFast(line, in)
	if !ok {
		l = eventLine{}
		if err := json.Unmarshal(line, &l); err != nil {
			return learn.Event{}, fmt.Errorf("not a feedback event: %w", err)
		}
	}
	ts, err := parseTS(l.TS)
	if err != nil {
		return learn.Event{}, err
	}
	if l.Target == "" {
		return learn.Event{}, errors.New(`field "target": missing`)
	}
	if l.Kind == "" {
		return learn.Event{}, errors.New(`field "kind": missing`)
	}
	e := learn.Event{TS: ts, Target: l.Target, Kind: l.Kind, Source: l.Source, Type: l.Type, Reason: l.Reason, Role: l.Role, Of: l.Of}
	if l.Value != nil {
		e.Value = *l.Value
	}
	if l.Retries != nil {
		e.Retries = retries(*l.Retries)
	}
	if l.Kind == learn.KindCompacted {
		b, err := parseBase(l, ts)
		if err != nil {
			return learn.Event{}, err
		}
		e.Base = b
	}
	return e, nil
}

// AppendFeedback appends events to .memory/feedback.jsonl in one write
// (all or nothing, never interleaved with another writer's lines). O(1) in
// the size of the file.
func AppendFeedback(root string, evs ...learn.Event) error {
	lines := make([][]byte, 0, len(evs))
	for _, e := range evs {
		b, err := MarshalEvent(e)
		if err != nil {
			return err
		}
		lines = append(lines, b)
	}
	return appendLines(Path(root, FeedbackFile), lines)
}

// ReadFeedback reads every event of .memory/feedback.jsonl in file order.
// Lines that do not parse are skipped and counted (never dropped from the
// file). A missing file is empty.
func ReadFeedback(root string) ([]learn.Event, int, error) {
	var out []learn.Event
	in := interner{}
	grow := func(n int) { out = make([]learn.Event, 0, n) }
	corrupt, err := readLines(Path(root, FeedbackFile), grow, func(line []byte) error {
		e, err := parseEvent(line, in)
		if err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, len(corrupt), err
}

// MaxRetries bounds the retries read from a feedback line.
const MaxRetries = 1_000_000

// retries turns a "retries" value into a count: whole, 0..MaxRetries (a
// hand-edited or hostile line cannot overflow a tally).
func retries(v float64) int {
	switch {
	case math.IsNaN(v) || v <= 0:
		return 0
	case v > MaxRetries:
		return MaxRetries
	}
	return int(v)
}
