package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLearnConfig: a learnwatch.yaml with any learn section never panics
// Load, and an accepted one has usable numbers: every type has a rule with
// required ≥ 1 and 0 < promote ≤ 0.95, the maturity ratios are ordered, the
// budgets positive.
func FuzzLearnConfig(f *testing.F) {
	f.Add([]byte("learn:\n  half_life_days: 30\n  thresholds:\n    workflow: {required: 2}\n"))
	f.Add([]byte("learn:\n  thresholds:\n    workflow: [1, 2]\n"))
	f.Add([]byte("learn:\n  thresholds: {decision: {}}\n  maturity: {proven_max_harmful: 0.3}\n"))
	f.Add([]byte("learn:\n  budgets: {adversarial_roles: [judge], other: 1}\n  immunity: 1000\n"))
	f.Add([]byte("learn:\n  recency_days: .inf\n"))
	f.Add([]byte("learn: {thresholds: {pitfall: {spread_days: 1e308}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(root)
		if err != nil {
			return
		}
		e := c.Learn.Engine
		if !(e.HalfLifeDays > 0) || !(e.RecencyDays > 0) || e.Immunity < 1 || e.Maturity.MinEvents < 1 ||
			!(e.Maturity.ProvenHelpful > 0) || !(e.Maturity.ProvenMaxHarmful > 0) || e.Maturity.ProvenMaxHarmful > e.Maturity.DeprecateHarmful ||
			!(e.Maturity.DeprecateHarmful < 1) || e.Budgets.Adversarial < 1 || e.Budgets.Other < 1 {
			t.Fatalf("accepted unusable engine numbers: %+v", e)
		}
		for _, typ := range []string{"workflow", "procedural", "decision", "pitfall"} {
			th, ok := e.Thresholds[typ]
			if !ok || th.Required < 1 || !(th.Promote > 0) || th.Promote > 0.95 || th.SpreadDays < 0 {
				t.Fatalf("accepted an unusable rule for %s: %+v", typ, th)
			}
		}
		if len(e.Thresholds) != 4 {
			t.Fatalf("thresholds for unknown types accepted: %v", e.Thresholds)
		}
	})
}
