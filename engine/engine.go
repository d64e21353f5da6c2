// Package engine owns a pass over a repository's memory: it opens the
// memory of one root with its configuration and runs the passes every entry
// point shares — reconcile (heal: deletions, edits, self-heal, the inbox
// drain), the staleness pass under the same lock, the learning signals into
// the feedback journal and the policy refresh they call for, render when
// asked, and observe's merge of new sightings — and it builds what the
// passes feed: the ranked session index and the learning candidates.
// Commands, git hooks, the session-start hook and the watcher all run
// their passes through an Engine; cmd only parses flags and prints what a
// pass reports.
//
// The decisions stay in the packages that own them (heal.Plan, learn,
// staleness, index); this package is the I/O edge that feeds them and
// collects their results. Warnings a person should see are returned as
// data (Report.Warnings), never printed here.
package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/render"
)

// Engine is the memory of one repository root with its configuration. It
// holds no open files; an Engine is cheap and a long-running process (the
// watcher) keeps one across passes.
type Engine struct {
	root string
	cfg  config.Config
	log  *slog.Logger
	// cache is the stat cache, loaded by the first pass and kept in
	// memory for the next ones.
	cache *statcache.Cache
	// failed is set when the last pass failed: the files it was told
	// about are lost, so the next pass checks every file.
	failed bool
	// arrived are the watcher's arrivals not spent yet (Pass.Arrived).
	arrived map[string]bool
	// folded is the feedback fold of the last policy refresh: the ranking
	// that follows a session start reuses it while the journal is
	// unchanged, so a session start folds the journal once.
	folded *journal.Folded
	// replayQuiet, when not zero, replaces quiet(mode) (tests: how long
	// inputs must have been left alone for a pass replay record).
	replayQuiet time.Duration
	// logc, when set, receives the learning log (or its facts) read ahead
	// for the next Index (a replayed session pass has no parsed log to
	// hand over).
	logc chan logView
	// warm is the parsed state a pass leaves for the next (heal.Warm):
	// the watcher's Deferred passes take it instead of reading the files.
	warm heal.Warm
	// settle lists what Deferred passes left to Settle.
	settle struct{ stale bool }
	// replaced are the files Deferred passes replaced, kept until Settle
	// or Close lets them go (heal.Replaced).
	replaced heal.Replaced
	// prepared is the watcher's next pass staged ahead of its time
	// (Prepare); any pass but the one it stands for drops it.
	prepared *prepared
}

// prefetchLog starts reading the learning log's facts, or the log, for the
// next Index.
func (e *Engine) prefetchLog() {
	c := make(chan logView, 1)
	go func() { c <- loadLogView(e.root) }()
	e.logc = c
}

// New opens the memory of root with cfg (config.Load(root) or
// config.Default()). log receives debug detail; nil discards it.
func New(root string, cfg config.Config, log *slog.Logger) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Engine{root: root, cfg: cfg, log: log, cache: statcache.Open(statcache.ModeOf(cfg.Engine.CheckStat))}
}

// Root is the repository root the engine works on.
func (e *Engine) Root() string { return e.root }

// Config is the configuration the engine runs with.
func (e *Engine) Config() config.Config { return e.cfg }

