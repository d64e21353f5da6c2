package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/textsafe"
)

// readLog reads the log without the lock (readers see a whole file thanks
// to atomic replacement).
func (a *app) readLog() (string, *manifest.Log, error) {
	root, err := a.root()
	if err != nil {
		return "", nil, err
	}
	log, err := manifest.ReadLog(manifest.PathsFor(root).Log)
	return root, log, err
}

func newStatusCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Counts of observations by type and status, corrupt lines, and the watcher's state",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, log, err := a.readLog()
			if err != nil {
				return err
			}
			c := lifecycle.Count(log, now())
			m, _, merr := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
			out := map[string]any{"log_exists": log.Exists, "observations": c.Total, "by_type": c.ByType,
				"by_status": c.ByStatus, "by_type_status": c.Matrix, "corrupt": c.Corrupt, "invalid": c.Invalid,
				"need_review": c.Review, "artifacts": len(m.Entries) - m.Penalised(), "deleted_artifacts": m.Penalised()}
			if merr != nil {
				out["manifest_error"] = merr.Error()
			}
			watcher := watcherStatus(root)
			if watcher != nil {
				out["watcher"] = watcher
			}
			ib, ibLine := inboxStatus(root, time.Now())
			if ib != nil {
				out["inbox"] = ib
			}
			return a.emit(out, func(w io.Writer) {
				switch {
				case !log.Exists:
					fmt.Fprintln(w, "nothing learned yet: no learning log (.memory/learning-log.jsonl); pipe observations into learnwatch observe")
				case c.Total == 0 && c.Corrupt == 0 && c.Invalid == 0:
					fmt.Fprintln(w, "nothing learned yet: the learning log holds no observations")
				default:
					fmt.Fprintf(w, "observations: %d (%s)\n", c.Total, sortedCounts(c.ByStatus))
				}
				for _, t := range manifest.Types {
					if n := c.ByType[t]; n > 0 {
						fmt.Fprintf(w, "  %-10s %d (%s)\n", t, n, sortedCounts(c.Matrix[t]))
					}
				}
				fmt.Fprintf(w, "artifacts: %d registered\n", len(m.Entries)-m.Penalised())
				if n := m.Penalised(); n > 0 {
					fmt.Fprintf(w, "deleted artifacts: %d (penalised; put back, or learnwatch restore ID, or restore --since WHEN for many, to undo)\n", n)
				}
				if merr != nil {
					fmt.Fprintf(w, "manifest: %v (run learnwatch reconcile)\n", merr)
				}
				if c.Corrupt > 0 || c.Invalid > 0 {
					fmt.Fprintf(w, "corrupt lines: %d, invalid observations: %d (kept; learnwatch purge backs them up and removes them)\n", c.Corrupt, c.Invalid)
				}
				if c.Review > 0 {
					fmt.Fprintf(w, "need review: %d (learnwatch review)\n", c.Review)
				}
				if watcher != nil {
					fmt.Fprintf(w, "watcher: %s\n", textsafe.Line(fmt.Sprint(watcher["summary"]), 1000))
				}
				if ibLine != "" {
					fmt.Fprintln(w, ibLine)
				}
			})
		},
	}
}

