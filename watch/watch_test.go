package watch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/manifest"
)

const debounce = 100 * time.Millisecond

// margin is what a loaded 2-core machine may add to the debounce window.
const margin = 1500 * time.Millisecond

func TestDeletionPenalisedAfterGrace(t *testing.T) {
	const grace = 300 * time.Millisecond
	root := fixture(t, 3, 1)
	r := start(t, root, Options{Debounce: debounce, Grace: grace}, nil)
	if got := status(t, root, "obs_c0"); got != manifest.Created {
		t.Fatalf("startup reconcile changed obs_c0 to %s", got)
	}

	latency, st, running := deleteCommandThenSkill(t, r, root, grace)
	t.Logf("event-to-penalty latency %s (debounce %s, grace %s)", latency, debounce, grace)
	if latency < grace {
		t.Fatalf("penalised after %s, before the grace window of %s", latency, grace)
	}
	if running || st.StoppedAt == "" || st.Counters.Deletions != 2 || st.PID != os.Getpid() {
		t.Fatalf("state after stop: running %v %+v", running, st)
	}
	checkFiles(t, root)
}

// deleteCommandThenSkill deletes command 0 under the watcher r and, once
// it is penalised (checked: confidence, date, the manifest's deletion
// record, command 1 untouched), skill 0 with its directory; it returns
// once that is penalised too and r stopped, with the first deletion's
// event-to-penalty latency and the state r left.
func deleteCommandThenSkill(t *testing.T, r *run, root string, grace time.Duration) (latency time.Duration, st State, running bool) {
	t.Helper()
	removed := time.Now()
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+grace+margin, "obs_c0 deprecated", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	latency = time.Since(removed)
	o := obs(t, root, "obs_c0")
	if o.Confidence != 0.27 || o.DeprecatedAt == "" {
		t.Fatalf("obs_c0: confidence %v deprecated_at %q, want 0.27 and a time", o.Confidence, o.DeprecatedAt)
	}
	if e, ok := entry(t, root, "obs_c0"); !ok || e.Deleted == nil || e.Deleted.Confidence != 0.9 || e.Deleted.Status != manifest.Created {
		t.Fatalf("manifest entry of the deleted artifact: %+v (want it kept with its deletion record)", e)
	}
	if got := status(t, root, "obs_c1"); got != manifest.Created {
		t.Fatalf("obs_c1 is %s", got)
	}
	// A skill deleted with its directory (after the first was recorded).
	if err := os.RemoveAll(filepath.Dir(abs(root, skillRel(0)))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+grace+margin, "obs_s0 deprecated", func() bool { return status(t, root, "obs_s0") == manifest.Deprecated })
	r.stop()
	st, running, err := ReadState(root)
	if err != nil {
		t.Fatal(err)
	}
	return latency, st, running
}

// TestMovedAsideAndBack: a file an editor or a script moves aside for 0.6 s
// and puts back is not a deletion (the default grace window is 2 s); one
// that stays away longer is penalised exactly once.
func TestMovedAsideAndBack(t *testing.T) {
	root := fixture(t, 2, 0)
	r := start(t, root, Options{Debounce: debounce, Grace: DefaultGrace}, nil)
	p := abs(root, cmdRel(0))
	aside := p + ".bak"
	if err := os.Rename(p, aside); err != nil {
		t.Fatal(err)
	}
	// Long enough for reconciles to run and see the file missing.
	time.Sleep(600 * time.Millisecond)
	if err := os.Rename(aside, p); err != nil {
		t.Fatal(err)
	}
	// Past the grace window of the first sighting, with room to spare.
	time.Sleep(DefaultGrace + margin)
	if got := status(t, root, "obs_c0"); got != manifest.Created {
		t.Fatalf("moved aside 0.6 s and back: obs_c0 is %s", got)
	}
	if e, ok := entry(t, root, "obs_c0"); !ok || e.Deleted != nil {
		t.Fatalf("entry after the move back: %+v", e)
	}
	if b, err := os.ReadFile(manifest.PathsFor(root).Memory + "/feedback.jsonl"); err == nil && bytes.Contains(b, []byte(`"deleted"`)) {
		t.Fatalf("feedback after the move back: %s", b)
	}

	// Gone for longer than the grace window: one penalty.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+DefaultGrace+margin, "obs_c0 deprecated", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	time.Sleep(DefaultGrace) // more reconciles may run: none penalises again
	r.stop()
	st, _, err := ReadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counters.Deletions != 1 {
		t.Fatalf("deletions %d, want 1", st.Counters.Deletions)
	}
	if o := obs(t, root, "obs_c0"); o.Confidence != 0.27 {
		t.Fatalf("obs_c0 confidence %v, want 0.27 (one penalty)", o.Confidence)
	}
}

