package main

// testscript commands for the watch_*.txtar scenarios (all prefixed
// "watch-"), and the in-process check of the second watcher's exit code.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/learnwatch/learnwatch/watch"
)

func init() {
	for name, f := range map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"watch-fixture": cmdWatchFixture,
		"watch-wait":    cmdWatchWait,
		"watch-signal":  cmdWatchSignal,
		"watch-save":    cmdWatchSave,
		"watch-burst":   cmdWatchBurst,
		"watch-obs":     cmdWatchObs,
		"watch-check":   cmdWatchCheck,
		"watch-exit":    cmdWatchExit,
		"watch-marked":  cmdWatchMarked,
		"watch-idle":    cmdWatchIdle,
	} {
		if _, dup := scriptCmds[name]; dup {
			panic("scriptCmds: " + name + " registered twice")
		}
		scriptCmds[name] = f
	}
}

const watchCmdDir = ".claude/commands/self-learning"

// watch-fixture N: a repository in $WORK with N rendered commands
// c0.md..cN-1.md, one created workflow observation (confidence 0.9) each,
// and a manifest with their sha256 hashes.
func cmdWatchFixture(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: watch-fixture N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	ts.Check(os.MkdirAll(ts.MkAbs(watchCmdDir), 0o755))
	ts.Check(os.MkdirAll(ts.MkAbs(".memory/knowledge"), 0o755))
	var log bytes.Buffer
	type entry struct {
		ObservationID string `json:"observationId"`
		Type          string `json:"type"`
		Path          string `json:"path"`
		ContentHash   string `json:"contentHash"`
		RenderedAt    string `json:"renderedAt"`
	}
	var entries []entry
	for i := range n {
		rel := fmt.Sprintf("%s/c%d.md", watchCmdDir, i)
		content := fmt.Sprintf("# command %d\n\nbody\n", i)
		ts.Check(os.WriteFile(ts.MkAbs(rel), []byte(content), 0o644))
		sum := sha256.Sum256([]byte(content))
		fmt.Fprintf(&log, `{"id":"obs_c%d","type":"workflow","pattern":"command %d","confidence":0.9,"observations":3,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-05T00:00:00Z","status":"created","evidence":[],"details":"","quality_ok":true,"artifact_path":%q}`+"\n", i, i, rel)
		entries = append(entries, entry{fmt.Sprintf("obs_c%d", i), "workflow", rel, "sha256:" + hex.EncodeToString(sum[:]), "2026-01-05T00:00:00Z"})
	}
	ts.Check(os.WriteFile(ts.MkAbs(".memory/learning-log.jsonl"), log.Bytes(), 0o644))
	m, err := json.MarshalIndent(map[string]any{"schemaVersion": 1, "entries": entries}, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(".memory/.learning-manifest.json"), append(m, '\n'), 0o644))
}

