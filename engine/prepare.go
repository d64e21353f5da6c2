package engine

import (
	"context"
	"errors"
	"maps"

	"github.com/learnwatch/learnwatch/heal"
)

// prepared is the watcher's pass at the end of a grace window, read,
// planned and staged while the window runs (Engine.Prepare).
type prepared struct {
	x    *heal.Prepared
	pass Pass // as prepared: Confirm, Render, NoFeedback, Session
	warn []string
}

// Prepare reads, plans and stages the Deferred pass p ahead of its time:
// the pass that calls the artifacts of p.Confirm deleted when their grace
// window ends, at p.Now (that moment), with no file touched (p.Touched
// empty). The watcher prepares it shortly before the window ends; when it
// ends, its pass (Reconcile with the same Confirm and no file touched
// since) only commits what is staged — the feedback record, then the log
// and the manifest renamed into place — if nothing the prepared pass read
// has changed (heal.Prepared). Any other pass drops it first. The
// prepared pass takes the engine's kept state as a pass does: dropped, it
// leaves the next pass to read every file.
//
// It reports again when the memory files were written too recently to
// vouch for them until the commit, or the kept state to be proved (try a
// little later). A failed
// preparation is not an error of the watcher: the pass runs as usual at
// the end of the window.
func (e *Engine) Prepare(ctx context.Context, p Pass) (again bool, err error) {
	e.DropPrepared()
	if !p.Deferred || len(p.Confirm) == 0 || p.Touched == nil || p.NoStatCache || e.failed || p.Now.IsZero() {
		return false, nil
	}
	if !e.ProveWarm() {
		// The kept state is too recent to prove: a pass now would read
		// every file.
		return true, nil
	}
	opts, warn := e.passOptions(p)
	opts.Arrived = maps.Clone(e.arrived)
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

// DropPrepared drops a prepared pass (its staged files are removed).
func (e *Engine) DropPrepared() {
	if e.prepared != nil {
		e.prepared.x.Drop()
		e.prepared = nil
	}
}

// commitsPrepared reports whether p is the pass x stands for: a Deferred
// pass with the same options, no file touched and no arrival since, from
// an engine whose last pass did not fail.
func (e *Engine) commitsPrepared(x *prepared, p Pass) bool {
	q := x.pass
	return p.Deferred && p.Touched != nil && len(p.Touched) == 0 && len(p.Arrived) == 0 &&
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
	e.passEnded(res, err) // a failed commit left the kept state forgotten (heal.Prepare took it)
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
