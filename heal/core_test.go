package heal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/render"
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

func runReconcile(t *testing.T, root string) Result {
	t.Helper()
	res, err := Reconcile(context.Background(), root, Options{Now: testNow, LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func runRender(t *testing.T, root string) render.Result {
	t.Helper()
	res, err := render.Run(context.Background(), root, render.Options{Now: testNow, LockTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// Heal matches the heading, which holds the pattern on one line: a pattern
// with a newline or a run of spaces must still heal (regression).
func TestHealPatternNotOnOneLine(t *testing.T) {
	for _, pattern := range []string{"Use  SQLite\nfor the cache", "Tabs\tand   spaces ", "Plain pattern"} {
		root := t.TempDir()
		putFile(t, root, ".memory/learning-log.jsonl", readyObs("obs_a", manifest.Decision, pattern, ""))
		// The crash window: render wrote the knowledge file only.
		st, err := render.Load(manifest.PathsFor(root))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := render.Apply(context.Background(), st, render.Options{Now: testNow, LockTimeout: time.Second}); err != nil {
			t.Fatal(err)
		}
		putFile(t, root, ".memory/learning-log.jsonl", readyObs("obs_a", manifest.Decision, pattern, ""))
		os.Remove(filepath.Join(root, ".memory", ".learning-manifest.json"))

		res := runReconcile(t, root)
		if res.Healed != 1 {
			t.Errorf("pattern %q: healed %d, want 1", pattern, res.Healed)
		}
	}
}

func TestReconcileCounts(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_wf", manifest.Workflow, "Run the linter", "")+
			readyObs("obs_wf2", manifest.Workflow, "Rebase first", "")+
			readyObs("obs_de", manifest.Decision, "Use SQLite", "")+
			readyObs("obs_de2", manifest.Decision, "Wrap errors", ""))
	runRender(t, root)
	if res := runReconcile(t, root); res.Unchanged != 4 || len(res.Wrote) != 0 {
		t.Fatalf("fresh render: %+v", res)
	}
	os.Remove(filepath.Join(root, ".claude/commands/self-learning/run-the-linter.md"))
	putFile(t, root, ".claude/commands/self-learning/rebase-first.md", "edited\n")
	dec := filepath.Join(root, ".memory/knowledge/decisions.md")
	b, _ := os.ReadFile(dec)
	b = regexp.MustCompile(`(?s)## ADR-001.*?\n## ADR-002`).ReplaceAll(b, []byte("## ADR-002"))
	os.WriteFile(dec, b, 0o644)

	res := runReconcile(t, root)
	if res.Deletions != 2 || res.Edits != 1 || res.Unchanged != 1 || res.Healed != 0 {
		t.Fatalf("after delete/edit/anchor loss: %+v", res)
	}
	log, _ := manifest.ReadLog(manifest.PathsFor(root).Log)
	for _, id := range []string{"obs_wf", "obs_de"} {
		if o := log.Find(id); o.Status != manifest.Deprecated || o.Confidence != 0.28 || o.DeprecatedAt != "2026-01-05T00:00:00Z" {
			t.Errorf("%s after deletion: %+v", id, o)
		}
	}
	if o := log.Find("obs_wf2"); o.Status != manifest.Created || o.Confidence != 0.95 {
		t.Errorf("edited obs_wf2 changed: %+v", o)
	}
	m, _, _ := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	if len(m.Entries) != 4 || m.Entries[m.Find("obs_wf2")].ContentHash != manifest.Hash([]byte("edited\n")) {
		t.Errorf("manifest after reconcile: %+v", m.Entries)
	}
	// The deleted entries are kept with what the penalty changed.
	for _, id := range []string{"obs_wf", "obs_de"} {
		if d := m.Entries[m.Find(id)].Deleted; d == nil || d.Status != manifest.Created || d.Confidence != 0.95 || d.At != "2026-01-05T00:00:00Z" {
			t.Errorf("%s deletion record: %+v", id, d)
		}
	}
	if res := runReconcile(t, root); res.Unchanged != 2 || res.Deletions+res.Edits+res.Healed != 0 || len(res.Wrote) != 0 {
		t.Errorf("second reconcile: %+v (wrote %v)", res, res.Wrote)
	}
}

func TestReconcileNoLog(t *testing.T) {
	root := t.TempDir()
	res := runReconcile(t, root)
	if res.Deletions+res.Edits+res.Unchanged+res.Healed != 0 || len(res.Wrote) != 0 {
		t.Errorf("no log: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(root, ".memory")); !os.IsNotExist(err) {
		t.Errorf(".memory created without a log")
	}
}

// Reconcile, render and observe run concurrently in one process (goroutines)
// on one repository; the locks serialise them. Run with -race: the shared
// parsers, resolvers and caches must be safe. Afterwards every observation
// is there once with every sighting counted and every decision has exactly
// one ADR.
func TestConcurrentInProcess(t *testing.T) {
	root := t.TempDir()
	p := manifest.PathsFor(root)
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_wf", manifest.Workflow, "Run the linter", "")+readyObs("obs_pf", manifest.Pitfall, "Clock", "area: a; issue: i"))
	const observers, rounds = 3, 4
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	observe := func(in *manifest.Observation) error {
		l, err := manifest.AcquireLock(context.Background(), p.LearningLock, 10*time.Second)
		if err != nil {
			return err
		}
		defer l.Release()
		log, err := manifest.ReadLog(p.Log)
		if err != nil {
			return err
		}
		lifecycle.Observe(log, []*manifest.Observation{in}, testNow, nil)
		return manifest.WriteLog(p.Log, log)
	}
	for w := 0; w < observers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				in := &manifest.Observation{ID: fmt.Sprintf("obs_w%d", w), Type: manifest.Decision, Pattern: fmt.Sprintf("Rule of worker %d", w), QualityOK: true}
				if err := observe(in); err != nil {
					errs <- err
				}
			}
		}(w)
	}
	for i := 0; i < 2; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if _, err := render.Run(context.Background(), root, render.Options{Now: testNow, LockTimeout: 10 * time.Second}); err != nil {
					errs <- err
				}
			}
		}()
		go func() {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				if _, err := Reconcile(context.Background(), root, Options{Now: testNow, LockTimeout: 10 * time.Second, Render: r%2 == 0}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	runRender(t, root)
	log, err := manifest.ReadLog(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, o := range log.Observations() {
		seen[o.ID]++
	}
	for w := 0; w < observers; w++ {
		id := fmt.Sprintf("obs_w%d", w)
		if o := log.Find(id); seen[id] != 1 || o.Observations != rounds || o.Status != manifest.Created {
			t.Errorf("%s: seen %d times, %+v", id, seen[id], o)
		}
	}
	b, _ := os.ReadFile(p.Decisions)
	if n := strings.Count(string(b), "\n## ADR-"); n != observers {
		t.Errorf("decisions.md has %d ADRs, want %d", n, observers)
	}
	for _, l := range []string{p.LearningLock, p.KnowledgeLock} {
		if _, err := os.Stat(l); !os.IsNotExist(err) {
			t.Errorf("lock %s left behind", l)
		}
	}
}

// A staged write is committed once and the file it replaced released
// when the pass ends, or dropped (its file removed) when the pass ends
// without committing it; a staging that failed has nothing to drop and
// reports its error at commit.
func TestStagedCommitOrDrop(t *testing.T) {
	counts := &countingFile{}
	ok := func() (stagedFile, error) { return counts, nil }
	s := stage(ok)
	if err := s.commit(); err != nil {
		t.Fatal(err)
	}
	s.drop().Release()
	if f := stage(ok).drop(); f != nil {
		t.Fatal("a dropped staging returned its file")
	}
	failed := stage(func() (stagedFile, error) { return (*countingFile)(nil), fmt.Errorf("disk full") })
	if err := failed.commit(); err == nil || err.Error() != "disk full" {
		t.Fatalf("commit of a failed staging: %v", err)
	}
	failed.drop()
	var none *staged
	none.drop()
	if counts.commits != 1 || counts.aborts != 1 || counts.releases != 1 {
		t.Fatalf("commits %d, aborts %d, releases %d; want 1, 1 and 1", counts.commits, counts.aborts, counts.releases)
	}
}

// countingFile is a stagedFile that counts its commits, aborts and
// releases (a nil one panics: a failed staging's file must never be
// used).
type countingFile struct{ commits, aborts, releases int }

func (f *countingFile) Commit() error { f.commits++; return nil }
func (f *countingFile) Abort()        { f.aborts++ }
func (f *countingFile) Release()      { f.releases++ }