// watch-wait running | watch-wait COUNTER N: poll .memory/.watch-state.json
// (up to 20s) until the watcher in the pid file runs and has published its
// state, or until counters.COUNTER >= N.
func cmdWatchWait(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: watch-wait running | watch-wait COUNTER N")
	}
	root := ts.MkAbs(".")
	want := 0
	if args[0] != "running" {
		if len(args) != 2 {
			ts.Fatalf("usage: watch-wait COUNTER N")
		}
		var err error
		want, err = strconv.Atoi(args[1])
		ts.Check(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		st, running, err := watch.ReadState(root)
		if err == nil {
			if args[0] == "running" {
				// The watcher named in the pid file has published its state.
				b, _ := os.ReadFile(filepath.Join(root, ".memory", ".watch.pid"))
				if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); running && pid != 0 && st.PID == pid {
					return
				}
			} else {
				b, _ := json.Marshal(st.Counters)
				var c map[string]int
				_ = json.Unmarshal(b, &c)
				if _, ok := c[args[0]]; !ok {
					ts.Fatalf("watch-wait: no counter %q in %s", args[0], b)
				}
				if c[args[0]] >= want {
					return
				}
				last = string(b)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("watch-wait %s: timed out (counters %s)", strings.Join(args, " "), last)
}

// watch-signal TERM|INT|HUP: signal the watcher named in .memory/.watch.pid.
func cmdWatchSignal(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: watch-signal TERM|INT|HUP")
	}
	sendWatchSignal(ts, args[0])
}

func sendWatchSignal(ts *testscript.TestScript, name string) {
	sig := map[string]syscall.Signal{"TERM": syscall.SIGTERM, "INT": syscall.SIGINT, "HUP": syscall.SIGHUP}[name]
	if sig == 0 {
		ts.Fatalf("unknown signal %s", name)
	}
	b, err := os.ReadFile(ts.MkAbs(".memory/.watch.pid"))
	ts.Check(err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	ts.Check(err)
	proc, err := os.FindProcess(pid)
	ts.Check(err)
	ts.Check(proc.Signal(sig))
}

// watch-save FILE TEXT: an editor's atomic save — write a temp file next to
// FILE, rename it over FILE.
func cmdWatchSave(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: watch-save FILE TEXT")
	}
	path := ts.MkAbs(args[0])
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	ts.Check(os.WriteFile(tmp, []byte(args[1]+"\n"), 0o644))
	ts.Check(os.Rename(tmp, path))
}

// watch-burst N [SIG@K]: N writes over the fixture's commands, round robin,
// deleting every tenth file on its last visit; with SIG@K, signal the
// watcher after the K-th write and carry on.
func cmdWatchBurst(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: watch-burst N [SIG@K]")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	sig, at := "", -1
	if len(args) == 2 {
		s, k, ok := strings.Cut(args[1], "@")
		if !ok {
			ts.Fatalf("watch-burst: want SIG@K, got %q", args[1])
		}
		sig = s
		at, err = strconv.Atoi(k)
		ts.Check(err)
	}
	files, err := filepath.Glob(ts.MkAbs(watchCmdDir + "/c*.md"))
	ts.Check(err)
	if len(files) == 0 {
		ts.Fatalf("watch-burst: no files")
	}
	rounds := (n + len(files) - 1) / len(files)
	for i := range n {
		f := files[i%len(files)]
		if i/len(files) == rounds-1 && i%10 == 0 {
			os.Remove(f)
		} else {
			ts.Check(os.WriteFile(f, fmt.Appendf(nil, "write %d\n", i), 0o644))
		}
		if i == at {
			sendWatchSignal(ts, sig)
		}
	}
}

// watch-obs ID STATUS [CONFIDENCE]: the observation in the log has STATUS
// (and CONFIDENCE).
func cmdWatchObs(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: watch-obs ID STATUS [CONFIDENCE]")
	}
	for _, line := range strings.Split(ts.ReadFile(".memory/learning-log.jsonl"), "\n") {
		var o struct {
			ID         string  `json:"id"`
			Status     string  `json:"status"`
			Confidence float64 `json:"confidence"`
		}
		if json.Unmarshal([]byte(line), &o) != nil || o.ID != args[0] {
			continue
		}
		if o.Status != args[1] {
			ts.Fatalf("%s: status %s, want %s", o.ID, o.Status, args[1])
		}
		if len(args) == 3 {
			want, err := strconv.ParseFloat(args[2], 64)
			ts.Check(err)
			if o.Confidence != want {
				ts.Fatalf("%s: confidence %v, want %v", o.ID, o.Confidence, want)
			}
		}
		return
	}
	ts.Fatalf("%s not in the log", args[0])
}

