package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/examples"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/staleness"
)

func newDemoCmd(a *app) *cobra.Command {
	var keep bool
	var dir string
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run observe → render → delete an artifact → reconcile → stale → index on a temp copy of the shipped example, narrated",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				d, err := os.MkdirTemp("", "learnwatch-demo-")
				if err != nil {
					return err
				}
				dir = d
				if !keep {
					defer os.RemoveAll(dir)
				}
			}
			return runDemo(a, dir, keep)
		},
	}
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the temp copy to explore afterwards")
	cmd.Flags().StringVar(&dir, "dir", "", "copy the example here instead of a temp directory (kept)")
	return cmd
}

func runDemo(a *app, dir string, keep bool) error {
	w := a.stdout
	step := 0
	say := func(format string, args ...any) {
		step++
		fmt.Fprintf(w, "\n== %d. %s\n", step, fmt.Sprintf(format, args...))
	}
	if err := examples.CopyTo(dir); err != nil {
		return fmt.Errorf("copy the example: %w", err)
	}
	// A git repository, so the staleness check has a tree to compare with.
	if _, err := exec.LookPath("git"); err == nil {
		for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=demo", "-c", "user.email=demo@example.com", "commit", "-qm", "example repository"}} {
			c := exec.Command("git", args...)
			c.Dir = dir
			if out, err := c.CombinedOutput(); err != nil {
				return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
	}
	a.rootFlag = dir
	root, cfg, err := a.setup()
	if err != nil {
		return err
	}
	p := manifest.PathsFor(root)
	fmt.Fprintf(w, "learnwatch demo on a copy of examples/repo in %s\n", dir)

	say("What is in the memory (learnwatch status)")
	log, err := manifest.ReadLog(p.Log)
	if err != nil {
		return err
	}
	c := lifecycle.Count(log, now())
	fmt.Fprintf(w, "%d observations (%s); the manifest lists 3 rendered artifacts, one of them with a legacy djb2 hash written by another tool.\n", c.Total, sortedCounts(c.ByStatus))

	say("Reconcile: nothing was touched, so every artifact is unchanged (the legacy hash is compared with djb2)")
	res, err := reconcile(a, root, cfg, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "reconcile: %s\n", res.Summary())

	say("An extractor reports a third sighting of \"Run make lint before pushing\" (learnwatch observe)")
	in, err := lifecycle.ParseInput([]byte(`{"id":"obs_wf_lint","type":"workflow","pattern":"Run make lint before pushing","evidence":["session: make lint caught an unused import"],"quality_ok":true}`))
	if err != nil {
		return err
	}
	ores, err := observe(a, root, cfg, cfg.Lock.Timeout.Duration, in)
	if err != nil {
		return err
	}
	lint := mustFind(p, "obs_wf_lint")
	fmt.Fprintf(w, "merged into obs_wf_lint: %d sightings, confidence %.2f, status %s (workflows need 3 sightings over 3 days and 0.60)\n", lint.Observations, lint.Confidence, lint.Status)
	_ = ores

	say("Render every ready observation (learnwatch render)")
	rres, warn, err := a.engine(root, cfg).Render(a.ctx, now())
	a.warn(warn)
	if err != nil {
		return err
	}
	var lintPath string
	for _, r := range rres.Rendered {
		target := r.Path
		if r.Anchor != "" {
			target += "#" + r.Anchor
		}
		fmt.Fprintf(w, "  %-20s %-10s → %s\n", r.ID, r.Type, target)
		if r.ID == "obs_wf_lint" {
			lintPath = r.Path
		}
	}

	say("You decide you do not want the lint command: you delete the file; and you reword PF-002")
	if lintPath != "" {
		if err := os.Remove(filepath.Join(root, lintPath)); err != nil {
			return err
		}
		fmt.Fprintf(w, "rm %s\n", lintPath)
	}
	pf, err := os.ReadFile(p.Pitfalls)
	if err != nil {
		return err
	}
	pf = []byte(strings.Replace(string(pf), "confusing stale config", "an hour lost to stale config", 1))
	if err := os.WriteFile(p.Pitfalls, pf, 0o644); err != nil {
		return err
	}
	fmt.Fprintln(w, "edited .memory/knowledge/pitfalls.md (PF-002's Impact)")

	say("Reconcile turns that into learning signal")
	res, err = reconcile(a, root, cfg, false)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "reconcile: %s\n", res.Summary())
	lint = mustFind(p, "obs_wf_lint")
	fmt.Fprintf(w, "the deletion is a penalty: obs_wf_lint is now %s with confidence %.2f (×0.3); the edit is respected: only PF-002's hash was updated\n", lint.Status, lint.Confidence)

	say("You stage the removal of src/db/queue.go, which ADR-002 cites: the pre-commit check names the entry (learnwatch stale --staged)")
	if _, err := exec.LookPath("git"); err == nil {
		c := exec.Command("git", "rm", "-q", "src/db/queue.go")
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git rm: %v: %s", err, out)
		}
		log, err := manifest.ReadLog(p.Log)
		if err != nil {
			return err
		}
		rep, err := staleness.ScanTree(root, staleness.Staged, cfg.Staleness, log)
		if err != nil {
			return err
		}
		for _, f := range rep.Stale {
			fmt.Fprintf(w, "  %s references %s: %s\n", f.ID, f.Ref, f.Reason)
		}
		fmt.Fprintf(w, "%d of %d references stale; the git hook warns (or blocks with precommit.block: true)\n", len(rep.Stale), rep.Checked)
	}

	say("The index an agent gets at session start (learnwatch index)")
	ix, err := buildIndex(a, root, cfg, cfg.Index.Budget, nil)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, ix.Text)
	fmt.Fprintf(w, "(%d tokens of a %d-token budget)\n", ix.Tokens, cfg.Index.Budget)
	if keep {
		fmt.Fprintf(w, "\nThe repository is kept in %s — try: learnwatch --root %s status\n", dir, dir)
	}
	return nil
}

func mustFind(p manifest.Paths, id string) *manifest.Observation {
	log, err := manifest.ReadLog(p.Log)
	if err == nil {
		if o := log.Find(id); o != nil {
			return o
		}
	}
	return &manifest.Observation{ID: id}
}
