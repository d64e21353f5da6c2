package main

// The observe row: `learnwatch observe` and devflow's own
// `process-observations` (node, its json-helper.cjs) merging the same
// sightings into fresh copies of the 10k fixture's log, interleaved.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/manifest"
)

// observeN is how many sightings the observe row merges: half of them of
// observations the log holds (their id, type and pattern), half new.
const observeN = 200

// devflowObserveRow times `learnwatch observe --json` (the sightings on
// stdin) against `node json-helper.cjs process-observations <response>
// <log>` on fresh copies of the 10k fixture's memory, and checks that both
// merged and created the same numbers.
func devflowObserveRow(bin, tmp string) {
	if *devflowHelper == "" {
		return
	}
	node, helper := devflowScript(*devflowHelper)
	src := filepath.Join(tmp, "observe-src")
	check(fixture.Generate(src, fixture.Spec{Observations: 10000, Artifacts: 2000, Entries: 200, Seed: 1}))
	log, err := manifest.ReadLog(manifest.PathsFor(src).Log)
	check(err)
	var sightings []map[string]any
	for _, o := range log.Observations() {
		if len(sightings) == observeN/2 {
			break
		}
		if o.Status != manifest.Deprecated {
			sightings = append(sightings, map[string]any{"id": o.ID, "type": o.Type, "pattern": o.Pattern,
				"evidence": []string{"seen again in the figures' run"}, "quality_ok": true})
		}
	}
	for i := range observeN / 2 {
		sightings = append(sightings, map[string]any{"id": fmt.Sprintf("obs_figures_%03d", i), "type": manifest.Workflow,
			"pattern":  fmt.Sprintf("Figures sighting %d: regenerate the fixtures before the benchmarks", i),
			"evidence": []string{"first seen in the figures' run"}, "quality_ok": true})
	}
	stdin, err := json.Marshal(sightings)
	check(err)
	response, err := json.Marshal(map[string]any{"observations": sightings})
	check(err)
	cmds := []func(dir string) *exec.Cmd{
		func(dir string) *exec.Cmd { return exec.Command(bin, "--root", dir, "observe", "--json") },
		func(dir string) *exec.Cmd {
			resp := filepath.Join(dir, "response.json")
			check(os.WriteFile(resp, response, 0o644))
			return exec.Command(node, helper, "process-observations", resp, manifest.PathsFor(dir).Log)
		},
	}
	ts := make([][]time.Duration, len(cmds))
	var got [2]struct{ Created, Merged int }
	for r := 0; r <= *runs; r++ {
		for i, mk := range cmds {
			dir := filepath.Join(tmp, fmt.Sprintf("observe-%d-%d", r, i))
			check(copyTree(filepath.Join(src, ".memory"), filepath.Join(dir, ".memory")))
			c := mk(dir)
			in := ""
			if i == 0 {
				in = string(stdin)
			}
			d, _ := runOnce(c, in)
			if r > 0 {
				ts[i] = append(ts[i], d)
			} else {
				var res struct{ Created, Merged, Updated int }
				check(lastJSON(c, &res))
				got[i].Created, got[i].Merged = res.Created, res.Merged+res.Updated
			}
			os.RemoveAll(dir)
		}
	}
	if got[0] != got[1] || got[0].Created != observeN/2 || got[0].Merged != observeN/2 {
		fmt.Fprintf(os.Stderr, "figures: observe and process-observations disagree: learnwatch %+v, devflow %+v\n", got[0], got[1])
		os.Exit(1)
	}
	row(fmt.Sprintf("`observe`, %d sightings (%d of logged observations, %d new) into the 10k fixture's log", observeN, got[0].Merged, got[0].Created),
		median(ts[0]), "devflow `process-observations` (node), same counts", median(ts[1]))
}
