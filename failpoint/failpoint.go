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
// LEARNWATCH_FAILPOINT=name=pause  the step creates the file
//
//	$LEARNWATCH_FAILPOINT_RESUME.paused and waits until the file
//	LEARNWATCH_FAILPOINT_RESUME names exists (at most a minute): a test
//	does something there, e.g. a git checkout between a pass's reads and
//	its writes (Pause points only)
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
	switch action {
	case "trace":
		fmt.Fprintf(os.Stderr, "failpoint: %s\n", name)
		return nil
	case "pause":
		return nil // Pause points only
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

// Pause is a step that can only wait: when name is armed with "pause" and
// LEARNWATCH_FAILPOINT_RESUME names a file, it creates that name with
// ".paused" appended and returns once the file itself exists, or after a
// minute. Every other action leaves it be.
func Pause(name string) {
	action, ok := armed(name)
	resume := os.Getenv("LEARNWATCH_FAILPOINT_RESUME")
	if !ok || action != "pause" || resume == "" {
		return
	}
	if f, err := os.Create(resume + ".paused"); err == nil {
		f.Close()
	}
	for end := time.Now().Add(time.Minute); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(resume); err == nil {
			return
		}
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
