package engine

import (
	"context"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/scaffold"
)

// prepareWait is how long a test waits after a write before preparing: the
// racy window of the memory files' stats (heal), and a margin.
const prepareWait = 70 * time.Millisecond

// TestPreparedProperty runs the watcher's passes with a grace window of one
// step (a missing artifact the last pass left pending is called deleted by
// the next) and, before every step whose pass may call one deleted,
// prepares that pass on A (Engine.Prepare). The step's change — a person's,
// git's, another tool's line appended to the log, or none — either leaves
// the prepared pass to be committed or makes A's pass drop it and run. A's
// every report and file is compared with B's full pass without caches, so
// a committed pass wrote byte for byte what a pass run then would have.
func TestPreparedProperty(t *testing.T) {
	sameCommits(t)
	var committed, dropped, deletions int
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw, arts, rng := keptGitTwin(t, seed, 31)
			tw.confirm = map[string]bool{}
			r := tw.reconcile("the kept engine's first pass")
			branch := "main"
			saved := map[string][]byte{}
			for i := range 30 {
				// The grace window is one step: what the last pass left
				// pending is confirmed by this one.
				tw.confirm = map[string]bool{}
				for _, k := range r.Pending {
					tw.confirm[k] = true
				}
				prepared := false
				if len(tw.confirm) > 0 {
					time.Sleep(prepareWait)
					next := testNow.Add(time.Duration(tw.step+1) * time.Minute)
					again, err := tw.kept.Prepare(context.Background(), Pass{Now: next, Confirm: tw.confirm, Touched: map[string]bool{}, Deferred: true})
					if err != nil {
						t.Fatalf("step %d: prepare: %v", i, err)
					}
					prepared = !again && tw.kept.prepared != nil
				}
				rel := arts[rng.IntN(len(arts))]
				var what string
				what, branch = tw.change(rng.IntN(10), rel, i, arts, branch, saved, fmt.Sprintf("obs_x%02d", i))
				r = tw.reconcile(fmt.Sprintf("step %d: %s (prepared %v, confirming %v)", i, what, prepared, tw.confirm))
				deletions += r.Deletions
				switch {
				case r.Prepared:
					committed++
				case prepared:
					dropped++
				}
				if tw.kept.prepared != nil {
					t.Fatalf("step %d: a pass left a prepared pass behind", i)
				}
			}
		})
	}
	if committed == 0 || dropped == 0 || deletions == 0 {
		t.Fatalf("the runs committed %d prepared passes, dropped %d, recorded %d deletions", committed, dropped, deletions)
	}
	t.Logf("committed %d prepared passes, dropped %d; %d deletions", committed, dropped, deletions)
}

