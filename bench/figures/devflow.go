package main

// The devflow row: `learnwatch render` and devflow's own `render-ready`
// (node, its json-helper.cjs) on copies of one fixture of ready
// observations, interleaved in one run.

import (
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/learnwatch/learnwatch/fixture"
)

var (
	devflowHelper = flag.String("devflow", "", "devflow's scripts/hooks/json-helper.cjs: adds the render row against its render-ready (needs node)")
	renderN       = flag.Int("render-n", 200, "ready observations of the devflow render row")
)

// devflowRenderRow times `learnwatch render` against `node json-helper.cjs
// render-ready <log> <root>` on fresh copies of a fixture of -render-n
// ready observations (a quarter of each type), and checks both rendered
// all of them.
func devflowRenderRow(bin, tmp string) {
	if *devflowHelper == "" || *renderN <= 0 {
		return
	}
	node, helper := devflowScript(*devflowHelper)
	src := filepath.Join(tmp, "render-src")
	check(fixture.Generate(src, fixture.Spec{Observations: *renderN, Ready: *renderN, Seed: 1}))
	cmds := []func(dir string) *exec.Cmd{
		func(dir string) *exec.Cmd { return exec.Command(bin, "--root", dir, "render", "--json") },
		func(dir string) *exec.Cmd {
			return exec.Command(node, helper, "render-ready", filepath.Join(dir, ".memory", "learning-log.jsonl"), dir)
		},
	}
	ts := make([][]time.Duration, len(cmds))
	for r := 0; r <= *runs; r++ {
		for i, mk := range cmds {
			dir := filepath.Join(tmp, fmt.Sprintf("render-%d-%d", r, i))
			check(copyTree(src, dir))
			c := mk(dir)
			d, _ := runOnce(c, "")
			if r > 0 {
				ts[i] = append(ts[i], d)
			}
			if r == 0 {
				check(renderedAll(c, *renderN))
			}
			os.RemoveAll(dir)
		}
	}
	row(fmt.Sprintf("`render`, %d ready observations (a quarter of each type)", *renderN), median(ts[0]),
		"devflow `render-ready` (node)", median(ts[1]))
}

// devflowScript returns node's path and the absolute path of devflow's
// script at path; a failure ends the program.
func devflowScript(path string) (node, script string) {
	node, err := exec.LookPath("node")
	check(err)
	script, err = filepath.Abs(path)
	check(err)
	return node, script
}

// renderedAll checks the warm-up run's output: both tools print a JSON
// object whose "rendered" list has one item per observation.
func renderedAll(c *exec.Cmd, want int) error {
	var res struct {
		Rendered []json.RawMessage `json:"rendered"`
	}
	if err := lastJSON(c, &res); err != nil {
		return err
	}
	if len(res.Rendered) != want {
		return fmt.Errorf("%v rendered %d of %d", c.Args, len(res.Rendered), want)
	}
	return nil
}

// copyTree copies the regular files and directories of src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}
