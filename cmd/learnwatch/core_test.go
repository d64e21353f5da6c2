package main

// Go-level CLI tests of the core (issue 2): crash safety (every failpoint)
// and concurrency (several learnwatch processes and another tool's mkdir lock
// on one repository). The processes are the test binary itself, re-executed
// as "learnwatch" through the $PATH entry testscript.Main sets up, so under
// `go test -race` every child process runs with the race detector too.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// lwResult is the outcome of one learnwatch process.
type lwResult struct {
	stdout, stderr string
	code           int
	killed         bool // ended by SIGKILL (a failpoint)
}

// runLW runs learnwatch with args against root; env entries are added to the
// environment (LEARNWATCH_NOW is pinned unless given).
func runLW(t *testing.T, ctx context.Context, root string, env []string, stdin string, args ...string) lwResult {
	t.Helper()
	bin, err := exec.LookPath("learnwatch")
	if err != nil {
		t.Fatalf("learnwatch is not on $PATH (TestMain sets it up): %v", err)
	}
	cmd := exec.CommandContext(ctx, bin, append(args, "--root", root)...)
	cmd.Env = append(os.Environ(), "LEARNWATCH_NOW=2026-01-05T00:00:00Z", "LEARNWATCH_FAILPOINT=")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	r := lwResult{stdout: out.String(), stderr: errb.String()}
	if strings.Contains(r.stderr, "DATA RACE") {
		t.Errorf("learnwatch %v: race detector report:\n%s", args, r.stderr)
	}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("learnwatch %v: %v", args, err)
		}
		r.code = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
		if ctx.Err() != nil {
			t.Fatalf("learnwatch %v did not finish: %v\n%s", args, ctx.Err(), r.stderr)
		}
	}
	return r
}

// mustLW runs learnwatch and requires exit 0.
func mustLW(t *testing.T, root, stdin string, args ...string) lwResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := runLW(t, ctx, root, nil, stdin, args...)
	if r.code != 0 {
		t.Fatalf("learnwatch %v: exit %d\n%s", args, r.code, r.stderr)
	}
	return r
}

func jsonOut(t *testing.T, r lwResult) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, r.stdout)
	}
	return m
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readyLine is a log line of a ready observation.
func readyLine(id, typ, pattern, details string) string {
	o := map[string]any{"id": id, "type": typ, "pattern": pattern, "confidence": 0.95, "observations": 4,
		"first_seen": "2025-12-01T00:00:00Z", "last_seen": "2025-12-10T00:00:00Z", "status": "ready",
		"evidence": []string{"src/" + id + ".go"}, "details": details, "quality_ok": true}
	b, _ := json.Marshal(o)
	return string(b) + "\n"
}

// logIDs returns how often each observation id appears in the log and the
// parsed observations by id.
func logIDs(t *testing.T, root string) (map[string]int, map[string]map[string]any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".memory", "learning-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	count, obs := map[string]int{}, map[string]map[string]any{}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var o map[string]any
		if err := json.Unmarshal([]byte(line), &o); err != nil {
			t.Errorf("log line does not parse: %v: %q", err, line)
			continue
		}
		id, _ := o["id"].(string)
		count[id]++
		obs[id] = o
	}
	return count, obs
}