// Pass says what one reconcile pass runs and on whose behalf.
type Pass struct {
	// Now is the pass's clock (zero: time.Now()).
	Now time.Time
	// Session marks the once-per-session pass (session-start hook), the
	// only one that records kept artifacts as helpful feedback, at most
	// once per UTC day.
	Session bool
	// MarkTracked writes staleness marks even into a learning log git
	// tracks: a person asked for the pass (the reconcile command).
	MarkTracked bool
	// Render also renders ready observations (the watcher's watch.render).
	Render bool
	// Confirm, when non-nil, holds the missing artifacts that may be
	// called deleted (the watcher's grace window; heal.Options.Confirm).
	Confirm map[string]bool
	// NoFeedback leaves the feedback journal alone (tests and tools that
	// only want the reconcile's counts).
	NoFeedback bool
	// NoStatCache reads every artifact (the stat cache is neither read nor
	// written); results are the same either way.
	NoStatCache bool
	// Touched, when non-nil, holds the only artifact files (relative to
	// the root, slash-separated) that may have changed since this engine's last pass: the
	// watcher's events of a burst. The others are neither read nor
	// stat'ed when the stat cache knows them. Nil checks every file.
	Touched map[string]bool
	// Arrived, with Touched, are the paths (relative to the root,
	// slash-separated) the watcher saw created under .claude/commands and
	// .claude/skills in the burst: where a missing artifact may have moved
	// (heal.Options.Arrived). The engine keeps them until a pass leaves
	// nothing pending, so a move the grace window holds is still seen.
	Arrived map[string]bool
	// Deferred is the watcher's pass: it records what the burst did (the
	// log, the manifest, the usage file, the feedback events) and leaves
	// the staleness pass and the stat cache write to Settle, which the
	// watcher calls when it is idle; the parsed state is kept in the
	// engine for the next pass (heal.Warm).
	Deferred bool
	// WaitForGit runs no pass while git is in the middle of a rebase,
	// merge, cherry-pick or revert (hooks.Operation): the files are git's,
	// half-applied, and tracked memory files written then would stop it.
	// Reconcile returns a *GitBusyError instead. The session start and
	// post-checkout set it; post-merge and post-rewrite run when their
	// operation is over (git may still hold MERGE_HEAD while post-merge
	// runs); a pass a person asks for runs. A pass that would replay is not
	// held: it writes nothing.
	WaitForGit bool
	// AfterGit is the pass of a git hook that runs after git changed the
	// worktree (post-checkout, post-merge, post-rewrite). When, since a
	// confirmed replay record, nothing changed but HEAD and files of the
	// worktree's git directory (the index) — a checkout that touched no
	// file of the memory — the pass does not run: the heal a record holds
	// never asked git, so it would find the record's report again, and
	// only the staleness marks follow HEAD, which the next pass writes
	// (its replay check sees HEAD moved). Any other changed input runs it.
	AfterGit bool
}

// ErrGitBusy is what a pass with Pass.WaitForGit returns, wrapped in a
// *GitBusyError, while git is in the middle of an operation.
var ErrGitBusy = errors.New("git operation in progress")

// ErrGitMoved is what a pass returns, having written nothing, when git
// wrote the worktree while it read (heal.ErrGitMoved). Reconcile runs such
// a pass again itself, except the watcher's (Pass.Deferred).
var ErrGitMoved = heal.ErrGitMoved

// GitBusyError names the git operation a pass waited for.
type GitBusyError struct{ Op string }

func (e *GitBusyError) Error() string {
	return fmt.Sprintf("git %s in progress: the files are git's until it ends", e.Op)
}

func (e *GitBusyError) Is(target error) bool { return target == ErrGitBusy }

// Report is what a pass found and did: heal's result plus the warnings a
// person should read (a policy not refreshed, a broken policy file).
type Report struct {
	heal.Result
	Warnings []string `json:"-"`
	// Replayed is set when the report is a replay: nothing the pass
	// depends on changed since a pass that wrote nothing, and that pass's
	// report was returned without reading a file (replay.go).
	Replayed bool `json:"-"`
	// Prepared is set when the pass committed what Prepare had staged.
	Prepared bool `json:"-"`
}

