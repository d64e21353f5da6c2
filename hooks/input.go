package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// maxInput bounds how much hook input is read from stdin; the agent sends a
// few hundred bytes.
const maxInput = 1 << 20

// SessionStart is the agent's SessionStart hook input.
type SessionStart struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	// Source is startup, resume, clear or compact (other values are kept:
	// a newer agent may add some).
	Source string `json:"source"`
}

// Stop is the agent's Stop hook input, sent when the agent finishes a turn.
type Stop struct {
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	Cwd            string `json:"cwd"`
	HookEventName  string `json:"hook_event_name"`
	StopHookActive bool   `json:"stop_hook_active"`
}

// ParseSessionStart reads the SessionStart JSON object from r. Unknown
// fields are ignored. Empty input, anything that is not one JSON object, or a
// field of the wrong type gives the zero value and an error for the caller
// to log (the caller then falls back to the current directory).
func ParseSessionStart(r io.Reader) (SessionStart, error) {
	var v SessionStart
	if err := parseInput(r, &v); err != nil {
		return SessionStart{}, fmt.Errorf("SessionStart hook input: %w", err)
	}
	return v, nil
}

// ParseStop reads the Stop hook JSON object from r, like ParseSessionStart.
func ParseStop(r io.Reader) (Stop, error) {
	var v Stop
	if err := parseInput(r, &v); err != nil {
		return Stop{}, fmt.Errorf("Stop hook input: %w", err)
	}
	return v, nil
}

func parseInput(r io.Reader, v any) error {
	if r == nil {
		return errors.New("no input")
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInput+1))
	if err != nil {
		return fmt.Errorf("read stdin: %w", err)
	}
	if len(data) > maxInput {
		return fmt.Errorf("more than %d bytes", maxInput)
	}
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return errors.New("empty")
	}
	if data[0] != '{' {
		return errors.New("not a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON object")
	}
	return nil
}
