package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/staleness"
)

// The ways out of a penalty or a review flag: restore, resolve, edit.

func newRestoreCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "restore OBS_ID",
		Short: "Undo the deletion penalty of an observation: status and confidence back to what they were",
		Long: `restore undoes a deletion penalty by hand. Status, confidence and
deprecated_at go back to the values recorded when the penalty was applied,
and a restored feedback event cancels the deleted one. When the artifact is
there it is tracked again; when it is gone the observation goes back to
ready, so the next render writes it again.`,
		Example: `  learnwatch restore obs_release          # the command was deleted by mistake
  learnwatch restore obs_release --json   # {"id","status","confidence","tracked"}`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			t := now()
			res, err := heal.Restore(a.ctx, root, args[0], heal.Options{Now: t, LockTimeout: cfg.Lock.Timeout.Duration})
			if errors.Is(err, heal.ErrNoPenalty) {
				return exitcode.Bad("restore: %v (only a penalty reconcile applied for a deleted artifact can be undone)", err)
			}
			if err != nil && !errors.Is(err, manifest.ErrLockTimeout) && res.ID == "" {
				return exitcode.Bad("restore: %v", err)
			}
			if err != nil {
				return err
			}
			if err := journal.AppendFeedback(root, res.Event); err != nil {
				fmt.Fprintf(a.stderr, "learnwatch: feedback not recorded: %v\n", err)
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "restored %s: %s, confidence %.2f", res.ID, res.Status, res.Confidence)
				if res.Tracked {
					fmt.Fprintln(w, ", its artifact is tracked again")
				} else {
					fmt.Fprintln(w, "; its artifact is gone, the next render writes it again")
				}
			})
		},
	}
}

func newResolveCmd(a *app) *cobra.Command {
	var reason, ref string
	cmd := &cobra.Command{
		Use:   "resolve OBS_ID --reason TEXT [--ref PATH]",
		Short: "Clear an observation's review flags (needsReview, mayBeStale) by hand, recording why",
		Example: `  learnwatch resolve obs_cache --reason "the cache moved, the advice still holds"
  learnwatch resolve obs_cli --ref src/cli.go --reason "kept on purpose"   # before the pre-commit check blocks`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			id := args[0]
			var cleared bool
			err = a.changeObservation(root, cfg, "resolve", id, func(o *manifest.Observation) error {
				mark := ""
				if ref != "" {
					mark = staleness.ReasonPrefix + ref
				}
				cleared, err = lifecycle.Resolve(o, reason, mark, now())
				return err
			})
			if err != nil {
				return err
			}
			res := map[string]any{"id": id, "cleared": cleared}
			return a.emit(res, func(w io.Writer) {
				if cleared {
					fmt.Fprintf(w, "resolved %s: review flags cleared (%s)\n", id, reason)
				} else {
					fmt.Fprintf(w, "%s has no review flag: nothing to resolve\n", id)
				}
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the flag no longer applies (required, recorded)")
	cmd.Flags().StringVar(&ref, "ref", "", "a stale reference to accept before anything marked it (as the pre-commit check names it)")
	return cmd
}

func newEditCmd(a *app) *cobra.Command {
	var details, pattern string
	cmd := &cobra.Command{
		Use:   "edit OBS_ID [--details TEXT] [--pattern TEXT]",
		Short: `Change an observation's details and/or pattern (flags, or {"details":…,"pattern":…} on stdin)`,
		Long: `edit changes what an observation says: its details and/or its pattern,
given with --details/--pattern or as one JSON object on stdin. Every other
field is kept. An artifact already rendered from it is not rewritten: the
file is the person's; edit changes what the log (and a later render) holds.`,
		Example: `  learnwatch edit obs_cache --details "context: …; decision: …; rationale: …"
  echo '{"pattern":"Retries must be idempotent"}' | learnwatch edit obs_retry`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			id := args[0]
			var c lifecycle.Change
			if cmd.Flags().Changed("details") {
				c.Details = &details
			}
			if cmd.Flags().Changed("pattern") {
				c.Pattern = &pattern
			}
			if c.Details == nil && c.Pattern == nil && !stdinIsTerminal(a.stdin) {
				data, err := readAllStdin(a)
				if err != nil {
					return err
				}
				if c, err = lifecycle.ParseChange(data); err != nil {
					return exitcode.Bad("edit %s: stdin: %v", id, err)
				}
			}
			err = a.changeObservation(root, cfg, "edit", id, func(o *manifest.Observation) error {
				return lifecycle.Edit(o, c)
			})
			if err != nil {
				return err
			}
			res := map[string]any{"id": id, "edited": true}
			return a.emit(res, func(w io.Writer) { fmt.Fprintf(w, "edited %s\n", id) })
		},
	}
	cmd.Flags().StringVar(&details, "details", "", "the new details")
	cmd.Flags().StringVar(&pattern, "pattern", "", "the new pattern")
	return cmd
}

// changeObservation applies change to observation id under the learning
// lock and writes the log when that changed it (resolve, edit). A missing
// id, or an error of change, is bad input named after verb.
func (a *app) changeObservation(root string, cfg config.Config, verb, id string, change func(*manifest.Observation) error) error {
	return a.withLearningLock(root, cfg, func() error {
		p := manifest.PathsFor(root)
		log, err := manifest.ReadLog(p.Log)
		if err != nil {
			return err
		}
		o := log.Find(id)
		if o == nil {
			return exitcode.Bad("%s: %s: no such observation in the learning log", verb, id)
		}
		if err := change(o); err != nil {
			return exitcode.Bad("%s %s: %v", verb, id, err)
		}
		if !log.Changed() {
			return nil
		}
		return manifest.WriteLog(p.Log, log)
	})
}
