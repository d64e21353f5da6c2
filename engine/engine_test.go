package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

var testNow = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func putFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readyObs(id, typ, pattern, details string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "pattern": pattern, "confidence": 0.95, "observations": 4,
		"first_seen": "2025-12-01T00:00:00Z", "last_seen": "2025-12-10T00:00:00Z", "status": "ready",
		"evidence": []string{}, "details": details, "quality_ok": true})
	return string(b) + "\n"
}

// memory renders two workflow commands and one decision through the
// engine and returns the root and its engine.
func memory(t *testing.T) (string, *Engine) {
	t.Helper()
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_wf", manifest.Workflow, "Run the linter before pushing", "")+
			readyObs("obs_wf2", manifest.Workflow, "Rebase on main before review", "")+
			readyObs("obs_de", manifest.Decision, "Use SQLite for the local cache", "It is one file and needs no server."))
	e := New(root, config.Default(), nil)
	res, warn, err := e.Render(context.Background(), testNow)
	if err != nil || len(warn) != 0 || len(res.Rendered) != 3 {
		t.Fatalf("render: %+v %v %v", res, warn, err)
	}
	return root, e
}

// A pass through the engine records a person's deletion as a learning
// signal in the feedback journal and refreshes the policy it feeds: what
// the CLI once wired up by hand.
func TestReconcileRecordsFeedback(t *testing.T) {
	root, e := memory(t)
	rep, err := e.Reconcile(context.Background(), Pass{Now: testNow})
	if err != nil || rep.Unchanged != 3 || rep.Deletions+rep.Edits != 0 || len(rep.Warnings) != 0 {
		t.Fatalf("first pass: %+v %v", rep.Result, err)
	}
	if err := os.Remove(filepath.Join(root, ".claude/commands/self-learning/run-the-linter-before-pushing.md")); err != nil {
		t.Fatal(err)
	}
	rep, err = e.Reconcile(context.Background(), Pass{Now: testNow.Add(time.Hour)})
	if err != nil || rep.Deletions != 1 || rep.Recorded == 0 {
		t.Fatalf("after a deletion: %+v %v", rep.Result, err)
	}
	b, err := os.ReadFile(filepath.Join(root, ".memory/feedback.jsonl"))
	if err != nil || !strings.Contains(string(b), `"obs_wf"`) {
		t.Fatalf("feedback journal: %q %v", b, err)
	}
	// A pass that asks for no feedback leaves the journal alone.
	if err := os.Remove(filepath.Join(root, ".claude/commands/self-learning/rebase-on-main-before-review.md")); err != nil {
		t.Fatal(err)
	}
	rep, err = e.Reconcile(context.Background(), Pass{Now: testNow.Add(2 * time.Hour), NoFeedback: true})
	if err != nil || rep.Deletions != 1 || rep.Recorded != 0 {
		t.Fatalf("no-feedback pass: %+v %v", rep.Result, err)
	}
	if b2, _ := os.ReadFile(filepath.Join(root, ".memory/feedback.jsonl")); string(b2) != string(b) {
		t.Errorf("no-feedback pass wrote the journal:\n%s", b2)
	}
}

// The index and the candidates come from the same files: the rendered ADR
// is an index entry and a candidate, the workflow observations are
// candidates.
func TestIndexAndCandidates(t *testing.T) {
	_, e := memory(t)
	ix, warn, err := e.Index(IndexOptions{Now: testNow, Budget: 800})
	if err != nil || len(warn) != 0 {
		t.Fatalf("index: %v %v", warn, err)
	}
	if !strings.Contains(ix.Text, "ADR-001") || !strings.Contains(ix.Text, "Use SQLite for the local cache") {
		t.Errorf("index lacks the rendered decision:\n%s", ix.Text)
	}
	cands, err := e.Candidates()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, c := range cands {
		ids[c.ID] = c.Type
	}
	want := map[string]string{"ADR-001": manifest.Decision, "obs_wf": manifest.Workflow, "obs_wf2": manifest.Workflow}
	for id, typ := range want {
		if ids[id] != typ {
			t.Errorf("candidate %s: type %q, want %q (all: %v)", id, ids[id], typ, ids)
		}
	}
}

// A broken policy file is a warning, never an error: render still runs.
func TestBrokenPolicyIsAWarning(t *testing.T) {
	root, e := memory(t)
	putFile(t, root, ".memory/learning-policy.json", "{not json")
	_, warn := e.Policy()
	if len(warn) != 1 || !strings.Contains(warn[0], "ignoring policy overlays") {
		t.Fatalf("warnings: %q", warn)
	}
	if _, warn, err := e.Render(context.Background(), testNow); err != nil || len(warn) != 1 {
		t.Fatalf("render with a broken policy: %q %v", warn, err)
	}
}

// A pass that is not the watcher's removes the log and manifest its
// commits replaced (kept under temporary names until then, heal.Replaced)
// while the policy is refreshed, and returns with them gone.
func TestReplacedGoneAfterPass(t *testing.T) {
	root, e := memory(t)
	if err := os.Remove(filepath.Join(root, ".claude/commands/self-learning/run-the-linter-before-pushing.md")); err != nil {
		t.Fatal(err)
	}
	rep, err := e.Reconcile(context.Background(), Pass{Now: testNow})
	if err != nil || rep.Deletions != 1 || len(rep.Wrote) == 0 {
		t.Fatalf("pass: %+v %v", rep.Result, err)
	}
	for _, dir := range []string{".memory", ".memory/.cache"} {
		entries, err := os.ReadDir(filepath.Join(root, dir))
		if err != nil {
			t.Fatal(err)
		}
		for _, en := range entries {
			if manifest.Volatile(en.Name()) {
				t.Errorf("left behind in %s: %s", dir, en.Name())
			}
		}
	}
}
