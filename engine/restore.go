package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/learn"
)

// Restored is what Restore did: the penalties undone, the artifact types
// whose policy overlay changed since the first of them was applied, and
// what taking the lock drained. Overlays only tighten (a person relaxes
// them: policy reset): a clean-up that deleted many artifacts of a type
// may have had it held for approval, which the restore leaves as it is.
type Restored struct {
	Undone    []heal.UndoResult
	Tightened []string
	Inbox     inbox.Result
}

// Restore undoes the deletion penalties sel names by hand (`learnwatch
// restore`): the log and the manifest are written once, a restored
// feedback event per penalty cancels its deleted one (recorded exactly
// once, heal.Restore), and the policy is refreshed. The warnings are
// events not appended yet (the next pass appends them) or a policy not
// refreshed: the restores stand.
func (e *Engine) Restore(ctx context.Context, sel heal.Selection, now time.Time) (Restored, []string, error) {
	r, err := heal.Restore(ctx, e.root, sel, heal.Options{Now: now, LockTimeout: e.cfg.Lock.Timeout.Duration})
	out := Restored{Undone: r.Undone, Inbox: r.Inbox}
	if err != nil || len(r.Undone) == 0 {
		return out, nil, err
	}
	var warn []string
	if r.FeedbackErr != nil {
		warn = append(warn, fmt.Sprintf("feedback not recorded yet (the next reconcile records it): %v", r.FeedbackErr))
	}
	// The restored events cancel the deleted ones: the policy is
	// computed again, as after any pass that recorded feedback.
	warn = append(warn, e.refreshPolicy(ctx, now)...)
	pol, pwarn := e.Policy()
	out.Tightened = tightenedSince(pol, r.Undone)
	return out, append(warn, pwarn...), nil
}

// tightenedSince lists the types of the penalties res undid whose overlay
// in pol holds a tightening that changed at or after the first of them.
func tightenedSince(pol learn.Policy, res []heal.UndoResult) []string {
	var first time.Time
	types := map[string]bool{}
	for _, r := range res {
		types[r.Event.Type] = true
		if at, err := time.Parse(time.RFC3339, r.PenalisedAt); err == nil && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	var out []string
	for _, typ := range slices.Sorted(maps.Keys(types)) {
		o, ok := pol.Overlays[typ]
		if ok && (o.RequiresApproval || o.ThresholdMultiplier > 1) && !first.IsZero() && !o.UpdatedAt.Before(first) {
			out = append(out, typ)
		}
	}
	return out
}