// Reconcile runs one pass: heal with the staleness pass under its lock and
// the learning signals recorded exactly once, then the policy refresh when
// the pass recorded feedback. A failed refresh is a warning, not an error:
// the reconcile itself has been written.
func (e *Engine) Reconcile(ctx context.Context, p Pass) (Report, error) {
	if p.Now.IsZero() {
		p.Now = time.Now()
	}
	e.logc = nil // a log read ahead is for the Index right after its pass only
	if rep, ok, err := e.commitPrepared(ctx, p); ok {
		return rep, err
	}
	var rep Report
	var key string
	var start *replayStart
	if replayable(p) {
		key = e.replayKey(p)
		var res heal.Result
		var ok bool
		if res, ok, start = e.tryReplay(p, key); ok {
			if start.gitOnly {
				e.log.Debug("pass not run: only git's state changed since the record", "inputs", len(start.rec.Paths))
			} else {
				e.log.Debug("pass replayed: nothing it depends on changed", "inputs", len(start.rec.Paths))
			}
			rep.Result, rep.Replayed = res, true
			return rep, nil
		}
		e.logc = nil // read ahead for nothing: the full pass parses it
		start.letGoRecorded()
	}
	if p.WaitForGit {
		if op := hooks.OperationAt(e.root); op != "" {
			return rep, &GitBusyError{Op: op}
		}
	}
	if !p.Deferred {
		defer relaxGC(manifest.PathsFor(e.root).Log)()
	}
	opts, warn := e.passOptions(p)
	rep.Warnings = append(rep.Warnings, warn...)
	if p.Deferred {
		e.settle.stale = true
		if e.replaced.Held() >= maxReplaced {
			// A watcher never idle long enough to Settle: the files its
			// passes replaced are not kept without bound.
			e.replaced.Release()
		}
	} else {
		e.warm.Forget()
	}
	if !p.NoStatCache {
		k := start.known()
		opts.Known = &k // emptied by the pass once it has loaded
	}
	if e.failed {
		opts.Touched = nil
	}
	if opts.Touched != nil {
		e.arrived = e.arrivals(p.Arrived)
		opts.Arrived = e.arrived
	}
	aside := opts.Replaced == nil // the watcher's are let go when it is idle (Settle)
	if aside {
		// The log and manifest the pass replaced are removed while the
		// policy is refreshed and the replay record written, not under
		// the lock before them: removing a file frees its blocks there
		// and then (about 2 ms for the 3.8 MB log and the manifest at
		// 10,000 observations). The pass returns with them gone.
		opts.Replaced = new(heal.Replaced)
		defer opts.Replaced.Release()
	}
	var res heal.Result
	var err error
	var drained inbox.Result // the drain of an attempt git moved under
	for attempt := 0; ; attempt++ {
		if !p.Deferred {
			waitForIndex(ctx, e.root)
		}
		res, err = heal.Reconcile(ctx, e.root, opts)
		if !errors.Is(err, heal.ErrGitMoved) || p.Deferred || attempt == gitRetries {
			break
		}
		// The drain before the pass wrote the log and stands; its counts
		// are reported with the pass that wrote.
		if drainedAny(res.Inbox) {
			drained = res.Inbox
		}
		// The stats taken before are of git's half-written worktree.
		e.log.Debug("git changed the worktree during the pass: it runs again", "attempt", attempt+1)
		opts.Touched, opts.Known = nil, nil
	}
	if drainedAny(drained) && !drainedAny(res.Inbox) {
		res.Inbox = drained
	}
	if aside {
		opts.Replaced.ReleaseAside()
	}
	e.passEnded(res, err)
	rep.Result = res
	// The replay record is written while the policy is refreshed: a pass
	// that recorded feedback (the only kind that refreshes it) is never
	// replayable, and its record holds paths, not stats, so the two touch
	// nothing in common.
	recorded := func() {}
	if start != nil && err == nil {
		var recErr, factsErr error
		done := make(chan struct{})
		go func() {
			defer close(done)
			recErr, factsErr = e.recordReplay(key, p, res, start)
		}()
		recorded = func() {
			<-done
			if recErr != nil {
				rep.Warnings = append(rep.Warnings, fmt.Sprintf("pass replay record not written (the next pass runs in full): %v", recErr))
			}
			if factsErr != nil {
				rep.Warnings = append(rep.Warnings, factsErr.Error())
			}
		}
	}
	if p.AfterGit && err == nil {
		if w := trackedWrite(e.root, res.Wrote); w != "" {
			rep.Warnings = append(rep.Warnings, w)
		}
	}
	if res.CacheErr != nil {
		rep.Warnings = append(rep.Warnings, cacheWarning("stat", res.CacheErr))
	}
	if res.StaleCacheErr != nil {
		rep.Warnings = append(rep.Warnings, cacheWarning("staleness", res.StaleCacheErr))
	}
	if err != nil {
		recorded()
		return rep, err
	}
	var policyWarnings []string
	if res.Recorded+res.Inbox.Feedback > 0 {
		policyWarnings = e.refreshPolicy(ctx, p.Now)
	}
	recorded()
	rep.Warnings = append(rep.Warnings, policyWarnings...)
	return rep, nil
}

// trackedWrite is the warning of a pass after git (a git hook's) that
// wrote memory files git tracks — it recorded what a person did, a
// deletion committed on the branch just checked out, say — or "": left
// modified, they make git refuse a rebase, or a switch to a branch whose
// memory differs, until they are committed or stashed (docs/git.md).
func trackedWrite(root string, wrote []string) string {
	for _, path := range wrote {
		if heal.Tracked(root, path) {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				rel = path
			}
			return fmt.Sprintf("%s is tracked by git and this pass changed it: commit it with your work, or stash it, before a rebase or a switch to a branch whose memory differs", filepath.ToSlash(rel))
		}
	}
	return ""
}

