// Package watch owns `learnwatch watch`, the long-running reconciler. It
// watches the directories that hold the memory's files with fsnotify
// (directories, never thousands of single files), coalesces each burst of
// events into one full heal.Reconcile after a debounce window, ignores its own
// writes, re-arms watches that were lost (a directory removed and re-created,
// .memory moved away and back, a kernel queue overflow), falls back to
// periodic full reconciles only when the inotify limits are hit, keeps one
// watcher per repository (.memory/.watch.pid) and publishes its counters in
// .memory/.watch-state.json for `learnwatch status`.
//
// The design follows syncthing's watch aggregator: the events only say
// "something under here changed"; what changed is decided by reconcile,
// which re-checks every path after the debounce window, so an editor's
// atomic save (write a temp file, rename it over) is an edit, never a
// deletion. A missing artifact is called deleted only after it stayed
// missing for the grace window (watch.grace), so a file moved aside for a
// moment and put back is nothing.
package watch

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/manifest"
)

// Options tune a watcher. The zero value uses .memory/learnwatch.yaml
// (watch.debounce, watch.max_delay, watch.rescan, watch.render,
// lock.timeout) with their defaults.
type Options struct {
	// Debounce, MaxDelay and Rescan override the config when > 0.
	// Debounce is the quiet time after the last event of a burst before
	// reconciling; MaxDelay caps the wait after the first event so a steady
	// stream of events cannot starve reconcile; Rescan is the period of full
	// reconciles used only when the inotify limits were hit.
	Debounce, MaxDelay, Rescan time.Duration
	// Grace overrides watch.grace when > 0: how long an artifact must stay
	// missing before it is called deleted.
	Grace time.Duration
	// Poll, when > 0, adds a full reconcile every Poll even though inotify
	// works: for file systems whose changes inotify does not report (some
	// network and host bind mounts).
	Poll time.Duration
	// Log receives the structured log; nil discards it.
	Log *slog.Logger
	// Reload: each receive re-reads .memory/learnwatch.yaml (wire SIGHUP
	// to it). Flag overrides above are kept.
	Reload <-chan struct{}
	// Feedback makes each reconcile record its learning signals (deleted,
	// edited) in .memory/feedback.jsonl under the lock, exactly once
	// (heal.Options.Feedback).
	Feedback bool
}

// Defaults used when neither the config nor Options set a value.
const (
	DefaultDebounce = 200 * time.Millisecond
	DefaultMaxDelay = 2 * time.Second
	DefaultRescan   = 30 * time.Second
	DefaultGrace    = 2 * time.Second
)

// Run watches the repository at root until ctx is cancelled (SIGINT,
// SIGTERM), then finishes the reconcile in flight and returns nil. It
// returns a *RunningError when another watcher holds the repository.
func Run(ctx context.Context, root string, opts Options) error {
	w := newWatcher(root, opts)
	return w.run(ctx)
}

// settings are the effective tunables (config + overrides).
type settings struct {
	debounce, maxDelay, rescan, poll time.Duration
	grace                            time.Duration
	render                           bool
	lockTimeout                      time.Duration
}

type reconcileFunc func(ctx context.Context, p engine.Pass) (engine.Report, error)

