package staleness

import (
	"context"
	"errors"
	"testing"
)

// A cancelled context (a hook's deadline, SIGTERM) stops the history walk:
// no commit is read and Scan reports the cause instead of a report in
// which a rename could read as a removal.
func TestScanCancelled(t *testing.T) {
	r, log := scanRepo(t)
	cause := errors.New("hook deadline")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(cause)
	c := open(t, r.dir, Auto).WithContext(ctx)
	if _, err := Scan(r.dir, c, log, Options{}); !errors.Is(err, cause) {
		t.Fatalf("Scan: %v, want the cancellation cause", err)
	}
	if n := len(c.hist.steps); n != 0 {
		t.Fatalf("%d commits walked after cancellation", n)
	}
	// The same repository with a live context finds the rename.
	rep, err := Scan(r.dir, open(t, r.dir, Auto).WithContext(context.Background()), log, Options{})
	if err != nil || len(rep.Stale) != 4 || rep.Stale[1].RenamedTo != "lib/util.go" {
		t.Fatalf("%v %+v", err, rep.Stale)
	}
}