// TestPreparedChangeProperty prepares the watcher's pass of a burst while
// its debounce would run: after each step's change, on most steps, A's
// kept engine prepares the pass with the files the step touched (and the
// confirmations of a one-step grace window). Then, on some steps, a second
// change comes before the pass: seen by the watcher (its event drops the
// prepared pass), or not yet (the pass must find the prepared one stale by
// itself: another file touched, or the same file's stat changed). A's
// every report and file is compared with B's full pass without caches, so
// a committed pass wrote what a pass run then would have, and a dropped
// one left the kept state as it found it.
func TestPreparedChangeProperty(t *testing.T) {
	sameCommits(t)
	var committed, committedEdits, dropped, late, warmAfterDrop, soonCommitted int
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw, arts, rng := keptGitTwin(t, seed, 41)
			r := tw.reconcile("the kept engine's first pass")
			branch := "main"
			saved := map[string][]byte{}
			change := func(i int, again bool) string {
				rel := arts[rng.IntN(len(arts))]
				op := rng.IntN(9)
				if touched := slices.Sorted(maps.Keys(tw.touched)); again && len(touched) > 0 && rng.IntN(2) == 0 {
					// The same file again: the touched files are the same,
					// only the file's stat tells.
					rel, op = touched[rng.IntN(len(touched))], 2
				}
				// Deletions twice as likely as restores and edits.
				kind := [...]int{0, 1, 2, 0, 3, 4, 5, 6, 6}[op]
				var what string
				what, branch = tw.change(kind, rel, i, arts, branch, saved, fmt.Sprintf("obs_y%02d", i))
				return what
			}
			for i := range 30 {
				tw.confirm = map[string]bool{}
				for _, k := range r.Pending {
					tw.confirm[k] = true
				}
				// Prepared right after the change (the touched files within
				// the racy window: their content is compared at the commit)
				// or once their stats settled.
				soon := rng.IntN(2) == 0
				if soon {
					time.Sleep(prepareWait) // the memory files settled
				}
				what := change(i, false)
				prepared := false
				if rng.IntN(3) > 0 {
					if !soon {
						time.Sleep(prepareWait)
					}
					next := testNow.Add(time.Duration(tw.step+1) * time.Minute)
					again, err := tw.kept.Prepare(context.Background(), Pass{Now: next, Confirm: tw.confirm, Touched: maps.Clone(tw.touched), Deferred: true})
					if err != nil {
						t.Logf("step %d: not prepared: %v", i, err)
					}
					prepared = !again && tw.kept.prepared != nil
				}
				if prepared && rng.IntN(3) == 0 {
					late++
					what += ", then " + change(i+100, true)
					if rng.IntN(2) == 0 {
						what += " (seen: dropped)"
						tw.kept.DropPrepared()
						if tw.kept.warm.Valid() {
							warmAfterDrop++
						}
					}
				}
				r = tw.reconcile(fmt.Sprintf("step %d: %s (prepared %v, confirming %v)", i, what, prepared, tw.confirm))
				switch {
				case r.Prepared:
					committed++
					if r.Edits > 0 {
						committedEdits++
						if soon {
							soonCommitted++
						}
					}
				case prepared:
					dropped++
				}
				if tw.kept.prepared != nil {
					t.Fatalf("step %d: a pass left a prepared pass behind", i)
				}
			}
		})
	}
	if committed == 0 || committedEdits == 0 || soonCommitted == 0 || dropped == 0 || late == 0 || warmAfterDrop == 0 {
		t.Fatalf("the runs committed %d prepared passes (%d with edits, %d of them prepared right after), dropped %d, changed %d after preparing; %d drops left the kept state", committed, committedEdits, soonCommitted, dropped, late, warmAfterDrop)
	}
	t.Logf("committed %d prepared passes (%d with edits, %d of them prepared right after), dropped %d, changed %d after preparing; %d drops left the kept state", committed, committedEdits, soonCommitted, dropped, late, warmAfterDrop)
}

// change does to both twins the change of kind k at step i — a person's
// deletion, restore or edit of rel (personOp's 0, 1, 2), a checkout of
// the other branch (3), a commit of the artifacts (4), another tool
// appending observation id to the log (5: no event on an artifact, the
// log's stat changes), or nothing — and notes the artifacts it touched.
// It returns what it did and the branch checked out after it.
func (tw *twin) change(k int, rel string, i int, arts []string, branch string, saved map[string][]byte, id string) (what, now string) {
	before := contents(tw.a, arts)
	now = branch
	switch k {
	case 0, 1, 2:
		what = tw.personOp(k, rel, i, saved)
	case 3:
		what, now = tw.checkoutOther(branch)
	case 4:
		what = tw.commitArtifacts(branch, i)
	case 5:
		what = tw.appendObservation(id)
	default:
		what = "nothing"
	}
	tw.noteTouched(arts, before)
	return what, now
}

