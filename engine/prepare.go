package engine

import (
	"context"
	"errors"
	"maps"

	"github.com/learnwatch/learnwatch/heal"
)

// prepared is a watcher's pass read, planned and staged ahead of its
// time (Engine.Prepare).
type prepared struct {
	x    *heal.Prepared
	pass Pass // as prepared: Touched, Arrived, Confirm, Render, NoFeedback, Session
	warn []string
}

// Prepare reads, plans and stages the Deferred pass p ahead of its time,
// p.Now: the watcher prepares the pass of a burst of events while its
// debounce runs (p.Touched, p.Arrived: the burst's files), and the pass
// that calls the artifacts of p.Confirm deleted shortly before their grace
// window ends (no file touched). When that moment comes, the watcher's
// pass (Reconcile with the same Touched, Arrived and Confirm, no event
// since) only commits what is staged — the feedback record, then the log
// and the manifest renamed into place — if nothing the prepared pass read
// has changed (heal.Prepared). Any other pass drops it first. The
// prepared pass works on a copy of the engine's kept state: dropped, it
// leaves the next pass as it found it.
//
// It reports again when the memory files were written too recently to
// vouch for them until the commit, or the kept state to be proved (try a
// little later). A touched artifact written that recently is no reason:
// the commit compares its content (heal.Prepared). A failed preparation
// is not an error of the watcher: the pass runs as usual when it is due.
func (e *Engine) Prepare(ctx context.Context, p Pass) (again bool, err error) {
	e.DropPrepared()
	e.replaced.ReleaseAside() // ahead of the pass, off the path of its result
	if !p.Deferred || p.Touched == nil || p.NoStatCache || e.failed || p.Now.IsZero() {
		return false, nil
	}
	if len(p.Confirm) == 0 && len(p.Touched) == 0 && len(p.Arrived) == 0 {
		return false, nil // nothing to record
	}
	if !e.ProveWarm() {
		// The kept state is too recent to prove: a pass now would read
		// every file.
		return true, nil
	}
	opts, warn := e.passOptions(p)
	opts.Arrived = e.arrivals(p.Arrived)
	x, err := heal.Prepare(ctx, e.root, opts)
	if errors.Is(err, heal.ErrNotPrepared) {
		return true, nil
	}
	if err != nil || x == nil {
		return false, err
	}
	e.prepared = &prepared{x: x, pass: p, warn: warn}
	return false, nil
}

// HasPrepared reports whether a prepared pass waits for its commit.
func (e *Engine) HasPrepared() bool { return e.prepared != nil }

// Close ends what the engine holds on disk for later: a prepared pass is
// dropped (its staged files removed) and the files its passes replaced
// are let go (heal.Replaced). The engine may run passes again after it.
func (e *Engine) Close() {
	e.DropPrepared()
	e.replaced.Release()
}

// DropPrepared drops a prepared pass (its staged files are removed).
func (e *Engine) DropPrepared() {
	if e.prepared != nil {
		e.prepared.x.Drop()
		e.prepared = nil
	}
}

// commitsPrepared reports whether p is the pass x stands for: a Deferred
// pass with the same options, the same touched files, arrivals and
// confirmations, from an engine whose last pass did not fail. The caller
// vouches that no event came since it prepared (the watcher drops a
// prepared pass on one); heal checks the stats.
func (e *Engine) commitsPrepared(x *prepared, p Pass) bool {
	q := x.pass
	return p.Deferred && p.Touched != nil && q.Touched != nil && maps.Equal(p.Touched, q.Touched) &&
		maps.Equal(p.Arrived, q.Arrived) &&
		!e.failed && !p.NoStatCache && p.Render == q.Render && p.NoFeedback == q.NoFeedback &&
		p.Session == q.Session && p.MarkTracked == q.MarkTracked && maps.Equal(p.Confirm, q.Confirm)
}

// commitPrepared commits e.prepared for p when it stands for p; ok is
// false when the pass must run as usual (nothing was written).
func (e *Engine) commitPrepared(ctx context.Context, p Pass) (rep Report, ok bool, err error) {
	if e.prepared == nil {
		return rep, false, nil
	}
	x := e.prepared
	e.prepared = nil
	if !e.commitsPrepared(x, p) {
		x.x.Drop()
		return rep, false, nil
	}
	res, ok, err := x.x.Commit(ctx)
	if !ok {
		return rep, false, err
	}
	e.settle.stale = true
	e.arrived = e.arrivals(p.Arrived) // as Reconcile keeps them
	e.passEnded(res, err)             // a failed commit left the kept state forgotten (heal.Prepare took it)
	rep.Result, rep.Prepared = res, true
	rep.Warnings = append(rep.Warnings, x.warn...)
	if res.CacheErr != nil {
		rep.Warnings = append(rep.Warnings, cacheWarning("stat", res.CacheErr))
	}
	if err != nil {
		return rep, true, err
	}
	if res.Recorded+res.Inbox.Feedback > 0 {
		rep.Warnings = append(rep.Warnings, e.refreshPolicy(ctx, x.x.Now())...)
	}
	return rep, true, nil
}
