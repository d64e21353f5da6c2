package main

import (
	"errors"
	"fmt"
	"io"
	"os/user"
	"strings"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
)

// newPolicyRelaxCmd is `policy relax TYPE --reason TEXT`: a person loosens
// a reliable type's promote threshold to ×0.9 (learn.Relax decides whether
// it may). learnwatch never relaxes by itself.
func newPolicyRelaxCmd(a *app) *cobra.Command {
	var reason, by string
	cmd := &cobra.Command{
		Use:   "relax TYPE --reason TEXT",
		Short: "Loosen a reliable type's promote threshold to ×0.9 (a person's decision, recorded with the reason)",
		Long: `Relaxing is never automatic. A type may be relaxed when it has at least 3
samples since its last reset and a reliability above 0.9; the overlay records
who relaxed it, why and when, and later refreshes keep it while the type's
reliability stays above 0.9 (they tighten it back when it drops). Undo with 'learnwatch policy reset TYPE'.`,
		Example: `  learnwatch policy relax workflow --reason "ten clean validations since the reset"
  learnwatch policy relax pitfall --reason "reviewed" --by alice --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			typ := args[0]
			if !learn.IsType(typ) {
				return exitcode.Bad("type must be one of %s, got %q", strings.Join(learn.Types, ", "), typ)
			}
			if strings.TrimSpace(reason) == "" {
				return exitcode.Bad("--reason: say why %s may be relaxed", typ)
			}
			if by != "" && !learn.ValidRole(by) {
				return exitcode.Bad("--by must be one word of letters, digits, '-', '_' or '.', got %q", by)
			}
			if by == "" {
				if u, err := user.Current(); err == nil {
					by = u.Username // not one word: Relax records "a person"
				}
			}
			evs, err := a.readFeedback(root)
			if err != nil {
				return err
			}
			t := now()
			var prev learn.Policy
			p, err := journal.UpdatePolicy(a.ctx, root, cfg.Lock.Timeout.Duration, func(p learn.Policy) (learn.Policy, error) {
				prev = p
				return learn.Relax(p, typ, learn.Tally(evs, p.Resets)[typ], by, reason, t)
			})
			var re *learn.RelaxError
			if errors.As(err, &re) {
				return exitcode.Bad("policy relax %s: %s", typ, re.Msg)
			}
			if err != nil {
				return err
			}
			res := struct {
				Type       string                `json:"type"`
				Overlay    learn.Overlay         `json:"overlay"`
				PolicyDiff []learn.OverlayChange `json:"policy_diff"`
			}{typ, p.Overlays[typ], learn.PolicyDiff(prev, p)}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "Relaxed %s: threshold ×%.2f — %s\n", typ, res.Overlay.ThresholdMultiplier, res.Overlay.Reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the type may be relaxed (required, recorded)")
	cmd.Flags().StringVar(&by, "by", "", "who relaxes it (default: the current user)")
	return cmd
}
