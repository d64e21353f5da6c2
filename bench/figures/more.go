package main

// The rows issue 5 adds to the README table: `stale --staged` on 50,000
// tracked files against `git ls-files`, the watcher's event-to-penalty
// latency and RSS with 10,000 artifacts (the watch package's benchmark, run
// as is), and the 1k → 100k scaling table.

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/bench/stalegen/fixture"
	lwfixture "github.com/learnwatch/learnwatch/fixture"
)

var (
	staleFiles = flag.Int("stale-files", 50000, "tracked files of the staleness row (0: skip the row)")
	watchN     = flag.Int("watch-n", 50, "deletions timed by the watcher row (0: skip the row)")
	watchBig   = flag.Int("watch-big", 0, "also the watcher row at this many artifacts (e.g. 50000; slow), with 10 deletions")
)

// staleRow times `learnwatch stale --staged` and `git ls-files` on the
// bench/stalegen repository, interleaved, medians.
func staleRow(bin, tmp string) {
	if *staleFiles <= 0 {
		return
	}
	dir := filepath.Join(tmp, "stale")
	res, err := fixture.Generate(dir, fixture.Spec{Files: *staleFiles, Refs: 500, Commits: 20, Seed: 1})
	check(err)
	t := interleaved(dir, [][]string{{"git", "ls-files"}, {bin, "stale", "--staged"}})
	row(fmt.Sprintf("`stale --staged`, %d tracked files, %d references", res.Files, res.Refs), t[1],
		"`git ls-files`", t[0])
	// The session-start index checks its entries' references against
	// this large tree: settled, the marks come from their cache instead of
	// a decode of the 50,000-entry index (docs/staleness.md).
	settleSession(bin, dir)
	hook := timeCmdStdin(`{"hook_event_name":"SessionStart","cwd":"`+dir+`"}`, bin, "hook", "session-start")
	bare := timeCmd(bin, "version")
	row(fmt.Sprintf("session-start hook in that repository (%d tracked files; its knowledge entries' references marked), settled", res.Files),
		hook, "bare start (`learnwatch version`)", bare)
	row("same, each right after `git status` rewrote the index with new stat data (a tracked file touched)",
		afterGitStatus(bin, dir), "bare start (`learnwatch version`)", bare)
}

// afterGitStatus times the session-start hook in the git repository dir,
// each run right after git status rewrote the index with new stat data
// only (notes.txt, committed here, touched): what the index stages is the
// same, and so is every answer of the settled pass (docs/engine.md).
func afterGitStatus(bin, dir string) time.Duration {
	notes := filepath.Join(dir, "notes.txt")
	check(os.WriteFile(notes, []byte("notes\n"), 0o644))
	gitIn(dir, "add", "notes.txt")
	gitIn(dir, "commit", "-qm", "notes")
	settleSession(bin, dir)
	index := filepath.Join(dir, ".git", "index")
	var ts []time.Duration
	for i := 0; i <= *runs; i++ {
		before, err := os.Stat(index)
		check(err)
		later := time.Now().Add(time.Duration(2+i) * time.Second)
		check(os.Chtimes(notes, later, later))
		gitIn(dir, "status", "--porcelain", "--untracked-files=no")
		if after, err := os.Stat(index); err != nil || os.SameFile(before, after) {
			fmt.Fprintln(os.Stderr, "figures: git status did not rewrite the index")
			os.Exit(1)
		}
		d, _ := runOnce(exec.Command(bin, "hook", "session-start"), `{"hook_event_name":"SessionStart","cwd":"`+dir+`"}`)
		if i > 0 {
			ts = append(ts, d)
		}
	}
	return median(ts)
}

// interleaved runs each command -runs times in rounds (after one warm-up
// round) in dir and returns the median wall time of each: a burst of load
// on the machine hits all of them alike.
func interleaved(dir string, cmds [][]string) []time.Duration {
	ts := make([][]time.Duration, len(cmds))
	for r := 0; r <= *runs; r++ {
		for i, c := range cmds {
			cmd := exec.Command(c[0], c[1:]...)
			cmd.Dir = dir
			d, _ := runOnce(cmd, "")
			if r > 0 {
				ts[i] = append(ts[i], d)
			}
		}
	}
	med := make([]time.Duration, len(cmds))
	for i := range ts {
		med[i] = median(ts[i])
	}
	return med
}

