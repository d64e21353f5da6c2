package inbox

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/manifest"
)

// Lock takes the learning lock of root (waiting up to timeout), completes
// the feedback of an interrupted reconcile (journal.CompletePending) and
// drains the inbox before returning: the one place every pass that holds
// the lock goes through. A drain that fails for I/O releases the lock and returns
// the error; an inbox that is not a real directory is left alone (the
// pass goes on, res.Skipped says why).
func Lock(ctx context.Context, root string, timeout time.Duration) (*manifest.Lock, Result, error) {
	lock, err := manifest.AcquireLock(ctx, manifest.PathsFor(root).LearningLock, timeout)
	if err != nil {
		return nil, Result{}, err
	}
	// An interrupted reconcile's feedback first: it must be judged against
	// the manifest that reconcile wrote, before this pass changes it.
	n, err := journal.CompletePending(root)
	if err != nil {
		_ = lock.Release()
		return nil, Result{}, fmt.Errorf("feedback of an interrupted reconcile: %w", err)
	}
	res, err := Drain(root)
	res.Feedback = n
	if err == nil && res.Events > 0 {
		// Queued outcomes and verdicts changed the tallies.
		_, _ = journal.RefreshPolicyLocked(root, time.Now())
	}
	if errors.Is(err, ErrNotDirectory) {
		res.Skipped = err.Error()
		return lock, res, nil
	}
	if err != nil {
		_ = lock.Release()
		return nil, res, err
	}
	return lock, res, nil
}

// Pending reports whether items are queued (cheap: one directory read), for
// passes that skip work when the log does not exist yet.
func Pending(root string) bool {
	es, err := List(root)
	return err == nil && len(es) > 0
}
