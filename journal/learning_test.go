package journal

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/learn"
)

// An outcome event's retries, an outcome's type and an error's tool,
// context and stack survive the round trip through the files.
func TestNewFieldsRoundTrip(t *testing.T) {
	root := t.TempDir()
	ev := learn.Event{TS: t0, Target: "ADR-001", Kind: learn.KindOutcome, Value: 0.86, Source: "outcome:r", Type: "decision", Retries: 2}
	cited := learn.Event{TS: t0, Target: "ADR-003", Kind: learn.KindCited, Value: 1, Source: "verdict:v", Role: "sentinel"}
	if err := AppendFeedback(root, ev, learn.Event{TS: t0, Target: "ADR-002", Kind: learn.KindKept, Value: 1}, cited); err != nil {
		t.Fatal(err)
	}
	evs, bad, err := ReadFeedback(root)
	if err != nil || bad != 0 || len(evs) != 3 || !reflect.DeepEqual(evs[0], ev) || evs[1].Retries != 0 || !reflect.DeepEqual(evs[2], cited) {
		t.Fatalf("feedback %+v bad %d err %v", evs, bad, err)
	}
	data, _ := os.ReadFile(Path(root, FeedbackFile))
	if want := `"retries":2}`; !strings.Contains(string(data), want) || strings.Contains(string(data), `"target":"ADR-002","kind":"kept","value":1,"source":"","retries"`) {
		t.Errorf("feedback file:\n%s", data)
	}
	o := learn.Outcome{TS: t0, RunID: "r", Success: false, FailureType: "timeout", Type: "workflow", ErrorCountSet: true, Cited: []string{}}
	if err := AppendOutcome(root, o); err != nil {
		t.Fatal(err)
	}
	outs, _, err := ReadOutcomes(root)
	if err != nil || len(outs) != 1 || outs[0].Type != "workflow" {
		t.Fatalf("outcomes %+v %v", outs, err)
	}
	e := learn.RunError{ID: "err_1", RunID: "r", Type: "tool_failure", Message: "Type error", Tool: "typecheck", Context: "After adding OAuth types", Stack: "at a\nat b", TS: t0}
	if err := AppendError(root, e); err != nil {
		t.Fatal(err)
	}
	errs, _, err := ReadErrors(root)
	if err != nil || len(errs) != 1 || !reflect.DeepEqual(errs[0], e) {
		t.Fatalf("errors %+v %v", errs, err)
	}
}

// A hand-edited or hostile "retries" never fails the line nor overflows.
func TestRetriesClamped(t *testing.T) {
	for line, want := range map[string]int{
		`{"ts":"2026-03-01T12:00:00Z","target":"a","kind":"outcome","retries":-3}`:    0,
		`{"ts":"2026-03-01T12:00:00Z","target":"a","kind":"outcome","retries":2.7}`:   2,
		`{"ts":"2026-03-01T12:00:00Z","target":"a","kind":"outcome","retries":1e300}`: MaxRetries,
		`{"ts":"2026-03-01T12:00:00Z","target":"a","kind":"outcome","retries":4}`:     4,
	} {
		e, err := ParseEvent([]byte(line))
		if err != nil || e.Retries != want {
			t.Errorf("%s: %+v %v, want retries %d", line, e, err, want)
		}
	}
}