// watcher is one run of the reconciler. Everything but inject is owned by
// the goroutine in run.
type watcher struct {
	root  string
	paths manifest.Paths
	opts  Options
	log   *slog.Logger
	set   settings

	fsw    *fsnotify.Watcher
	inject chan error // tests push errors through the Errors path

	targets  targets
	changed  map[string]bool // watched directories that changed since the last full re-arm
	armed    map[string]fileID
	limitErr error // the last inotify limit error, nil when all watches are armed
	own      map[string]fingerprint

	// the burst being aggregated (zero first: nothing pending)
	first, last time.Time
	reason      string
	now         bool
	thorough    bool // events may have been lost: check every watch
	retryAt     time.Time
	backoff     time.Duration
	timer       *time.Timer
	ticker      *time.Ticker
	tickEvery   time.Duration

	state State

	// eng runs every pass (engine.Engine): the staleness pass, the
	// learning signals and the policy refresh, like the CLI's reconcile.
	// It is rebuilt when the config is (re)loaded.
	eng *engine.Engine
	// touched holds the watched files that had an event in the burst
	// (engine.Pass.Touched); full is set when the burst needs every file
	// checked (startup, rescan, overflow, a directory event, a reload).
	touched map[string]bool
	// arrived are the files and directories that appeared under the
	// commands and skills directories since the last pass (noteArrival).
	arrived map[string]bool
	full    bool
	// moveDirs are the directories below .claude/commands where a person
	// may move a command (the project's own subdirectories, which hold no
	// artifact): watched so that the arrival is seen (moveDirsUnder).
	moveDirs map[string]bool

	// missing holds the artifacts reconcile found missing but was not yet
	// allowed to call deleted, with when they were first seen missing;
	// graceDue is when the first of them is due.
	missing  map[string]time.Time
	graceDue time.Time
	// goneAt holds, for the files the burst's events removed (or moved
	// away), when the first such event came: missing since then, whether
	// or not a pass has seen it yet (confirmed, trackMissing).
	goneAt map[string]time.Time
	// dueAt is, while the pass a grace window's end or a burst's debounce
	// started runs, when that window ended: the moment its changes became
	// final (the latency benchmark measures from it).
	dueAt time.Time

	// settleT fires settleDelay after a pass: the engine does what the
	// pass deferred (engine.Engine.Settle) while nothing is pending.
	settleT *time.Timer
	// prepT fires when the engine is to prepare a pass ahead of its time:
	// a pending burst's, while its debounce runs (prepareBurst), or, with
	// none pending, the one that ends the first grace window, prepareLead
	// before it ends (prepare).
	prepT *time.Timer
	// events counts the events that mattered (onEvent); prepared is its
	// value when the engine's prepared pass began: an event since makes
	// that pass stale, and the next pass drops it.
	events, prepared uint64
	// passTook is a running estimate of how long a pass, or preparing
	// one, takes: a burst's pass is prepared that long (twice, plus
	// prepareSlack, and at least burstQuiet after the last event) before
	// its debounce ends.
	passTook time.Duration

	// gitDir is the worktree's git directory ("" outside git), where git
	// leaves the state of an operation waiting for the person.
	gitDir string

	// freeing is set while the memory a settled watcher gives back to the
	// OS is being freed (giveBack), on a goroutine of its own.
	freeing atomic.Bool
	// collecting is set while a collection collectBefore started runs.
	collecting atomic.Bool
	// prepAlloc is what the last preparation allocated, in bytes.
	prepAlloc uint64

	// test hooks
	reconcile    reconcileFunc
	add          func(path string) error
	newFS        func() (*fsnotify.Watcher, error)
	afterFire    func()           // after a reconcile's results and state are written
	afterSettle  func()           // after each call of the engine's Settle
	afterPrepare func(burst bool) // after each call of the engine's Prepare (for a burst's pass, or a grace window's)
	free         func()           // gives memory back to the OS (debug.FreeOSMemory)
	heap         func() heapState // the heap's state (readHeap)
	collect      func()           // collects the garbage (runtime.GC)
}

func newWatcher(root string, opts Options) *watcher {
	root = filepath.Clean(root)
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &watcher{
		root:    root,
		paths:   manifest.PathsFor(root),
		opts:    opts,
		log:     log,
		inject:  make(chan error, 16),
		armed:   map[string]fileID{},
		own:     map[string]fingerprint{},
		newFS:   newFS,
		free:    debug.FreeOSMemory,
		heap:    readHeap,
		collect: runtime.GC,
	}
	w.add = func(p string) error { return w.fsw.Add(p) }
	w.reconcile = w.pass
	return w
}

// pass runs one reconcile pass through the watcher's engine.
func (w *watcher) pass(ctx context.Context, p engine.Pass) (engine.Report, error) {
	return w.eng.Reconcile(ctx, p)
}

// injectError delivers err as if it came from fsnotify's Errors channel.
func (w *watcher) injectError(err error) { w.inject <- err }

func (w *watcher) loadSettings() error {
	c, err := config.Load(w.root)
	if err != nil {
		return err
	}
	for _, warn := range c.Warnings {
		w.log.Warn("config value clamped", "detail", warn)
	}
	s := settings{
		debounce:    c.Watch.Debounce.Duration,
		maxDelay:    c.Watch.MaxDelay.Duration,
		rescan:      c.Watch.Rescan.Duration,
		render:      c.Watch.Render,
		lockTimeout: c.Lock.Timeout.Duration,
		poll:        w.opts.Poll,
		grace:       c.Watch.Grace.Duration,
	}
	if w.opts.Grace > 0 {
		s.grace = w.opts.Grace
	}
	if s.grace <= 0 {
		s.grace = DefaultGrace
	}
	if w.opts.Debounce > 0 {
		s.debounce = w.opts.Debounce
	}
	if w.opts.MaxDelay > 0 {
		s.maxDelay = w.opts.MaxDelay
	}
	if w.opts.Rescan > 0 {
		s.rescan = w.opts.Rescan
	}
	if s.debounce <= 0 {
		s.debounce = DefaultDebounce
	}
	if s.maxDelay <= 0 {
		s.maxDelay = max(DefaultMaxDelay, 2*s.debounce)
	}
	s.maxDelay = max(s.maxDelay, s.debounce)
	if s.rescan <= 0 {
		s.rescan = DefaultRescan
	}
	w.set = s
	if w.eng != nil {
		w.eng.Close() // its staged and replaced files go with it
	}
	w.eng = engine.New(w.root, c, w.log)
	w.full = true // a new engine's first pass checks every file
	return nil
}

