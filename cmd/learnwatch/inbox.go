package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
)

// This file wires the inbox (package inbox) into the commands: observe
// queues its input when the learning lock stays busy or git is in the
// middle of an operation (cite and the Stop hook queue through package
// hooks), every pass under the lock drains, status shows the depth and
// review warns about old items.

// queued is what a command that queued its input prints.
type queued struct {
	Queued       bool   `json:"queued"`
	Item         string `json:"item"`
	Observations int    `json:"observations"`
	Skipped      int    `json:"skipped"`
	// Why says why the input was queued.
	Why string `json:"why"`
}

// observeOrQueue merges in under the learning lock, waiting at most
// lock.queue_after; when the lock stays busy, or at once while git is in
// the middle of an operation, the valid observations are queued in the
// inbox instead (q set with why, res empty).
func observeOrQueue(a *app, root string, cfg config.Config, in []*manifest.Observation) (res lifecycle.Result, q *queued, err error) {
	why := lockBusy
	if g := hooks.InProgress(root); g != "" {
		// The log is a committed file: modified now, it would stop git
		// (`git rebase --continue` refuses). The pass after it merges.
		why = g
		err = errors.New(why)
	} else {
		wait := min(cfg.Lock.QueueAfter.Duration, cfg.Lock.Timeout.Duration)
		res, err = observe(a, root, cfg, wait, in)
		if err == nil || !errors.Is(err, manifest.ErrLockTimeout) {
			return res, nil, err
		}
	}
	var valid []*manifest.Observation
	skipped := 0
	for i, o := range in {
		if msg := lifecycle.SightingProblem(i, o); msg != "" {
			skipped++
			a.skipped(msg)
			continue
		}
		valid = append(valid, o)
	}
	if len(valid) == 0 {
		return res, nil, exitSilently(exitcode.BadInput)
	}
	it, qerr := inbox.Enqueue(root, now(), valid)
	if qerr != nil {
		return res, nil, exitcode.Wrap(exitcode.IO, fmt.Errorf("%w; and queuing in the inbox failed: %v", err, qerr))
	}
	a.log.Debug("input queued", "item", it.ID, "why", why)
	return res, &queued{Queued: true, Item: it.ID, Observations: len(valid), Skipped: skipped, Why: why}, nil
}

// emitQueued prints the answer of a command that queued its input.
func (a *app) emitQueued(q *queued) error {
	return a.emit(q, func(w io.Writer) {
		fmt.Fprintf(w, "observe: queued %d observation(s) as %s in .memory/inbox (%s); the next reconcile, render or observe merges them\n", q.Observations, q.Item, q.Why)
	})
}

// reportDrain says what a drain did (debug), and warns about items set
// aside.
func (a *app) reportDrain(res inbox.Result) {
	if res.Drained+res.Completed > 0 {
		a.log.Debug("inbox drained", "items", res.Drained, "completed", res.Completed, "observations", res.Observations, "citations", res.Citations)
	}
	if res.Deferred != "" {
		fmt.Fprintf(a.stderr, "learnwatch: inbox: %s\n", res.Deferred)
	}
	for _, r := range res.Rejected {
		fmt.Fprintf(a.stderr, "learnwatch: inbox item set aside as rejected-*: %s\n", r)
	}
	if res.Skipped != "" {
		fmt.Fprintf(a.stderr, "learnwatch: inbox not drained: %s\n", res.Skipped)
	}
}

// inboxStatus describes the inbox for status; nil when it is empty.
func inboxStatus(root string, at time.Time) (map[string]any, string) {
	d, err := inbox.Stat(root)
	if err != nil {
		return map[string]any{"error": err.Error()}, fmt.Sprintf("inbox: %v", err)
	}
	if d.Items == 0 && d.Rejected == 0 {
		return nil, ""
	}
	out := map[string]any{"items": d.Items, "rejected": d.Rejected}
	line := fmt.Sprintf("inbox: %d item(s) queued", d.Items)
	if d.Items > 0 {
		out["oldest"] = d.Oldest.UTC().Format(time.RFC3339)
		line += fmt.Sprintf(", oldest queued %s ago", at.Sub(d.Oldest).Round(time.Second))
	}
	if d.Rejected > 0 {
		line += fmt.Sprintf(", %d rejected (kept in .memory/inbox/rejected-*)", d.Rejected)
	}
	return out, line
}

// inboxReview warns when queued items are older than inbox.OldAfter: every
// pass drains the inbox, so nothing has held the lock since.
func inboxReview(root string, at time.Time) (map[string]any, []string) {
	d, err := inbox.Stat(root)
	if err != nil {
		return map[string]any{"error": err.Error()}, []string{fmt.Sprintf("inbox: %v", err)}
	}
	var lines []string
	out := map[string]any{}
	if d.Items > 0 && at.Sub(d.Oldest) > inbox.OldAfter {
		out["items"], out["oldest"] = d.Items, d.Oldest.UTC().Format(time.RFC3339)
		lines = append(lines, fmt.Sprintf("inbox: %d queued item(s), the oldest from %s ago: no pass has drained them (run learnwatch reconcile; is another tool holding .memory/.learning.lock?)", d.Items, at.Sub(d.Oldest).Round(time.Minute)))
	}
	if d.Rejected > 0 {
		out["rejected"] = d.Rejected
		lines = append(lines, fmt.Sprintf("inbox: %d item(s) could not be read and were set aside in .memory/inbox/rejected-*", d.Rejected))
	}
	if len(out) == 0 {
		return nil, nil
	}
	return out, lines
}

