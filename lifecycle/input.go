package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/textsafe"
)

// ValidateSighting reports what keeps a sighting (an observation given to
// observe) from being merged: what manifest's Validate finds, and a
// pattern, details or evidence item over MaxEditBytes or holding a NUL
// byte — the bounds edit puts on what it changes, so that text observe
// takes is text edit could have written. Every problem is named. Lines
// already in the log are not held to these bounds (another tool may have
// written them).
func ValidateSighting(o *manifest.Observation) error {
	var probs []string
	if err := o.Validate(); err != nil {
		probs = append(probs, err.Error())
	}
	if err := checkText("pattern", o.Pattern); err != nil {
		probs = append(probs, err.Error())
	}
	if err := checkText("details", o.Details); err != nil {
		probs = append(probs, err.Error())
	}
	for i, e := range o.Evidence {
		if err := checkText(fmt.Sprintf("evidence[%d]", i), e); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(probs, "; "))
}

// SightingProblem is why the i-th sighting of a batch (from 0) is not
// merged (ValidateSighting), worded for a person ("observation obs_x:
// field …"), or "" when it is valid: what observe says of a skipped
// sighting, merged at once or queued. An id that is not a safe id is
// quoted, never printed raw; a missing one is named by its place.
func SightingProblem(i int, in *manifest.Observation) string {
	err := ValidateSighting(in)
	if err == nil {
		return ""
	}
	name := in.ID
	switch {
	case name == "":
		name = fmt.Sprintf("#%d", i+1)
	case !manifest.ValidID(name):
		name = textsafe.Quote(name, 80)
	}
	return fmt.Sprintf("observation %s: %v", name, err)
}

// checkText bounds one text field of a sighting or an edit.
func checkText(name, v string) error {
	switch {
	case len(v) > MaxEditBytes:
		return fmt.Errorf("field %s: %d bytes, more than %d", name, len(v), MaxEditBytes)
	case strings.IndexByte(v, 0) >= 0:
		return fmt.Errorf("field %s: contains a NUL byte", name)
	}
	return nil
}

// ParseInput reads observations given as one JSON object, an array of
// objects, or JSON Lines. Anything that is not JSON is an error naming the
// line; nothing is returned then, so a caller writes nothing.
func ParseInput(data []byte) ([]*manifest.Observation, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, errors.New("no observations on input")
	}
	if trimmed[0] == '[' {
		var raw []json.RawMessage
		if err := json.Unmarshal(trimmed, &raw); err != nil {
			return nil, fmt.Errorf("not JSON: the array of observations %s", jsonProblem(err))
		}
		out := make([]*manifest.Observation, 0, len(raw))
		for i, r := range raw {
			o, err := decodeOne(r)
			if err != nil {
				return nil, fmt.Errorf("array element %d: %w", i+1, err)
			}
			out = append(out, o)
		}
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	// Lines are counted in the input as given: add the blank lines trimmed.
	lead := bytes.Count(data[:len(data)-len(bytes.TrimLeftFunc(data, unicode.IsSpace))], []byte("\n"))
	var out []*manifest.Observation
	for {
		var r json.RawMessage
		err := dec.Decode(&r)
		if err == io.EOF {
			break
		}
		if err != nil {
			// A decoder's SyntaxError carries the absolute offset of the bad
			// byte; InputOffset is only the end of the last good value.
			off := dec.InputOffset()
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset > off {
				off = min(se.Offset, int64(len(trimmed)))
			}
			if errors.Is(err, io.ErrUnexpectedEOF) {
				// A truncated last value: name the line it starts on.
				rest := trimmed[off:]
				off += int64(len(rest) - len(bytes.TrimLeftFunc(rest, unicode.IsSpace)))
			}
			line := 1 + lead + bytes.Count(trimmed[:off], []byte("\n"))
			return nil, fmt.Errorf("line %d: not JSON (%s)", line, jsonProblem(err))
		}
		o, err := decodeOne(r)
		if err != nil {
			line := 1 + lead + bytes.Count(trimmed[:dec.InputOffset()], []byte("\n"))
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		out = append(out, o)
	}
	return out, nil
}

func decodeOne(r json.RawMessage) (*manifest.Observation, error) {
	r = bytes.TrimSpace(r)
	if len(r) == 0 || r[0] != '{' {
		return nil, errors.New("an observation must be a JSON object")
	}
	var o manifest.Observation
	if err := json.Unmarshal(r, &o); err != nil {
		// Valid JSON with fields of the wrong type is an invalid
		// observation, skipped with a message naming it and every such
		// field (the decoder itself stops at the first).
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			var fields map[string]json.RawMessage
			_ = json.Unmarshal(r, &fields)
			var id string
			_ = json.Unmarshal(fields["id"], &id)
			return manifest.InvalidObservation(id, wrongTypes(fields)), nil
		}
		return nil, fmt.Errorf("observation does not fit the format: %s", jsonProblem(err))
	}
	return &o, nil
}

// fieldKinds are the JSON kinds of the observation fields learnwatch reads.
var fieldKinds = map[string]string{
	"id": "string", "type": "string", "pattern": "string", "details": "string",
	"first_seen": "string", "last_seen": "string", "status": "string",
	"artifact_path": "string", "deprecated_at": "string", "staleReason": "string",
	"confidence": "number", "observations": "number",
	"quality_ok": "boolean", "needsReview": "boolean", "mayBeStale": "boolean", "softCapExceeded": "boolean",
	"evidence": "array of strings",
}

// wrongTypes lists every field whose JSON kind is not the one the format
// wants, in field-name order.
func wrongTypes(fields map[string]json.RawMessage) error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		want, known := fieldKinds[name]
		if !known {
			continue
		}
		got := kindOf(fields[name])
		ok := got == want || got == "null" ||
			(want == "array of strings" && got == "array" && json.Unmarshal(fields[name], new([]string)) == nil)
		if !ok {
			errs = append(errs, fmt.Errorf("field %s: %s where %s was expected", name, got, want))
		}
	}
	if len(errs) == 0 {
		return errors.New("a field does not have the type the format wants")
	}
	return joinProblems(errs)
}

// joinProblems joins several problems on one line ("a; b").
func joinProblems(errs []error) error {
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}

// kindOf names the JSON kind of a raw value.
func kindOf(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// jsonProblem says in the user's terms why input is not JSON, instead of
// the decoder's wording ("invalid character 'h' looking for beginning of
// value").
func jsonProblem(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "it ends in the middle of a value: an unclosed object, array or string"
	case errors.As(err, &se):
		msg := se.Error()
		if c, ok := strings.CutPrefix(msg, "invalid character "); ok {
			ch, _, _ := strings.Cut(c, " ")
			return fmt.Sprintf("unexpected character %s at byte %d", ch, se.Offset)
		}
		return fmt.Sprintf("%s at byte %d", msg, se.Offset)
	}
	return err.Error()
}