// arrivals are the engine's kept arrivals with a pass's own (at most
// maxArrived), in a map of their own when the pass brings any: e.arrived
// is not changed.
func (e *Engine) arrivals(arrived map[string]bool) map[string]bool {
	if len(arrived) == 0 {
		return e.arrived
	}
	out := maps.Clone(e.arrived)
	if out == nil {
		out = map[string]bool{}
	}
	for rel := range arrived {
		if len(out) < maxArrived {
			out[rel] = true
		}
	}
	return out
}

// maxReplaced is how many files replaced by Deferred passes the engine
// keeps at most (heal.Replaced): each is a former log or manifest, up to
// tens of megabytes.
const maxReplaced = 4

// passEnded notes how a pass (run, or committed as prepared) ended: a
// failed one makes the next pass check every file; one that left no
// deletion waiting has spent the arrivals.
func (e *Engine) passEnded(res heal.Result, err error) {
	e.failed = err != nil
	if err == nil && len(res.Pending) == 0 {
		e.arrived = nil // no deletion waits: the arrivals are spent
	}
}

// passOptions are heal's options for a pass p, and the warnings of a
// broken policy file when p renders.
func (e *Engine) passOptions(p Pass) (heal.Options, []string) {
	opts := heal.Options{
		Now: p.Now, LockTimeout: e.cfg.Lock.Timeout.Duration,
		Staleness: &e.cfg.Staleness, MarkTracked: p.MarkTracked,
		Feedback: !p.NoFeedback, Session: p.Session,
		Confirm: p.Confirm, Render: p.Render,
		Cache: e.cache, Touched: p.Touched,
	}
	if p.Deferred {
		opts.Warm, opts.DeferCache, opts.Lean = &e.warm, true, !p.Session
		opts.Staleness = nil
		opts.Replaced = &e.replaced
	}
	if p.NoStatCache {
		opts.Cache, opts.Touched = nil, nil
	}
	var warn []string
	if p.Render {
		var pol learn.Policy
		pol, warn = e.Policy()
		opts.Hold = holdFor(pol)
	}
	return opts, warn
}

// maxArrived bounds the arrivals the engine keeps while deletions wait
// (Pass.Arrived): past it, a move is looked for among the first ones.
const maxArrived = 16384

// drainedAny reports whether a drain of the inbox wrote anything.
func drainedAny(r inbox.Result) bool { return r.Drained+r.Completed+r.Feedback > 0 }

// gitRetries is how many times a pass git moved under (heal.ErrGitMoved)
// runs again before its caller hears of it. The watcher's passes are not
// run again here: the watcher holds its next pass for git (watch) and
// counts every file then.
const gitRetries = 3

// indexPoll and indexWait bound waitForIndex.
const (
	indexPoll = 20 * time.Millisecond
	indexWait = 2 * time.Second
)

// waitForIndex waits, at most indexWait, while git may be writing the
// worktree at root (its index.lock is there and young,
// gitrepo.Stamp.Writing): a pass that read then would read half of it and
// write nothing (heal.ErrGitMoved). After indexWait the pass runs; its
// stamp still keeps it from writing what it read half-way. A pass run by
// a hook of a git command that holds the lock itself (`git commit -a`
// runs pre-commit with GIT_INDEX_FILE naming index.lock) does not wait
// for the command that waits for it.
func waitForIndex(ctx context.Context, root string) {
	if os.Getenv("GIT_INDEX_FILE") != "" {
		return
	}
	gitDir, err := gitrepo.GitDir(root)
	if err != nil {
		return
	}
	deadline := time.Now().Add(indexWait)
	for gitrepo.StampOf(gitDir).Writing(time.Now()) && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return
		case <-time.After(indexPoll):
		}
	}
}

// refreshPolicy refreshes the policy from the feedback journal after a
// pass recorded events; its failures are warnings.
func (e *Engine) refreshPolicy(ctx context.Context, now time.Time) []string {
	_, f, err := journal.RefreshPolicyFolded(ctx, e.root, now, e.cfg.Lock.Timeout.Duration, learn.ParamsFrom(e.cfg.Learn))
	if err != nil {
		return []string{fmt.Sprintf("policy not refreshed: %v", err)}
	}
	e.folded = &f
	if f.SnapshotErr != nil {
		return []string{fmt.Sprintf("fold snapshot not saved: %v", f.SnapshotErr)}
	}
	return nil
}

