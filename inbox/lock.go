package inbox

import (
	"context"
	"errors"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// Lock takes the learning lock of root (waiting up to timeout) and drains
// the inbox before returning: the one place every pass that holds the lock
// goes through. A drain that fails for I/O releases the lock and returns
// the error; an inbox that is not a real directory is left alone (the
// pass goes on, res.Skipped says why).
func Lock(ctx context.Context, root string, timeout time.Duration) (*manifest.Lock, Result, error) {
	lock, err := manifest.AcquireLock(ctx, manifest.PathsFor(root).LearningLock, timeout)
	if err != nil {
		return nil, Result{}, err
	}
	res, err := Drain(root)
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
