// Package failpoint lets tests stop learnwatch at a named write step. It is
// always compiled in and inert unless LEARNWATCH_FAILPOINT names a point.
//
// LEARNWATCH_FAILPOINT=name        the process kills itself (SIGKILL) there
// LEARNWATCH_FAILPOINT=name=enospc the step fails with "no space left on device"
// LEARNWATCH_FAILPOINT=name=error  the step fails with a generic error
// LEARNWATCH_FAILPOINT=name=trace  the step goes on, "failpoint: name" on stderr
// LEARNWATCH_FAILPOINT=name=hang   the step never returns (like a parser stuck
//
//	on hostile input: no context is checked)
//
// The reliability harness lists the points a command reaches with *=trace.
//
// Several points may be given separated by commas. A name ending in "*"
// matches every point with that prefix. LEARNWATCH_FAILPOINT_SKIP=N lets the
// first N hits pass before the point fires.
package failpoint

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	once   sync.Once
	points map[string]string
	skip   int64
	hits   atomic.Int64
)

func load() {
	points = map[string]string{}
	spec := os.Getenv("LEARNWATCH_FAILPOINT")
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		name, action, _ := strings.Cut(p, "=")
		points[name] = action
	}
	skip, _ = strconv.ParseInt(os.Getenv("LEARNWATCH_FAILPOINT_SKIP"), 10, 64)
}

// Inject is called at a named step. It returns nil unless the point is armed.
func Inject(name string) error {
	action, ok := armed(name)
	if !ok {
		return nil
	}
	if action == "trace" {
		fmt.Fprintf(os.Stderr, "failpoint: %s\n", name)
		return nil
	}
	if hits.Add(1) <= skip {
		return nil
	}
	switch action {
	case "enospc":
		return syscall.ENOSPC
	case "error":
		return errors.New("failpoint " + name)
	case "hang":
		hang()
	}
	p, _ := os.FindProcess(os.Getpid())
	_ = p.Signal(syscall.SIGKILL)
	select {} // wait for the signal to land
}

// Hang is a step that can only hang: it never returns when name is armed
// with "hang" and ignores every other action (so "*=enospc" leaves it be).
func Hang(name string) {
	if action, ok := armed(name); ok && action == "hang" {
		hang()
	}
}

func hang() {
	for {
		time.Sleep(time.Hour)
	}
}

// armed returns the action name is armed with.
func armed(name string) (string, bool) {
	once.Do(load)
	if len(points) == 0 {
		return "", false
	}
	action, ok := points[name]
	if !ok {
		for p, a := range points {
			if strings.HasSuffix(p, "*") && strings.HasPrefix(name, strings.TrimSuffix(p, "*")) {
				return a, true
			}
		}
	}
	return action, ok
}
