package reliability

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestNoPenaltyWithoutDeletion: the invariant "no penalty without a
// deletion by the person" holds on the template's one real deletion and
// catches a penalty the scenario did not cause (checked against a model
// that forgets the deletion).
func TestNoPenaltyWithoutDeletion(t *testing.T) {
	tmpl, exp := crashTemplate(t)
	root := filepath.Join(workDir(t), "penalty")
	copyTree(t, tmpl, root)
	must(t, root, call{args: []string{"reconcile"}, now: day(20)})
	exp.settled = true
	if probs := verify(root, exp); len(probs) > 0 {
		t.Fatalf("invariants after the template's deletion was reconciled:\n  %s", strings.Join(probs, "\n  "))
	}
	forgot := exp.clone()
	forgot.removed = nil
	probs := verify(root, forgot)
	n := 0
	for _, p := range probs {
		if strings.Contains(p, "penalty without a deletion by the person") {
			n++
		}
	}
	// The manifest's deletion record and the deleted feedback event.
	if n != 2 {
		t.Fatalf("a model without the deletion: %d penalty violations, want 2:\n  %s", n, strings.Join(probs, "\n  "))
	}
}
