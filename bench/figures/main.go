// Command figures measures learnwatch against baselines in one run and
// prints a Markdown table for the README, so that ratios stay comparable
// on noisy machines:
//
//	go run ./bench/figures            # the README table
//	go run ./bench/figures -scale     # plus the 1k..100k scaling table
//	go run ./bench/figures -stale-files 0 -watch-n 0   # skip the slow rows
//	go run ./bench/figures -devflow path/to/json-helper.cjs  # plus render vs devflow's render-ready
//	go run ./bench/figures -devflow-reconcile path/to/json-helper.cjs  # plus the engine rows vs devflow's reconcile-manifest
//
// It builds the binary, generates deterministic fixtures (package fixture,
// seed 1) in a temp dir and times whole processes, median of -runs.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/manifest"
)

var (
	runs  = flag.Int("runs", 5, "timed runs per measurement (the median is reported)")
	scale = flag.Bool("scale", false, "also measure 1k, 10k, 100k observations")
	keep  = flag.Bool("keep", false, "keep the temp directory")
)

func main() {
	flag.Parse()
	tmp, err := os.MkdirTemp("", "learnwatch-figures-")
	check(err)
	if !*keep {
		defer os.RemoveAll(tmp)
	}
	bin := filepath.Join(tmp, "learnwatch")
	// Built as install.sh builds it: static (no cgo).
	build := exec.Command("go", "build", "-o", bin, "./cmd/learnwatch")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	check(build.Run())

	fmt.Println("| measurement | learnwatch | baseline | ratio |")
	fmt.Println("|---|---|---|---|")
	dir := filepath.Join(tmp, "fx10k")
	check(fixture.Generate(dir, fixture.Spec{Observations: 10000, Artifacts: 2000, Entries: 200, Seed: 1}))
	rec := timeTouched(manifest.PathsFor(dir).Log, bin, "--root", dir, "reconcile")
	cat := catFiles(tmp, dir)
	row("reconcile, full pass (the log touched before each run), 10k obs / 2k artifacts / 200 entries", rec, "cat of the same files", cat)

	settleSession(bin, dir)
	hook := timeCmdStdin(`{"hook_event_name":"SessionStart","cwd":"`+dir+`"}`, bin, "hook", "session-start")
	bare := timeCmd(bin, "version")
	row("session-start hook (reconcile + index), same fixture, settled", hook, "bare start (`learnwatch version`)", bare)
	gitDir := filepath.Join(tmp, "fx10k-git")
	check(fixture.Generate(gitDir, fixture.Spec{Observations: 10000, Artifacts: 2000, Entries: 200, Seed: 1}))
	commitAll(gitDir)
	row("session-start hook, same fixture committed in a git repository, each right after `git status` rewrote the index with new stat data (a tracked file touched)",
		afterGitStatus(bin, gitDir), "bare start (`learnwatch version`)", bare)

	staleRow(bin, tmp)
	watchRows(bin, tmp)
	devflowRenderRow(bin, tmp)
	devflowObserveRow(bin, tmp)
	engineRows(bin, tmp)

	if *scale {
		scaleTable(bin, tmp)
	}
}

func row(what string, t time.Duration, base string, b time.Duration) {
	r := float64(t) / float64(b)
	ratio := fmt.Sprintf("%.1f×", r)
	if r < 0.5 {
		ratio = fmt.Sprintf("%.2f× (%.1f× faster)", r, 1/r)
	}
	fmt.Printf("| %s | %s | %s: %s | %s |\n", what, ms(t), base, ms(b), ratio)
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// catFiles times `xargs cat` over every file of dir (the list is written
// beforehand, so the walk is not timed).
func catFiles(tmp, dir string) time.Duration {
	list := filepath.Join(tmp, "files.txt")
	check(os.WriteFile(list, []byte(strings.Join(allFiles(dir), "\n")+"\n"), 0o644))
	return timeCmd("sh", "-c", "xargs -d '\\n' -a "+list+" cat > /dev/null")
}

func allFiles(dir string) []string {
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out
}

func timeCmd(name string, args ...string) time.Duration { return timeCmdStdin("", name, args...) }

// timeTouched times a command run right after file's mtime moved (through
// sh: `touch file; exec command`): a reconcile that cannot replay and runs
// in full, with the stat cache, on inputs that did not change.
func timeTouched(file, name string, args ...string) time.Duration {
	return timeCmd("sh", append([]string{"-c", `touch "$0"; exec "$@"`, file, name}, args...)...)
}

// gitIn runs git in dir as a bench user; a failure ends the program.
func gitIn(dir string, args ...string) {
	c := exec.Command("git", append([]string{"-c", "user.email=bench@example.com", "-c", "user.name=bench"}, args...)...)
	c.Dir = dir
	if out, err := c.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "figures: git %v: %v\n%s", args, err, out)
		os.Exit(1)
	}
}

// commitAll makes dir a git repository with one commit of everything.
func commitAll(dir string) {
	gitIn(dir, "init", "-q")
	gitIn(dir, "add", "-A")
	gitIn(dir, "commit", "-qm", "memory")
}

// settle brings the memory at dir to the state it has between sessions:
// reconciled, with nothing changed since (the pass replay's record written
// and confirmed: docs/engine.md). The pauses let the record's quiet period
// pass.
func settle(bin, dir string) {
	for range 3 {
		runOnce(exec.Command(bin, "--root", dir, "reconcile"), "")
		time.Sleep(150 * time.Millisecond)
	}
}

// settleSession brings the memory at dir to the state a session starts
// from: settled, a session started before, and the tree left alone longer
// than the racy window of the session's cached stale marks outside git
// (two seconds: a directory modified more recently than that when the
// marks were computed has its names read at each session until a session
// finds them older; docs/staleness.md). A fixture just generated is
// otherwise timed as a tree written a second before each session starts.
// The pause also lets the next session's pass confirm the record of the
// day's first one (which writes the day's kept events): back to back, the
// timed runs began with two full passes (docs/engine.md).
func settleSession(bin, dir string) {
	settle(bin, dir)
	runOnce(exec.Command(bin, "hook", "session-start"), `{"hook_event_name":"SessionStart","cwd":"`+dir+`"}`)
	time.Sleep(2100 * time.Millisecond)
}

// timeCmdStdin runs the command -runs times (after one warm-up) and
// returns the median wall time.
func timeCmdStdin(stdin, name string, args ...string) time.Duration {
	var ts []time.Duration
	for i := 0; i <= *runs; i++ {
		d, _ := runOnce(exec.Command(name, args...), stdin)
		if i > 0 {
			ts = append(ts, d)
		}
	}
	return median(ts)
}

// runOnce runs c with stdin and returns its wall time and the finished
// process; a failure ends the program with the command's output.
func runOnce(c *exec.Cmd, stdin string) (time.Duration, *os.ProcessState) {
	c.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	start := time.Now()
	if err := c.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "%v: %v\n%.2000s", c.Args, err, out.String())
		os.Exit(1)
	}
	return time.Since(start), c.ProcessState
}

func median(ts []time.Duration) time.Duration {
	sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
	return ts[len(ts)/2]
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "figures:", err)
		os.Exit(1)
	}
}
