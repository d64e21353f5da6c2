package reliability

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// otherTool is a shell loop that behaves like another tool's hook: it takes
// .memory/.learning.lock with mkdir (retrying), appends one observation of
// its own to the log, holds the lock a while, and rmdirs it — until the
// stop file appears. It prints the id of every line it appended.
const otherTool = `
n=0
while [ ! -e "$STOP" ]; do
	until mkdir "$LOCK" 2>/dev/null; do
		[ -e "$STOP" ] && exit 0
		sleep 0.01
	done
	n=$((n + 1))
	printf '{"id":"obs_tool_%d","type":"decision","pattern":"Other tool rule %d","confidence":0.33,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"","quality_ok":false,"x_tool":"devflow"}\n' "$n" "$n" >> "$LOG"
	echo "obs_tool_$n"
	# Every $EVERY-th time the hold is long ($LONG s): longer than observe
	# waits before queuing and than a hook waits, shorter than the 60 s
	# after which a lock counts as stale.
	if [ $((n % EVERY)) -eq 3 ]; then sleep "$LONG"; else sleep 0.3; fi
	rmdir "$LOCK" || { echo "lock taken away" >&2; exit 1; }
	sleep 0.2
done
`

// TestReliabilityConcurrentWriters runs 8 learnwatch writer processes at
// once on one repository — each a sequence of observe (its own ids, seen
// repeatedly, plus ids shared by all writers), render, reconcile, the
// session-start hook and cite of its agent session's growing transcript —
// while `learnwatch watch` (rendering too) runs and
// another tool takes the mkdir lock, appends to the log and holds the lock
// for 0.3 s, over and over, and now and then for long (6 s in CI, 30 s in
// the full run). No process is refused: observe queues its input in the
// inbox when the lock stays busy (so does cite), hooks fail open, render and reconcile
// wait their turn (lock.timeout 60 s). Afterwards every acknowledged observation is in
// the log exactly once with exactly the acknowledged number of sightings,
// every acknowledged citation is counted exactly once in the usage file,
// the other tool's lines are there with their fields, the memory is
// consistent, no lock directory is left, every process finished within the
// bound and the watcher exits cleanly on SIGTERM.
//
// 8 × 40 operations by default (8 × 15 with -short), 8 × 500 with
// LEARNWATCH_RELIABILITY=full.
func TestReliabilityConcurrentWriters(t *testing.T) {
	t.Parallel()
	const workers = 8
	ops := 40
	if testing.Short() {
		ops = 15
	}
	if full() {
		ops = 500
	}
	const bound = 90 * time.Second // lock timeout 60 s + a loaded machine
	long, every := "6", "40"
	if full() {
		long, every = "30", "100"
	}
	root := t.TempDir()
	transcripts := t.TempDir()
	p := manifest.PathsFor(root)
	writeFile(t, filepath.Join(p.Memory, "learnwatch.yaml"), "watch:\n  render: true\n  debounce: 50ms\nlock:\n  timeout: 60s\n")
	writeFile(t, p.Log, "")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d, %d writers × %d operations", seed, workers, ops)

	// The watcher.
	watchCmd := exec.Command(binary(t), "watch", "--root", root)
	watchCmd.Env = append(cleanEnv(), "LEARNWATCH_NOW="+baseNow.Format(time.RFC3339))
	var watchErr strings.Builder
	watchCmd.Stderr = &watchErr
	if err := watchCmd.Start(); err != nil {
		t.Fatal(err)
	}
	watchDone := make(chan error, 1)
	go func() { watchDone <- watchCmd.Wait() }()
	watchExited := false
	defer func() {
		if !watchExited {
			watchCmd.Process.Kill()
			<-watchDone
		}
	}()

	// The other tool.
	stop := filepath.Join(t.TempDir(), "stop")
	tool := exec.Command("sh", "-c", otherTool)
	tool.Env = append(os.Environ(), "STOP="+stop, "LOCK="+p.LearningLock, "LOG="+p.Log, "LONG="+long, "EVERY="+every)
	toolOut, err := tool.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var toolErr strings.Builder
	tool.Stderr = &toolErr
	if err := tool.Start(); err != nil {
		t.Fatal(err)
	}
	var toolIDs []string
	toolRead := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(toolOut)
		for sc.Scan() {
			toolIDs = append(toolIDs, sc.Text())
		}
		close(toolRead)
	}()

	var (
		mu      sync.Mutex
		acked   = map[string]int{}
		refused int
		queued  int
		skipped int
		// cites: the citations each writer's cite calls acknowledged
		// (exit 0: added or queued); citesQueued: calls that queued.
		cites       = map[string]int{}
		citesQueued int
		procs       int
		slowest     result
		wg          sync.WaitGroup
	)
	pattern := func(id string) (typ, pat, details string) {
		types := []string{"decision", "pitfall", "workflow", "procedural"}
		var k int
		fmt.Sscanf(id[strings.LastIndexByte(id, '_')+1:], "%d", &k)
		typ = types[k%4]
		pat = "Rule " + strings.ReplaceAll(strings.TrimPrefix(id, "obs_"), "_", " ")
		switch typ {
		case "decision":
			details = "context: " + id + "; decision: d; rationale: r"
		case "pitfall":
			details = "area: " + id + "; issue: issue of " + id + "; impact: x; resolution: y"
		case "procedural":
			details = "steps: one; two"
		}
		return
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			own := max(4, ops/8) // own ids, each seen several times
			// The writer's agent session: each cite call first appends a
			// turn citing the writer's ADR (and now and then a PF all
			// writers cite), then counts what is new in the transcript.
			transcript := filepath.Join(transcripts, fmt.Sprintf("session-%d.jsonl", w))
			pending := map[string]int{}
			for i := 0; i < ops; i++ {
				var c call
				adds := map[string]int{}
				citing := false
				switch k := rng.IntN(100); {
				case k < 50:
					var lines []string
					for n := 1 + rng.IntN(3); n > 0; n-- {
						id := fmt.Sprintf("obs_c%d_%d", w, rng.IntN(own))
						if rng.IntN(5) == 0 {
							id = fmt.Sprintf("obs_shared_%d", rng.IntN(6))
						}
						typ, pat, details := pattern(id)
						lines = append(lines, obsJSON(id, typ, pat, details, fmt.Sprintf("writer %d op %d", w, i)))
						adds[id]++
					}
					c = call{args: []string{"observe"}, stdin: batch(lines...)}
				case k < 65:
					c = args("render")
				case k < 80:
					c = args("reconcile")
				case k < 88:
					c = call{args: []string{"hook", "session-start"}, stdin: sessionStdin(root)}
				case k < 97:
					text := fmt.Sprintf("Following ADR-%03d.", 900+w)
					pending[fmt.Sprintf("ADR-%03d", 900+w)]++
					if rng.IntN(3) == 0 {
						text += " See PF-900."
						pending["PF-900"]++
					}
					appendFile(t, transcript, fmt.Sprintf(`{"type":"assistant","message":{"id":"w%d-%d","role":"assistant","content":[{"type":"text","text":%q}]}}`+"\n", w, i, text))
					c = args("cite", "--json", "--transcript", transcript, "--session", fmt.Sprintf("writer-%d", w))
					citing = true
				default:
					c = args("status", "--json")
				}
				c.now = day(i * 10 / max(ops, 1))
				c.timeout = 2 * bound
				r := run(t, root, c)
				mu.Lock()
				procs++
				if r.dur > slowest.dur {
					slowest = r
				}
				switch {
				case r.timedOut:
					t.Errorf("writer %d: a process did not finish within %s: %s", w, c.timeout, r)
				case r.code == 0 && citing:
					// Everything appended so far is acknowledged: counted
					// now, or queued with its stretch.
					for id, n := range pending {
						cites[id] += n
					}
					clear(pending)
					if strings.Contains(r.stdout, `"queued":true`) {
						citesQueued++
					}
				case r.code == 0:
					for id, n := range adds {
						acked[id] += n
					}
					if strings.Contains(r.stdout, "queued") {
						queued++
					}
					if strings.Contains(r.stderr, "reconcile skipped") {
						skipped++
					}
				case r.code == 3 && strings.Contains(r.stderr, "timed out waiting for lock"):
					refused++
					t.Errorf("writer %d: refused: %s", w, r)
				default:
					t.Errorf("writer %d: %s", w, r)
				}
				if r.dur > bound {
					t.Errorf("writer %d: %v took %s (bound %s)", w, c.args, r.dur, bound)
				}
				mu.Unlock()
			}
		}(w)
	}
	wg.Wait()

	// Stop the other tool (it finishes its hold) and the watcher.
	if err := os.WriteFile(stop, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-toolRead
	if err := tool.Wait(); err != nil {
		t.Errorf("the other tool: %v\n%s", err, toolErr.String())
	}
	watchCmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-watchDone:
		watchExited = true
		if err != nil {
			t.Errorf("the watcher did not exit cleanly on SIGTERM: %v\n%.3000s", err, watchErr.String())
		}
	case <-time.After(bound):
		t.Errorf("the watcher did not exit within %s of SIGTERM", bound)
	}
	t.Logf("%d processes, %d refused (lock timeout, exit 3), %d observes and %d cites queued in the inbox, %d hooks skipped their reconcile, slowest %s: %v; the other tool appended %d lines",
		procs, refused, queued, citesQueued, skipped, slowest.dur.Round(time.Millisecond), slowest.args, len(toolIDs))
	if queued == 0 {
		t.Errorf("no observe was queued: the test no longer exercises the inbox")
	}
	if len(toolIDs) == 0 {
		t.Errorf("the other tool never got the lock")
	}
	if t.Failed() {
		return
	}

	exp := expect{obs: acked}
	for _, id := range toolIDs {
		exp.obs[id] = 1
	}
	settle(t, root, exp, func(root string) []string {
		var probs []string
		obs := readObs(root)
		for _, id := range toolIDs {
			if _, ok := obs[id]; !ok {
				probs = append(probs, "the other tool's "+id+" was lost")
			}
		}
		if b, _ := os.ReadFile(p.Log); strings.Count(string(b), `"x_tool":"devflow"`) != len(toolIDs) {
			probs = append(probs, "the other tool's x_tool fields were not all kept")
		}
		for _, l := range []string{p.LearningLock, p.KnowledgeLock} {
			if _, err := os.Stat(l); err == nil {
				probs = append(probs, "lock directory left behind: "+filepath.Base(l))
			}
		}
		if tmp := tempFiles(root); len(tmp) > 0 {
			probs = append(probs, fmt.Sprintf("temp files left behind: %v", tmp))
		}
		var created []string
		for id, o := range obs {
			if o.Status == "created" {
				created = append(created, id)
			}
		}
		sort.Strings(created)
		if len(created) == 0 {
			probs = append(probs, "nothing was rendered: the test no longer exercises render")
		}
		// Every acknowledged citation counted exactly once, queued ones
		// included.
		return append(probs, citesExactly(root, cites)...)
	})
}
