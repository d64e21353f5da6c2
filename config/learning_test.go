package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, FileName), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

// The defaults are the sources' values.
func TestLearnDefaults(t *testing.T) {
	e := Default().Learn
	if !reflect.DeepEqual(e.HighConfidenceRoles, []string{"sentinel", "inspector"}) {
		t.Errorf("high_confidence_roles default %v", e.HighConfidenceRoles)
	}
	if e.HalfLifeDays != 90 || e.RecencyDays != 14 || e.Immunity != 3 {
		t.Errorf("decay defaults %+v", e.Engine)
	}
	if e.Maturity != (Maturity{MinEvents: 3, ProvenHelpful: 5, ProvenMaxHarmful: 0.15, DeprecateHarmful: 0.3}) {
		t.Errorf("maturity defaults %+v", e.Maturity)
	}
	if e.Thresholds["procedural"] != (TypeThreshold{Required: 4, Promote: 0.7, SpreadDays: 5}) {
		t.Errorf("procedural thresholds %+v", e.Thresholds["procedural"])
	}
	if e.Budgets.Adversarial != 800 || e.Budgets.Other != 500 {
		t.Errorf("budgets %+v", e.Budgets)
	}
}

// Every learning key written out and read back gives the same
// configuration, defaults and changed values alike.
func TestLearnRoundTrip(t *testing.T) {
	changed := Default()
	changed.Learn.HighConfidenceRoles = []string{"judge"}
	changed.Learn.HalfLifeDays = 30
	changed.Learn.RecencyDays = 7
	changed.Learn.Immunity = 5
	changed.Learn.Maturity = Maturity{MinEvents: 4, ProvenHelpful: 8, ProvenMaxHarmful: 0.1, DeprecateHarmful: 0.4}
	changed.Learn.Thresholds["workflow"] = TypeThreshold{Required: 5, Promote: 0.8, SpreadDays: 7}
	changed.Learn.Budgets = RoleBudgets{Adversarial: 900, Other: 400, AdversarialRoles: []string{"auditor"}}
	for name, c := range map[string]Config{"defaults": Default(), "changed": changed} {
		out, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Load(writeConfig(t, string(out)))
		if err != nil {
			t.Fatalf("%s: %v\n%s", name, err, out)
		}
		if !reflect.DeepEqual(got.Learn, c.Learn) {
			t.Errorf("%s: round trip\n got %+v\nwant %+v\n%s", name, got.Learn, c.Learn, out)
		}
	}
}

// A partial file changes only what it names; a type's entry keeps the
// defaults of the keys it leaves out.
func TestLearnPartial(t *testing.T) {
	c, err := Load(writeConfig(t, "learn:\n  half_life_days: 45\n  thresholds:\n    workflow:\n      promote: 0.8\n    decision: {}\n  high_confidence_roles: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Learn.HalfLifeDays != 45 || c.Learn.RecencyDays != 14 {
		t.Errorf("half life %v recency %v", c.Learn.HalfLifeDays, c.Learn.RecencyDays)
	}
	if got := c.Learn.Thresholds["workflow"]; got != (TypeThreshold{Required: 3, Promote: 0.8, SpreadDays: 3}) {
		t.Errorf("workflow %+v", got)
	}
	if got := c.Learn.Thresholds["decision"]; got != (TypeThreshold{Required: 2, Promote: 0.65}) {
		t.Errorf("decision {} %+v", got)
	}
	if got := c.Learn.Thresholds["procedural"]; got != (TypeThreshold{Required: 4, Promote: 0.7, SpreadDays: 5}) {
		t.Errorf("procedural (not in the file) %+v", got)
	}
	if len(c.Learn.HighConfidenceRoles) != 0 {
		t.Errorf("an explicit empty list must turn the roles off: %v", c.Learn.HighConfidenceRoles)
	}
}

// Bad values are rejected with a message naming the key.
func TestLearnRejectsBadValues(t *testing.T) {
	cases := []struct{ yaml, key string }{
		{"learn:\n  half_life_days: 0\n", "learn.half_life_days"},
		{"learn:\n  half_life_days: -90\n", "learn.half_life_days"},
		{"learn:\n  half_life_days: .nan\n", "learn.half_life_days"},
		{"learn:\n  recency_days: 99999\n", "learn.recency_days"},
		{"learn:\n  immunity: 0\n", "learn.immunity"},
		{"learn:\n  maturity:\n    min_events: -1\n", "learn.maturity.min_events"},
		{"learn:\n  maturity:\n    proven_helpful: 0\n", "learn.maturity.proven_helpful"},
		{"learn:\n  maturity:\n    proven_max_harmful: 1.5\n", "learn.maturity.proven_max_harmful"},
		{"learn:\n  maturity:\n    deprecate_harmful: 0\n", "learn.maturity.deprecate_harmful"},
		{"learn:\n  maturity:\n    proven_max_harmful: 0.5\n    deprecate_harmful: 0.3\n", "learn.maturity.proven_max_harmful"},
		{"learn:\n  thresholds:\n    workflow:\n      promote: 1.2\n", "learn.thresholds.workflow.promote"},
		{"learn:\n  thresholds:\n    workflow:\n      required: 0\n", "learn.thresholds.workflow.required"},
		{"learn:\n  thresholds:\n    pitfall:\n      spread_days: -1\n", "learn.thresholds.pitfall.spread_days"},
		{"learn:\n  thresholds:\n    runbook:\n      promote: 0.5\n", "learn.thresholds.runbook"},
		{"learn:\n  budgets:\n    other: 0\n", "learn.budgets.other"},
		{"learn:\n  budgets:\n    adversarial_roles: [\"\"]\n", "learn.budgets.adversarial_roles[0]"},
		{"learn:\n  immunity: three\n", "line 2"}, // a wrong YAML type: the parser names the line
		{"learn:\n  thresholds:\n    workflow:\n      promot: 0.5\n", `line 4: unknown key "promot" under a type of learn.thresholds`},
		{"learn:\n  thresholds:\n    workflow: 0.5\n", "line 3"},
	}
	for _, c := range cases {
		_, err := Load(writeConfig(t, c.yaml))
		if err == nil {
			t.Errorf("%q: accepted", c.yaml)
			continue
		}
		if !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "learnwatch.yaml") {
			t.Errorf("%q: error %q does not name %s and the file", c.yaml, err, c.key)
		}
	}
}