// backdateLocks makes the lock directories a killed process left behind
// look older than the 60 s stale limit (instead of waiting a minute).
func backdateLocks(t *testing.T, root string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Minute)
	for _, l := range []string{".learning.lock", ".knowledge.lock"} {
		p := filepath.Join(root, ".memory", l)
		if _, err := os.Stat(p); err == nil {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// freshLocks lists lock directories younger than the stale limit: a live
// holder that never released.
func freshLocks(root string) []string {
	var out []string
	for _, l := range []string{".learning.lock", ".knowledge.lock"} {
		if fi, err := os.Stat(filepath.Join(root, ".memory", l)); err == nil && time.Since(fi.ModTime()) < time.Minute {
			out = append(out, l)
		}
	}
	return out
}

func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var adrHeading = regexp.MustCompile(`(?m)^## (ADR|PF)-\d+`)

func headings(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return adrHeading.FindAllString(string(b), -1)
}

// TestCoreCrashHealsRenderKilledAfterKnowledge is the crash window of
// DESIGN.md §4: render SIGKILLed between the knowledge write and the log
// write; the next reconcile heals it (healed 1) and a second render writes
// no duplicate ADR.
func TestCoreCrashHealsRenderKilledAfterKnowledge(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".memory", "learning-log.jsonl"),
		readyLine("obs_crash", "decision", "Use SQLite for the local cache", "context: c; decision: d; rationale: r"))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	r := runLW(t, ctx, root, []string{"LEARNWATCH_FAILPOINT=render:after-knowledge"}, "", "render")
	if !r.killed {
		t.Fatalf("render was not killed by the failpoint: exit %d\n%s", r.code, r.stderr)
	}
	decisions := filepath.Join(root, ".memory", "knowledge", "decisions.md")
	if h := headings(t, decisions); len(h) != 1 {
		t.Fatalf("after the kill decisions.md has %v, want the one ADR written before the kill", h)
	}
	if _, obs := logIDs(t, root); obs["obs_crash"]["status"] != "ready" {
		t.Fatalf("the log was written before the kill: status %v", obs["obs_crash"]["status"])
	}
	if _, err := os.Stat(filepath.Join(root, ".memory", ".learning-manifest.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the manifest was written before the kill: %v", err)
	}

	backdateLocks(t, root)
	rec := jsonOut(t, mustLW(t, root, "", "reconcile", "--json"))
	if rec["healed"] != float64(1) {
		t.Fatalf("reconcile after the crash: healed %v, want 1: %v", rec["healed"], rec)
	}
	ren := jsonOut(t, mustLW(t, root, "", "render", "--json"))
	if n := len(ren["rendered"].([]any)); n != 0 {
		t.Fatalf("second render rendered %d entries, want 0: %v", n, ren)
	}
	if h := headings(t, decisions); len(h) != 1 || h[0] != "## ADR-001" {
		t.Fatalf("decisions.md has %v, want exactly ADR-001", h)
	}
	_ = os.Remove(filepath.Join(root, ".memory", ".knowledge.lock")) // stale, nobody needed it since
	if probs := checkRepo(root, true); len(probs) > 0 {
		t.Fatalf("inconsistent after heal:\n  %s", strings.Join(probs, "\n  "))
	}
}

