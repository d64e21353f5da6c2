package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/staleness"
)

// The ways out of a penalty or a review flag: restore, resolve, edit.

func newRestoreCmd(a *app) *cobra.Command {
	var since string
	cmd := &cobra.Command{
		Use:   "restore OBS_ID... | restore --since WHEN",
		Short: "Undo deletion penalties: status and confidence back to what they were",
		Long: `restore undoes deletion penalties by hand. Status, confidence and
deprecated_at go back to the values recorded when the penalty was applied,
and a restored feedback event cancels the deleted one. When the artifact is
there it is tracked again; when it is gone the observation goes back to
ready, so the next render writes it again.

Name the observations, or undo every penalty applied since a moment with
--since: a duration ago (15m, 2h) or an RFC 3339 time. That is the way back
from a clean-up that was not a verdict on the artifacts — git clean -x with
.claude/ ignored, an rm -r — which reconcile penalises like any deletion.
All of them are restored in one write, or none (an id without a penalty).
When git still has the files, putting them back (git restore) is simpler:
the next reconcile undoes their penalties and they stay rendered. A type
whose policy the deletions tightened stays held for approval (overlays only
tighten); restore names it, and policy reset TYPE starts it afresh.`,
		Example: `  learnwatch restore obs_release          # the command was deleted by mistake
  learnwatch restore obs_a obs_b          # several at once
  learnwatch restore --since 15m          # everything the last quarter hour penalised
  learnwatch restore obs_release --json   # {"id","status","confidence","tracked"}
  learnwatch restore --since 15m --json   # {"since":…,"restored":[{"id",…},…]}`,
		RunE: func(_ *cobra.Command, args []string) error {
			t := now()
			var sel heal.Selection
			switch {
			case since != "" && len(args) > 0:
				return exitcode.Bad("restore: name observations or give --since, not both")
			case since != "":
				at, err := parseSince(since, t)
				if err != nil {
					return exitcode.Bad("restore: --since %q: %v", since, err)
				}
				sel.Since = at
			case len(args) == 0:
				return exitcode.Bad("restore: name the observations to restore, or give --since (learnwatch restore --help)")
			default:
				sel.IDs = args
			}
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			out, warn, err := a.engine(root, cfg).Restore(a.ctx, sel, t)
			a.reportDrain(out.Inbox)
			res := out.Undone
			if errors.Is(err, heal.ErrNoPenalty) {
				return exitcode.Bad("restore: %v (only a penalty reconcile applied for a deleted artifact can be undone); nothing was restored", err)
			}
			if errors.Is(err, heal.ErrNoObservation) || errors.Is(err, manifest.ErrCorruptManifest) {
				return exitcode.Bad("restore: %v", err)
			}
			if err != nil {
				return err // the lock, or reading and writing the files
			}
			for _, w := range warn {
				fmt.Fprintf(a.stderr, "learnwatch: %s\n", w)
			}
			if len(out.Tightened) > 0 {
				fmt.Fprintf(a.stderr, "learnwatch: the policy tightened %s after these deletions and stays so (overlays only tighten): `learnwatch policy reset TYPE` starts a type afresh\n", strings.Join(out.Tightened, ", "))
			}
			human := func(w io.Writer) {
				for _, r := range res {
					fmt.Fprintf(w, "restored %s: %s, confidence %.2f", r.ID, r.Status, r.Confidence)
					if r.Tracked {
						fmt.Fprintln(w, ", its artifact is tracked again")
					} else {
						fmt.Fprintln(w, "; its artifact is gone, the next render writes it again")
					}
				}
				if !sel.Since.IsZero() {
					what := "penalties"
					if len(res) == 1 {
						what = "penalty"
					}
					fmt.Fprintf(w, "restore: %d deletion %s applied since %s undone\n", len(res), what, sinceJSON(sel.Since))
				}
			}
			if len(args) == 1 && len(res) == 1 {
				return a.emit(res[0], human) // one object, as it always was
			}
			return a.emit(restoredJSON{Since: sinceJSON(sel.Since), Restored: res}, human)
		},
	}
	cmd.Flags().StringVar(&since, "since", "", "undo every deletion penalty applied since WHEN: a duration ago (15m, 2h) or an RFC 3339 time")
	return cmd
}

// restoredJSON is restore's --json object for several observations or
// --since.
type restoredJSON struct {
	Since    string            `json:"since,omitempty"`
	Restored []heal.UndoResult `json:"restored"`
}

// sinceJSON is t in RFC 3339 (UTC), "" for the zero time: --since as
// restore prints it.
func sinceJSON(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// parseSince reads WHEN: a duration before now (15m, 2h) or an RFC 3339
// time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, errors.New("a duration ago must not be negative")
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, errors.New("want a duration ago (15m, 2h) or an RFC 3339 time (2026-01-02T15:04:05Z)")
	}
	return t, nil
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
				// Empty input (</dev/null) is no change: said below.
				if len(bytes.TrimSpace(data)) > 0 {
					if c, err = lifecycle.ParseChange(data); err != nil {
						return exitcode.Bad("edit %s: stdin: %v", id, err)
					}
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
