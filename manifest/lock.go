package manifest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/learnwatch/learnwatch/safefs"
)

// Lock directory names under .memory/, shared with the other tools that
// write the same files (devflow's hooks take them with mkdir).
const (
	LearningLock  = ".learning.lock"
	KnowledgeLock = ".knowledge.lock"
)

// StaleAfter is how old a lock directory must be before another writer may
// take it over. A live holder refreshes its mtime well within this.
var StaleAfter = 60 * time.Second

// ErrLockTimeout is returned when a lock could not be taken in time.
var ErrLockTimeout = errors.New("timed out waiting for lock")

// inproc serialises goroutines of one process: a mkdir lock cannot tell two
// holders in the same process apart.
var (
	inprocMu sync.Mutex
	inproc   = map[string]*sync.Mutex{}
)

func inprocLock(path string) *sync.Mutex {
	inprocMu.Lock()
	defer inprocMu.Unlock()
	m, ok := inproc[path]
	if !ok {
		m = &sync.Mutex{}
		inproc[path] = m
	}
	return m
}

// Lock is a held mkdir-style lock.
type Lock struct {
	path string
	mu   *sync.Mutex
	stop chan struct{}
	done chan struct{}
}

// AcquireLock takes the lock directory at path, waiting up to timeout. A lock
// directory older than StaleAfter is taken over. While held, the directory's
// mtime is refreshed so a long operation is not mistaken for a dead one.
func AcquireLock(ctx context.Context, path string, timeout time.Duration) (*Lock, error) {
	mu := inprocLock(path)
	deadline := time.Now().Add(timeout)
	// In-process first, polled so the timeout and ctx apply.
	for !mu.TryLock() {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("lock %s: %w (held by this process)", path, ErrLockTimeout)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(2 * time.Millisecond):
		}
	}
	if err := safefs.MkdirAll(filepath.Dir(path)); err != nil {
		mu.Unlock()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	delay := time.Millisecond
	// Waiters queue (lockqueue.go): a writer tries mkdir only when no one
	// is waiting or its ticket is the oldest.
	var t *ticket
	defer func() { t.leave() }()
	for {
		if t == nil && !queueEmpty(path) {
			t = takeTicket(path)
		}
		if !t.first() {
			if time.Now().After(deadline) {
				mu.Unlock()
				return nil, fmt.Errorf("lock %s: %w after %s (waiting in line behind other writers)", path, ErrLockTimeout, timeout)
			}
			select {
			case <-ctx.Done():
				mu.Unlock()
				return nil, ctx.Err()
			case <-time.After(jitter(10 * time.Millisecond)):
			}
			continue
		}
		err := os.Mkdir(path, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) {
			mu.Unlock()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		if t == nil {
			t = takeTicket(path)
		}
		fi, serr := os.Lstat(path)
		if serr == nil && !fi.IsDir() {
			// A symlink or file planted under the lock's name is never
			// followed, taken over or removed.
			mu.Unlock()
			return nil, fmt.Errorf("lock %s: %w", path, &safefs.RefusedError{Path: path, Reason: "is not a lock directory (a symlink or file is never followed or removed)"})
		}
		if serr == nil {
			if time.Since(fi.ModTime()) > StaleAfter {
				takeOver(path, nil)
				continue
			}
			if ownerDead(path, fi) {
				takeOver(path, fi)
				continue
			}
		}
		if time.Now().After(deadline) {
			mu.Unlock()
			return nil, fmt.Errorf("lock %s: %w after %s (another writer holds it; remove the directory if no writer is running)", path, ErrLockTimeout, timeout)
		}
		select {
		case <-ctx.Done():
			mu.Unlock()
			return nil, ctx.Err()
		case <-time.After(jitter(delay)):
		}
		// The head of the queue polls often: it is next.
		if delay < 10*time.Millisecond {
			delay *= 2
		}
	}
	writeOwner(path)
	l := &Lock{path: path, mu: mu, stop: make(chan struct{}), done: make(chan struct{})}
	go l.heartbeat()
	return l, nil
}

// The owner file sits next to the lock directory (never inside it: other
// tools remove their locks with rmdir) and names the holder: pid, host and
// the lock directory's inode. A lock whose owner file names this host, the
// same inode and a process that no longer exists was left by a learnwatch
// that was killed, and is taken over at once instead of after StaleAfter.
func ownerPath(lock string) string { return lock + ".owner" }

// The owner file is created with O_CREAT|O_EXCL|O_NOFOLLOW after a
// leftover regular owner file is removed, and read only when it is a
// regular file of bounded size; a planted owner file that is anything else
// (a symlink, dangling or not, a FIFO) is never written, read or removed,
// and the lock works without it.
func writeOwner(lock string) {
	fi, err := os.Lstat(lock)
	if err != nil || !fi.IsDir() {
		return
	}
	host, _ := os.Hostname()
	line := fmt.Sprintf("%d %s %d\n", os.Getpid(), host, safefs.Inode(fi))
	if safefs.Remove(ownerPath(lock)) == nil {
		_ = safefs.CreateExclusive(ownerPath(lock), []byte(line), 0o644)
	}
}

func ownerDead(lock string, fi os.FileInfo) bool {
	ofi, err := os.Lstat(ownerPath(lock))
	// The owner file must be as fresh as the lock directory: a directory
	// created later (another tool's lock, perhaps reusing the inode) is not
	// the one the file describes.
	if err != nil || !ofi.Mode().IsRegular() || fi.ModTime().After(ofi.ModTime().Add(time.Second)) {
		return false
	}
	b, err := safefs.ReadFile(ownerPath(lock), safefs.MaxSmall)
	if err != nil {
		return false
	}
	var pid int
	var host string
	var ino uint64
	if n, _ := fmt.Sscanf(string(b), "%d %s %d", &pid, &host, &ino); n != 3 || pid <= 0 {
		return false
	}
	if h, _ := os.Hostname(); h != host || ino != safefs.Inode(fi) || pid == os.Getpid() {
		return false
	}
	return !processAlive(pid)
}

// takeOver removes a stale lock directory, or (dead != nil) the lock
// directory dead describes, whose owner process is gone. It renames it
// aside first and re-checks what it moved, so that two writers taking over
// at once cannot remove a lock the other has just created.
func takeOver(path string, dead os.FileInfo) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	aside := path + ".stale-" + hex.EncodeToString(b[:])
	if err := os.Rename(path, aside); err != nil {
		return
	}
	fi, err := os.Lstat(aside)
	fresh := err == nil && time.Since(fi.ModTime()) <= StaleAfter
	if dead != nil {
		fresh = err == nil && (safefs.Inode(fi) != safefs.Inode(dead) || fi.ModTime().After(dead.ModTime()))
	}
	if fresh {
		// We moved a lock another writer had just created: put it back
		// (rename onto a missing name). If a third writer took the name in
		// between, the moved lock is stale to its owner's heartbeat anyway.
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			_ = os.Rename(aside, path)
		}
		return
	}
	_ = os.RemoveAll(aside)
}

func (l *Lock) heartbeat() {
	defer close(l.done)
	t := time.NewTicker(StaleAfter / 4)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
			now := time.Now()
			if fi, err := os.Lstat(l.path); err == nil && fi.IsDir() {
				_ = os.Chtimes(l.path, now, now)
			}
			if fi, err := os.Lstat(ownerPath(l.path)); err == nil && fi.Mode().IsRegular() {
				_ = os.Chtimes(ownerPath(l.path), now, now)
			}
		}
	}
}

// Release frees the lock.
func (l *Lock) Release() error {
	close(l.stop)
	<-l.done
	_ = safefs.Remove(ownerPath(l.path))
	err := os.Remove(l.path) // a directory we created; Remove never follows a symlink
	l.mu.Unlock()
	if err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("release lock %s: %w", l.path, err)
	}
	return nil
}