func (w *watcher) run(ctx context.Context) error {
	if err := w.loadSettings(); err != nil {
		return err
	}
	pid, err := acquirePIDFile(w.paths.Memory)
	if err != nil {
		return err
	}
	defer pid.release()

	now := time.Now()
	w.state = State{PID: pid.pid, Root: w.root, StartedAt: now.UTC().Format(time.RFC3339Nano)}
	w.timer = time.NewTimer(time.Hour)
	w.timer.Stop()
	w.settleT = time.NewTimer(time.Hour)
	w.settleT.Stop()
	w.prepT = time.NewTimer(time.Hour)
	w.prepT.Stop()
	defer func() {
		w.timer.Stop()
		w.settleT.Stop()
		w.prepT.Stop()
		if w.ticker != nil {
			w.ticker.Stop()
		}
	}()

	var events <-chan fsnotify.Event
	var errs <-chan error
	w.fsw, err = w.newFS()
	if err != nil {
		// EMFILE: too many inotify instances (max_user_instances). Keep
		// working with periodic rescans.
		w.setLimit(fmt.Errorf("start inotify: %w", err), 0)
		w.fsw = nil
	} else {
		defer w.fsw.Close()
		events, errs = w.fsw.Events, w.fsw.Errors
	}
	w.gitDir, _ = hooks.GitDir(w.root)
	w.rearm(true, true)
	w.log.Info("watching", "root", w.root, "pid", pid.pid, "dirs", len(w.armed), "debounce", w.set.debounce.String(),
		"max_delay", w.set.maxDelay.String(), "grace", w.set.grace.String(), "render", w.set.render)
	// Catch up with whatever changed while no watcher ran.
	w.markPending("startup", true)
	w.fire(ctx)
	w.updateTicker()

	for {
		var tick <-chan time.Time
		if w.ticker != nil {
			tick = w.ticker.C
		}
		select {
		case <-ctx.Done():
			w.log.Info("stopping", "reason", context.Cause(ctx))
			w.settle(context.WithoutCancel(ctx), false)
			w.eng.Close() // its staged and replaced files go
			w.state.StoppedAt = time.Now().UTC().Format(time.RFC3339Nano)
			w.writeState()
			return nil
		case ev, ok := <-events:
			if !ok {
				return errors.New("fsnotify watcher closed")
			}
			w.onEvent(ev)
		case err, ok := <-errs:
			if !ok {
				return errors.New("fsnotify watcher closed")
			}
			w.onError(err)
		case err := <-w.inject:
			w.onError(err)
		case <-w.timer.C:
			if w.first.IsZero() && !w.graceDue.IsZero() {
				w.dueAt, w.graceDue = w.graceDue, time.Time{}
				w.markPending("grace", true)
			}
			w.fire(ctx)
			w.dueAt = time.Time{}
		case <-w.settleT.C:
			w.settle(ctx, true)
		case <-w.prepT.C:
			if w.first.IsZero() {
				w.prepare(ctx)
			} else {
				w.prepareBurst(ctx)
			}
		case <-tick:
			w.thorough = true
			w.markPending("rescan", true)
			w.fire(ctx)
		case <-w.opts.Reload:
			w.reload()
		}
	}
}

// markPending records an event of the burst; now asks for the reconcile
// at once (startup, overflow, rescan, retry) instead of after the debounce.
func (w *watcher) markPending(reason string, now bool) {
	t := time.Now()
	if w.first.IsZero() {
		w.first = t
		w.reason = reason
	}
	w.last = t
	w.now = w.now || now
	w.schedule()
}

// schedule sets the timer to the next reconcile: debounce after the last
// event, at most maxDelay after the first, not before a lock retry.
func (w *watcher) schedule() {
	if w.first.IsZero() {
		w.timer.Stop()
		if !w.graceDue.IsZero() {
			w.timer.Reset(max(time.Until(w.graceDue), 0))
		}
		return
	}
	due := w.burstDue()
	if w.now {
		due = time.Now()
	}
	if w.retryAt.After(due) {
		due = w.retryAt
	}
	w.timer.Reset(max(time.Until(due), 0))
	if w.burstPreparable() {
		lead := min(2*w.passTook+prepareSlack, w.set.debounce)
		at := due.Add(-lead)
		if earliest := w.last.Add(burstQuiet); at.Before(earliest) {
			at = earliest
		}
		if at.Before(due) {
			w.prepT.Reset(max(time.Until(at), 0))
		}
	}
}

