package deadline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		value string
		def   time.Duration
		want  time.Duration
		warn  string
	}{
		{"", Default, Default, ""},
		{"", PreCommit, PreCommit, ""},
		{"2s", Default, 2 * time.Second, ""},
		{"1500ms", PreCommit, 1500 * time.Millisecond, ""},
		{"5", Default, Default, "not a duration"},
		{"soon", Default, Default, "not a duration"},
		{"1ns", Default, Min, "outside"},
		{"-3s", Default, Min, "outside"},
		{"100h", Default, Max, "outside"},
	} {
		got, warn := FromEnv(tc.value, tc.def)
		if got != tc.want || (tc.warn == "") != (warn == "") || !strings.Contains(warn, tc.warn) {
			t.Errorf("FromEnv(%q, %s) = %s, %q; want %s, %q", tc.value, tc.def, got, warn, tc.want, tc.warn)
		}
	}
}

func TestRunFinishes(t *testing.T) {
	boom := errors.New("boom")
	done, err := Run(context.Background(), time.Second, func(context.Context) error { return boom })
	if !done || err != boom {
		t.Fatalf("%v %v", done, err)
	}
	done, err = Run(context.Background(), time.Second, func(context.Context) error { panic("bad") })
	if !done || err == nil || !strings.Contains(err.Error(), "internal error: bad") {
		t.Fatalf("panic: %v %v", done, err)
	}
}

// Work stuck where no context is checked does not hold the caller past the
// deadline.
func TestRunStuckWork(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	start := time.Now()
	done, err := Run(context.Background(), 100*time.Millisecond, func(context.Context) error {
		<-stuck // ignores its context, like a parser deep in a nesting bomb
		return nil
	})
	if done || !errors.Is(err, ErrExpired) {
		t.Fatalf("%v %v", done, err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("returned after %s", el)
	}
}

// The parent context ending (SIGTERM) ends the wait at once, with its cause.
func TestRunParentCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	stuck := make(chan struct{})
	defer close(stuck)
	time.AfterFunc(50*time.Millisecond, cancel)
	done, err := Run(ctx, time.Hour, func(context.Context) error { <-stuck; return nil })
	if done || !errors.Is(err, context.Canceled) {
		t.Fatalf("%v %v", done, err)
	}
}

// Work that checks its context sees the deadline.
func TestRunContextSeen(t *testing.T) {
	var seen error
	finished := make(chan struct{})
	Run(context.Background(), 50*time.Millisecond, func(ctx context.Context) error {
		defer close(finished)
		<-ctx.Done()
		seen = context.Cause(ctx)
		return seen
	})
	<-finished
	if !errors.Is(seen, ErrExpired) {
		t.Fatalf("cause %v", seen)
	}
}
