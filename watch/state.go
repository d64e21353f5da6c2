package watch

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// File names under .memory/.
const (
	pidFile   = ".watch.pid"
	stateFile = ".watch-state.json"
)

// State is what a watcher publishes in .memory/.watch-state.json, written
// atomically after each reconcile (not after every event), when the watch
// limit is hit, and on exit.
type State struct {
	PID             int    `json:"pid"`
	Root            string `json:"root"`
	StartedAt       string `json:"started_at"`
	LastReconcileAt string `json:"last_reconcile_at,omitempty"`
	StoppedAt       string `json:"stopped_at,omitempty"`
	// Watches is the number of directories under watch.
	Watches int `json:"watches"`
	// WatchLimitHit is set while the inotify limits keep directories
	// unwatched; the watcher then reconciles every watch.rescan.
	WatchLimitHit bool   `json:"watch_limit_hit"`
	Unwatched     int    `json:"unwatched_dirs,omitempty"`
	LimitError    string `json:"limit_error,omitempty"`
	LastError     string `json:"last_error,omitempty"`
	// ConfigError is set when a reload (SIGHUP) found a broken config; the
	// watcher keeps its previous settings.
	ConfigError string `json:"config_error,omitempty"`
	// HeldBy names the git operation (rebase, merge, cherry-pick, revert)
	// the watcher's passes wait for while it is under way.
	HeldBy string `json:"held_by,omitempty"`

	Counters Counters `json:"counters"`
}

// Counters accumulate over a watcher's life.
type Counters struct {
	Reconciles int `json:"reconciles"`
	Deletions  int `json:"deletions"`
	Edits      int `json:"edits"`
	Healed     int `json:"healed"`
	Rendered   int `json:"rendered"`
	Overflows  int `json:"overflows"`
	Errors     int `json:"errors"`
	Reloads    int `json:"reloads"`
	// GitMoved counts passes that wrote nothing because git wrote the
	// worktree while they read it (heal.ErrGitMoved); each ran again.
	GitMoved int `json:"git_moved"`
	// Prepared counts passes that ended a grace window by committing
	// what was prepared shortly before it ended (engine.Engine.Prepare).
	Prepared int `json:"prepared"`
}

// ReadState returns the state the last watcher of root published and
// whether a watcher is running now (the pid in .memory/.watch.pid is
// alive). No watcher ever having run is not an error: zero State, false.
func ReadState(root string) (st State, running bool, err error) {
	mem := manifest.PathsFor(root).Memory
	if pid, ok := readPID(filepath.Join(mem, pidFile)); ok {
		running = watcherHolds(filepath.Join(mem, pidFile), pid)
	}
	data, err := safefs.ReadFile(filepath.Join(mem, stateFile), safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return State{}, running, nil
	}
	if err != nil {
		return State{}, running, fmt.Errorf("read watch state: %w", err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return State{}, running, fmt.Errorf("parse %s: %w", filepath.Join(mem, stateFile), err)
	}
	return st, running, nil
}

// writeState publishes w.state. It never creates .memory: if the directory
// was moved away, recreating it would block moving it back.
func (w *watcher) writeState() {
	if fi, err := os.Lstat(w.paths.Memory); err != nil || !fi.IsDir() || safefs.CheckDir(w.paths.Memory) != nil {
		return
	}
	b, err := json.MarshalIndent(w.state, "", "  ")
	if err == nil {
		err = failpoint.Inject("watch:state")
	}
	if err == nil {
		// Replaced atomically but not synced: it describes the running
		// watcher, which writes it after every pass (an fsync here kept
		// the loop from the next timer for 60–180 ms on a slow disk). A
		// power cut may leave it unreadable until the next watcher starts.
		err = manifest.WriteFileUnsynced(filepath.Join(w.paths.Memory, stateFile), append(b, '\n'), 0o644)
	}
	if err != nil {
		w.log.Warn("cannot write the watch state", "err", err)
	}
}

func readPID(path string) (int, bool) {
	b, err := safefs.ReadFile(path, safefs.MaxSmall)
	if err != nil {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return pid, err == nil && pid > 0
}

// RunningError says another watcher already watches the repository.
type RunningError struct {
	PID  int
	Path string // the pid file
}

func (e *RunningError) Error() string {
	return fmt.Sprintf("another learnwatch watch is already running for this repository (pid %d, %s)", e.PID, e.Path)
}