// Render renders every ready observation, holding those a policy overlay
// keeps for approval. The warnings are a broken policy file's.
func (e *Engine) Render(ctx context.Context, now time.Time) (render.Result, []string, error) {
	pol, warn := e.Policy()
	res, err := render.Run(ctx, e.root, render.Options{Now: now, LockTimeout: e.cfg.Lock.Timeout.Duration, Hold: holdFor(pol)})
	return res, warn, err
}

// Policy reads the policy overlays; a broken policy file is a warning and
// no overlay.
func (e *Engine) Policy() (learn.Policy, []string) {
	p, err := journal.LoadPolicy(e.root)
	if err != nil {
		return p, []string{fmt.Sprintf("%v (ignoring policy overlays)", err)}
	}
	return p, nil
}

// holdFor reports whether render must hold an observation for approval
// under policy p.
func holdFor(p learn.Policy) func(*manifest.Observation) bool {
	return func(o *manifest.Observation) bool { return learn.Held(p, o.Type, o.ID) }
}

// Settle does what Deferred passes left, off the path of the next event:
// the files their commits replaced let go (heal.Replaced), the staleness
// pass (marks written like a pass's), the stat cache write, and the proof
// of the parsed state the next pass takes (heal.Warm.Prove).
// It reports whether it should be called again later (the state is too
// recent to prove, the lock was busy, or ctx was cancelled: the watcher
// cancels it when an event arrives, and the staleness pass stops where it
// is without marking). Its warnings are a pass's.
func (e *Engine) Settle(ctx context.Context, now time.Time) (rep Report, again bool, err error) {
	e.replaced.Release()
	if e.prepared != nil {
		// A pass is staged on the files as they are (Prepare): the
		// staleness pass waits until after it.
		return rep, false, nil
	}
	p := manifest.PathsFor(e.root)
	if e.settle.stale && !e.ProveWarm() {
		// The staleness pass takes the proved state: later.
		return rep, true, nil
	}
	if e.settle.stale {
		res, err := heal.StalePass(ctx, e.root, heal.Options{
			Now: now, LockTimeout: e.cfg.Lock.Timeout.Duration,
			Staleness: &e.cfg.Staleness, Warm: &e.warm,
		})
		if err != nil && ctx.Err() != nil {
			// Called off (an event came): the scan stopped before it
			// marked anything; the next Settle runs it again (what the
			// lock's inbox drain wrote is the watcher's own write). A
			// pass that finished stands, though an event came after it.
			rep.Wrote = res.Wrote
			return rep, true, nil
		}
		rep.Result = res
		if res.StaleCacheErr != nil {
			rep.Warnings = append(rep.Warnings, cacheWarning("staleness", res.StaleCacheErr))
		}
		if err != nil {
			e.warm.Forget()
			return rep, true, err
		}
		e.settle.stale = false
		if res.Inbox.Feedback > 0 {
			rep.Warnings = append(rep.Warnings, e.refreshPolicy(ctx, now)...)
		}
	}
	if ctx.Err() != nil {
		return rep, true, nil
	}
	if e.cache.Unsaved() {
		lock, err := manifest.AcquireLock(ctx, p.LearningLock, e.cfg.Lock.Timeout.Duration)
		if err != nil {
			return rep, true, err
		}
		if err := e.cache.Flush(e.root); err != nil {
			rep.Warnings = append(rep.Warnings, cacheWarning("stat", err))
		}
		lock.Release()
	}
	return rep, !e.ProveWarm(), nil
}

// ProveWarm proves the parsed state the next Deferred pass takes
// (heal.Warm.Prove): cheap next to a pass (the files are read and
// compared once), so the watcher calls it even while a burst waits for
// its debounce. It reports false when the state is too recent to prove
// yet (call again later).
func (e *Engine) ProveWarm() bool {
	if !e.warm.Valid() {
		return true
	}
	return e.warm.Prove(manifest.PathsFor(e.root)) || !e.warm.Valid()
}

// ManifestPaths returns the paths of the manifest the engine keeps from
// its last pass, when the file on disk is still the one it wrote or read
// (heal.Warm.ManifestPaths); false when the caller must read the file.
func (e *Engine) ManifestPaths() (iter.Seq[string], bool) {
	return e.warm.ManifestPaths(manifest.PathsFor(e.root))
}

// cacheWarning is the warning for a disposable cache (which: "stat",
// "staleness") a pass could not write.
func cacheWarning(which string, err error) string {
	return fmt.Sprintf("%s cache not written (rebuilt by the next pass): %v", which, err)
}