// burstDue is when the pending burst's pass is due: the debounce after its
// last event, at most maxDelay after its first.
func (w *watcher) burstDue() time.Time {
	due := w.last.Add(w.set.debounce)
	if capAt := w.first.Add(w.set.maxDelay); capAt.Before(due) {
		due = capAt
	}
	return due
}

// fire runs one full reconcile for the pending burst.
func (w *watcher) fire(ctx context.Context) {
	if w.first.IsZero() {
		return
	}
	if time.Now().Before(w.retryAt) {
		w.schedule()
		return
	}
	if w.holdForGit() {
		return
	}
	reason, thorough := w.reason, w.thorough
	if w.dueAt.IsZero() && !w.now {
		// Final when its debounce ended: the pass may start later (the
		// watcher was busy, preparing it for one).
		w.dueAt = w.burstDue()
		defer func() { w.dueAt = time.Time{} }()
	}
	if w.prepared != w.events && w.eng != nil {
		// An event came since the engine prepared its pass: it is stale
		// whatever its files say.
		w.eng.DropPrepared()
	}
	if !thorough {
		w.absorbChanged()
	}
	// Only the files with an event can have changed, unless events may
	// have been lost or directories moved: then every file is checked.
	touched := w.touched
	if touched == nil {
		touched = map[string]bool{}
	}
	if w.full || thorough || w.opts.Poll > 0 {
		touched = nil
	}
	w.touched, w.full = map[string]bool{}, false
	waited := time.Since(w.first)
	w.first, w.last, w.reason, w.now, w.thorough = time.Time{}, time.Time{}, "", false, false
	w.timer.Stop()

	if thorough {
		// Events were lost: re-resolve the targets and re-arm every watch
		// before reconciling, so that a change made while reconcile runs
		// is seen.
		w.invalidate(w.changed)
		w.changed = nil
		w.rearm(true, true)
	}
	start := time.Now()
	// The signal context is not passed down: SIGTERM must not cut a write
	// in half. Reconcile bounds its own lock wait (lock.timeout).
	rep, err := w.reconcile(context.WithoutCancel(ctx), engine.Pass{
		Render: w.set.render, NoFeedback: !w.opts.Feedback, Confirm: w.confirmed(start),
		Touched: touched, Arrived: w.arrived, Deferred: true,
	})
	w.arrived = nil // the engine keeps them while a deletion waits
	w.settleT.Reset(settleDelay)
	res := rep.Result
	took := time.Since(start)
	if err == nil && !rep.Prepared {
		w.notePassTook(took)
	}
	w.recordOwn(res.Wrote)
	if w.afterFire != nil {
		defer w.afterFire()
	}
	if errors.Is(err, engine.ErrGitMoved) {
		// Git wrote the worktree while the pass read it; the pass wrote
		// nothing. The next one, once git is done (holdForGit), checks
		// every file: the events of git's write came during this one.
		w.full = true
		w.state.Counters.GitMoved++
		w.log.Debug("git changed the worktree during the pass: nothing written, it runs again", "reason", reason)
		w.markPending(reason, false)
		w.writeState()
		return
	}
	if err != nil {
		// The failed pass consumed the burst's events: the retry checks
		// every file.
		w.full = true
		w.state.Counters.Errors++
		w.state.LastError = err.Error()
		if w.backoff == 0 {
			w.backoff = time.Second
		} else {
			w.backoff = min(2*w.backoff, time.Minute)
		}
		w.retryAt = time.Now().Add(w.backoff)
		lvl := slog.LevelError
		if errors.Is(err, manifest.ErrLockTimeout) {
			lvl = slog.LevelWarn
		}
		w.log.Log(ctx, lvl, "reconcile failed; retrying", "reason", reason, "err", err, "retry_in", w.backoff.String())
		w.markPending("retry", true)
		w.schedule()
		w.writeState()
		return
	}
	w.backoff, w.retryAt = 0, time.Time{}
	w.state.LastError = ""
	w.trackMissing(res.Pending, time.Now())
	defer w.schedule()
	for _, warn := range rep.Warnings {
		w.log.Warn("reconcile warning", "warning", warn)
	}
	w.state.Counters.Reconciles++
	if rep.Prepared {
		w.state.Counters.Prepared++
	}
	w.state.Counters.Deletions += res.Deletions
	w.state.Counters.Edits += res.Edits
	w.state.Counters.Healed += res.Healed
	w.state.Counters.Rendered += len(res.Rendered)
	w.state.LastReconcileAt = time.Now().UTC().Format(time.RFC3339Nano)
	lvl := slog.LevelDebug
	if res.Deletions+res.Edits+res.Healed+res.Moved+len(res.Rendered) > 0 || reason == "startup" {
		lvl = slog.LevelInfo
	}
	w.log.Log(ctx, lvl, "reconciled", "reason", reason, "waited_ms", waited.Milliseconds(), "took_ms", took.Milliseconds(),
		"deletions", res.Deletions, "edits", res.Edits, "unchanged", res.Unchanged, "healed", res.Healed,
		"rendered", len(res.Rendered), "deleted", head(res.Deleted), "edited", head(res.Edited))
	if res.Moved > 0 {
		w.log.Info("moved artifacts followed (not deletions)", "moved", head(res.MovedTo))
	}
	if hint := heal.UndoHint(res); hint != "" {
		w.log.Info(hint)
	}
	for _, p := range res.Problems {
		w.log.Warn("reconcile problem", "problem", p)
	}
	// The manifest's paths may have changed: watch the new set.
	w.rearm(true, false)
	w.writeState()
}

