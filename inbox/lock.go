package inbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/learnwatch/learnwatch/citation"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// Lock takes the learning lock of root (waiting up to timeout), completes
// the feedback of an interrupted reconcile (journal.CompletePending) and
// the citations of an interrupted Stop hook (citation.CompletePending),
// and drains the inbox before returning: the one place every pass that holds
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
	// Then an interrupted citation pass, judged against the usage file it
	// wrote, before the drain's cite items change that file. An offsets
	// file that does not parse leaves the record for a later pass (the
	// Stop hook says to delete the file).
	found := citation.Pending(root)
	var cerr error
	if found {
		_, cerr = citation.CompletePending(root)
	}
	if cerr != nil && !errors.Is(cerr, citation.ErrCorruptOffsets) {
		_ = lock.Release()
		return nil, Result{}, fmt.Errorf("citations of an interrupted Stop hook: %w", cerr)
	}
	res, err := Drain(root)
	res.Feedback, res.CitationPass = n, found
	if cerr != nil && res.Deferred == "" {
		res.Deferred = "an interrupted Stop hook's offsets left to complete: " + cerr.Error()
	}
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

// LockLog is Lock for a pass over the learning log: with no log and no
// inbox item to create it there is nothing to do, and it returns a nil
// lock without taking it (nor an error). A log that cannot be looked at
// is an error.
func LockLog(ctx context.Context, root string, timeout time.Duration) (*manifest.Lock, Result, error) {
	if _, err := safefs.Lstat(manifest.PathsFor(root).Log); errors.Is(err, os.ErrNotExist) {
		if !Pending(root) {
			return nil, Result{}, nil
		} // else: the drain creates the log
	} else if err != nil {
		return nil, Result{}, err
	}
	return Lock(ctx, root, timeout)
}

// Pending reports whether items are queued (cheap: one directory read), for
// passes that skip work when the log does not exist yet.
func Pending(root string) bool {
	es, err := List(root)
	return err == nil && len(es) > 0
}
