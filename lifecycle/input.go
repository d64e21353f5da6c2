package lifecycle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode"

	"github.com/learnwatch/learnwatch/manifest"
)

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
			return nil, fmt.Errorf("input is not a JSON array of observations: %w", err)
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
			return nil, fmt.Errorf("line %d: input is not JSON: %w", line, err)
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
		// Valid JSON with a field of the wrong type is an invalid
		// observation, skipped with a message naming it and the field.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			var loose struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(r, &loose)
			id, _ := loose.ID.(string)
			return manifest.InvalidObservation(id, fmt.Errorf("field %s: %s where %s was expected", te.Field, te.Value, te.Type)), nil
		}
		return nil, fmt.Errorf("observation does not fit the format: %w", err)
	}
	return &o, nil
}
