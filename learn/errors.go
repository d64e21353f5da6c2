package learn

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Error types of the error accumulator.
var ErrorTypes = []string{"validation", "timeout", "conflict", "tool_failure", "unknown"}

// RunError is one accumulated error of a run.
type RunError struct {
	ID      string `json:"id"`
	RunID   string `json:"run_id"`
	Type    string `json:"type"`
	Message string `json:"message"`
	// Tool, Context and Stack are optional details of the error (the tool
	// that failed, what was being done, a stack trace).
	Tool       string    `json:"tool,omitempty"`
	Context    string    `json:"context,omitempty"`
	Stack      string    `json:"stack,omitempty"`
	TS         time.Time `json:"ts"`
	Resolved   bool      `json:"resolved"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}

// ErrorStats counts a run's accumulated errors.
type ErrorStats struct {
	RunID      string         `json:"run_id"`
	Total      int            `json:"total"`
	Unresolved int            `json:"unresolved"`
	ByType     map[string]int `json:"by_type"`
}

// BuildErrorStats counts runID's errors: all of them (Total, the error_count
// of an outcome that does not give one: resolved errors were still errors
// of the run), the unresolved ones, and all of them by type.
func BuildErrorStats(errs []RunError, runID string) ErrorStats {
	st := ErrorStats{RunID: runID, ByType: map[string]int{}}
	for _, e := range errs {
		if e.RunID != runID {
			continue
		}
		st.Total++
		st.ByType[e.Type]++
		if !e.Resolved {
			st.Unresolved++
		}
	}
	return st
}

// WithErrorCount is o with the error_count it did not give: every error
// accumulated for its run, resolved ones included (BuildErrorStats'
// Total). An outcome that gave one is returned as it is. The direct and
// the queued outcome record both take it, so that a run scores the same
// whichever way it was recorded.
func WithErrorCount(o Outcome, errs []RunError) Outcome {
	if !o.ErrorCountSet {
		o.ErrorCount, o.ErrorCountSet = BuildErrorStats(errs, o.RunID).Total, true
	}
	return o
}

// RetryGroup is the unresolved errors of one type.
type RetryGroup struct {
	Type   string     `json:"type"`
	Count  int        `json:"count"`
	Errors []RunError `json:"errors"`
}

// RetryContext is what a retry of a run should know.
type RetryContext struct {
	RunID      string       `json:"run_id"`
	Unresolved int          `json:"unresolved"`
	Resolved   int          `json:"resolved"`
	Groups     []RetryGroup `json:"by_type"`
}

// BuildRetryContext groups runID's unresolved errors by type (most errors
// first, then type name; errors oldest first) and counts the resolved ones.
func BuildRetryContext(errs []RunError, runID string) RetryContext {
	rc := RetryContext{RunID: runID, Groups: []RetryGroup{}}
	idx := map[string]int{}
	for _, e := range errs {
		if e.RunID != runID {
			continue
		}
		if e.Resolved {
			rc.Resolved++
			continue
		}
		rc.Unresolved++
		i, ok := idx[e.Type]
		if !ok {
			i = len(rc.Groups)
			idx[e.Type] = i
			rc.Groups = append(rc.Groups, RetryGroup{Type: e.Type})
		}
		rc.Groups[i].Count++
		rc.Groups[i].Errors = append(rc.Groups[i].Errors, e)
	}
	for _, g := range rc.Groups {
		sort.SliceStable(g.Errors, func(a, b int) bool { return g.Errors[a].TS.Before(g.Errors[b].TS) })
	}
	sort.SliceStable(rc.Groups, func(a, b int) bool {
		if rc.Groups[a].Count != rc.Groups[b].Count {
			return rc.Groups[a].Count > rc.Groups[b].Count
		}
		return rc.Groups[a].Type < rc.Groups[b].Type
	})
	return rc
}

// Bounds of an error's details (runes).
const (
	MaxErrorMessage = 2000
	MaxErrorTool    = 200
	MaxErrorContext = 2000
	MaxErrorStack   = 16000
)

// CleanRunError validates and normalises an error before it is recorded:
// message, tool and context become one line (runs of white space, line
// breaks included, collapse to one space); the stack keeps its lines; NUL
// and other control characters (but newline and tab in the stack) are
// removed; each is bounded (MaxError…). The message is required; a field
// over its bound is an error naming it, never silently cut.
func CleanRunError(e RunError) (RunError, error) {
	line := func(s string) string { return strings.Join(strings.Fields(dropControls(s, false)), " ") }
	e.Message, e.Tool, e.Context = line(e.Message), line(e.Tool), line(e.Context)
	e.Stack = strings.TrimRight(dropControls(e.Stack, true), "\n\t ")
	if e.Message == "" {
		return e, &FieldError{"message", "a message is required"}
	}
	for _, f := range []struct {
		name string
		v    string
		max  int
	}{{"message", e.Message, MaxErrorMessage}, {"tool", e.Tool, MaxErrorTool}, {"context", e.Context, MaxErrorContext}, {"stack", e.Stack, MaxErrorStack}} {
		if n := utf8.RuneCountInString(f.v); n > f.max {
			return e, &FieldError{f.name, fmt.Sprintf("is %d characters long, at most %d are kept", n, f.max)}
		}
	}
	return e, nil
}

// dropControls removes control characters (C0, DEL, C1) and invalid UTF-8;
// with keepLines, newline and tab stay (a carriage return is dropped).
func dropControls(s string, keepLines bool) string {
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(s, "") {
		if keepLines && (r == '\n' || r == '\t') {
			b.WriteRune(r)
			continue
		}
		if r == '\n' || r == '\t' {
			b.WriteByte(' ')
			continue
		}
		if unicode.IsControl(r) {
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
