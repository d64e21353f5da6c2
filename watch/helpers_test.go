package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/manifest"
)

// fixture writes a repository with nCmd rendered commands and nSkill
// rendered skills: one created observation (confidence 0.9) per artifact,
// the artifact files and a manifest with their hashes. It returns the root.
func fixture(tb testing.TB, nCmd, nSkill int) string {
	tb.Helper()
	root := tb.TempDir()
	p := manifest.PathsFor(root)
	var log strings.Builder
	m := &manifest.Manifest{SchemaVersion: 1}
	add := func(id, typ, rel string, content []byte) {
		abs := filepath.Join(root, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := os.WriteFile(abs, content, 0o644); err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&log, `{"id":%q,"type":%q,"pattern":"p %s","confidence":0.9,"observations":3,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"created","evidence":[],"details":"","quality_ok":true,"artifact_path":%q}`+"\n",
			id, typ, id, rel)
		m.Entries = append(m.Entries, manifest.Entry{ObservationID: id, Type: typ, Path: rel,
			ContentHash: manifest.Hash(content), RenderedAt: "2026-01-05T00:00:00Z"})
	}
	for i := range nCmd {
		add(fmt.Sprintf("obs_c%d", i), manifest.Workflow, cmdRel(i), fmt.Appendf(nil, "# command %d\n\nbody\n", i))
	}
	for i := range nSkill {
		add(fmt.Sprintf("obs_s%d", i), manifest.Procedural, skillRel(i), fmt.Appendf(nil, "# skill %d\n\nbody\n", i))
	}
	if err := os.MkdirAll(filepath.Dir(p.Decisions), 0o755); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(p.Log, []byte(log.String()), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := manifest.WriteManifest(p.Manifest, m); err != nil {
		tb.Fatal(err)
	}
	return root
}

func cmdRel(i int) string   { return fmt.Sprintf(".claude/commands/self-learning/c%d.md", i) }
func skillRel(i int) string { return fmt.Sprintf(".claude/skills/s%d/SKILL.md", i) }

func abs(root, rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }

// run is a watcher running in the test's process.
type run struct {
	tb      testing.TB
	root    string
	w       *watcher
	cancel  context.CancelFunc
	done    chan error
	started atomic.Int64 // reconciles begun
	count   atomic.Int64 // reconciles done, their state written
	mu      sync.Mutex
	results []heal.Result
	errs    []error
	stopped bool
}

// start runs a watcher on root with opts; setup may set test hooks before
// it starts. It waits for the startup reconcile.
func start(tb testing.TB, root string, opts Options, setup func(w *watcher)) *run {
	tb.Helper()
	if opts.Log == nil && os.Getenv("WATCH_TEST_LOG") != "" {
		opts.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if opts.Grace == 0 {
		// The grace window has its own tests; elsewhere a deletion is
		// called by the first pass after its event (a file missing since
		// its removal's event), or the second when no event told.
		opts.Grace = time.Millisecond
	}
	w := newWatcher(root, opts)
	r := &run{tb: tb, root: root, w: w, done: make(chan error, 1)}
	inner := w.reconcile
	w.reconcile = func(ctx context.Context, o engine.Pass) (engine.Report, error) {
		r.started.Add(1)
		res, err := inner(ctx, o)
		r.mu.Lock()
		// Only the counts: a full Result of the 10,000-artifact benchmark
		// holds megabytes.
		r.results = append(r.results, heal.Result{Deletions: res.Deletions, Edits: res.Edits, Deleted: res.Deleted, Edited: res.Edited})
		r.errs = append(r.errs, err)
		r.mu.Unlock()
		return res, err
	}
	w.afterFire = func() { r.count.Add(1) }
	if setup != nil {
		setup(w)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- w.run(ctx) }()
	tb.Cleanup(r.stop)
	r.waitFor(10*time.Second, "startup reconcile", func() bool { return r.count.Load() >= 1 })
	return r
}

// stop cancels the watcher and checks that it returned nil.
func (r *run) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			r.tb.Errorf("watcher returned %v", err)
		}
	case <-time.After(20 * time.Second):
		r.tb.Errorf("watcher did not stop")
		return
	}
	if left := tempFiles(r.root); len(left) > 0 {
		r.tb.Errorf("temp files left behind by the stopped watcher: %v", left)
	}
}

