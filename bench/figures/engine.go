package main

// The engine rows (docs/engine.md): learnwatch's reconcile against
// devflow's own `reconcile-manifest` (node) on copies of one legacy
// fixture (absolute paths, djb2 hashes: what devflow reads), against a
// stat floor, and the session-start hook with a long feedback journal.

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
)

var (
	devflowReconcile = flag.String("devflow-reconcile", "", "devflow's json-helper.cjs: adds the engine rows against its reconcile-manifest (needs node)")
	engineBig        = flag.Bool("engine-big", false, "also the 100k/20k nothing-changed row (generates a 100k fixture: slow)")
	journalN         = flag.Int("journal-n", 66000, "feedback events of the session-start row")
)

// counts is what both reconcilers print.
type counts struct {
	Deletions int `json:"deletions"`
	Edits     int `json:"edits"`
	Unchanged int `json:"unchanged"`
}

func engineRows(bin, tmp string) {
	if *devflowReconcile == "" {
		return
	}
	node, helper := devflowScript(*devflowReconcile)
	spec := fixture.Spec{Observations: 10000, Artifacts: 2000, Entries: 200, Seed: 1, Legacy: true}
	lwDir, dfDir := filepath.Join(tmp, "legacy-lw"), filepath.Join(tmp, "legacy-df")
	check(fixture.Generate(lwDir, spec))
	check(fixture.Generate(dfDir, spec))

	// Nothing changed: each tool on its own copy (the warm-up run is the
	// first reconcile; learnwatch's fills its stat cache).
	settle(bin, lwDir)
	lw := timeCmd(bin, "--root", lwDir, "reconcile")
	df := timeCmd(node, helper, "reconcile-manifest", dfDir)
	floor := statFloor(tmp, lwDir)
	row("reconcile, nothing changed (settled: replayed), 10k obs / 2k artifacts / 200 entries (legacy manifest)", lw, "devflow `reconcile-manifest` (node)", df)
	row("reconcile, nothing changed (settled: replayed), same fixture", lw, "stat floor (`stat` of every manifest path)", floor)
	full := timeTouched(manifest.PathsFor(lwDir).Log, bin, "--root", lwDir, "reconcile")
	row("reconcile, nothing changed but the log touched (a full pass with the stat cache), same fixture", full, "devflow `reconcile-manifest` (node)", df)

	// First reconcile after 100 deletions and 200 edits (and, for
	// learnwatch, its staleness pass): a fresh copy per run.
	src := filepath.Join(tmp, "legacy-changed")
	check(fixture.Generate(src, spec))
	arts := artifactFiles(src)
	for i, p := range arts[:300] {
		if i < 100 {
			check(os.Remove(p))
		} else {
			b, err := os.ReadFile(p)
			check(err)
			check(os.WriteFile(p, append(b, "\nEdited by a person.\n"...), 0o644))
		}
	}
	cmds := []func(dir string) *exec.Cmd{
		func(dir string) *exec.Cmd { return exec.Command(bin, "--root", dir, "reconcile", "--json") },
		func(dir string) *exec.Cmd { return exec.Command(node, helper, "reconcile-manifest", dir) },
	}
	ts := make([][]time.Duration, len(cmds))
	var got [2]counts
	for r := 0; r <= *runs; r++ {
		for i, mk := range cmds {
			dir := filepath.Join(tmp, fmt.Sprintf("first-%d-%d", r, i))
			check(copyTree(src, dir))
			// copyTree keeps relative layout; the legacy manifest holds
			// absolute paths of src: point them at the copy.
			retarget(dir, src)
			c := mk(dir)
			d, _ := runOnce(c, "")
			if r > 0 {
				ts[i] = append(ts[i], d)
			} else {
				got[i] = lastCounts(c)
			}
			os.RemoveAll(dir)
		}
	}
	if got[0] != got[1] {
		fmt.Fprintf(os.Stderr, "figures: the reconcilers disagree: learnwatch %+v, devflow %+v\n", got[0], got[1])
		os.Exit(1)
	}
	row(fmt.Sprintf("first reconcile: %d deletions, %d edits, %d unchanged, + staleness pass (legacy, 10k)", got[0].Deletions, got[0].Edits, got[0].Unchanged),
		median(ts[0]), "devflow `reconcile-manifest` (node), same counts", median(ts[1]))

	// The same changes made to a memory reconciled before them (the last
	// session start's pass left its caches): the first reconcile after.
	clean := filepath.Join(tmp, "legacy-clean")
	check(fixture.Generate(clean, spec))
	// afterChanges times the first reconcile after the changes made to a
	// settled copy of clean (in a git repository when inGit: memory and
	// artifacts committed, the changes not), and returns its counts.
	afterChanges := func(name string, inGit bool) ([]time.Duration, counts) {
		var ds []time.Duration
		var n counts
		for r := 0; r <= *runs; r++ {
			dir := filepath.Join(tmp, fmt.Sprintf("%s-%d", name, r))
			check(copyTree(clean, dir))
			retarget(dir, clean)
			if inGit {
				commitAll(dir)
			}
			settle(bin, dir)
			for i, p := range arts[:300] {
				rel, err := filepath.Rel(src, p)
				check(err)
				q := filepath.Join(dir, rel)
				if i < 100 {
					check(os.Remove(q))
					continue
				}
				b, err := os.ReadFile(q)
				check(err)
				check(os.WriteFile(q, append(b, "\nEdited by a person.\n"...), 0o644))
			}
			c := exec.Command(bin, "--root", dir, "reconcile", "--json")
			d, _ := runOnce(c, "")
			if r > 0 {
				ds = append(ds, d)
			} else {
				n = lastCounts(c)
			}
			os.RemoveAll(dir)
		}
		if n != got[1] {
			fmt.Fprintf(os.Stderr, "figures: the reconcilers disagree: learnwatch (%s) %+v, devflow %+v\n", name, n, got[1])
			os.Exit(1)
		}
		return ds, n
	}
	after, gotAfter := afterChanges("after", false)
	row(fmt.Sprintf("first reconcile after the same changes to a memory reconciled before them (its caches in place): %d deletions, %d edits (legacy, 10k)", gotAfter.Deletions, gotAfter.Edits),
		median(after), "devflow `reconcile-manifest` (node), same counts", median(ts[1]))
	inGit, gotGit := afterChanges("git-after", true)
	row(fmt.Sprintf("same, in a git repository (memory and artifacts committed, the changes not): %d deletions, %d edits (legacy, 10k)", gotGit.Deletions, gotGit.Edits),
		median(inGit), "devflow `reconcile-manifest` (node), same counts", median(ts[1]))

	// Session start with a long feedback journal.
	evs := make([]learn.Event, 0, *journalN)
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	kinds := []string{learn.KindKept, learn.KindCited, learn.KindEdited, learn.KindDeleted}
	for i := range *journalN {
		target := fmt.Sprintf("obs_%06d", i%2000)
		if i%3 == 0 {
			target = fmt.Sprintf("ADR-%03d", 1+i%100)
		}
		evs = append(evs, learn.Event{TS: at.Add(time.Duration(i) * time.Minute), Target: target, Kind: kinds[i%len(kinds)], Value: 1, Source: "reconcile", Type: manifest.Workflow})
	}
	check(journal.AppendFeedback(lwDir, evs...))
	settleSession(bin, lwDir)
	hook := timeCmdStdin(`{"hook_event_name":"SessionStart","cwd":"`+lwDir+`"}`, bin, "hook", "session-start")
	bare := timeCmd(bin, "version")
	row(fmt.Sprintf("session-start hook, 10k obs, %dk-event feedback journal", *journalN/1000), hook, "bare start (`learnwatch version`)", bare)

	if *engineBig {
		big := filepath.Join(tmp, "big")
		check(fixture.Generate(big, fixture.Spec{Observations: 100000, Artifacts: 20000, Entries: 2000, Seed: 1}))
		first, firstRSS := runRSS("", bin, "--root", big, "reconcile")
		fmt.Printf("| reconcile, first pass, 100k obs / 20k artifacts (peak RSS %d MiB) | %s | | |\n", firstRSS>>20, ms(first))
		settle(bin, big)
		t, rss := medianRSS("", bin, "--root", big, "reconcile")
		row(fmt.Sprintf("reconcile, nothing changed, 100k obs / 20k artifacts (peak RSS %d MiB)", rss>>20), t, "stat floor", statFloor(tmp, big))
		// The largest reconcile of a settled 100k memory: a full pass with
		// every cache in place (the log touched, as an extractor's append
		// does), the log and the staleness cache read whole.
		full, fullRSS := medianRSS("", "sh", "-c", `touch "$0"; exec "$@"`, manifest.PathsFor(big).Log, bin, "--root", big, "reconcile")
		row(fmt.Sprintf("reconcile, full pass with the caches in place (the log touched), 100k obs / 20k artifacts (peak RSS %d MiB)", fullRSS>>20), full, "cat of the same files", catFiles(tmp, big))
		// The pass after that one: a full pass too (the touched log's
		// record is not confirmed), which confirms the replay record and
		// takes the log's facts for the session index.
		var cts []time.Duration
		var confirmRSS int64
		for range max(*runs, 1) {
			runOnce(exec.Command("sh", "-c", `touch "$0"; exec "$@"`, manifest.PathsFor(big).Log, bin, "--root", big, "reconcile"), "")
			time.Sleep(150 * time.Millisecond)
			d, r := runRSS("", bin, "--root", big, "reconcile")
			cts, confirmRSS = append(cts, d), max(confirmRSS, r)
		}
		row(fmt.Sprintf("reconcile, the full pass after that one (it confirms the pass replay's record), 100k obs / 20k artifacts (peak RSS %d MiB)", confirmRSS>>20), median(cts), "cat of the same files", catFiles(tmp, big))
	}
}