func newListCmd(a *app) *cobra.Command {
	var typ, status string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List observations, highest confidence first",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if typ != "" && !slices.Contains(manifest.Types, typ) {
				return exitcode.Bad("--type %q: must be one of %s", typ, strings.Join(manifest.Types, ", "))
			}
			if status != "" && !slices.Contains(manifest.Statuses, status) {
				return exitcode.Bad("--status %q: must be one of %s", status, strings.Join(manifest.Statuses, ", "))
			}
			_, log, err := a.readLog()
			if err != nil {
				return err
			}
			var sel []*manifest.Observation
			for _, o := range lifecycle.ByConfidence(log.Observations()) {
				if (typ == "" || o.Type == typ) && (status == "" || o.Status == status) {
					sel = append(sel, o)
				}
			}
			if sel == nil {
				sel = []*manifest.Observation{}
			}
			return a.emit(map[string]any{"observations": sel}, func(w io.Writer) {
				if len(sel) == 0 {
					fmt.Fprintln(w, "(no observations)")
				}
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				if len(sel) > 0 {
					fmt.Fprintln(tw, "CONF\tSTATUS\tTYPE\tID\tPATTERN")
				}
				for _, o := range sel {
					fmt.Fprintf(tw, "%.2f\t%s\t%s\t%s\t%s\n", o.Confidence, cell(o.Status), o.Type, cell(o.ID), oneLine(o.Pattern, 70))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&typ, "type", "", "only this type (workflow, procedural, decision, pitfall)")
	cmd.Flags().StringVar(&status, "status", "", "only this status (observing, ready, created, deprecated)")
	return cmd
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(textsafe.Line(s, 0)), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}

func newReviewCmd(a *app) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List what needs attention: review flags, stale references, full knowledge files, long-unseen observations",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, log, err := a.readLog()
			if err != nil {
				return err
			}
			items := lifecycle.Review(log.Observations(), now())
			if items == nil {
				items = []lifecycle.Attention{}
			}
			extra := reviewExtras(a, root, log)
			out := map[string]any{"observations": items, "corrupt": log.Corrupt(), "invalid": log.InvalidCount()}
			for k, v := range extra.json {
				out[k] = v
			}
			return a.emit(out, func(w io.Writer) {
				if len(items) == 0 && len(extra.sections) == 0 && log.Corrupt() == 0 && log.InvalidCount() == 0 {
					fmt.Fprintln(w, "nothing needs review")
					return
				}
				// One headed section per kind of finding, blank lines between.
				sep := ""
				if len(items) > 0 {
					fmt.Fprintf(w, "Observations (%d):\n", len(items))
					shown := reviewOrder(items)
					if !all && len(shown) > reviewTextLimit {
						shown = shown[:reviewTextLimit]
					}
					for _, it := range shown {
						fmt.Fprintf(w, "  %s (%s, %.2f) %s\n", it.ID, it.Type, it.Confidence, oneLine(it.Pattern, 60))
						for _, r := range it.Reasons {
							fmt.Fprintf(w, "    - %s\n", textsafe.Line(r, 300))
						}
					}
					moreLine(w, len(items)-len(shown))
					sep = "\n"
				}
				if n := log.Corrupt() + log.InvalidCount(); n > 0 {
					fmt.Fprintf(w, "%sLearning log:\n  %d corrupt or invalid lines (learnwatch purge backs them up and removes them)\n", sep, n)
					sep = "\n"
				}
				for _, sec := range extra.sections {
					fmt.Fprintf(w, "%s%s (%d):\n", sep, sec.title, len(sec.lines))
					lines := sec.lines
					if !all && len(lines) > reviewTextLimit {
						lines = lines[:reviewTextLimit]
					}
					for _, l := range lines {
						fmt.Fprintf(w, "  %s\n", textsafe.Line(l, 300))
					}
					moreLine(w, len(sec.lines)-len(lines))
					sep = "\n"
				}
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, fmt.Sprintf("list every entry (the text shows %d per section)", reviewTextLimit))
	return cmd
}

// reviewTextLimit bounds each section of review's text output: a memory of
// thousands of long-unseen observations must not bury the few that need a
// person. --all and --json list everything.
const reviewTextLimit = 25

// moreLine says how many entries a section left out of the text.
func moreLine(w io.Writer, n int) {
	if n > 0 {
		fmt.Fprintf(w, "  … and %d more (learnwatch review --all, or --json)\n", n)
	}
}

// reviewOrder puts the observations flagged for a person (review flags,
// stale references, regressions) before those only listed as purge
// candidates (long unseen with low confidence), keeping the order within
// each group.
func reviewOrder(items []lifecycle.Attention) []lifecycle.Attention {
	onlyPurge := func(it lifecycle.Attention) bool {
		for _, r := range it.Reasons {
			if !strings.HasPrefix(r, lifecycle.PurgeReason) {
				return false
			}
		}
		return true
	}
	out := make([]lifecycle.Attention, 0, len(items))
	for _, it := range items {
		if !onlyPurge(it) {
			out = append(out, it)
		}
	}
	for _, it := range items {
		if onlyPurge(it) {
			out = append(out, it)
		}
	}
	return out
}

func newPurgeCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "purge",
		Short: "Remove corrupt and invalid log lines, after writing them to a dated backup file",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			var n int
			var backup string
			if err := a.withLearningLock(root, cfg, func() (err error) {
				n, backup, err = manifest.Purge(manifest.PathsFor(root), now())
				return err
			}); err != nil {
				return err
			}
			return a.emit(map[string]any{"removed": n, "backup": backup}, func(w io.Writer) {
				if n == 0 {
					fmt.Fprintln(w, "purge: nothing to remove")
					return
				}
				fmt.Fprintf(w, "purge: removed %d lines, saved in %s\n", n, backup)
			})
		},
	}
}