// waitFor polls cond until it holds or the deadline passes.
// Once cond holds it also waits for the reconcile that made it hold to
// finish (its state written, its count taken).
func (r *run) waitFor(d time.Duration, what string, cond func() bool) {
	r.tb.Helper()
	waitFor(r.tb, d, what, cond)
	r.settle()
}

// settle waits until every reconcile that began has finished.
func (r *run) settle() {
	r.tb.Helper()
	waitFor(r.tb, 10*time.Second, "the reconcile to finish", func() bool { return r.count.Load() >= r.started.Load() })
}

func waitFor(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// quiet waits for d and reports how many reconciles ran meanwhile.
func (r *run) quiet(d time.Duration) int64 {
	r.settle()
	before := r.count.Load()
	time.Sleep(d)
	return r.count.Load() - before
}

func (r *run) sum() (deletions, edits int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, res := range r.results {
		deletions += res.Deletions
		edits += res.Edits
	}
	return
}

// obs reads observation id from the log on disk.
func obs(tb testing.TB, root, id string) *manifest.Observation {
	tb.Helper()
	o := observations(tb, root)[id]
	if o == nil {
		tb.Fatalf("observation %s not in the log", id)
	}
	return o
}

// observations reads the log on disk, by id.
func observations(tb testing.TB, root string) map[string]*manifest.Observation {
	tb.Helper()
	l, err := manifest.ReadLog(manifest.PathsFor(root).Log)
	if err != nil {
		tb.Fatal(err)
	}
	if n := l.Corrupt(); n > 0 {
		tb.Fatalf("log has %d corrupt lines", n)
	}
	m := map[string]*manifest.Observation{}
	for _, o := range l.Observations() {
		m[o.ID] = o
	}
	return m
}

func status(tb testing.TB, root, id string) string { return obs(tb, root, id).Status }

func entry(tb testing.TB, root, id string) (manifest.Entry, bool) {
	tb.Helper()
	m, _, err := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	if err != nil {
		tb.Fatal(err)
	}
	if i := m.Find(id); i >= 0 {
		return m.Entries[i], true
	}
	return manifest.Entry{}, false
}

// checkFiles asserts that every file the watcher and reconcile write parses
// and that no temp file of an atomic write was left behind.
func checkFiles(tb testing.TB, root string) {
	tb.Helper()
	p := manifest.PathsFor(root)
	if l, err := manifest.ReadLog(p.Log); err != nil || l.Corrupt() > 0 {
		tb.Fatalf("log: err %v, corrupt lines %d", err, l.Corrupt())
	}
	if _, _, err := manifest.ReadManifest(p.Manifest); err != nil {
		tb.Fatalf("manifest: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(p.Memory, stateFile)); err == nil {
		var st State
		if err := json.Unmarshal(b, &st); err != nil {
			tb.Fatalf("state file: %v", err)
		}
	}
	for _, f := range tempFiles(root) {
		// A file a pass replaced is kept until the watcher is idle
		// (heal.Replaced): r.stop checks that none is left.
		if !strings.Contains(f, ".tmp-replaced-") {
			tb.Fatalf("temp file left behind: %s", f)
		}
	}
}

// tempFiles lists the temporary files of atomic writes under root's memory
// and commands directories.
func tempFiles(root string) []string {
	p := manifest.PathsFor(root)
	var out []string
	for _, dir := range []string{p.Memory, p.Commands} {
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp-") {
				out = append(out, filepath.Join(dir, e.Name()))
			}
		}
	}
	return out
}