var metricRE = regexp.MustCompile(`([0-9.]+) (p50-ms|p99-ms|reconcile-p50-ms|record-p50-ms|record-p90-ms|record-p99-ms|record-over-40ms-%|peak-RSS-MB|idle-RSS-MB|watches|write-floor-ms|prepared)`)

// watchRows runs the watch package's BenchmarkDeletionLatency (10,000
// artifacts, -watch-n deletions) and prints the event-to-penalty
// latency and memory metrics; with -watch-big, again at that size. Each
// size runs twice: with a grace window of 1 ms (the pass that calls the
// artifact deleted runs right after the one that saw it missing: no time
// to prepare it) and with the watcher's default of 2 s (the pass is
// prepared shortly before the window ends, and its end only commits it).
func watchRows(_, _ string) {
	if *watchN <= 0 {
		return
	}
	watchRow(10000, *watchN)
	if *watchBig > 0 {
		watchRow(*watchBig, 10)
	}
}

func watchRow(artifacts, deletions int) {
	bench := func(grace string, edit bool) map[string]float64 {
		cmd := exec.Command("go", "test", "-run", "^$", "-bench", "DeletionLatency", "-benchtime", fmt.Sprintf("%dx", deletions), "-timeout", "60m", "./watch/")
		cmd.Env = append(os.Environ(), fmt.Sprintf("LEARNWATCH_WATCH_ARTIFACTS=%d", artifacts), "LEARNWATCH_WATCH_GRACE="+grace)
		if edit {
			cmd.Env = append(cmd.Env, "LEARNWATCH_WATCH_EDIT=1")
		}
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Run(); err != nil {
			fmt.Fprintf(os.Stderr, "watch benchmark: %v\n%s", err, out.String())
			os.Exit(1)
		}
		m := map[string]float64{}
		for _, g := range metricRE.FindAllStringSubmatch(out.String(), -1) {
			m[g[2]], _ = strconv.ParseFloat(g[1], 64)
		}
		if _, ok := m["p50-ms"]; !ok {
			fmt.Fprintf(os.Stderr, "watch benchmark: no metrics in\n%s", out.String())
			os.Exit(1)
		}
		return m
	}
	n := fmt.Sprintf("%d,%03d", artifacts/1000, artifacts%1000)
	m := bench("1ms", false)
	fmt.Printf("| watcher: artifact deleted → ×0.3 penalty written, %s artifacts (%d deletions; grace window 1 ms) | p50 %.0f ms, p99 %.0f ms | 200 ms debounce + one pass (p50 %.0f ms) | %.1f× |\n",
		n, deletions, m["p50-ms"], m["p99-ms"], m["reconcile-p50-ms"], m["p50-ms"]/(200+m["reconcile-p50-ms"]))
	fmt.Printf("| watcher: change final (debounced, past a 1 ms grace window: the pass prepared during the debounce) → penalty written, %s artifacts | p99 %.0f ms (p90 %.0f ms, %.0f %% over 40 ms) | target | %.1f× of 40 ms |\n", n, m["record-p99-ms"], m["record-p90-ms"], m["record-over-40ms-%"], m["record-p99-ms"]/40)
	fmt.Printf("| watcher: same, against the write floor (the log and manifest of that size replaced atomically, the manifest's SHA-256) | p99 %.0f ms | write floor: %.1f ms | %.1f× |\n", m["record-p99-ms"], m["write-floor-ms"], m["record-p99-ms"]/m["write-floor-ms"])
	fmt.Printf("| watcher: peak RSS with %s artifacts (%.0f watches) | %.0f MB | resident right after the last pass (the benchmark's process, before the idle work gives memory back) | %.0f MB |\n",
		n, m["watches"], m["peak-RSS-MB"], m["idle-RSS-MB"])
	d := bench("2s", false)
	fmt.Printf("| watcher at its default 2 s grace window: change final → penalty written, %s artifacts (%.0f of %d passes committed as prepared) | p99 %.0f ms (p50 %.0f ms) | target | %.1f× of 40 ms |\n",
		n, d["prepared"], deletions, d["record-p99-ms"], d["record-p50-ms"], d["record-p99-ms"]/40)
	ed := bench("2s", true)
	fmt.Printf("| watcher: artifact edited, debounced → edit recorded (the manifest rewritten; the pass prepared during the debounce), %s artifacts (%d edits) | p99 %.0f ms (p90 %.0f ms, %.0f %% over 40 ms; the pass's p50 %.0f ms) | target | %.1f× of 40 ms |\n",
		n, deletions, ed["record-p99-ms"], ed["record-p90-ms"], ed["record-over-40ms-%"], ed["reconcile-p50-ms"], ed["record-p99-ms"]/40)
}