// watch-marked ID: poll the log (up to 20s) until observation ID carries
// the staleness pass's mark (mayBeStale).
func cmdWatchMarked(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: watch-marked ID")
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(ts.MkAbs(".memory/learning-log.jsonl"))
		for _, line := range bytes.Split(b, []byte("\n")) {
			var o struct {
				ID         string `json:"id"`
				MayBeStale bool   `json:"mayBeStale"`
			}
			if json.Unmarshal(line, &o) == nil && o.ID == args[0] && o.MayBeStale {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	ts.Fatalf("watch-marked %s: no mark after 20s", args[0])
}

// watch-idle DURATION MAX: the watcher in the pid file uses at most MAX
// clock ticks of CPU (user and system, /proc/PID/stat) over DURATION. CPU
// time, not wall time: a loaded machine does not add to it. Linux only.
func cmdWatchIdle(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: watch-idle DURATION MAX")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	most, err := strconv.Atoi(args[1])
	ts.Check(err)
	b, err := os.ReadFile(ts.MkAbs(".memory/.watch.pid"))
	ts.Check(err)
	pid := strings.TrimSpace(string(b))
	ticks := func() int {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			ts.Fatalf("watch-idle: %v", err)
		}
		// The fields after the command name (which may hold spaces):
		// state is field 3, utime 14 and stime 15.
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		u, err1 := strconv.Atoi(f[11])
		s, err2 := strconv.Atoi(f[12])
		ts.Check(errors.Join(err1, err2))
		return u + s
	}
	before := ticks()
	time.Sleep(d)
	if used := ticks() - before; used > most {
		ts.Fatalf("watch-idle: the watcher used %d ticks of CPU in %s idle, want at most %d", used, d, most)
	}
}

// watch-check [stopped]: every line of the log, the manifest and the state
// file parse as JSON, and no temp file of an atomic write is left in
// .memory or the commands directory; with stopped, the pid file is gone and
// the state says the watcher stopped.
func cmdWatchCheck(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) > 1 {
		ts.Fatalf("usage: watch-check [stopped]")
	}
	for i, line := range strings.Split(ts.ReadFile(".memory/learning-log.jsonl"), "\n") {
		if strings.TrimSpace(line) != "" && !json.Valid([]byte(line)) {
			ts.Fatalf("log line %d is not JSON: %q", i+1, line)
		}
	}
	for _, f := range []string{".memory/.learning-manifest.json", ".memory/.watch-state.json"} {
		if !json.Valid([]byte(ts.ReadFile(f))) {
			ts.Fatalf("%s is not JSON", f)
		}
	}
	for _, dir := range []string{".memory", watchCmdDir} {
		ents, _ := os.ReadDir(ts.MkAbs(dir))
		for _, e := range ents {
			if strings.Contains(e.Name(), ".tmp-") || strings.HasSuffix(e.Name(), ".lock") {
				ts.Fatalf("left behind: %s/%s", dir, e.Name())
			}
		}
	}
	if len(args) == 1 {
		if args[0] != "stopped" {
			ts.Fatalf("usage: watch-check [stopped]")
		}
		if _, err := os.Stat(ts.MkAbs(".memory/.watch.pid")); !os.IsNotExist(err) {
			ts.Fatalf("pid file still there after the watcher stopped (%v)", err)
		}
		st, running, err := watch.ReadState(ts.MkAbs("."))
		ts.Check(err)
		if running || st.StoppedAt == "" {
			ts.Fatalf("state after stop: running %v, stopped_at %q", running, st.StoppedAt)
		}
	}
}

// watch-exit CODE prog args...: run prog and require its exit code.
func cmdWatchExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: watch-exit CODE prog args...")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("watch-exit: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// TestWatchSecondWatcherExit3 runs a watcher in this process and the CLI
// beside it: the CLI exits 3 naming this process's pid.
func TestWatchSecondWatcherExit3(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- watch.Run(ctx, root, watch.Options{}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("first watcher: %v", err)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, running, _ := watch.ReadState(root); running {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("first watcher did not start")
		}
		time.Sleep(10 * time.Millisecond)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"--root", root, "watch"}, strings.NewReader(""), &stdout, &stderr)
	if code != 3 {
		t.Fatalf("second watcher exited %d, want 3; stderr: %s", code, stderr.String())
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(stderr.String(), want) {
		t.Fatalf("stderr does not name %q: %s", want, stderr.String())
	}
}