// statFloor times one process that stats every manifest path.
func statFloor(tmp, dir string) time.Duration {
	m, _, err := manifest.ReadManifest(manifest.PathsFor(dir).Manifest)
	check(err)
	var paths []string
	for _, e := range m.Entries {
		p := e.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		paths = append(paths, p)
	}
	list := filepath.Join(tmp, "stat-list.txt")
	check(os.WriteFile(list, []byte(strings.Join(paths, "\n")+"\n"), 0o644))
	return timeCmd("sh", "-c", "xargs -d '\\n' -a "+list+" stat -c %s > /dev/null")
}

// artifactFiles lists the rendered command and skill files of a fixture
// (absolute paths, manifest order).
func artifactFiles(dir string) []string {
	m, _, err := manifest.ReadManifest(manifest.PathsFor(dir).Manifest)
	check(err)
	var out []string
	for _, e := range m.Entries {
		if e.AnchorID == "" {
			out = append(out, e.Path)
		}
	}
	return out
}

// retarget rewrites the absolute paths of a copied legacy manifest.
func retarget(dir, from string) {
	p := manifest.PathsFor(dir).Manifest
	b, err := os.ReadFile(p)
	check(err)
	check(os.WriteFile(p, bytes.ReplaceAll(b, []byte(`"`+from+`/`), []byte(`"`+dir+`/`)), 0o644))
}

// lastCounts is the reconcile counts c printed (lastJSON).
func lastCounts(c *exec.Cmd) counts {
	var n counts
	check(lastJSON(c, &n))
	return n
}

// lastJSON decodes into v the last line of c's output that starts with
// "{": both tools print their result as one JSON object, and devflow logs
// on stderr (which shares the buffer) before it.
func lastJSON(c *exec.Cmd, v any) error {
	out, ok := c.Stdout.(*bytes.Buffer)
	if !ok {
		return fmt.Errorf("%v: output not captured", c.Args)
	}
	var last []byte
	for _, line := range bytes.Split(out.Bytes(), []byte("\n")) {
		if bytes.HasPrefix(line, []byte("{")) {
			last = line
		}
	}
	if err := json.Unmarshal(last, v); err != nil {
		return fmt.Errorf("%v: no result in its output: %v", c.Args, err)
	}
	return nil
}
