package journal

import (
	"errors"
	"fmt"

	"github.com/learnwatch/learnwatch/learn"
)

// outcomeLine is the on-disk form of a run outcome: the validated input plus
// when it was recorded and its implicit score.
type outcomeLine struct {
	TS          string   `json:"ts"`
	RunID       string   `json:"run_id"`
	Success     bool     `json:"success"`
	DurationMS  int64    `json:"duration_ms"`
	ErrorCount  int      `json:"error_count"`
	RetryCount  int      `json:"retry_count"`
	Quality     *float64 `json:"quality,omitempty"`
	Cited       []string `json:"cited"`
	FailureType string   `json:"failure_type,omitempty"`
	Strategy    string   `json:"strategy,omitempty"`
	Type        string   `json:"type,omitempty"`
	Score       float64  `json:"score"`
	Verdict     string   `json:"verdict"`
}

// MarshalOutcome returns the outcomes.jsonl line of o (no newline), with its
// implicit score and verdict.
func MarshalOutcome(o learn.Outcome) ([]byte, error) {
	if o.RunID == "" || o.TS.IsZero() {
		return nil, fmt.Errorf("outcome needs run_id and ts")
	}
	score, verdict := learn.ImplicitScore(o)
	l := outcomeLine{TS: formatTS(o.TS), RunID: o.RunID, Success: o.Success, DurationMS: o.DurationMS,
		ErrorCount: o.ErrorCount, RetryCount: o.RetryCount, Cited: o.Cited, FailureType: o.FailureType,
		Strategy: o.Strategy, Type: o.Type, Score: score, Verdict: verdict}
	if l.Cited == nil {
		l.Cited = []string{}
	}
	if o.QualitySet {
		q := o.Quality
		l.Quality = &q
	}
	return encode(l)
}

// ParseOutcome parses one outcomes.jsonl line with the same validation as
// `outcome record` input (learn.DecodeOutcome); ts is required.
func ParseOutcome(line []byte) (learn.Outcome, error) {
	o, err := learn.DecodeOutcome(line)
	if err != nil {
		return learn.Outcome{}, err
	}
	if o.TS.IsZero() {
		return learn.Outcome{}, errors.New(`field "ts": missing`)
	}
	return o, nil
}

// AppendOutcome appends o to .memory/outcomes.jsonl.
func AppendOutcome(root string, o learn.Outcome) error {
	b, err := MarshalOutcome(o)
	if err != nil {
		return err
	}
	return appendLines(Path(root, OutcomesFile), [][]byte{b})
}

// ReadOutcomes reads .memory/outcomes.jsonl; corrupt lines are skipped and
// counted.
func ReadOutcomes(root string) ([]learn.Outcome, int, error) {
	var out []learn.Outcome
	corrupt, err := readLines(Path(root, OutcomesFile), nil, func(line []byte) error {
		o, err := ParseOutcome(line)
		if err != nil {
			return err
		}
		out = append(out, o)
		return nil
	})
	return out, len(corrupt), err
}