// indexPoll is how often a watcher holding its pass while git writes the
// worktree (index.lock, gitrepo.Stamp.Writing) looks whether git is done.
const indexPoll = 20 * time.Millisecond

// holdPoll is how often a watcher holding its passes for a git operation
// looks whether the operation has ended.
const holdPoll = 500 * time.Millisecond

// holdForGit reports whether the pass due must wait: git is in the middle
// of a rebase, merge, cherry-pick or revert (hooks.Operation). The files
// are then git's, half-way through, and a pass would count what git does
// as the person's — and, the memory being committed, write tracked files
// that make `git rebase --continue` refuse to go on. The burst keeps
// gathering events and the pass runs, with all of them, once the operation
// has ended (looked at every holdPoll while it lasts; no cost otherwise).
func (w *watcher) holdForGit() bool {
	op, writing := w.gitActivity()
	if writing {
		// Git is writing the worktree (a checkout, a merge's files, a
		// stash): the pass waits the few milliseconds that takes, as it
		// would read half of it and write nothing (heal.ErrGitMoved).
		w.timer.Reset(indexPoll)
		return true
	}
	if op == "" {
		if w.state.HeldBy != "" {
			w.log.Info("git operation ended: the held pass runs", "operation", w.state.HeldBy)
			w.state.HeldBy = ""
		}
		return false
	}
	if w.state.HeldBy != op {
		w.log.Info("git operation in progress: passes held until it ends", "operation", op)
		w.state.HeldBy = op
		w.writeState()
	}
	w.timer.Reset(holdPoll)
	return true
}

// settleDelay is how long after a pass the watcher lets the engine do
// what the pass deferred (the staleness pass, the stat cache write, the
// proof of the state the next pass takes), when no burst is pending.
const settleDelay = 100 * time.Millisecond

// settle runs the engine's Settle unless a burst is pending (its pass
// comes first, and settles after); again re-arms the timer when Settle
// asks to be called later and, once it is done, arms the preparation of
// the pass that ends the first grace window (armPrepare). The watcher's
// last call, as it stops, passes again false.
func (w *watcher) settle(ctx context.Context, again bool) {
	if w.eng == nil {
		return
	}
	if !w.first.IsZero() {
		// A burst waits for its debounce: only the proof of the state its
		// pass takes (the rest follows that pass).
		if !w.eng.ProveWarm() && again {
			w.settleT.Reset(settleDelay)
		}
		return
	}
	// An event that matters, arriving meanwhile, calls Settle off: its
	// pass comes first (Settle runs again after it). The events read
	// meanwhile are handled once Settle's own writes are known.
	var rep engine.Report
	var later bool
	var err error
	held := w.untilEvent(ctx, func(ctx context.Context) { rep, later, err = w.eng.Settle(ctx, time.Now()) })
	if w.afterSettle != nil {
		w.afterSettle()
	}
	w.recordOwn(rep.Wrote)
	for _, ev := range held {
		w.onEvent(ev)
	}
	for _, warn := range rep.Warnings {
		w.log.Warn("reconcile warning", "warning", warn)
	}
	for _, p := range rep.Problems {
		w.log.Warn("reconcile problem", "problem", p)
	}
	if err != nil {
		w.log.Warn("deferred work of the last pass failed; retrying", "err", err)
	}
	if rep.Stale > 0 {
		w.log.Debug("staleness pass", "stale", rep.Stale)
	}
	if later && again {
		w.settleT.Reset(4 * settleDelay)
		return
	}
	if again {
		w.armPrepare(ctx)
	}
	w.giveBack()
}

// giveBack gives a settled watcher's garbage back to the OS rather than
// keeping the peak resident (the kept state itself stays). A forced
// collection and the scavenge took 40–80 ms at 50,000 artifacts, with the
// loop waiting: an event arriving meanwhile was read that much later.
// It runs on a goroutine of its own, one at a time; the loop goes on.
func (w *watcher) giveBack() { aside(&w.freeing, w.free) }

