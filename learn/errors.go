package learn

import (
	"sort"
	"time"
)

// Error types of the error accumulator.
var ErrorTypes = []string{"validation", "timeout", "conflict", "tool_failure", "unknown"}

// RunError is one accumulated error of a run.
type RunError struct {
	ID         string    `json:"id"`
	RunID      string    `json:"run_id"`
	Type       string    `json:"type"`
	Message    string    `json:"message"`
	TS         time.Time `json:"ts"`
	Resolved   bool      `json:"resolved"`
	ResolvedAt time.Time `json:"resolved_at,omitzero"`
}

// UnresolvedCount counts runID's unresolved errors: the error_count of an
// outcome that does not give one.
func UnresolvedCount(errs []RunError, runID string) int {
	n := 0
	for _, e := range errs {
		if e.RunID == runID && !e.Resolved {
			n++
		}
	}
	return n
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
