package reliability

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// tmplObs are the observations of the crash template: "a" ones rendered,
// "b" ones ready to render, "h" in the crash window (its ADR written, the
// observation still ready), "o" ones still observing.
var tmplObs = map[string][3]string{ // id → type, pattern, details
	"obs_wf_a": {"workflow", "Run the linter before pushing", ""},
	"obs_pr_a": {"procedural", "Regenerate the API client after schema changes", "steps: edit the schema; run make gen; commit the client"},
	"obs_de_a": {"decision", "Use SQLite for the local cache", "context: many small reads; decision: SQLite; rationale: one file, no server"},
	"obs_pf_a": {"pitfall", "Fixtures assume UTC", "area: tests; issue: golden files assume UTC; impact: flaky elsewhere; resolution: set TZ=UTC"},
	"obs_wf_b": {"workflow", "Rebase before merging", ""},
	"obs_pr_b": {"procedural", "Bump the schema version", "steps: edit the schema; bump the version; run the migration test"},
	"obs_de_b": {"decision", "Wrap errors with %w", "context: errors lose their cause; decision: wrap with %w; rationale: errors.Is works"},
	"obs_pf_b": {"pitfall", "Clock in tests", "area: scheduler; issue: tests use the wall clock; impact: flaky at midnight; resolution: inject a clock"},
	"obs_de_h": {"decision", "Crash window decision", "context: c; decision: d; rationale: r"},
	"obs_o_wf": {"workflow", "Squash fixup commits before review", ""},
	"obs_o_de": {"decision", "Prefer table-driven tests", "context: many cases; decision: tables; rationale: one loop"},
	"obs_o_pf": {"pitfall", "Ports collide in parallel tests", "area: integration tests; issue: fixed ports collide; impact: flaky; resolution: port 0"},
}

// sight returns one observe input line for a template (or other) id.
func sight(id string, evidence ...string) string {
	o := tmplObs[id]
	return obsJSON(id, o[0], o[1], o[2], evidence...)
}

