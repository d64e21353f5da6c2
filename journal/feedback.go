package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

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
	// Pass is the id of the reconcile that recorded the event (pass.go).
	Pass string `json:"pass,omitempty"`
}

// MarshalEvent returns the feedback.jsonl line of e (no newline):
// {"ts","target","kind","value","source"} plus "type" and "reason" when set.
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
	return encode(eventLine{TS: formatTS(e.TS), Target: e.Target, Kind: e.Kind, Value: &v, Source: e.Source, Type: e.Type, Reason: e.Reason, Pass: pass})
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
	e := learn.Event{TS: ts, Target: l.Target, Kind: l.Kind, Source: l.Source, Type: l.Type, Reason: l.Reason}
	if l.Value != nil {
		e.Value = *l.Value
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