func TestAtomicSaveIsAnEdit(t *testing.T) {
	root := fixture(t, 2, 0)
	r := start(t, root, Options{Debounce: debounce}, nil)
	before, _ := entry(t, root, "obs_c0")

	// VS Code / JetBrains "safe write": temp file, rename over.
	path := abs(root, cmdRel(0))
	tmp := filepath.Join(filepath.Dir(path), ".c0.md.swp")
	if err := os.WriteFile(tmp, []byte("# command 0\n\nedited by a person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	// vim without backupcopy: the original is renamed away, a new file
	// written in its place.
	path1 := abs(root, cmdRel(1))
	if err := os.Rename(path1, path1+"~"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path1, []byte("# command 1\n\nvim edit\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(path1 + "~")

	r.waitFor(debounce+margin, "both edits counted", func() bool { _, e := r.sum(); return e >= 2 })
	for _, id := range []string{"obs_c0", "obs_c1"} {
		o := obs(t, root, id)
		if o.Status != manifest.Created || o.Confidence != 0.9 {
			t.Fatalf("%s after an atomic save: status %s confidence %v", id, o.Status, o.Confidence)
		}
	}
	after, ok := entry(t, root, "obs_c0")
	if !ok || after.ContentHash == before.ContentHash {
		t.Fatalf("manifest hash not updated: %v %q", ok, after.ContentHash)
	}
	if d, _ := r.sum(); d != 0 {
		t.Fatalf("%d deletions counted for atomic saves", d)
	}
	checkFiles(t, root)
}

func TestDirectoryRemovedAndRecreated(t *testing.T) {
	root := fixture(t, 5, 0)
	r := start(t, root, Options{Debounce: 300 * time.Millisecond}, nil)
	dir := manifest.PathsFor(root).Commands
	keep, err := os.ReadFile(abs(root, cmdRel(2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(abs(root, cmdRel(2)), keep, 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor(300*time.Millisecond+margin, "four deletions", func() bool { d, _ := r.sum(); return d >= 4 })
	if n := r.quiet(time.Second); n != 0 {
		t.Fatalf("%d more reconciles after the burst", n)
	}
	if d, _ := r.sum(); d != 4 {
		t.Fatalf("%d deletions, want exactly 4", d)
	}
	for _, i := range []int{0, 1, 3, 4} {
		o := obs(t, root, fmt.Sprintf("obs_c%d", i))
		if o.Status != manifest.Deprecated || o.Confidence != 0.27 {
			t.Fatalf("obs_c%d: %s %v, want deprecated 0.27 (penalised once)", i, o.Status, o.Confidence)
		}
	}
	if got := status(t, root, "obs_c2"); got != manifest.Created {
		t.Fatalf("recreated artifact's observation is %s", got)
	}
	// The re-created directory is watched again: a deletion there is seen.
	if err := os.Remove(abs(root, cmdRel(2))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(300*time.Millisecond+margin, "obs_c2 deprecated", func() bool { return status(t, root, "obs_c2") == manifest.Deprecated })
	checkFiles(t, root)
}

func TestMemoryMovedAwayAndBack(t *testing.T) {
	root := fixture(t, 3, 0)
	r := start(t, root, Options{Debounce: debounce}, nil)
	mem := manifest.PathsFor(root).Memory
	aside := filepath.Join(root, "memory-aside") // same file system for rename
	if err := os.Rename(mem, aside); err != nil {
		t.Fatal(err)
	}
	// While .memory is away an artifact is deleted: no log, no penalty yet.
	if err := os.Remove(abs(root, cmdRel(1))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "a reconcile without .memory", func() bool { return r.count.Load() >= 2 })
	if _, err := os.Stat(mem); !os.IsNotExist(err) {
		t.Fatalf("the watcher re-created .memory while it was away: %v", err)
	}
	if err := os.Rename(aside, mem); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_c1 deprecated once .memory is back", func() bool { return status(t, root, "obs_c1") == manifest.Deprecated })
	// Watches were re-armed on the returned .memory and on the commands dir.
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_c0 deprecated", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	// An extractor rewriting the log in the returned .memory is seen.
	before := r.count.Load()
	l, _ := manifest.ReadLog(manifest.PathsFor(root).Log)
	l.Find("obs_c2").Observations = 4
	if err := manifest.WriteLog(manifest.PathsFor(root).Log, l); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "a reconcile for the log change", func() bool { return r.count.Load() > before })
	checkFiles(t, root)
}

func TestBurstCoalesced(t *testing.T) {
	const n, rounds = 500, 10 // 5,000 writes
	root := fixture(t, n, 0)
	r := start(t, root, Options{Debounce: 200 * time.Millisecond}, nil)
	startCount := r.count.Load()
	began := time.Now()
	// A pause in the writes as long as half the debounce (the test's
	// goroutine descheduled on a loaded machine) may let the debounce end
	// in the middle of the burst: each is allowed one more reconcile.
	pauses, last := 0, began
	for round := range rounds {
		for i := range n {
			now := time.Now()
			if now.Sub(last) >= 100*time.Millisecond {
				pauses++
			}
			last = now
			p := abs(root, cmdRel(i))
			if round == rounds-1 && i%10 == 0 {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			if err := os.WriteFile(p, fmt.Appendf(nil, "# command %d\n\nround %d\n", i, round), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	burst := time.Since(began)
	// The final state: every tenth artifact deleted and penalised once,
	// every other one an edit with the hash of its last content.
	final := func() error {
		m, _, err := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
		if err != nil {
			return err
		}
		if len(m.Entries) != n {
			return fmt.Errorf("%d manifest entries, want %d", len(m.Entries), n)
		}
		for _, e := range m.Entries {
			if e.Deleted != nil {
				continue // penalised: its artifact is gone
			}
			b, err := os.ReadFile(abs(root, e.Path))
			if err != nil || manifest.Hash(b) != e.ContentHash {
				return fmt.Errorf("entry %s: hash not the final content (%v)", e.Path, err)
			}
		}
		all := observations(t, root)
		for i := range n {
			o := all[fmt.Sprintf("obs_c%d", i)]
			want, conf := manifest.Created, 0.9
			if i%10 == 0 {
				want, conf = manifest.Deprecated, 0.27
			}
			if o.Status != want || o.Confidence != conf {
				return fmt.Errorf("%s: %s %v, want %s %v", o.ID, o.Status, o.Confidence, want, conf)
			}
		}
		return nil
	}
	r.waitFor(20*time.Second, "final state", func() bool {
		time.Sleep(50 * time.Millisecond) // the check reads everything: do not starve the watcher
		return final() == nil
	})
	// Events of the burst's last writes may still be in the debounce window
	// (or the kernel queue, on a loaded machine) when the final state is
	// reached: at most one more reconcile, which finds nothing; after that,
	// silence (its own writes trigger nothing).
	if q := r.quiet(time.Second); q > 1 {
		t.Fatalf("%d reconciles after the burst settled, want at most 1 trailing", q)
	}
	if q := r.quiet(time.Second); q != 0 {
		t.Fatalf("%d reconciles after the trailing one: a self-triggered loop?", q)
	}
	if err := final(); err != nil {
		t.Fatal(err)
	}
	reconciles := r.count.Load() - startCount
	t.Logf("%d file events (%d artifacts x %d rounds) in %s, %d pauses -> %d reconciles", n*rounds, n, rounds, burst.Round(time.Millisecond), pauses, reconciles)
	// One per max_delay (2 s) of burst, plus the final one, plus slack for
	// reconciles that themselves take long on a loaded machine, plus one
	// per pause of the writer. A loaded machine starves the watcher's
	// reader too, not only the writer (once, under the full test run: a
	// 2.5 s burst, no pause of the writer, 9 reconciles): the events wait
	// in the kernel's queue and the debounce ends. Each such end takes a
	// debounce window with no event read, and the reconcile after it
	// another: one more per two windows of burst. Without coalescing a
	// burst of 5,000 writes gives thousands.
	if limit := int64(burst/DefaultMaxDelay) + 4 + int64(pauses) + int64(burst/(2*200*time.Millisecond)); reconciles > limit || reconciles < 1 {
		t.Fatalf("%d reconciles for one burst of %s with %d pauses, want 1..%d", reconciles, burst, pauses, limit)
	}
	checkFiles(t, root)
}

func TestOverflowRunsFullReconcile(t *testing.T) {
	root := fixture(t, 3, 0)
	r := start(t, root, Options{Debounce: debounce}, nil)
	// Lose the watch on the commands directory, then delete an artifact:
	// no event arrives, as when the kernel queue overflowed.
	dir := manifest.PathsFor(root).Commands
	if err := r.w.fsw.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	if n := r.quiet(3 * debounce); n != 0 {
		t.Fatalf("%d reconciles without events", n)
	}
	if got := status(t, root, "obs_c0"); got != manifest.Created {
		t.Fatalf("obs_c0 is %s before the overflow", got)
	}
	r.w.injectError(fsnotify.ErrEventOverflow)
	r.waitFor(debounce+margin, "obs_c0 deprecated after the overflow", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	// The lost watch was re-armed.
	if err := os.Remove(abs(root, cmdRel(1))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_c1 deprecated", func() bool { return status(t, root, "obs_c1") == manifest.Deprecated })
	r.waitFor(time.Second, "state with one overflow", func() bool {
		st, _, err := ReadState(root)
		return err == nil && st.Counters.Overflows == 1
	})
}

func TestNoSelfTriggeredLoop(t *testing.T) {
	root := fixture(t, 3, 0)
	// One ready observation: with watch.render the watcher renders it,
	// writing an artifact, the log and the manifest.
	p := manifest.PathsFor(root)
	appendLog(t, root, `{"id":"obs_ready","type":"workflow","pattern":"run the linter before pushing","confidence":0.9,"observations":3,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"ready","evidence":["e1"],"details":"lint first","quality_ok":true}`)
	if err := os.WriteFile(filepath.Join(p.Memory, "learnwatch.yaml"), []byte("watch:\n  render: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, root, Options{Debounce: debounce}, nil)
	if got := status(t, root, "obs_ready"); got != manifest.Created {
		t.Fatalf("obs_ready not rendered at startup: %s", got)
	}
	if n := r.quiet(10 * debounce); n != 0 {
		t.Fatalf("%d reconciles after the startup render: the watcher triggers itself", n)
	}
	// One change (a deletion: reconcile writes the log and the manifest),
	// then silence.
	before := r.count.Load()
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "the deletion reconciled", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	if n := r.quiet(10 * debounce); n != 0 {
		t.Fatalf("%d reconciles after one change settled", n)
	}
	// The file is missing since its removal's event, and the grace window
	// is shorter than the debounce: the burst's one reconcile calls it
	// deleted, and its writes trigger nothing.
	if got := r.count.Load() - before; got != 1 {
		t.Fatalf("one change caused %d reconciles, want 1", got)
	}
	if r.w.ticker != nil {
		t.Fatal("a ticker runs while idle")
	}
}

func TestSecondWatcherRefused(t *testing.T) {
	root := fixture(t, 1, 0)
	start(t, root, Options{Debounce: debounce}, nil)
	err := Run(context.Background(), root, Options{})
	var re *RunningError
	if !errors.As(err, &re) || re.PID != os.Getpid() {
		t.Fatalf("second watcher: %v, want a RunningError naming pid %d", err, os.Getpid())
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("message does not name the pid: %v", err)
	}
	if _, running, _ := ReadState(root); !running {
		t.Fatal("ReadState: not running")
	}
}

func TestStalePIDFileTakenOver(t *testing.T) {
	root := fixture(t, 1, 0)
	// A watcher that was killed: its pid is dead, its file still there.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip("no true(1):", err)
	}
	dead := cmd.Process.Pid
	pidPath := filepath.Join(manifest.PathsFor(root).Memory, pidFile)
	if err := os.WriteFile(pidPath, []byte(strconv.Itoa(dead)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, running, _ := ReadState(root); running {
		t.Fatal("ReadState: a dead pid counts as running")
	}
	r := start(t, root, Options{Debounce: debounce}, nil)
	if pid, _ := readPID(pidPath); pid != os.Getpid() {
		t.Fatalf("pid file holds %d", pid)
	}
	r.stop()
	if _, err := os.Stat(pidPath); !os.IsNotExist(err) {
		t.Fatalf("pid file left after a clean stop: %v", err)
	}
}

func TestWatchLimitFallsBackToRescans(t *testing.T) {
	root := fixture(t, 2, 2)
	// A rescan period this short is below watch.rescan's safe range (a
	// repository's config cannot ask for it); the option can.
	var logs syncBuffer
	full := true
	var mu sync.Mutex
	r := start(t, root, Options{Debounce: debounce, Rescan: 300 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&logs, nil))}, func(w *watcher) {
		w.add = func(p string) error {
			mu.Lock()
			defer mu.Unlock()
			if full && strings.Contains(p, ".claude") {
				return fmt.Errorf("inotify_add_watch %s: %w", p, syscall.ENOSPC)
			}
			return w.fsw.Add(p)
		}
	})
	st, _, err := ReadState(root)
	if err != nil || !st.WatchLimitHit || st.Unwatched == 0 || !strings.Contains(st.LimitError, "no space left") {
		t.Fatalf("state does not show the limit: %v %+v", err, st)
	}
	if !strings.Contains(logs.String(), "inotify limit reached") {
		t.Fatalf("no clear log line:\n%s", logs.String())
	}
	// The commands directory is unwatched; the periodic rescan finds the
	// deletion anyway.
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(300*time.Millisecond+margin, "obs_c0 deprecated by a rescan", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	// Watches freed: the next re-arm gets them all and rescans stop.
	mu.Lock()
	full = false
	mu.Unlock()
	r.waitFor(300*time.Millisecond+margin, "limit cleared", func() bool {
		st, _, _ := ReadState(root)
		return !st.WatchLimitHit && st.LimitError == ""
	})
	if n := r.quiet(4 * 300 * time.Millisecond); n != 0 {
		t.Fatalf("%d reconciles while idle after the limit cleared", n)
	}
}

func TestLockContentionRetries(t *testing.T) {
	root := fixture(t, 2, 0)
	p := manifest.PathsFor(root)
	if err := os.WriteFile(filepath.Join(p.Memory, "learnwatch.yaml"), []byte("lock:\n  timeout: 200ms\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, root, Options{Debounce: debounce}, nil)
	// Another tool takes the lock the way devflow's hooks do.
	if err := os.Mkdir(p.LearningLock, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(5*time.Second, "a lock timeout", func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, err := range r.errs {
			if errors.Is(err, manifest.ErrLockTimeout) {
				return true
			}
		}
		return false
	})
	if got := status(t, root, "obs_c0"); got != manifest.Created {
		t.Fatalf("reconciled without the lock: %s", got)
	}
	if err := os.Remove(p.LearningLock); err != nil {
		t.Fatal(err)
	}
	r.waitFor(5*time.Second, "obs_c0 deprecated after the lock was freed", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	st, _, err := ReadState(root)
	if err != nil || st.Counters.Errors == 0 || st.LastError != "" {
		t.Fatalf("state: %v %+v", err, st)
	}
	checkFiles(t, root)
}

func TestCancelMidBurstFinishesCleanly(t *testing.T) {
	root := fixture(t, 300, 0)
	r := start(t, root, Options{Debounce: 20 * time.Millisecond, MaxDelay: 50 * time.Millisecond}, nil)
	for i := range 3000 {
		p := abs(root, cmdRel(i%300))
		if i%7 == 0 {
			os.Remove(p)
		} else if err := os.WriteFile(p, fmt.Appendf(nil, "x %d\n", i), 0o644); err != nil {
			t.Fatal(err)
		}
		if i == 1500 {
			r.waitFor(5*time.Second, "a reconcile mid-burst", func() bool { return r.count.Load() >= 2 })
			r.cancel()
		}
	}
	r.stop()
	checkFiles(t, root)
	st, running, err := ReadState(root)
	if err != nil || running || st.StoppedAt == "" {
		t.Fatalf("state after cancel: %v running %v %+v", err, running, st)
	}
}

func TestReloadConfig(t *testing.T) {
	root := fixture(t, 1, 0)
	var logs syncBuffer
	reload := make(chan struct{})
	r := start(t, root, Options{Log: slog.New(slog.NewTextHandler(&logs, nil)), Reload: reload}, nil)
	if err := os.WriteFile(filepath.Join(manifest.PathsFor(root).Memory, "learnwatch.yaml"), []byte("watch:\n  debounce: 75ms\n  render: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	r.waitFor(5*time.Second, "reload logged", func() bool {
		return strings.Contains(logs.String(), "config reloaded") && strings.Contains(logs.String(), "debounce=75ms")
	})
	// A broken config keeps the old settings.
	if err := os.WriteFile(filepath.Join(manifest.PathsFor(root).Memory, "learnwatch.yaml"), []byte("watch: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reload <- struct{}{}
	r.waitFor(5*time.Second, "reload failure logged", func() bool { return strings.Contains(logs.String(), "keeping the old settings") })
}

func TestIgnoredNames(t *testing.T) {
	for name, want := range map[string]bool{
		".learning-log.jsonl.tmp-0a1b2c": true, ".learning.lock": true, ".knowledge.lock": true,
		".learning.lock.stale-abcd": true, ".watch.pid": true, ".watch-state.json": true,
		".learning-manifest.json.corrupt-20260101T000000Z": true,
		"learning-log.jsonl": false, "c0.md": false, "SKILL.md": false, ".c0.md.swp": false,
	} {
		if got := ignoredName(name); got != want {
			t.Errorf("ignoredName(%q) = %v", name, got)
		}
	}
}

func TestTargetsRefuseOutsideRoot(t *testing.T) {
	root := fixture(t, 1, 1)
	outside := t.TempDir()
	p := manifest.PathsFor(root)
	m, _, _ := manifest.ReadManifest(p.Manifest)
	m.Entries = append(m.Entries,
		manifest.Entry{ObservationID: "obs_out", Type: "workflow", Path: filepath.Join(outside, "x.md"), ContentHash: "sha256:00"},
		manifest.Entry{ObservationID: "obs_dots", Type: "workflow", Path: "../x/y.md", ContentHash: "sha256:00"},
		manifest.Entry{ObservationID: "obs_k", Type: "decision", Path: ".memory/knowledge/decisions.md", AnchorID: "ADR-001"})
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	m.Entries = append(m.Entries, manifest.Entry{ObservationID: "obs_link", Type: "workflow", Path: "link/z.md"})
	if err := manifest.WriteManifest(p.Manifest, m); err != nil {
		t.Fatal(err)
	}
	w := newWatcher(root, Options{})
	tg := w.buildTargets(nil)
	for d := range tg.dirs {
		if !w.inside(d) || strings.HasPrefix(d, filepath.Join(root, "link")) {
			t.Errorf("watches %s", d)
		}
	}
	for _, want := range []string{root, filepath.Join(root, ".claude"), p.Commands, p.Skills, filepath.Dir(abs(root, skillRel(0))),
		p.Memory, filepath.Join(p.Memory, "inbox"), filepath.Dir(p.Decisions)} {
		if tg.dirs[want] == 0 {
			t.Errorf("does not watch %s", want)
		}
	}
	if tg.files[abs(root, cmdRel(0))] == 0 || tg.files[p.Log] == 0 || tg.files[p.Decisions] == 0 {
		t.Errorf("files: %v", tg.files)
	}
	if len(tg.dirs) != 9 { // root .claude commands self-learning skills s0 .memory inbox knowledge
		t.Errorf("%d dirs: %v", len(tg.dirs), tg.dirs)
	}

	// .claude itself a symlink out of the repository: nothing below it is
	// watched.
	root2 := fixture(t, 1, 0)
	if err := os.Rename(filepath.Join(root2, ".claude"), filepath.Join(outside, "claude")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "claude"), filepath.Join(root2, ".claude")); err != nil {
		t.Fatal(err)
	}
	w2 := newWatcher(root2, Options{})
	for d := range w2.buildTargets(nil).dirs {
		if strings.HasPrefix(d, filepath.Join(root2, ".claude")) {
			t.Errorf("watches %s through a symlink out of the root", d)
		}
	}
	if got := w2.moveDirsUnder(filepath.Dir(p.Commands), nil); len(got) != 0 {
		t.Errorf("lists the commands' directories through a symlink out of the root: %v", got)
	}

	// The directories a command may move to: real ones below
	// .claude/commands, never a symlink (listed, or arriving).
	cmds := filepath.Dir(p.Commands)
	if err := os.MkdirAll(filepath.Join(cmds, "ops", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(cmds, "linked")); err != nil {
		t.Fatal(err)
	}
	got := w.moveDirsUnder(cmds, nil)
	for _, d := range []string{cmds, p.Commands, filepath.Join(cmds, "ops"), filepath.Join(cmds, "ops", "deep")} {
		if !got[d] {
			t.Errorf("does not list %s: %v", d, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("lists %v", got)
	}
	w.targets = tg
	w.noteMoveDir(fsnotify.Event{Name: filepath.Join(cmds, "linked"), Op: fsnotify.Create}, filepath.Join(cmds, "linked"))
	if w.moveDirs[filepath.Join(cmds, "linked")] || tg.dirs[filepath.Join(cmds, "linked")] > 0 {
		t.Errorf("a symlink that arrived below the commands is watched")
	}
	w.noteMoveDir(fsnotify.Event{Name: filepath.Join(cmds, "ops"), Op: fsnotify.Create}, filepath.Join(cmds, "ops"))
	if !w.moveDirs[filepath.Join(cmds, "ops", "deep")] || tg.dirs[filepath.Join(cmds, "ops", "deep")] == 0 {
		t.Errorf("a directory that arrived with another in it: %v", w.moveDirs)
	}
}

func TestScheduleCapsDelay(t *testing.T) {
	w := newWatcher(t.TempDir(), Options{Debounce: 100 * time.Millisecond, MaxDelay: 300 * time.Millisecond})
	if err := w.loadSettings(); err != nil {
		t.Fatal(err)
	}
	w.timer = time.NewTimer(time.Hour)
	defer w.timer.Stop()
	// A steady stream of events every 50 ms must not push the reconcile
	// past max_delay.
	first := time.Now()
	fired := time.Time{}
	for time.Since(first) < 2*time.Second && fired.IsZero() {
		w.markPending("event", false)
		select {
		case <-w.timer.C:
			fired = time.Now()
		case <-time.After(50 * time.Millisecond):
		}
	}
	if fired.IsZero() || fired.Sub(first) > 300*time.Millisecond+margin {
		t.Fatalf("fired after %s with max_delay 300ms", fired.Sub(first))
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestKnowledgeFileRewrittenByAnotherTool(t *testing.T) {
	root := fixture(t, 1, 0)
	p := manifest.PathsFor(root)
	appendLog(t, root, `{"id":"obs_adr","type":"decision","pattern":"use postgres for storage","confidence":0.9,"observations":2,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"ready","evidence":["e"],"details":"context: we need a database; decision: postgres; rationale: the team knows it","quality_ok":true}`)
	if err := os.WriteFile(filepath.Join(p.Memory, "learnwatch.yaml"), []byte("watch:\n  render: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, root, Options{Debounce: debounce}, nil)
	if got := status(t, root, "obs_adr"); got != manifest.Created {
		t.Fatalf("decision not rendered at startup: %s", got)
	}
	b, err := os.ReadFile(p.Decisions)
	if err != nil || !strings.Contains(string(b), "## ADR-001") {
		t.Fatalf("decisions.md: %v\n%s", err, b)
	}
	// Another tool rewrites the file without the entry (atomically, as our
	// own writes do): the anchor is gone, a deletion.
	head, _, _ := strings.Cut(string(b), "## ADR-001")
	if err := manifest.WriteFile(p.Decisions, []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_adr deprecated", func() bool { return status(t, root, "obs_adr") == manifest.Deprecated })
	if o := obs(t, root, "obs_adr"); o.Confidence != 0.27 {
		t.Fatalf("confidence %v", o.Confidence)
	}
	if n := r.quiet(5 * debounce); n != 0 {
		t.Fatalf("%d reconciles after the knowledge change settled", n)
	}
}

func TestPollCatchesWhatInotifyMisses(t *testing.T) {
	root := fixture(t, 2, 0)
	r := start(t, root, Options{Debounce: debounce, Poll: 200 * time.Millisecond}, nil)
	// A file system that delivers no events: drop the watch by hand.
	if err := r.w.fsw.Remove(manifest.PathsFor(root).Commands); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(200*time.Millisecond+margin, "obs_c0 deprecated by a poll", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
}

// A pid file whose watcher is gone is not believed, even when its pid now
// belongs to a live process (here: this test itself): status asks whether
// the pid file is locked, not whether the pid exists.
func TestStalePIDNotBelieved(t *testing.T) {
	root := t.TempDir()
	mem := filepath.Join(root, ".memory")
	if err := os.MkdirAll(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mem, pidFile), []byte(fmt.Sprintf("%d\n", os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mem, stateFile), []byte(fmt.Sprintf(`{"pid":%d}`, os.Getpid())), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, running, err := ReadState(root); err != nil || running {
		t.Fatalf("running = %v, err = %v: a pid file nobody holds was believed", running, err)
	}
	l, err := acquirePIDFile(mem)
	if err != nil {
		t.Fatal(err)
	}
	defer l.release()
	if _, running, _ := ReadState(root); !running {
		t.Fatal("a held pid file reads as not running")
	}
}

// The idle work after a pass gives way to an event that matters, and to
// nothing else: cancelOnEvent reads the events meanwhile, calls its cancel
// for a change to a watched file and not for the learning lock's files
// (every pass, Settle's own included, creates and removes them), and hands
// every event it read back in order.
func TestSettleGivesWayToAnEvent(t *testing.T) {
	fsw, err := newFS()
	if err != nil {
		t.Skip("no inotify:", err)
	}
	defer fsw.Close()
	root := t.TempDir()
	p := manifest.PathsFor(root)
	w := newWatcher(root, Options{})
	w.fsw = fsw
	w.targets = newTargets(root)
	w.targets.files[p.Log] = 1
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := w.cancelOnEvent(cancel)
	time.Sleep(30 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("cancelled without an event")
	}
	lockEvents := []fsnotify.Event{
		{Name: p.LearningLock, Op: fsnotify.Create},
		{Name: p.LearningLock + ".owner", Op: fsnotify.Write},
		{Name: p.LearningLock, Op: fsnotify.Remove},
	}
	for _, ev := range lockEvents {
		fsw.Events <- ev
	}
	time.Sleep(50 * time.Millisecond)
	if ctx.Err() != nil {
		t.Fatal("the learning lock's own files called the idle work off")
	}
	change := fsnotify.Event{Name: p.Log, Op: fsnotify.Write}
	fsw.Events <- change
	select {
	case <-ctx.Done():
	case <-time.After(2 * time.Second):
		t.Fatal("a change to the log did not call the idle work off")
	}
	held := stop()
	if want := append(lockEvents, change); !slices.Equal(held, want) {
		t.Fatalf("held %v, want %v", held, want)
	}
	// A stream of events that do not matter is held up to maxHeld, then
	// calls the work off too: what is held stays bounded.
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	stop2 := w.cancelOnEvent(cancel2)
	sent := make(chan struct{})
	defer func() { <-sent }() // before fsw.Close closes the channel
	go func() {
		defer close(sent)
		for range maxHeld + 10 {
			select {
			case fsw.Events <- fsnotify.Event{Name: filepath.Join(root, "other.tmp"), Op: fsnotify.Write}:
			case <-ctx2.Done():
				return
			}
		}
	}()
	select {
	case <-ctx2.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("a stream of events that do not matter was held without bound")
	}
	if held := stop2(); len(held) != maxHeld {
		t.Fatalf("held %d events, want %d", len(held), maxHeld)
	}
}

// Settle finishes in a watcher left alone: its staleness pass marks an
// observation whose reference is gone, and the watcher then does nothing.
// It did not: the lock the pass takes called it off, and it began again
// every 400 ms, for ever.
func TestSettleFinishesWhenIdle(t *testing.T) {
	root := fixture(t, 3, 0)
	lines := []string{`{"id":"obs_ref","type":"decision","pattern":"Parse in one place","confidence":0.5,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"observing","evidence":["src/parser/gone.go"],"details":"context: c; decision: keep parsing in src/parser/gone.go; rationale: r","quality_ok":true}`}
	// Enough observations that the scan outlasts the lock's events.
	for i := range 3000 {
		lines = append(lines, fmt.Sprintf(`{"id":"obs_n%d","type":"pitfall","pattern":"p %d","confidence":0.5,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"observing","evidence":["src/m%d/a.go","docs/n%d.md"],"details":"area: src/m%d/b.go; issue: i; impact: m; resolution: see docs/r%d.md","quality_ok":true}`, i, i, i, i, i, i))
	}
	appendLog(t, root, lines...)
	var settles atomic.Int64
	r := start(t, root, Options{Debounce: debounce}, func(w *watcher) {
		w.afterSettle = func() { settles.Add(1) }
	})
	r.waitFor(5*time.Second, "the staleness pass's mark", func() bool { return obs(t, root, "obs_ref").MayBeStale })
	// Settle's last round (the stat cache, the proof) comes 4 ×
	// settleDelay after the round that wrote the mark: wait until no
	// round has come for twice that. A Settle that began again for ever
	// never leaves such a gap.
	n := settles.Load()
	for quietSince, deadline := time.Now(), time.Now().Add(5*time.Second); time.Since(quietSince) < 8*settleDelay; {
		if time.Now().After(deadline) {
			t.Fatalf("Settle never went quiet: %d rounds", settles.Load())
		}
		time.Sleep(settleDelay / 4)
		if m := settles.Load(); m != n {
			n, quietSince = m, time.Now()
		}
	}
	if q := r.quiet(20 * settleDelay); q != 0 {
		t.Fatalf("%d reconciles while idle", q)
	}
	if more := settles.Load() - n; more != 0 {
		t.Fatalf("Settle ran %d more times in 2 s with nothing changed (%d before)", more, n)
	}
}

// appendLog appends lines to root's learning log, as an extractor does.
func appendLog(t *testing.T, root string, lines ...string) {
	t.Helper()
	f, err := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, l := range lines {
		if _, err := fmt.Fprintln(f, l); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPreparedDeletion: with a grace window longer than prepareLead, the
// pass that ends it is prepared shortly before (engine.Engine.Prepare)
// and its end only commits it: the penalty is the one a pass run then
// writes, dated at the window's end, and no temporary file is left.
func TestPreparedDeletion(t *testing.T) {
	const grace = prepareLead + 500*time.Millisecond
	root := fixture(t, 3, 1)
	var recorded atomic.Int32 // passes that recorded a deletion and were committed as prepared
	r := start(t, root, Options{Debounce: debounce, Grace: grace}, func(w *watcher) {
		w.reconcile = countPrepared(w.reconcile, func(rep engine.Report) bool { return rep.Deletions > 0 }, &recorded)
	})
	// The second deletion comes after the first was recorded: prepared
	// again.
	_, st, _ := deleteCommandThenSkill(t, r, root, grace)
	if st.Counters.Deletions != 2 || recorded.Load() != 2 {
		t.Fatalf("counters %+v, %d deletions committed as prepared: want 2 deletions, both committed as prepared", st.Counters, recorded.Load())
	}
	checkFiles(t, root)
}

// TestPreparedEdit: an edit's pass is prepared while its debounce runs,
// and the debounce's end only commits it (the edit recorded with the
// file's hash); a second write after the preparation drops it, and the
// edit is recorded once, with the hash of what the file holds at the end.
func TestPreparedEdit(t *testing.T) {
	root := fixture(t, 3, 1)
	var prepared, committed atomic.Int32 // bursts' passes prepared; edits committed as prepared
	// again, when set, is written once a burst's pass is prepared, before
	// the watcher goes on (its event comes after).
	var again atomic.Pointer[func(*watcher)]
	edit := func(rel, text string) []byte {
		t.Helper()
		b := []byte("# edited\n\n" + text + "\n")
		if err := os.WriteFile(abs(root, rel), b, 0o644); err != nil {
			t.Error(err)
		}
		return b
	}
	r := start(t, root, Options{Debounce: debounce}, func(w *watcher) {
		w.afterPrepare = func(burst bool) {
			if burst && w.eng.HasPrepared() {
				prepared.Add(1)
				if f := again.Swap(nil); f != nil {
					(*f)(w)
				}
			}
		}
		w.reconcile = countPrepared(w.reconcile, func(rep engine.Report) bool { return rep.Edits > 0 }, &committed)
	})
	hashIs := func(id string, b []byte) bool {
		e, ok := entry(t, root, id)
		return ok && e.ContentHash == manifest.Hash(b)
	}
	// Several bursts: the first pass's duration seeds when a burst's pass
	// is prepared, and a busy machine may leave one unprepared.
	for i := range 3 {
		b := edit(cmdRel(0), fmt.Sprintf("by a person, %d", i))
		r.waitFor(debounce+margin, "the edit recorded", func() bool { return hashIs("obs_c0", b) })
	}
	if committed.Load() == 0 {
		t.Fatalf("no edit committed as prepared (%d bursts prepared)", prepared.Load())
	}
	// Written again once its pass is prepared: that pass is dropped. The
	// debounce is then cut to burstQuiet, so that the second write's pass
	// is not prepared again before it is due (as in a burst that reached
	// max_delay): the stale one is all there is to drop.
	const second = "second, after the pass was prepared"
	write := func(w *watcher) {
		edit(cmdRel(1), second)
		w.set.debounce = burstQuiet
	}
	again.Store(&write)
	edit(cmdRel(1), "first")
	last := []byte("# edited\n\n" + second + "\n")
	r.waitFor(debounce+margin, "the edit recorded", func() bool { return hashIs("obs_c1", last) && again.Load() == nil })
	r.stop()
	st, _, err := ReadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counters.Edits != 4 {
		t.Fatalf("counters %+v: want 4 edits", st.Counters)
	}
	checkFiles(t, root)
}

// TestPreparedShortGrace: with a grace window shorter than the debounce,
// a removed artifact is missing since its removal's event, so the burst's
// own pass calls it deleted, and that pass is prepared while the debounce
// runs — a command file, and a skill with its directory. A skill's
// directory moved is followed, by a pass prepared too (the directory's
// change taken into the burst when it is prepared). A file removed and
// put back within the burst is no deletion.
func TestPreparedShortGrace(t *testing.T) {
	const debounce = 400 * time.Millisecond // room for the first preparation's retries
	root := fixture(t, 3, 2)
	var recorded, moved atomic.Int32 // deletions, moves committed as prepared
	r := start(t, root, Options{Debounce: debounce, Grace: time.Millisecond}, func(w *watcher) {
		w.reconcile = countPrepared(w.reconcile, func(rep engine.Report) bool { return rep.Deletions > 0 }, &recorded)
		w.reconcile = countPrepared(w.reconcile, func(rep engine.Report) bool { return rep.Moved > 0 }, &moved)
	})
	before := r.count.Load()
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_c0 deprecated", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	if err := os.RemoveAll(filepath.Dir(abs(root, skillRel(0)))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_s0 deprecated", func() bool { return status(t, root, "obs_s0") == manifest.Deprecated })
	if got := r.count.Load() - before; got != 2 || recorded.Load() != 2 {
		t.Fatalf("%d passes, %d deletions committed as prepared: want 2 and 2", got, recorded.Load())
	}
	// A skill's directory moved: no event on its file, only on the
	// directories; the move is followed, not a deletion.
	from := filepath.Dir(abs(root, skillRel(1)))
	if err := os.Rename(from, from+"-renamed"); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "the move followed", func() bool { return moved.Load() == 1 })
	if got := status(t, root, "obs_s1"); got != manifest.Created {
		t.Fatalf("obs_s1 moved with its directory is %s", got)
	}
	p := abs(root, cmdRel(1))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(debounce / 4)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	r.quiet(2 * debounce)
	if got := status(t, root, "obs_c1"); got != manifest.Created {
		t.Fatalf("obs_c1 removed and put back within the burst is %s", got)
	}
	r.stop()
	checkFiles(t, root)
}

// countPrepared wraps a watcher's reconcile to count in n the passes that
// were committed as prepared and of which which holds.
func countPrepared(inner reconcileFunc, which func(engine.Report) bool, n *atomic.Int32) reconcileFunc {
	return func(ctx context.Context, p engine.Pass) (engine.Report, error) {
		rep, err := inner(ctx, p)
		if err == nil && rep.Prepared && which(rep) {
			n.Add(1)
		}
		return rep, err
	}
}

// TestPreparedDropped: a prepared pass is dropped when the file comes back
// before the window ends (no penalty, no temporary file left), and when
// another change arrives (that change's pass runs; the deletion is
// recorded at the end of its window all the same).
func TestPreparedDropped(t *testing.T) {
	const grace = prepareLead + 500*time.Millisecond
	root := fixture(t, 3, 1)
	var prepared, recorded atomic.Int32 // grace windows' passes prepared; deletions committed as prepared
	r := start(t, root, Options{Debounce: debounce, Grace: grace}, func(w *watcher) {
		w.afterPrepare = func(burst bool) {
			if !burst && w.eng.HasPrepared() {
				prepared.Add(1)
			}
		}
		w.reconcile = countPrepared(w.reconcile, func(rep engine.Report) bool { return rep.Deletions > 0 }, &recorded)
	})
	p := abs(root, cmdRel(0))
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+grace+margin, "the pass prepared", func() bool { return prepared.Load() == 1 })
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(grace + debounce + 300*time.Millisecond)
	if got := status(t, root, "obs_c0"); got != manifest.Created {
		t.Fatalf("obs_c0 came back before its grace window ended and is %s", got)
	}

	// Deleted again; another command edited after the pass was prepared.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+grace+margin, "the pass prepared again", func() bool { return prepared.Load() == 2 })
	q := abs(root, cmdRel(1))
	if err := os.WriteFile(q, []byte("# command 1\n\nedited\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+grace+margin, "obs_c0 deprecated", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	r.stop()
	st, _, err := ReadState(root)
	if err != nil {
		t.Fatal(err)
	}
	if st.Counters.Deletions != 1 || st.Counters.Edits != 1 || recorded.Load() > 1 {
		t.Fatalf("counters %+v, %d deletions committed as prepared: want 1 deletion, 1 edit, the first preparation not committed", st.Counters, recorded.Load())
	}
	checkFiles(t, root)
}

// TestRenderedSkillWatched: a skill the watcher renders itself, into a
// directory of its own, is watched from the pass that wrote it (the watch
// set is computed again when the manifest changed): deleting its SKILL.md
// alone, with no event on a directory, is a deletion.
func TestRenderedSkillWatched(t *testing.T) {
	root := fixture(t, 2, 1)
	p := manifest.PathsFor(root)
	if err := os.WriteFile(filepath.Join(p.Memory, "learnwatch.yaml"), []byte("watch:\n  render: true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := start(t, root, Options{Debounce: debounce}, nil)
	appendLog(t, root, `{"id":"obs_newskill","type":"procedural","pattern":"bisect a flaky test","confidence":0.9,"observations":3,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"ready","evidence":["e1"],"details":"run it in a loop","quality_ok":true}`)
	var skill string
	r.waitFor(debounce+margin, "obs_newskill rendered", func() bool {
		o := obs(t, root, "obs_newskill")
		skill = o.ArtifactPath
		return o.Status == manifest.Created && skill != ""
	})
	r.quiet(5 * debounce)
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(skill))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_newskill deprecated", func() bool { return status(t, root, "obs_newskill") == manifest.Deprecated })
	r.stop()
	checkFiles(t, root)
}

// TestArtifactRegisteredInAnExistingDirectory: another tool writes a skill
// into a directory that existed, unwatched, and registers it in the
// manifest. The pass the manifest's event starts computes the watch set
// again and arms that directory: deleting the skill's file alone is a
// deletion.
func TestArtifactRegisteredInAnExistingDirectory(t *testing.T) {
	root := fixture(t, 2, 1)
	p := manifest.PathsFor(root)
	dir := filepath.Join(root, ".claude", "skills", "later")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	r := start(t, root, Options{Debounce: debounce}, nil)
	content := []byte("# skill later\n\nbody\n")
	rel := ".claude/skills/later/SKILL.md"
	if err := os.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), content, 0o644); err != nil {
		t.Fatal(err)
	}
	appendLog(t, root, `{"id":"obs_later","type":"procedural","pattern":"p obs_later","confidence":0.9,"observations":3,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"created","evidence":[],"details":"","quality_ok":true,"artifact_path":".claude/skills/later/SKILL.md"}`)
	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	m.Entries = append(m.Entries, manifest.Entry{ObservationID: "obs_later", Type: manifest.Procedural, Path: rel,
		ContentHash: manifest.Hash(content), RenderedAt: "2026-01-05T00:00:00Z"})
	if err := manifest.WriteManifest(p.Manifest, m); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "a pass after the registration", func() bool { return r.count.Load() >= 2 })
	r.quiet(5 * debounce)
	if err := os.Remove(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(debounce+margin, "obs_later deprecated", func() bool { return status(t, root, "obs_later") == manifest.Deprecated })
	r.stop()
	checkFiles(t, root)
}

// Giving memory back to the OS after Settle does not hold the loop: a
// deletion made while it runs is penalised before it ends. It held the
// loop 40–80 ms at 50,000 artifacts.
func TestGiveBackDoesNotHoldTheLoop(t *testing.T) {
	root := fixture(t, 3, 0)
	freeing, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	r := start(t, root, Options{Debounce: debounce}, func(w *watcher) {
		w.free = func() {
			select {
			case freeing <- struct{}{}:
			default:
			}
			<-release
		}
	})
	defer once.Do(func() { close(release) })
	select {
	case <-freeing:
	case <-time.After(10 * time.Second):
		t.Fatal("the settled watcher never gave memory back")
	}
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(10*time.Second, "the deletion's penalty while memory is being given back", func() bool {
		d, _ := r.sum()
		return d == 1
	})
	once.Do(func() { close(release) })
}