// appendObservation appends a ready workflow observation id to both
// twins' logs as another tool does (no event on an artifact, the log's
// stat changes), and says so.
func (tw *twin) appendObservation(id string) string {
	line := readyObs(id, manifest.Workflow, "Appended workflow "+id, "")
	tw.do(func(root string) {
		f, err := os.OpenFile(filepath.Join(root, ".memory", "learning-log.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			tw.t.Fatal(err)
		}
		f.WriteString(line)
		f.Close()
	})
	return "another tool appends an observation"
}

// The files Deferred passes replace are kept until Settle lets them go,
// and never more than maxReplaced of them (a watcher never idle long
// enough to settle); Close lets them go too.
func TestReplacedBounded(t *testing.T) {
	root, files := generated(t, fixture.Spec{Observations: 60, Artifacts: 12, Entries: 4, Seed: 1})
	kept := func() int {
		n, _ := filepath.Glob(filepath.Join(root, ".memory", ".*"+manifest.TempInfix+"replaced-*"))
		return len(n)
	}
	e := New(root, config.Default(), nil)
	ctx := context.Background()
	if _, err := e.Reconcile(ctx, Pass{Deferred: true}); err != nil {
		t.Fatal(err)
	}
	most := 0
	for i := range 10 {
		rel := files[i%len(files)]
		if err := os.WriteFile(filepath.Join(root, rel), []byte(fmt.Sprintf("edit %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
		rep, err := e.Reconcile(ctx, Pass{Deferred: true, Touched: map[string]bool{rel: true}})
		if err != nil || rep.Edits != 1 {
			t.Fatalf("pass %d: %+v %v", i, rep.Result, err)
		}
		most = max(most, kept())
	}
	if most == 0 || most > maxReplaced+1 {
		t.Fatalf("at most %d replaced files kept at once, want 1..%d", most, maxReplaced+1)
	}
	settleFully(t, e)
	if n := kept(); n != 0 {
		t.Fatalf("%d replaced files kept after Settle", n)
	}
	if _, err := e.Reconcile(ctx, Pass{Deferred: true, Touched: map[string]bool{files[0]: true}}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, files[0]), []byte("edit again\n"), 0o644)
	if _, err := e.Reconcile(ctx, Pass{Deferred: true, Touched: map[string]bool{files[0]: true}}); err != nil {
		t.Fatal(err)
	}
	if kept() == 0 {
		t.Fatal("an edit's pass kept no replaced file")
	}
	e.Close()
	if n := kept(); n != 0 {
		t.Fatalf("%d replaced files kept after Close", n)
	}
}

// What a watcher's pass leaves until it is idle — the files its commits
// replaced, kept under temporary names — git does not see in a repository
// learnwatch init set up: a `git add -A` meanwhile commits none of them.
// (Tried by hand in a repository set up with `hooks install` alone, which
// adds no ignore line: git status listed one for about 40 ms after an
// edit, as it lists the staged files and the lock's owner file.)
func TestReplacedIgnoredByGit(t *testing.T) {
	root, files := generated(t, fixture.Spec{Observations: 40, Artifacts: 6, Entries: 2, Seed: 1})
	if _, err := scaffold.Apply(root); err != nil {
		t.Fatal(err)
	}
	e := New(root, config.Default(), nil)
	ctx := context.Background()
	if _, err := e.Reconcile(ctx, Pass{Deferred: true}); err != nil {
		t.Fatal(err)
	}
	settleFully(t, e)
	gitRun(t, root, "init", "-q", "-b", "main")
	gitRun(t, root, "add", "-A")
	gitRun(t, root, "commit", "-q", "-m", "memory")
	if err := os.WriteFile(filepath.Join(root, files[0]), []byte("edited by a person\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if rep, err := e.Reconcile(ctx, Pass{Deferred: true, Touched: map[string]bool{files[0]: true}}); err != nil || rep.Edits != 1 {
		t.Fatalf("%+v %v", rep.Result, err)
	}
	kept, _ := filepath.Glob(filepath.Join(root, ".memory", ".*"+manifest.TempInfix+"replaced-*"))
	if len(kept) == 0 {
		t.Fatal("the pass kept no replaced file")
	}
	out, err := exec.Command("git", "-C", root, "status", "--porcelain", "--untracked-files=all").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(line, manifest.TempInfix) {
			t.Errorf("git sees %s", line)
		}
	}
	e.Close()
}
