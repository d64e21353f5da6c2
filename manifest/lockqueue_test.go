package manifest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLockWaiterHelper is not a test: run by TestLockWaitersServedInOrder
// as a separate process (LW_LOCK_WAITER=<lock path>), it takes the lock,
// prints when, holds it LW_LOCK_HOLD and releases it.
func TestLockWaiterHelper(t *testing.T) {
	path := os.Getenv("LW_LOCK_WAITER")
	if path == "" {
		t.Skip("helper process only")
	}
	hold, _ := time.ParseDuration(os.Getenv("LW_LOCK_HOLD"))
	l, err := AcquireLock(context.Background(), path, 30*time.Second)
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(3)
	}
	fmt.Printf("GOT %d\n", time.Now().UnixNano())
	time.Sleep(hold)
	if err := l.Release(); err != nil {
		os.Exit(3)
	}
	os.Exit(0)
}

func tickets(lock string) int {
	des, _ := os.ReadDir(queueDir(lock))
	return len(des)
}

// Writers that find the lock held by another tool are served in the order
// they arrived, not in the order of who polls luckiest: each of 6 waiter
// processes joins the queue after the previous one, the tool lets go, and
// the lock passes down the line. (Without the queue, whoever polls first
// after the release wins.)
func TestLockWaitersServedInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, LearningLock)
	if err := os.Mkdir(lock, 0o755); err != nil { // another tool holds it
		t.Fatal(err)
	}
	const n = 6
	type waiter struct {
		cmd *exec.Cmd
		out *strings.Builder
	}
	var ws []waiter
	for i := 0; i < n; i++ {
		c := exec.Command(os.Args[0], "-test.run=^TestLockWaiterHelper$")
		c.Env = append(os.Environ(), "LW_LOCK_WAITER="+lock, "LW_LOCK_HOLD=20ms")
		out := &strings.Builder{}
		c.Stdout = out
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		ws = append(ws, waiter{c, out})
		// Wait until it is in line before starting the next.
		deadline := time.Now().Add(10 * time.Second)
		for tickets(lock) < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("waiter %d never took a ticket", i)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	released := time.Now()
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	got := make([]int64, n)
	for i, w := range ws {
		if err := w.cmd.Wait(); err != nil {
			t.Fatalf("waiter %d: %v: %s", i, err, w.out)
		}
		s := strings.TrimSpace(w.out.String())
		if _, v, ok := strings.Cut(s, "GOT "); ok {
			got[i], _ = strconv.ParseInt(strings.Fields(v)[0], 10, 64)
		} else {
			t.Fatalf("waiter %d printed %q", i, s)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("the lock was not handed on in arrival order: %v", got)
	}
	last := time.Unix(0, got[n-1]).Sub(released)
	t.Logf("%d waiters served in order; the last got the lock %s after the release (6 holds of 20 ms)", n, last.Round(time.Millisecond))
	if tickets(lock) != 0 {
		t.Errorf("tickets left: %d", tickets(lock))
	}
	if _, err := os.Stat(queueDir(lock)); !os.IsNotExist(err) {
		t.Errorf("queue directory left: %v", err)
	}
}

// A waiter that died in line (its pid is gone) or whose ticket went stale
// does not hold up the queue; its ticket is removed.
func TestLockQueueSkipsDeadWaiters(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, LearningLock)
	c := exec.Command("true")
	if err := c.Run(); err != nil {
		t.Skip("no true(1)")
	}
	dead := c.Process.Pid
	q := queueDir(lock)
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	deadTicket := filepath.Join(q, fmt.Sprintf("%020d-%d-aa", 1, dead))
	staleTicket := filepath.Join(q, fmt.Sprintf("%020d-%d-bb", 2, os.Getppid()))
	for _, p := range []string{deadTicket, staleTicket} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * StaleAfter)
	if err := os.Chtimes(staleTicket, old, old); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	l, err := AcquireLock(context.Background(), lock, 2*time.Second)
	if err != nil {
		t.Fatalf("AcquireLock behind dead waiters: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
	l.Release()
	for _, p := range []string{deadTicket, staleTicket} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("ticket %s left: %v", filepath.Base(p), err)
		}
	}
}

// A live waiter ahead in line is not overtaken: a newcomer times out
// rather than take the lock first. Another tool's lock that is fresh (50 s
// old) is waited for, not taken over; at 60 s it is.
func TestLockQueueOrderAndStaleBound(t *testing.T) {
	dir := t.TempDir()
	lock := filepath.Join(dir, LearningLock)
	q := queueDir(lock)
	if err := os.MkdirAll(q, 0o755); err != nil {
		t.Fatal(err)
	}
	ahead := filepath.Join(q, fmt.Sprintf("%020d-%d-cc", 1, os.Getppid())) // a live process
	if err := os.WriteFile(ahead, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLock(context.Background(), lock, 150*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("overtook a live waiter: %v", err)
	}
	if _, err := os.Stat(lock); !os.IsNotExist(err) {
		t.Fatalf("lock created while another waiter was first: %v", err)
	}
	if err := os.Remove(ahead); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	fresh := time.Now().Add(-50 * time.Second)
	if err := os.Chtimes(lock, fresh, fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := AcquireLock(context.Background(), lock, 200*time.Millisecond); !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("a 50 s old foreign lock: %v, want a timeout", err)
	}
	stale := time.Now().Add(-StaleAfter - time.Second)
	if err := os.Chtimes(lock, stale, stale); err != nil {
		t.Fatal(err)
	}
	l, err := AcquireLock(context.Background(), lock, time.Second)
	if err != nil {
		t.Fatalf("a lock older than 60 s: %v", err)
	}
	l.Release()
}