func newClearCmd(a *app) *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "clear",
		Short: "Reset the learning log (the whole log is backed up first)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if !yes {
				return exitcode.Bad("clear empties the learning log (after a backup); run it again with --yes")
			}
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			var n int
			var backup string
			if err := a.withLearningLock(root, cfg, func() (err error) {
				n, backup, err = manifest.Clear(manifest.PathsFor(root), now())
				return err
			}); err != nil {
				return err
			}
			return a.emit(map[string]any{"cleared": n, "backup": backup}, func(w io.Writer) {
				if backup == "" {
					fmt.Fprintln(w, "clear: no log to clear")
					return
				}
				fmt.Fprintf(w, "clear: %d lines backed up to %s, log emptied\n", n, backup)
			})
		},
	}
	cmd.Flags().BoolVar(&yes, "yes", false, "confirm")
	return cmd
}

func newHudCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "hud",
		Short: "One-line summary for a status bar",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, log, err := a.readLog()
			if err != nil {
				return err
			}
			line, counts := hudLine(log)
			notices := capacityNotices(a, root)
			for _, n := range notices {
				line += fmt.Sprintf("  ⚠ %s %d/%d", n.File, n.Count, n.Ceiling)
			}
			out := map[string]any{"hud": line, "counts": counts}
			if len(notices) > 0 {
				out["notifications"] = notices
			}
			return a.emit(out, func(w io.Writer) { fmt.Fprintln(w, line) })
		},
	}
}

// hudLine counts rendered artifacts by type and the observations needing
// review: "Learning: 2 workflows, 1 skills, 3 decisions, 1 pitfalls  ⚠ 1 need review".
// hudCounts are the hud's numbers: rendered artifacts by kind and the
// observations needing review.
type hudCounts struct {
	Workflows  int `json:"workflows"`
	Skills     int `json:"skills"`
	Decisions  int `json:"decisions"`
	Pitfalls   int `json:"pitfalls"`
	NeedReview int `json:"need_review"`
}

// hudLine counts rendered artifacts by type and the observations needing
// review: "Learning: 2 workflows, 1 skills, 3 decisions, 1 pitfalls  ⚠ 1 need review".
func hudLine(log *manifest.Log) (string, hudCounts) {
	created := map[string]int{}
	for _, o := range log.ByStatus(manifest.Created) {
		created[o.Type]++
	}
	c := hudCounts{Workflows: created[manifest.Workflow], Skills: created[manifest.Procedural],
		Decisions: created[manifest.Decision], Pitfalls: created[manifest.Pitfall],
		NeedReview: len(lifecycle.Review(log.Observations(), now()))}
	line := fmt.Sprintf("Learning: %d workflows, %d skills, %d decisions, %d pitfalls", c.Workflows, c.Skills, c.Decisions, c.Pitfalls)
	if c.NeedReview > 0 {
		line += fmt.Sprintf("  ⚠ %d need review", c.NeedReview)
	}
	return line, c
}