// aside runs work on a goroutine of its own unless the one it started
// before still runs (busy is set meanwhile): the loop does not wait for it.
func aside(busy *atomic.Bool, work func()) {
	if !busy.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer busy.Store(false)
		work()
	}()
}

// prepareLead is how long before the first grace window ends the watcher
// has the engine prepare the pass that ends it (engine.Engine.Prepare): at
// 50,000 artifacts the pass and the staging of its two files take about
// 100 ms. The window for an event that drops what was prepared (and
// leaves the next pass to read every file) is this long, not the whole
// grace window.
const prepareLead = 300 * time.Millisecond

// armPrepare prepares the pass that ends the first grace window now, or
// arms prepT for prepareLead before it ends.
func (w *watcher) armPrepare(ctx context.Context) {
	if w.graceDue.IsZero() {
		return
	}
	if at := w.graceDue.Add(-prepareLead); time.Now().Before(at) {
		w.prepT.Reset(time.Until(at))
		return
	}
	w.prepare(ctx)
}

// prepare has the engine prepare the pass that ends the first grace
// window, shortly before it ends: when the window ends with nothing
// changed, that pass only commits what is staged. An event that arrives
// meanwhile is handled once the preparation is done; its pass drops what
// was prepared. Memory files written just before are tried again
// shortly.
func (w *watcher) prepare(ctx context.Context) {
	if w.graceDue.IsZero() || !w.first.IsZero() || w.full || w.opts.Poll > 0 || !time.Now().Before(w.graceDue) {
		return
	}
	if w.eng.HasPrepared() {
		// Prepared already (a later settle): preparing again would do
		// the same work again.
		return
	}
	confirm := w.confirmed(w.graceDue)
	if len(confirm) == 0 {
		return
	}
	held, took, again, err := w.prepareAhead(ctx, engine.Pass{
		Render: w.set.render, NoFeedback: !w.opts.Feedback, Confirm: confirm,
		Now: w.graceDue, Touched: map[string]bool{}, Deferred: true,
	}, false)
	switch {
	case err != nil:
		w.log.Debug("pass not prepared: it runs when the grace window ends", "err", err)
	case again:
		if w.first.IsZero() && time.Until(w.graceDue) > prepareRetry {
			w.prepT.Reset(prepareRetry)
		}
	default:
		w.log.Debug("pass prepared for the end of the grace window", "artifacts", head(slices.Sorted(maps.Keys(confirm))), "took", took.String())
		if w.eng.HasPrepared() {
			w.collectBefore(w.graceDue)
		}
	}
	for _, ev := range held {
		w.onEvent(ev)
	}
}

// prepareRetry is how long the watcher waits to prepare again after the
// memory files were found written too recently (the last pass's, within
// the 50 ms racy window: an edit right after a pass). A refusal costs a
// stat or two; waiting 60 ms had a 50,000-artifact preparation start
// too late for its debounce.
const prepareRetry = 20 * time.Millisecond

// burstQuiet is how long after a burst's last event the watcher prepares
// its pass at the earliest: an editor's save (a temporary file written,
// renamed over the old) is over by then. A touched file written within
// the racy window has its content compared at the commit (heal.Prepared),
// so the preparation need not wait for its stat to settle: it had 140 ms
// of a 200 ms debounce when it waited 60 ms, which a 50,000-artifact pass
// (100–180 ms, most of it the sync of a 14 MB manifest) often overran.
const burstQuiet = 15 * time.Millisecond

// prepareSlack is added to twice passTook in a burst's preparation lead:
// the timer's wake-up, the scheduler and the preparation's own checks do
// not shrink with the pass. A 2 ms pass of a small memory, prepared 4 ms
// before its debounce ended on an idle machine, was ready 0.5-2 ms after
// it, so the prepared pass never waited and its collection
// (collectBefore) never ran (TestCollectBeforeDue failed 3 runs of 4).
const prepareSlack = 10 * time.Millisecond

// burstPreparable reports whether the pending burst's pass may be prepared
// ahead of its time: a burst of events (none lost, not polling), its pass
// due after its debounce, not held.
func (w *watcher) burstPreparable() bool {
	return w.eng != nil && !w.first.IsZero() && !w.now && !w.full && !w.thorough && w.opts.Poll <= 0 &&
		!time.Now().Before(w.retryAt) && (len(w.touched) > 0 || len(w.arrived) > 0 || len(w.changed) > 0)
}