// batch joins observe inputs as JSON Lines.
func batch(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

const (
	corruptLine = `{"id":"obs_torn","type":"decision","pattern":"half a line`
	foreignLine = `{"id":"obs_foreign","type":"decision","pattern":"Written by another tool","confidence":0.33,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"","quality_ok":false,"x_tool":{"name":"devflow","v":2}}`
	humanADR    = "\n## ADR-050: Keep the CLI dependency-free\n\n- **Date**: 2025-11-02\n- **Status**: Accepted\n- **Context**: written by a person\n- **Decision**: no new modules\n"
	humanEdit   = "\nEdited by a human: run it twice.\n"
)

var (
	tmplOnce sync.Once
	tmplDir  string
	tmplExp  expect
	tmplErr  string
)

// crashTemplate returns a repository built with the binary (observe,
// render, a killed render) that has something for every write step:
// rendered artifacts of every type, a deleted command and an edited skill
// waiting for reconcile, an ADR in the crash window waiting to be healed,
// ready observations of every type, observing ones, a human-written ADR, a
// line of another tool with fields learnwatch does not know, and a corrupt
// line. Callers copy it. The model returned lists every observation with
// its sightings.
func crashTemplate(t testing.TB) (string, expect) {
	t.Helper()
	tmplOnce.Do(func() {
		dir, err := os.MkdirTemp(workDir(t), "template-")
		if err != nil {
			tmplErr = err.Error()
			return
		}
		tmplDir = dir
		if msg := buildTemplate(t, dir); msg != "" {
			tmplErr = msg
			return
		}
		tmplExp = expect{obs: map[string]int{}, corrupt: []string{corruptLine}}
		for id, o := range readObs(dir) {
			tmplExp.obs[id] = o.Observations
		}
		if probs := verify(dir, tmplExp); len(probs) > 0 {
			tmplErr = "the template is inconsistent: " + strings.Join(probs, "; ")
		}
	})
	if tmplErr != "" {
		t.Fatal(tmplErr)
	}
	return tmplDir, tmplExp.clone()
}

func buildTemplate(t testing.TB, root string) string {
	mem := filepath.Join(root, ".memory")
	if err := os.MkdirAll(mem, 0o755); err != nil {
		return err.Error()
	}
	// Short lock timeout: a lock left by a bug fails fast.
	if err := os.WriteFile(filepath.Join(mem, "learnwatch.yaml"), []byte("lock:\n  timeout: 5s\n"), 0o644); err != nil {
		return err.Error()
	}
	steps := []call{
		{args: []string{"observe"}, now: day(0), stdin: batch(sight("obs_wf_a"), sight("obs_pr_a"), sight("obs_de_a"), sight("obs_pf_a"),
			sight("obs_o_wf", "first"), sight("obs_o_de"), sight("obs_o_pf"))},
		{args: []string{"observe"}, now: day(2), stdin: batch(sight("obs_wf_a", "src/lint.go"), sight("obs_pr_a"), sight("obs_de_a"), sight("obs_pf_a"))},
		{args: []string{"observe"}, now: day(4), stdin: batch(sight("obs_wf_a"), sight("obs_pr_a"))},
		{args: []string{"observe"}, now: day(6), stdin: batch(sight("obs_pr_a"))},
		{args: []string{"render"}, now: day(6)},
		{args: []string{"hook", "session-start"}, now: day(6)},
		{args: []string{"observe"}, now: day(7), stdin: batch(sight("obs_de_h"), sight("obs_de_h"))},
	}
	for _, c := range steps {
		if r := run(t, root, c); r.code != 0 {
			return r.String()
		}
	}
	// The crash window: render killed after the knowledge write.
	if r := run(t, root, call{args: []string{"render"}, now: day(7), env: []string{"LEARNWATCH_FAILPOINT=render:after-knowledge"}}); !r.killed {
		return "the template's crash-window render was not killed: " + r.String()
	}
	for _, l := range []string{".learning.lock", ".knowledge.lock"} {
		os.Remove(filepath.Join(mem, l))
		os.Remove(filepath.Join(mem, l+".owner"))
	}
	for i, ids := range [][]string{{"obs_wf_b", "obs_pr_b", "obs_de_b", "obs_pf_b"}, {"obs_wf_b", "obs_pr_b", "obs_de_b", "obs_pf_b"},
		{"obs_wf_b", "obs_pr_b"}, {"obs_pr_b"}} {
		var lines []string
		for _, id := range ids {
			lines = append(lines, sight(id))
		}
		if r := run(t, root, call{args: []string{"observe"}, now: day(8 + 2*i), stdin: batch(lines...)}); r.code != 0 {
			return r.String()
		}
	}
	// Pending reconcile work: a deleted command, an edited skill.
	obs := readObs(root)
	if err := os.Remove(filepath.Join(root, obs["obs_wf_a"].ArtifactPath)); err != nil {
		return err.Error()
	}
	f, err := os.OpenFile(filepath.Join(root, obs["obs_pr_a"].ArtifactPath), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err.Error()
	}
	f.WriteString(humanEdit)
	f.Close()
	// A person's ADR (no Source marker), another tool's line, a torn line.
	p := manifest.PathsFor(root)
	f, err = os.OpenFile(p.Decisions, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err.Error()
	}
	f.WriteString(humanADR)
	f.Close()
	f, err = os.OpenFile(p.Log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err.Error()
	}
	f.WriteString(foreignLine + "\n" + corruptLine + "\n")
	f.Close()
	// Sanity: the template has the states it claims.
	obs = readObs(root)
	want := map[string]string{"obs_wf_a": "created", "obs_pr_a": "created", "obs_de_a": "created", "obs_pf_a": "created",
		"obs_wf_b": "ready", "obs_pr_b": "ready", "obs_de_b": "ready", "obs_pf_b": "ready", "obs_de_h": "ready",
		"obs_o_wf": "observing", "obs_o_de": "observing", "obs_o_pf": "observing", "obs_foreign": "observing"}
	for id, st := range want {
		if obs[id].Status != st {
			return id + " is " + obs[id].Status + " in the template, want " + st
		}
	}
	src, _ := os.ReadFile(p.Decisions)
	heal := false
	for _, s := range markdown.Sections(src) {
		heal = heal || s.Source == "obs_de_h"
	}
	if !heal {
		return "the template has no crash-window ADR for obs_de_h"
	}
	return ""
}

// templateChecks are what the crash template's run must keep: the human
// edit and the human ADR, the other tool's unknown fields, the penalised
// deletion.
func templateChecks(root string) []string {
	var probs []string
	p := manifest.PathsFor(root)
	obs := readObs(root)
	if obs["obs_wf_a"].Status != "deprecated" {
		probs = append(probs, "obs_wf_a (its command was deleted) is "+obs["obs_wf_a"].Status+", want deprecated")
	}
	if b, err := os.ReadFile(filepath.Join(root, obs["obs_pr_a"].ArtifactPath)); err != nil || !strings.Contains(string(b), humanEdit) {
		probs = append(probs, "the human edit of obs_pr_a's skill was lost")
	}
	if b, _ := os.ReadFile(p.Decisions); !strings.Contains(string(b), humanADR) {
		probs = append(probs, "the human ADR-050 was changed or lost")
	}
	if b, _ := os.ReadFile(p.Log); !strings.Contains(string(b), `"x_tool":{"name":"devflow","v":2}`) {
		probs = append(probs, "the other tool's x_tool field was lost")
	}
	return probs
}
