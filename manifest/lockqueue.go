package manifest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Waiting for a mkdir lock in order. A writer that finds the lock taken
// takes a ticket: an empty file <lock>.queue/<unix nanoseconds>-<pid>-<random>
// next to the lock directory. Only the writer holding the oldest live
// ticket tries to create the lock directory; the others wait their turn.
// So learnwatch processes get the lock in the order they asked for it,
// and a process cannot lose every race to newcomers until its timeout.
// Another tool's hook does not queue (it only knows mkdir): it competes
// with the head of the queue alone.
//
// A ticket is live while its process exists and its mtime is fresher
// than StaleAfter (a waiter refreshes it while it waits); the head removes
// the tickets of processes that died waiting. A writer that finds no
// ticket tries mkdir at once (no file written on the uncontended path).

// queueDir is the directory of the tickets of lock.
func queueDir(lock string) string { return lock + ".queue" }

type ticket struct {
	dir, path, name string
	refreshed       time.Time
}

// queueEmpty reports whether no writer is waiting for lock.
func queueEmpty(lock string) bool {
	des, err := os.ReadDir(queueDir(lock))
	if err != nil {
		return true
	}
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), ".") {
			return false
		}
	}
	return true
}

// takeTicket joins the queue of lock. It returns nil when the queue
// directory cannot be used (the caller then polls without a ticket).
func takeTicket(lock string) *ticket {
	dir := queueDir(lock)
	if fi, err := os.Lstat(dir); err == nil && (!fi.IsDir() || fi.Mode()&os.ModeSymlink != 0) {
		return nil
	}
	if err := os.Mkdir(dir, 0o755); err != nil && !os.IsExist(err) {
		return nil
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := fmt.Sprintf("%020d-%d-%s", time.Now().UnixNano(), os.Getpid(), hex.EncodeToString(b[:]))
	p := filepath.Join(dir, name)
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil
	}
	f.Close()
	return &ticket{dir: dir, path: p, name: name, refreshed: time.Now()}
}

// leave removes the ticket (and the queue directory when it is empty).
func (t *ticket) leave() {
	if t == nil {
		return
	}
	_ = os.Remove(t.path)
	_ = os.Remove(t.dir) // fails while other tickets are in it
}

// first reports whether t is the oldest live ticket, removing the tickets
// of waiters that are gone on the way.
func (t *ticket) first() bool {
	if t == nil {
		return true
	}
	if time.Since(t.refreshed) > StaleAfter/4 {
		now := time.Now()
		if os.Chtimes(t.path, now, now) == nil {
			t.refreshed = now
		}
	}
	des, err := os.ReadDir(t.dir)
	if err != nil {
		return true
	}
	names := make([]string, 0, len(des))
	for _, de := range des {
		if !strings.HasPrefix(de.Name(), ".") {
			names = append(names, de.Name())
		}
	}
	slices.Sort(names)
	for _, n := range names {
		if n >= t.name {
			return true
		}
		if ticketLive(filepath.Join(t.dir, n), n) {
			return false
		}
		_ = os.Remove(filepath.Join(t.dir, n))
	}
	return true
}

// ticketLive reports whether the ticket file p (named n) belongs to a
// waiting process: its pid exists and the file was refreshed recently.
func ticketLive(p, n string) bool {
	parts := strings.SplitN(n, "-", 3)
	if len(parts) != 3 {
		return false
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return false
	}
	fi, err := os.Lstat(p)
	if err != nil || !fi.Mode().IsRegular() || time.Since(fi.ModTime()) > StaleAfter {
		return false
	}
	return pid == os.Getpid() || processAlive(pid)
}

// jitter returns a duration in [d/2, 3d/2): waiters that are not at the
// head of the queue do not poll in lockstep.
func jitter(d time.Duration) time.Duration {
	n, err := rand.Int(rand.Reader, big.NewInt(int64(d)))
	if err != nil {
		return d
	}
	return d/2 + time.Duration(n.Int64())
}
