package journal

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/learnwatch/learnwatch/learn"
)

// errorLine is one line of errors.jsonl: an error ("op":"error") or the
// resolution of one ("op":"resolve"). Resolving appends; nothing is
// rewritten.
type errorLine struct {
	TS      string `json:"ts"`
	Op      string `json:"op"`
	ID      string `json:"id"`
	RunID   string `json:"run_id,omitempty"`
	Type    string `json:"type,omitempty"`
	Message string `json:"message,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Context string `json:"context,omitempty"`
	Stack   string `json:"stack,omitempty"`
}

const (
	opError   = "error"
	opResolve = "resolve"
)

// AppendError records an accumulated error of a run (with its optional
// tool, context and stack).
func AppendError(root string, e learn.RunError) error {
	if e.ID == "" || e.RunID == "" || e.Type == "" || e.TS.IsZero() {
		return fmt.Errorf("run error needs id, run_id, type and ts")
	}
	b, err := encode(errorLine{TS: formatTS(e.TS), Op: opError, ID: e.ID, RunID: e.RunID, Type: e.Type, Message: e.Message,
		Tool: e.Tool, Context: e.Context, Stack: e.Stack})
	if err != nil {
		return err
	}
	return appendLines(Path(root, ErrorsFile), [][]byte{b})
}

// AppendResolve records that error id was resolved at ts.
func AppendResolve(root, id string, ts time.Time) error {
	b, err := encode(errorLine{TS: formatTS(ts), Op: opResolve, ID: id})
	if err != nil {
		return err
	}
	return appendLines(Path(root, ErrorsFile), [][]byte{b})
}

// ReadErrors folds .memory/errors.jsonl into the list of errors (file
// order) with their resolution. Corrupt lines and resolutions of unknown ids
// are skipped and counted.
func ReadErrors(root string) ([]learn.RunError, int, error) {
	var out []learn.RunError
	idx := map[string]int{}
	corrupt, err := readLines(Path(root, ErrorsFile), nil, func(line []byte) error {
		var l errorLine
		if err := json.Unmarshal(line, &l); err != nil {
			return fmt.Errorf("not an error record: %w", err)
		}
		ts, err := parseTS(l.TS)
		if err != nil {
			return err
		}
		if l.ID == "" {
			return errors.New(`field "id": missing`)
		}
		switch l.Op {
		case opError:
			if l.RunID == "" {
				return errors.New(`field "run_id": missing`)
			}
			if _, dup := idx[l.ID]; dup {
				return fmt.Errorf("duplicate error id %s", l.ID)
			}
			idx[l.ID] = len(out)
			out = append(out, learn.RunError{ID: l.ID, RunID: l.RunID, Type: l.Type, Message: l.Message,
				Tool: l.Tool, Context: l.Context, Stack: l.Stack, TS: ts})
		case opResolve:
			i, ok := idx[l.ID]
			if !ok {
				return fmt.Errorf("resolves unknown error %s", l.ID)
			}
			if !out[i].Resolved {
				out[i].Resolved, out[i].ResolvedAt = true, ts
			}
		default:
			return fmt.Errorf(`field "op": %q is not error or resolve`, l.Op)
		}
		return nil
	})
	return out, len(corrupt), err
}
