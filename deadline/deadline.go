// Package deadline owns the time limit of learnwatch's hook entry points.
// A hook runs inside someone else's operation (a git commit, an agent's
// session start) in a repository that may have been crafted to make it slow,
// so each hook has a deadline, set by the user's environment and never by
// the repository. Run gives up waiting for the work when the deadline passes
// or the process is told to stop, even when the work is stuck where no
// context is checked (inside a parser): the caller then fails open and the
// process exits, abandoning the work (every write learnwatch makes is
// atomic, and a lock left behind by an exited process is taken over through
// its owner file).
package deadline

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// EnvVar is the environment variable that sets every hook's deadline (a Go
// duration: "5s", "1500ms").
const EnvVar = "LEARNWATCH_HOOK_TIMEOUT"

// Default deadlines, and the range EnvVar is held to.
const (
	Default   = 5 * time.Second  // session-start, stop, post-checkout, post-merge
	PreCommit = 10 * time.Second // pre-commit walks history
	Min       = 100 * time.Millisecond
	Max       = 10 * time.Minute
)

// ErrExpired is the error of work that did not finish before its deadline.
var ErrExpired = errors.New("deadline reached")

// FromEnv returns the deadline of a hook whose default is def: value, the
// content of EnvVar, when set (clamped to Min–Max), else def. warn says
// what was wrong with a value that could not be used as given.
func FromEnv(value string, def time.Duration) (d time.Duration, warn string) {
	if value == "" {
		return def, ""
	}
	v, err := time.ParseDuration(value)
	if err != nil {
		return def, fmt.Sprintf("%s=%q is not a duration (like 5s); using %s", EnvVar, value, def)
	}
	if c := min(max(v, Min), Max); c != v {
		return c, fmt.Sprintf("%s=%s is outside %s–%s; using %s", EnvVar, value, Min, Max, c)
	}
	return v, ""
}

// Run runs work in its own goroutine with a context that ends after d or
// when ctx ends. It returns work's error (a panic becomes an error) when
// work finishes first; otherwise ErrExpired (deadline) or the cause of
// ctx's end (a signal), at once, without waiting for work: finished then
// reports false, work may still be running, and whatever it shares with
// the caller must not be read.
func Run(ctx context.Context, d time.Duration, work func(context.Context) error) (finished bool, err error) {
	ctx, cancel := context.WithTimeoutCause(ctx, d, ErrExpired)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("internal error: %v", r)
			}
		}()
		done <- work(ctx)
	}()
	select {
	case err := <-done:
		return true, err
	case <-ctx.Done():
		// Work that finished in the same instant wins.
		select {
		case err := <-done:
			return true, err
		default:
		}
		return false, context.Cause(ctx)
	}
}