// scaleTable measures reconcile and the session-start hook on fixtures of
// 1k, 10k and 100k observations (artifacts a fifth, entries a fiftieth up
// to 200): wall time (median of -runs) and peak RSS, and the time per
// observation, which says whether the growth is linear.
func scaleTable(bin, tmp string) {
	fmt.Println()
	fmt.Println("| observations | artifacts | entries | reconcile | peak RSS | session-start hook | peak RSS | cat of the same files | reconcile per 1k obs |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	sizes := []int{1000, 10000, 100000}
	per := make([]float64, len(sizes))
	for i, n := range sizes {
		d := filepath.Join(tmp, fmt.Sprintf("scale%d", n))
		s := lwfixture.Spec{Observations: n, Artifacts: n / 5, Entries: min(n/50, 200), Seed: 1}
		check(lwfixture.Generate(d, s))
		rec, recRSS := medianRSS("", bin, "--root", d, "reconcile")
		hook, hookRSS := medianRSS(`{"hook_event_name":"SessionStart","cwd":"`+d+`"}`, bin, "hook", "session-start")
		per[i] = float64(rec.Microseconds()) / 1000 / (float64(n) / 1000)
		fmt.Printf("| %d | %d | %d | %s | %d MiB | %s | %d MiB | %s | %.1f ms |\n", n, s.Artifacts, s.Entries,
			ms(rec), recRSS>>20, ms(hook), hookRSS>>20, ms(catFiles(tmp, d)), per[i])
	}
	// 10k → 100k is the step that says something: at 1k the process start
	// dominates.
	g := per[2] / per[1]
	verdict := "roughly linear"
	switch {
	case g > 1.5:
		verdict = fmt.Sprintf("NOT linear: the time per observation grows %.1f× from 10k to 100k", g)
	case g < 0.67:
		verdict = "better than linear (fixed costs still matter at 10k)"
	}
	fmt.Printf("\nreconcile time per 1k observations: %.1f ms at 1k, %.1f ms at 10k, %.1f ms at 100k: %s.\n", per[0], per[1], per[2], verdict)
}

// medianRSS runs the command -runs times and returns the median wall time
// and the largest peak RSS.
func medianRSS(stdin, name string, args ...string) (time.Duration, int64) {
	var ts []time.Duration
	var rss int64
	for i := 0; i < max(*runs, 1); i++ {
		d, r := runRSS(stdin, name, args...)
		ts = append(ts, d)
		rss = max(rss, r)
	}
	return median(ts), rss
}

// runRSS runs the command once and returns its wall time and peak RSS.
// The RSS comes from /usr/bin/time -f %M when there is one: Go starts a
// child with vfork, and Linux carries the parent's high-water mark (this
// program holds a 100k fixture) into the child's ru_maxrss across execve;
// time(1) forks the command from a small process. Without it, the child's
// own rusage is the (overstated) fallback.
func runRSS(stdin, name string, args ...string) (time.Duration, int64) {
	if tm, err := exec.LookPath("/usr/bin/time"); err == nil {
		c := exec.Command(tm, append([]string{"-f", "rss=%M", name}, args...)...)
		d, _ := runOnce(c, stdin)
		out := c.Stdout.(*bytes.Buffer).String()
		if i := strings.LastIndex(out, "rss="); i >= 0 {
			if kb, err := strconv.ParseInt(strings.TrimSpace(out[i+4:]), 10, 64); err == nil {
				return d, kb * 1024
			}
		}
		return d, 0
	}
	d, ps := runOnce(exec.Command(name, args...), stdin)
	return d, maxRSS(ps)
}