// absorbChanged takes the directories that appeared, disappeared or moved
// in the burst into it: every watched file below them is touched (and
// resolved again), and the watches are re-armed before the pass, so that
// a change made while it runs is seen. A burst's pass prepared ahead does
// it then, fire otherwise.
func (w *watcher) absorbChanged() {
	if len(w.changed) == 0 {
		return
	}
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	for _, f := range w.invalidate(w.changed) {
		w.touched[w.rel(f)] = true
	}
	w.changed = nil
	w.rearm(true, false)
}

// prepareBurst has the engine prepare the pending burst's pass while its
// debounce runs, as fire will run it when the debounce ends: when it ends
// with no event since, that pass only commits what is staged. An event
// that arrives meanwhile calls the preparation off and is handled once it
// is done; one that arrives after makes fire drop the prepared pass. The
// engine's kept state is untouched by a prepared pass until it is
// committed, so a dropped one costs nothing but the work.
func (w *watcher) prepareBurst(ctx context.Context) {
	if !w.burstPreparable() {
		return
	}
	if op, writing := w.gitActivity(); op != "" || writing {
		return
	}
	due := w.burstDue()
	if !time.Now().Before(due) {
		return // the pass runs now
	}
	w.absorbChanged()
	held, took, again, err := w.prepareAhead(ctx, engine.Pass{
		Render: w.set.render, NoFeedback: !w.opts.Feedback, Confirm: w.confirmed(due),
		Now: due, Touched: maps.Clone(w.touched), Arrived: maps.Clone(w.arrived), Deferred: true,
	}, true)
	switch {
	case err != nil:
		w.log.Debug("burst's pass not prepared: it runs when the debounce ends", "err", err)
	case again:
		if time.Until(due) > prepareRetry {
			w.prepT.Reset(prepareRetry)
		}
	case w.eng.HasPrepared():
		w.notePassTook(took)
		w.log.Debug("burst's pass prepared for the end of its debounce", "touched", len(w.touched), "took", took.String())
		w.collectBefore(due)
	}
	for _, ev := range held {
		w.onEvent(ev)
	}
}

// prepareAhead has the engine prepare p ahead of its time (a burst's pass,
// or a grace window's), called off by an event that matters
// (untilEvent), and notes the events counted so far: one after them makes
// the prepared pass stale (fire). It returns the events read meanwhile,
// for the caller to handle once it is done, and how long it took. What
// the preparation allocated is kept for collectBefore.
func (w *watcher) prepareAhead(ctx context.Context, p engine.Pass, burst bool) (held []fsnotify.Event, took time.Duration, again bool, err error) {
	t0 := time.Now()
	w.prepared = w.events
	allocs := w.heap().allocs
	held = w.untilEvent(ctx, func(ctx context.Context) { again, err = w.eng.Prepare(ctx, p) })
	if w.eng.HasPrepared() {
		w.prepAlloc = w.heap().allocs - allocs
	}
	if w.afterPrepare != nil {
		w.afterPrepare(burst)
	}
	return held, time.Since(t0), again, err
}

// gitActivity says what git is doing in the worktree: the operation that
// waits for the person (hooks.Operation, "" for none) and, with none,
// whether git is writing the worktree now (gitrepo.Stamp.Writing). fire
// holds its pass meanwhile (holdForGit), and no burst's pass is prepared.
func (w *watcher) gitActivity() (op string, writing bool) {
	op = hooks.Operation(w.gitDir)
	return op, op == "" && gitrepo.StampOf(w.gitDir).Writing(time.Now())
}

// notePassTook folds a pass's (or a preparation's) duration into
// passTook.
func (w *watcher) notePassTook(d time.Duration) {
	if w.passTook == 0 {
		w.passTook = d
		return
	}
	w.passTook = (3*w.passTook + d) / 4
}

// maxHeld bounds the events cancelOnEvent holds: a stream of events that
// do not matter (another tool's files in a watched directory) calls the
// idle work off once that many wait, as any event did before.
const maxHeld = 1024

// newFS opens the inotify watcher with a small buffer of events, so that
// fsnotify's reader goes on while the loop or cancelOnEvent is busy.
func newFS() (*fsnotify.Watcher, error) { return fsnotify.NewBufferedWatcher(64) }

// untilEvent runs work, the loop's idle work (Settle, Prepare), with a
// context that an event that matters calls off (cancelOnEvent; the
// signal's cancellation is not passed down: a write is never cut in
// half), and returns the events read meanwhile, for the loop to handle
// once the work's own writes are known.
func (w *watcher) untilEvent(ctx context.Context, work func(context.Context)) []fsnotify.Event {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	stop := w.cancelOnEvent(cancel)
	work(wctx)
	return stop()
}