// queueWait is cfg with the lock wait of a command that only adds facts:
// lock.queue_after (at most lock.timeout), after which it queues.
func queueWait(cfg config.Config) config.Config {
	cfg.Lock.Timeout.Duration = min(cfg.Lock.QueueAfter.Duration, cfg.Lock.Timeout.Duration)
	return cfg
}

// queuedRecord is what outcome record and verdict record print when they
// queued their input.
type queuedRecord struct {
	Queued   bool    `json:"queued"`
	Item     string  `json:"item"`
	RunID    string  `json:"run_id"`
	Score    float64 `json:"score,omitempty"`
	Verdict  string  `json:"verdict,omitempty"`
	Feedback int     `json:"feedback"`
	// Why says why the input was queued.
	Why string `json:"why"`
}

// lockBusy is why a command queued its input after its lock wait timed
// out.
const lockBusy = "the learning lock is busy"

// queueOutcome queues an outcome (why: the lock wait timed out, err, or
// git is mid-operation): its line and feedback are computed now, appended
// by the next pass. A run already recorded is refused as the direct path
// refuses it.
func queueOutcome(a *app, root string, o learn.Outcome, entries []learn.Candidate, why string, lockErr error) error {
	outs, _, err := journal.ReadOutcomes(root)
	if err != nil {
		return exitcode.Wrap(exitcode.IO, err)
	}
	if slices.ContainsFunc(outs, func(x learn.Outcome) bool { return x.RunID == o.RunID }) {
		return exitcode.Bad("outcome on stdin: field \"run_id\": run %q is already recorded in %s", o.RunID, journal.Path(root, journal.OutcomesFile))
	}
	if !o.ErrorCountSet {
		errs, _, err := journal.ReadErrors(root)
		if err != nil {
			return exitcode.Wrap(exitcode.IO, err)
		}
		o = learn.WithErrorCount(o, errs)
	}
	score, verdict := learn.ImplicitScore(o)
	line, err := journal.MarshalOutcome(o)
	if err != nil {
		return exitcode.Bad("outcome on stdin: %v", err)
	}
	evs, err := marshalEvents(learn.OutcomeEvents(o, score, entries, o.TS))
	if err != nil {
		return exitcode.Bad("outcome on stdin: %v", err)
	}
	it, qerr := inbox.EnqueueOutcome(root, now(), line, evs)
	if qerr != nil {
		return exitcode.Wrap(exitcode.IO, fmt.Errorf("%w; and queuing in the inbox failed: %v", queueCause(why, lockErr), qerr))
	}
	q := queuedRecord{Queued: true, Item: it.ID, RunID: o.RunID, Score: score, Verdict: verdict, Feedback: len(evs), Why: why}
	return a.emit(q, func(w io.Writer) {
		fmt.Fprintf(w, "Queued run %s as %s in .memory/inbox (%s): score %.2f (%s), %d feedback event(s); the next pass records it\n", q.RunID, q.Item, why, q.Score, q.Verdict, q.Feedback)
	})
}

// queueCause is the error a failed queuing reports after: the lock wait's,
// or why.
func queueCause(why string, lockErr error) error {
	if lockErr != nil {
		return lockErr
	}
	return errors.New(why)
}

// queueFeedback queues feedback events (why: see queueOutcome).
func queueFeedback(a *app, root, what, runID string, evs []learn.Event, why string, lockErr error) error {
	lines, err := marshalEvents(evs)
	if err != nil {
		return exitcode.Bad("%s: %v", what, err)
	}
	it, qerr := inbox.EnqueueFeedback(root, now(), lines)
	if qerr != nil {
		return exitcode.Wrap(exitcode.IO, fmt.Errorf("%w; and queuing in the inbox failed: %v", queueCause(why, lockErr), qerr))
	}
	q := queuedRecord{Queued: true, Item: it.ID, RunID: runID, Feedback: len(lines), Why: why}
	return a.emit(q, func(w io.Writer) {
		fmt.Fprintf(w, "Queued %s for run %s as %s in .memory/inbox (%s): %d feedback event(s); the next pass records them\n", what, q.RunID, q.Item, why, q.Feedback)
	})
}

func marshalEvents(evs []learn.Event) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(evs))
	for _, e := range evs {
		b, err := journal.MarshalEvent(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// isLockTimeout reports a lock wait that timed out.
func isLockTimeout(err error) bool { return errors.Is(err, manifest.ErrLockTimeout) }
