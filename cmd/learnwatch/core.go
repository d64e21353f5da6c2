package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/textsafe"
)

// now is the clock of every command; LEARNWATCH_NOW (RFC3339) pins it for
// tests and demos.
func now() time.Time {
	if v := getenv("LEARNWATCH_NOW"); v != "" {
		if t, err := time.Parse(time.RFC3339, v); err == nil {
			return t
		}
	}
	return time.Now()
}

// setup resolves the root and loads the config.
func (a *app) setup() (string, config.Config, error) {
	root, err := a.root()
	if err != nil {
		return "", config.Config{}, err
	}
	cfg, err := a.config(root)
	return root, cfg, err
}

func newObserveCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "observe",
		Short: "Merge observations read from stdin (one JSON object, an array, or JSON Lines) into the log",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			data, err := readAllStdin(a)
			if err != nil {
				return err
			}
			in, err := lifecycle.ParseInput(data)
			if err != nil {
				return exitcode.Bad("observe: stdin: %v", err)
			}
			res, q, err := observeOrQueue(a, root, cfg, in)
			if err != nil {
				return err
			}
			if q != nil {
				return a.emitQueued(q)
			}
			for _, m := range res.Messages {
				a.skipped(m)
			}
			if err := a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "observe: %d created, %d merged, %d skipped\n", res.Created, res.Merged, res.Skipped)
				for _, id := range res.Promoted {
					fmt.Fprintf(w, "  %s is ready to render\n", id)
				}
			}); err != nil {
				return err
			}
			if res.Skipped > 0 && res.Created+res.Merged == 0 {
				// Every observation was bad input: the caller must hear it.
				return exitSilently(exitcode.BadInput)
			}
			return nil
		},
	}
}

// skipped says on stderr why observe skipped a sighting
// (lifecycle.SightingProblem), on one bounded line.
func (a *app) skipped(msg string) {
	fmt.Fprintf(a.stderr, "learnwatch: skipped %s\n", textsafe.Line(msg, 500))
}

// observe merges in through the engine, waiting at most wait for the
// lock (a timeout: observeOrQueue queues).
func observe(a *app, root string, cfg config.Config, wait time.Duration, in []*manifest.Observation) (lifecycle.Result, error) {
	res, warn, err := a.engine(root, cfg).Observe(a.ctx, in, now(), wait)
	a.warn(warn)
	a.reportDrain(res.Inbox)
	return res.Result, err // an I/O error (exit 3), as every error of a package below cmd
}

func newRenderCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "render",
		Short: "Render every ready observation into a command, skill, ADR or PF entry",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			res, warn, err := a.engine(root, cfg).Render(a.ctx, now())
			a.warn(warn)
			a.reportDrain(res.Inbox)
			if err != nil {
				return err
			}
			if err := a.emit(res, func(w io.Writer) {
				if len(res.Rendered) == 0 && res.Skipped == 0 {
					fmt.Fprintln(w, "render: nothing ready")
				}
				for _, r := range res.Rendered {
					if r.Anchor != "" {
						fmt.Fprintf(w, "rendered %s → %s#%s\n", r.ID, r.Path, r.Anchor)
					} else {
						fmt.Fprintf(w, "rendered %s → %s\n", r.ID, r.Path)
					}
				}
				for _, s := range res.Skips {
					fmt.Fprintf(w, "skipped %s: %s\n", s.ID, textsafe.Line(s.Reason, 500))
				}
				for _, m := range res.Warnings {
					fmt.Fprintf(w, "warning: %s\n", m)
				}
			}); err != nil || len(res.Refused) == 0 {
				return err
			}
			return exitcode.Bad("%s", strings.Join(res.Refused, "; "))
		},
	}
}

func newReconcileCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "reconcile",
		Short: "Reconcile the manifest with the files: deletions, edits, self-heal, staleness",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			res, err := reconcileExplicit(a, root, cfg)
			if err != nil {
				return err
			}
			for _, p := range res.Problems {
				fmt.Fprintf(a.stderr, "learnwatch: %s\n", textsafe.Line(p, 500))
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "reconcile: %s\n", res.Summary())
				for _, id := range res.Deleted {
					fmt.Fprintf(w, "  deleted artifact: %s deprecated (confidence ×0.3)\n", id)
				}
				if hint := heal.UndoHint(res); hint != "" {
					fmt.Fprintf(w, "  %s\n", hint)
				}
				for _, id := range res.Edited {
					fmt.Fprintf(w, "  edited artifact: %s (hash updated, your edit is kept)\n", id)
				}
				for _, id := range res.HealedIDs {
					fmt.Fprintf(w, "  healed: %s re-registered from the knowledge file\n", id)
				}
				for _, id := range res.RestoredIDs {
					fmt.Fprintf(w, "  restored artifact: %s back, its deletion penalty reversed\n", id)
				}
				for _, id := range res.AbsentIDs {
					fmt.Fprintf(w, "  absent: %s is not part of this checkout (kept, not penalised)\n", id)
				}
				for _, id := range res.CheckedOutIDs {
					fmt.Fprintf(w, "  checked out: %s has another branch's version here (git's doing, not an edit: its recorded hash is kept)\n", id)
				}
				for _, m := range res.MovedTo {
					fmt.Fprintf(w, "  moved artifact: %s (followed to its new path, not a deletion)\n", textsafe.Line(m, 500))
				}
			})
		},
	}
}

func newIndexCmd(a *app) *cobra.Command {
	var budget int
	var role string
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Print the compact, ranked knowledge index an agent gets at session start",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if budget < 0 {
				return exitcode.Bad("--budget must not be negative, got %d", budget)
			}
			if err := checkRole(role); err != nil {
				return err
			}
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			if budget == 0 {
				budget = cfg.Index.Budget
				if role != "" {
					budget = cfg.Learn.Budgets.For(role)
				}
			}
			res, err := buildIndexFor(a, root, cfg, budget, nil, role)
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) { fmt.Fprintln(w, res.Text) })
		},
	}
	cmd.Flags().IntVar(&budget, "budget", 0, "token budget (4 characters a token; default from config, 800)")
	cmd.Flags().StringVar(&role, "role", "", "the consumer role: 800 tokens for an adversarial role (auditor, judge, sentinel), 500 for others")
	return cmd
}

// countBy returns counts of observations by a key, in sorted key order.
func countBy(obs []*manifest.Observation, key func(*manifest.Observation) string) map[string]int {
	m := map[string]int{}
	for _, o := range obs {
		m[key(o)]++
	}
	return m
}

func sortedCounts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}