// cancelOnEvent reads the fsnotify events while the loop is busy in
// Settle and calls cancel once one of them matters (watcher.matters), or
// once an error waits to be read. Settle's own lock files and writes do not
// call it off: they did, and once the staleness pass outlasted the events
// of the lock it takes (a few thousand observations) Settle was called off
// by them and began again every 400 ms, for ever (the watcher never idle,
// its staleness pass never done). stop stops reading and returns the
// events read, for the loop to handle in order.
func (w *watcher) cancelOnEvent(cancel context.CancelFunc) (stop func() []fsnotify.Event) {
	if w.fsw == nil {
		return func() []fsnotify.Event { return nil }
	}
	done, exited := make(chan struct{}), make(chan struct{})
	var held []fsnotify.Event
	go func() {
		defer close(exited)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case ev, ok := <-w.fsw.Events:
				if !ok {
					cancel() // closed: the loop sees it next
					return
				}
				held = append(held, ev)
				if w.matters(ev) || len(held) >= maxHeld {
					// Called off: the events that follow wait in the
					// channel, as while the loop works.
					cancel()
					return
				}
			case <-t.C:
				if len(w.fsw.Errors) > 0 || len(w.inject) > 0 {
					cancel()
					return
				}
			}
		}
	}()
	return func() []fsnotify.Event {
		close(done)
		<-exited
		return held
	}
}

// confirmed lists the missing artifacts whose grace window is over at now:
// reconcile may call them deleted. The map is never nil, so reconcile
// holds back every other missing artifact.
func (w *watcher) confirmed(now time.Time) map[string]bool {
	out := map[string]bool{}
	for _, m := range []map[string]time.Time{w.missing, w.goneAt} {
		for k, since := range m {
			if now.Sub(since) >= w.set.grace {
				out[k] = true
			}
		}
	}
	return out
}

// trackMissing records the artifacts a reconcile held back (keeping when
// each was first seen missing; one that came back is forgotten) and sets
// graceDue to when the first of them may be called deleted.
func (w *watcher) trackMissing(pending []string, now time.Time) {
	next := make(map[string]time.Time, len(pending))
	w.graceDue = time.Time{}
	for _, k := range pending {
		since, ok := w.missing[k]
		if !ok {
			since = now
			if gone, ok := w.goneAt[k]; ok && gone.Before(now) {
				since = gone // its removal's event came before the pass saw it
			}
		}
		next[k] = since
		if due := since.Add(w.set.grace); w.graceDue.IsZero() || due.Before(w.graceDue) {
			w.graceDue = due
		}
	}
	if len(pending) > 0 {
		w.log.Debug("missing, within the grace window", "artifacts", head(pending), "grace", w.set.grace.String())
	}
	w.missing, w.goneAt = next, nil
}

// onError handles an error from fsnotify's Errors channel: an overflow or a
// lost watch means events were missed, so re-arm everything and reconcile.
func (w *watcher) onError(err error) {
	reason := "overflow"
	if errors.Is(err, fsnotify.ErrEventOverflow) {
		w.state.Counters.Overflows++
		w.log.Warn("kernel event queue overflowed; full reconcile and re-arm", "err", err)
	} else {
		reason = "watch error"
		w.state.Counters.Errors++
		w.log.Warn("watch error; full reconcile and re-arm", "err", err)
	}
	w.targets = targets{} // rebuilt, every path resolved again
	w.rearm(true, true)
	w.thorough = true
	w.markPending(reason, true)
}

func (w *watcher) reload() {
	old := w.set
	w.state.Counters.Reloads++
	defer w.writeState()
	if err := w.loadSettings(); err != nil {
		w.state.ConfigError = err.Error()
		w.log.Error("reload config failed; keeping the old settings", "err", err)
		return
	}
	w.state.ConfigError = ""
	w.log.Info("config reloaded", "debounce", w.set.debounce.String(), "max_delay", w.set.maxDelay.String(),
		"rescan", w.set.rescan.String(), "render", w.set.render)
	if old.rescan != w.set.rescan {
		w.updateTicker()
	}
	w.schedule()
}

// updateTicker runs the periodic full reconcile only when it is needed:
// the inotify limits were hit, or Poll asks for it. Idle otherwise.
func (w *watcher) updateTicker() {
	var every time.Duration
	if w.limitErr != nil {
		every = w.set.rescan
	}
	if w.set.poll > 0 && (every == 0 || w.set.poll < every) {
		every = w.set.poll
	}
	if every == w.tickEvery {
		return
	}
	if w.ticker != nil {
		w.ticker.Stop()
		w.ticker = nil
	}
	w.tickEvery = every
	if every > 0 {
		w.ticker = time.NewTicker(every)
	}
}

// head keeps a log line short after a burst: the first ids, then a count.
func head(ids []string) []string {
	const n = 20
	if len(ids) <= n {
		return ids
	}
	return append(ids[:n:n], fmt.Sprintf("… %d more", len(ids)-n))
}
