package engine

import (
	"context"
	"time"

	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
)

// ObserveResult is what Observe merged, and what the drain of the inbox
// did when the lock was taken.
type ObserveResult struct {
	Result lifecycle.Result
	Inbox  inbox.Result
}

// Observe merges sightings into the learning log (DESIGN.md §2) under the
// learning lock, waiting at most wait for it: with learnwatch.yaml's
// learn.thresholds and the policy's multipliers, the rules the inbox drain
// merges a queued sighting with. The policy is read once the lock is held,
// after the drain (queued outcomes may have moved it). A wait that times
// out returns an error wrapping manifest.ErrLockTimeout: the caller then
// queues its input (observe). The log is created by the first sighting
// merged into a memory that has none. Warnings are a pass's (a policy
// file that does not parse: no multipliers).
func (e *Engine) Observe(ctx context.Context, in []*manifest.Observation, now time.Time, wait time.Duration) (ObserveResult, []string, error) {
	var out ObserveResult
	lock, drained, err := inbox.Lock(ctx, e.root, wait)
	if err != nil {
		return out, nil, err
	}
	defer lock.Release()
	out.Inbox = drained
	pol, warn := e.Policy()
	p := manifest.PathsFor(e.root)
	log, err := manifest.ReadLog(p.Log)
	if err != nil {
		return out, warn, err
	}
	out.Result = lifecycle.ObserveWith(log, in, now, pol.Multiplier, lifecycle.ThresholdsFrom(e.cfg.Learn.Thresholds))
	if log.Changed() || !log.Exists && len(log.Lines) > 0 {
		return out, warn, manifest.WriteLog(p.Log, log)
	}
	return out, warn, nil
}
