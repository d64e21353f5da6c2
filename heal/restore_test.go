package heal

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
)

// TestFreedAnchorIsNotARestore: PF-001 is deleted (obs_a penalised); the
// next render gives the freed id to another observation. That section is
// not obs_a's coming back: obs_a stays penalised, obs_b is tracked.
func TestFreedAnchorIsNotARestore(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl", readyObs("obs_a", manifest.Pitfall, "Fixtures assume UTC", "area: tests; issue: utc"))
	runRender(t, root)
	pf := filepath.Join(root, ".memory/knowledge/pitfalls.md")
	b, _ := os.ReadFile(pf)
	os.WriteFile(pf, regexp.MustCompile(`(?s)## PF-001.*`).ReplaceAll(b, nil), 0o644)
	if res := runReconcile(t, root); res.Deletions != 1 {
		t.Fatalf("PF-001 removed: %+v", res)
	}
	log, _ := os.ReadFile(filepath.Join(root, ".memory/learning-log.jsonl"))
	putFile(t, root, ".memory/learning-log.jsonl", string(log)+readyObs("obs_b", manifest.Pitfall, "Retries are not idempotent", "area: queue; issue: retries"))
	runRender(t, root)
	if b, _ := os.ReadFile(pf); !regexp.MustCompile(`## PF-001: Retries`).Match(b) {
		t.Fatalf("render did not reuse PF-001 (the case this test is about):\n%s", b)
	}
	res := runReconcile(t, root)
	if res.Restored != 0 || res.Deletions != 0 || res.Unchanged != 1 {
		t.Fatalf("after PF-001 went to obs_b: %+v", res)
	}
	l, _ := manifest.ReadLog(filepath.Join(root, ".memory/learning-log.jsonl"))
	if o := l.Find("obs_a"); o.Status != manifest.Deprecated {
		t.Errorf("obs_a restored by another observation's section: %+v", o)
	}
	if o := l.Find("obs_b"); o.Status != manifest.Created {
		t.Errorf("obs_b: %+v", o)
	}
	// restore by hand: obs_a's section is gone (PF-001 is obs_b's), so it
	// goes back to ready rather than claiming obs_b's section.
	st, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	u, err := Undo(st, "obs_a", testNow)
	if err != nil || u.Tracked || u.Status != manifest.Ready || u.Confidence != 0.95 {
		t.Fatalf("undo: %+v %v", u, err)
	}
	if _, err := Undo(st, "obs_b", testNow); err == nil {
		t.Fatal("undo of an observation with no penalty accepted")
	}
}

// A deletion's events name it (learn.Event.Of): the deleted event, the
// restored event of the artifact coming back, a second penalty of the
// same rendering and the restored event of `learnwatch restore` all name
// the same rendering alike; another entry's deletion is named otherwise.
func TestDeletionEventsNameTheRendering(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_wf", manifest.Workflow, "Run the linter", "")+
			readyObs("obs_de", manifest.Decision, "Use SQLite", ""))
	runRender(t, root)
	cmd := filepath.Join(root, ".claude/commands/self-learning/run-the-linter.md")
	rendered, err := os.ReadFile(cmd)
	if err != nil {
		t.Fatal(err)
	}
	of := func(res Result, kind string) []string {
		var out []string
		for _, e := range res.Events {
			if e.Kind == kind {
				out = append(out, e.Of)
			}
		}
		return out
	}
	os.Remove(cmd)
	dec := filepath.Join(root, ".memory/knowledge/decisions.md")
	os.WriteFile(dec, []byte("# Decisions\n"), 0o644)
	deleted := of(runReconcile(t, root), learn.KindDeleted)
	if len(deleted) != 2 || deleted[0] == "" || deleted[1] == "" || deleted[0] == deleted[1] {
		t.Fatalf("two deletions named %q", deleted)
	}
	os.WriteFile(cmd, rendered, 0o644)
	if got := of(runReconcile(t, root), learn.KindRestored); len(got) != 1 || got[0] != deleted[0] {
		t.Fatalf("the return names %q, the deletion %q", got, deleted[0])
	}
	os.Remove(cmd)
	if got := of(runReconcile(t, root), learn.KindDeleted); len(got) != 1 || got[0] != deleted[0] {
		t.Fatalf("deleted again: named %q, first %q", got, deleted[0])
	}
	// Back with other content, restored by hand: tracked again with the
	// new hash, the event still names the rendering that was deleted.
	os.WriteFile(cmd, append(rendered, "Mine now.\n"...), 0o644)
	st, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	u, err := Undo(st, "obs_wf", testNow)
	if err != nil {
		t.Fatal(err)
	}
	if !u.Tracked || u.Event.Of != deleted[0] {
		t.Fatalf("learnwatch restore names %q, the deletion %q", u.Event.Of, deleted[0])
	}
}

// PenalisedSince takes the penalties applied at or after the moment, in
// the manifest's order, each observation once; not a live entry, nor a
// penalty whose time does not parse.
func TestPenalisedSince(t *testing.T) {
	del := func(at string) *manifest.Deletion { return &manifest.Deletion{At: at, Status: manifest.Created} }
	m := &manifest.Manifest{Entries: []manifest.Entry{
		{ObservationID: "obs_old", Deleted: del("2026-01-04T23:59:59Z")},
		{ObservationID: "obs_b", Deleted: del("2026-01-05T00:00:00Z")},
		{ObservationID: "obs_live"},
		{ObservationID: "obs_a", Deleted: del("2026-01-05T10:00:00+02:00")},
		{ObservationID: "obs_b", Deleted: del("2026-01-06T00:00:00Z")},
		{ObservationID: "obs_bad", Deleted: del("yesterday")},
	}}
	since := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		since time.Time
		want  []string
	}{
		{since, []string{"obs_b", "obs_a"}},
		{since.Add(-time.Second), []string{"obs_old", "obs_b", "obs_a"}},
		{since.Add(8*time.Hour + time.Second), []string{"obs_b"}},
		{since.Add(48 * time.Hour), nil},
	} {
		if got := PenalisedSince(m, c.since); !slices.Equal(got, c.want) {
			t.Errorf("since %s: %v, want %v", c.since, got, c.want)
		}
	}
}

// UndoHint names the pass's own time, the one its penalties carry (to the
// second), from ManyDeleted deletions on.
func TestUndoHint(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 7, 900_000_000, time.FixedZone("", 3600))
	if h := UndoHint(Result{Deletions: ManyDeleted - 1, At: at}); h != "" {
		t.Errorf("%d deletions: %q", ManyDeleted-1, h)
	}
	h := UndoHint(Result{Deletions: ManyDeleted, At: at})
	if !strings.HasPrefix(h, "3 artifacts deleted at once") || !strings.HasSuffix(h, "`learnwatch restore --since 2026-01-05T09:00:07Z`") {
		t.Errorf("hint %q", h)
	}
	if res := Plan(&State{Log: &manifest.Log{}, Manifest: &manifest.Manifest{}}, at); !res.At.Equal(at) {
		t.Errorf("Plan's result is of %v, want %v", res.At, at)
	}
}