// crashTemplate builds a repository with rendered artifacts of every type,
// pending reconcile work (a deleted command, an edited ADR, a crash-window
// ADR to heal) and ready observations not yet rendered, and returns it with the ids of the log.
func crashTemplate(t *testing.T) (string, []string) {
	root := t.TempDir()
	log := readyLine("obs_wf1", "workflow", "Run the linter", "") +
		readyLine("obs_pr1", "procedural", "Regenerate mocks", "steps: go generate ./...") +
		readyLine("obs_de1", "decision", "Use SQLite", "context: c; decision: d; rationale: r") +
		readyLine("obs_pf1", "pitfall", "Fixtures assume UTC", "area: tests; issue: golden files assume UTC")
	writeFile(t, filepath.Join(root, ".memory", "learning-log.jsonl"), log)
	// Short lock timeout: a fresh lock left by a bug fails fast instead of
	// after 10 s.
	writeFile(t, filepath.Join(root, ".memory", "learnwatch.yaml"), "lock:\n  timeout: 5s\n")
	mustLW(t, root, "", "render")

	// Another tool appends ready observations (not rendered yet).
	f, err := os.OpenFile(filepath.Join(root, ".memory", "learning-log.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(readyLine("obs_wf2", "workflow", "Rebase before merging", "") +
		readyLine("obs_pr2", "procedural", "Bump the schema version", "") +
		readyLine("obs_de2", "decision", "Wrap errors with %w", "") +
		readyLine("obs_pf2", "pitfall", "Clock in tests", "area: scheduler; issue: tests use the wall clock"))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Pending reconcile work: a deleted command and an edited ADR.
	if err := os.Remove(filepath.Join(root, ".claude", "commands", "self-learning", "run-the-linter.md")); err != nil {
		t.Fatal(err)
	}
	dec := filepath.Join(root, ".memory", "knowledge", "decisions.md")
	b, err := os.ReadFile(dec)
	if err != nil {
		t.Fatal(err)
	}
	// A crash-window orphan for reconcile to heal: an ADR section written
	// with its Source marker whose observation is still ready.
	f, err = os.OpenFile(filepath.Join(root, ".memory", "learning-log.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(readyLine("obs_de4", "decision", "Crash window decision", ""))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(b), "- **Context**: c\n", "- **Context**: edited by a human\n", 1)
	edited += "\n## ADR-002: Crash window decision\n\n- **Date**: 2026-01-05\n- **Status**: Accepted\n- **Source**: self-learning:obs_de4\n"
	writeFile(t, dec, edited)
	return root, []string{"obs_wf1", "obs_pr1", "obs_de1", "obs_pf1", "obs_wf2", "obs_pr2", "obs_de2", "obs_pf2", "obs_de3", "obs_de4"}
}

// TestCoreCrashEveryFailpoint kills (or fails) learnwatch at every failpoint
// while it reconciles, renders and observes, then runs it again normally:
// afterwards every file parses, no ADR/PF exists twice, no observation is
// lost or duplicated (nor counted twice), and the manifest matches the files.
func TestCoreCrashEveryFailpoint(t *testing.T) {
	t.Parallel()
	template, ids := crashTemplate(t)
	points := []string{
		"render:after-artifact", "render:after-knowledge", "render:after-log",
		"reconcile:after-log", "reconcile:after-manifest",
		"write:learning-log.jsonl", "write:.learning-manifest.json", "write:.knowledge-usage.json",
		"write:decisions.md", "write:pitfalls.md", "write:rebase-before-merging.md", "write:SKILL.md",
		"write:*", "append:feedback.jsonl", "append:outcomes.jsonl",
		"write:learning-log.jsonl=enospc", "render:after-knowledge=error", "reconcile:after-log=enospc",
	}
	const de3 = `{"id":"obs_de3","type":"decision","pattern":"Prefer table-driven tests","quality_ok":true}`
	for _, fp := range points {
		t.Run(strings.NewReplacer(":", "_", "*", "all", "=", "_").Replace(fp), func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			copyTree(t, template, root)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			env := []string{"LEARNWATCH_FAILPOINT=" + fp}
			type step struct {
				stdin string
				args  []string
			}
			steps := []step{
				{"", []string{"reconcile", "--json"}},
				{"", []string{"render", "--json"}},
				{de3, []string{"observe"}},
				{de3, []string{"observe"}},
				{"", []string{"reconcile"}},
				{"", []string{"render"}},
			}
			var retry []step // observations whose process failed: the caller sends them again
			fired := false
			for _, s := range steps {
				r := runLW(t, ctx, root, env, s.stdin, s.args...)
				switch {
				case r.killed:
					fired = true
					backdateLocks(t, root)
				case r.code == 3 && strings.Contains(fp, "="):
					fired = true // enospc/error: an I/O failure, reported
				case r.code != 0:
					t.Fatalf("learnwatch %v under %s: exit %d\n%s", s.args, fp, r.code, r.stderr)
				}
				if r.code != 0 && s.stdin != "" {
					retry = append(retry, s)
				}
				if r.code != 0 && r.killed && s.stdin == "" && strings.HasPrefix(fp, "write:") && !strings.Contains(fp, "*") {
					// Fine: the write it was killed in never happened.
				}
			}
			if !fired && !strings.HasPrefix(fp, "append:") {
				t.Errorf("failpoint %s never fired: the test no longer covers it", fp)
			}
			for _, s := range retry {
				mustLW(t, root, s.stdin, s.args...)
			}
			mustLW(t, root, "", "reconcile")
			mustLW(t, root, "", "render")
			rec := jsonOut(t, mustLW(t, root, "", "reconcile", "--json"))
			for _, k := range []string{"deletions", "edits", "healed"} {
				if rec[k] != float64(0) {
					t.Errorf("a reconcile after recovery still finds %s %v: %v", k, rec[k], rec)
				}
			}

			// Every observation exactly once, none counted twice.
			count, obs := logIDs(t, root)
			var got []string
			for id, n := range count {
				got = append(got, id)
				if n != 1 {
					t.Errorf("observation %s appears %d times", id, n)
				}
			}
			sort.Strings(got)
			want := append([]string(nil), ids...)
			sort.Strings(want)
			if strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("observations in the log: %v, want %v", got, want)
			}
			if n := obs["obs_de3"]["observations"]; n != float64(2) {
				t.Errorf("obs_de3 observed twice, log says %v", n)
			}
			wantStatus := map[string]string{"obs_wf1": "deprecated", "obs_pr1": "created", "obs_de1": "created", "obs_pf1": "created",
				"obs_wf2": "created", "obs_pr2": "created", "obs_de2": "created", "obs_pf2": "created", "obs_de3": "created", "obs_de4": "created"}
			for id, st := range wantStatus {
				if obs[id]["status"] != st {
					t.Errorf("%s: status %v, want %s", id, obs[id]["status"], st)
				}
			}
			if c := obs["obs_wf1"]["confidence"]; c != 0.28 {
				t.Errorf("obs_wf1 penalised to %v, want 0.28 (0.95×0.3 once)", c)
			}
			dec := filepath.Join(root, ".memory", "knowledge", "decisions.md")
			if h := headings(t, dec); strings.Join(h, ",") != "## ADR-001,## ADR-002,## ADR-003,## ADR-004" {
				t.Errorf("decisions.md headings %v, want ADR-001..004 once each", h)
			}
			if b, _ := os.ReadFile(dec); !strings.Contains(string(b), "edited by a human") {
				t.Errorf("the human edit of ADR-001 was lost")
			}
			if h := headings(t, filepath.Join(root, ".memory", "knowledge", "pitfalls.md")); strings.Join(h, ",") != "## PF-001,## PF-002" {
				t.Errorf("pitfalls.md headings %v, want PF-001, PF-002", h)
			}
			if l := freshLocks(root); len(l) > 0 {
				t.Errorf("live-looking lock directories left behind: %v", l)
			}
			if probs := checkRepo(root, false); len(probs) > 0 {
				t.Errorf("inconsistent after %s:\n  %s", fp, strings.Join(probs, "\n  "))
			}
		})
	}
}

// TestCoreConcurrent runs six learnwatch processes at once against one repo
// — three observing their own ids (each id twice, so it gets ready), one
// rendering, one reconciling, one doing all three — while another tool takes
// .memory/.learning.lock with mkdir, appends a line to the log by hand,
// holds the lock ~1 s and removes it. Afterwards every observation is there
// exactly once with every sighting counted, every file parses, nothing is
// rendered twice and no lock directory is left.
func TestCoreConcurrent(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	const perWorker = 4
	var (
		mu      sync.Mutex
		wantIDs = map[string]int{} // id → sightings sent
		wg      sync.WaitGroup
	)
	fail := func(format string, a ...any) {
		t.Helper()
		t.Errorf(format, a...)
	}
	run := func(stdin string, args ...string) {
		r := runLW(t, ctx, root, nil, stdin, args...)
		if r.code != 0 {
			fail("learnwatch %v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	observer := func(w int) {
		defer wg.Done()
		for round := 0; round < 2; round++ {
			for k := 0; k < perWorker; k++ {
				id := fmt.Sprintf("obs_w%d_%d", w, k)
				typ, details := "decision", ""
				if k == perWorker-1 {
					typ, details = "pitfall", fmt.Sprintf("area: area %d; issue: issue of worker %d", w, w)
				}
				in := fmt.Sprintf(`{"id":%q,"type":%q,"pattern":"Worker %d rule %d","details":%q,"quality_ok":true,"evidence":["e%d"]}`,
					id, typ, w, k, details, round)
				run(in, "observe", "--json")
				mu.Lock()
				wantIDs[id]++
				mu.Unlock()
			}
		}
	}
	for w := 0; w < 3; w++ {
		wg.Add(1)
		go observer(w)
	}
	wg.Add(3)
	go func() {
		defer wg.Done()
		for i := 0; i < 8; i++ {
			run("", "render", "--json")
		}
	}()
	go func() {
		defer wg.Done()
		for i := 0; i < 8; i++ {
			run("", "reconcile", "--json")
		}
	}()
	go func() {
		defer wg.Done()
		for k := 0; k < perWorker; k++ {
			id := fmt.Sprintf("obs_w5_%d", k)
			run(fmt.Sprintf(`{"id":%q,"type":"workflow","pattern":"Workflow %d of worker 5","quality_ok":true}`, id, k), "observe")
			mu.Lock()
			wantIDs[id]++
			mu.Unlock()
			run("", "render")
			run("", "reconcile")
		}
	}()
	// Another tool, the way devflow's hooks do it: mkdir the lock, append a
	// line, hold it, rmdir.
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(300 * time.Millisecond)
		lock := filepath.Join(root, ".memory", ".learning.lock")
		for os.Mkdir(lock, 0o755) != nil {
			if ctx.Err() != nil {
				fail("the other tool never got the lock")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		f, err := os.OpenFile(filepath.Join(root, ".memory", "learning-log.jsonl"), os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(`{"id":"obs_foreign","type":"decision","pattern":"Written by another tool","confidence":0.33,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"","quality_ok":false,"x_tool":"devflow"}` + "\n")
			f.Close()
		}
		if err != nil {
			fail("other tool: %v", err)
		}
		time.Sleep(time.Second)
		if err := os.Remove(lock); err != nil {
			fail("other tool: its lock was taken away: %v", err)
		}
		mu.Lock()
		wantIDs["obs_foreign"] = 1
		mu.Unlock()
	}()
	wg.Wait()
	if t.Failed() {
		return
	}
	mustLW(t, root, "", "render")
	mustLW(t, root, "", "reconcile")

	count, obs := logIDs(t, root)
	for id, sightings := range wantIDs {
		if count[id] != 1 {
			t.Errorf("observation %s appears %d times, want once", id, count[id])
			continue
		}
		if n := obs[id]["observations"]; n != float64(sightings) {
			t.Errorf("observation %s: observations %v, want %d (a sighting was lost or counted twice)", id, n, sightings)
		}
		if strings.HasPrefix(id, "obs_w") && !strings.HasPrefix(id, "obs_w5") && obs[id]["status"] != "created" {
			t.Errorf("observation %s: status %v, want created", id, obs[id]["status"])
		}
	}
	if len(count) != len(wantIDs) {
		t.Errorf("log holds %d observations, want %d: %v", len(count), len(wantIDs), count)
	}
	if obs["obs_foreign"]["x_tool"] != "devflow" {
		t.Errorf("the other tool's line lost its fields: %v", obs["obs_foreign"])
	}
	if h := headings(t, filepath.Join(root, ".memory", "knowledge", "decisions.md")); len(h) != 3*(perWorker-1) {
		t.Errorf("decisions.md has %d ADRs, want %d", len(h), 3*(perWorker-1))
	}
	if h := headings(t, filepath.Join(root, ".memory", "knowledge", "pitfalls.md")); len(h) != 3 {
		t.Errorf("pitfalls.md has %d PFs, want 3", len(h))
	}
	if probs := checkRepo(root, true); len(probs) > 0 {
		t.Errorf("inconsistent after the concurrent run:\n  %s", strings.Join(probs, "\n  "))
	}
	if m, _ := filepath.Glob(filepath.Join(root, ".memory", "*.tmp-*")); len(m) > 0 {
		t.Errorf("temp files left behind: %v", m)
	}
}

// TestCoreRefusedNeverOpened points manifest entries and the knowledge
// directory outside the root at named pipes: opening one for reading blocks,
// so a command that finishes has not opened them. reconcile reports the
// entries as refused and leaves them in place; render and index refuse the
// symlinked knowledge directory with an error instead of reading it.
func TestCoreRefusedNeverOpened(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(root, ".memory"), outside, filepath.Join(outside, "knowledge")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"x.md", "y.md", "knowledge/decisions.md", "knowledge/pitfalls.md"} {
		if err := mkfifo(filepath.Join(outside, p), 0o644); err != nil {
			t.Skipf("no named pipes here: %v", err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(root, "linkdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "knowledge"), filepath.Join(root, ".memory", "knowledge")); err != nil {
		t.Fatal(err)
	}
	entries := []map[string]string{
		{"observationId": "obs_up", "type": "workflow", "path": "../outside/x.md", "contentHash": "sha256:00", "renderedAt": "2026-01-01T00:00:00Z"},
		{"observationId": "obs_abs", "type": "workflow", "path": filepath.Join(outside, "y.md"), "contentHash": "sha256:00", "renderedAt": "2026-01-01T00:00:00Z"},
		{"observationId": "obs_link", "type": "workflow", "path": "linkdir/y.md", "contentHash": "sha256:00", "renderedAt": "2026-01-01T00:00:00Z"},
		{"observationId": "obs_kn", "type": "decision", "path": ".memory/knowledge/decisions.md", "anchorId": "ADR-001", "contentHash": "sha256:00", "renderedAt": "2026-01-01T00:00:00Z"},
	}
	m, _ := json.Marshal(map[string]any{"schemaVersion": 1, "entries": entries})
	writeFile(t, filepath.Join(root, ".memory", ".learning-manifest.json"), string(m))
	var log strings.Builder
	for _, id := range []string{"obs_up", "obs_abs", "obs_link", "obs_kn"} {
		log.WriteString(strings.Replace(readyLine(id, "workflow", "Pattern "+id, ""), `"status":"ready"`, `"status":"created"`, 1))
	}
	log.WriteString(readyLine("obs_ready", "decision", "Would go to the symlinked knowledge dir", ""))
	writeFile(t, filepath.Join(root, ".memory", "learning-log.jsonl"), log.String())
	manifestBefore, _ := os.ReadFile(filepath.Join(root, ".memory", ".learning-manifest.json"))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r := runLW(t, ctx, root, nil, "", "reconcile", "--json")
	if r.code != 0 {
		t.Fatalf("reconcile: exit %d\n%s", r.code, r.stderr)
	}
	res := jsonOut(t, r)
	if res["refused"] != float64(4) || res["deletions"] != float64(0) {
		t.Errorf("reconcile: refused %v deletions %v, want 4 and 0: %s", res["refused"], res["deletions"], r.stdout)
	}
	if after, _ := os.ReadFile(filepath.Join(root, ".memory", ".learning-manifest.json")); !bytes.Equal(after, manifestBefore) {
		t.Errorf("the manifest changed; refused entries must be left in place:\n%s", after)
	}
	for _, args := range [][]string{{"render"}, {"index"}} {
		r := runLW(t, ctx, root, nil, "", args...)
		if r.code == 0 {
			t.Errorf("learnwatch %v read a symlinked knowledge directory outside the root", args)
		}
	}
}

// TestCheckRepoFindsProblems makes sure the integrity check used by the
// tests above can fail: a repository with one problem of each kind.
func TestCheckRepoFindsProblems(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	writeFile(t, filepath.Join(root, ".memory", "learning-log.jsonl"),
		`{"id":"obs_a","type":"decision","pattern":"A","status":"created","artifact_path":".memory/knowledge/decisions.md#ADR-001"}`+"\n"+
			`{"id":"obs_a","type":"decision","pattern":"A again"}`+"\n"+
			`{"id":"obs_b","type":"workflow","pattern":"B","status":"created","artifact_path":"x.md"}`+"\n"+
			`{"id":"obs_cut",`+"\n")
	writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"),
		"# D\n\n## ADR-001: A\n\n- **Source**: self-learning:obs_a\n\n## ADR-001: A copy\n\n- **Source**: self-learning:obs_a\n")
	writeFile(t, filepath.Join(root, ".memory", ".learning-manifest.json"),
		`{"schemaVersion":1,"entries":[{"observationId":"obs_a","type":"decision","path":".memory/knowledge/decisions.md","anchorId":"ADR-001","contentHash":"sha256:00"},{"observationId":"obs_gone","type":"workflow","path":"/abs/gone.md","contentHash":"1234"}]}`)
	writeFile(t, filepath.Join(root, ".claude", "commands", "self-learning", "bad.md"), "---\ndescription: [unclosed\n---\n")
	if err := os.Mkdir(filepath.Join(root, ".memory", ".learning.lock"), 0o755); err != nil {
		t.Fatal(err)
	}
	probs := strings.Join(checkRepo(root, true), "\n")
	for _, want := range []string{
		"log line 4 does not parse", "obs_a appears twice in the log", "ADR-001 appears twice",
		"two entries carry Source self-learning:obs_a", "obs_gone, which is not in the log", "path learnwatch should not write",
		"anchor .memory/knowledge/decisions.md#ADR-001 found 2 times", "obs_b is created (x.md) but not in the manifest",
		"usage file has no entry for ADR-001", "bad.md: frontmatter is not valid YAML", "lock directory .learning.lock left behind",
	} {
		if !strings.Contains(probs, want) {
			t.Errorf("checkRepo missed %q; it found:\n%s", want, probs)
		}
	}
}
