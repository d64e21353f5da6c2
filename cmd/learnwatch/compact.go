package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/journal"
)

// newCompactCmd folds old feedback events into the journal's base line
// (journal.CompactFeedback).
func newCompactCmd(a *app) *cobra.Command {
	var keepDays int
	cmd := &cobra.Command{
		Use:   "compact [--keep-days N]",
		Short: "Fold feedback events older than N days into one summary line of .memory/feedback.jsonl (the lines go to feedback.archive.jsonl)",
		Example: `  learnwatch compact                 # fold what is older than 180 days
  learnwatch compact --keep-days 30`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if keepDays < 1 {
				return exitcode.Bad("--keep-days must be at least 1, got %d", keepDays)
			}
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			cut := now().Add(-time.Duration(keepDays) * 24 * time.Hour)
			res, err := journal.CompactFeedback(a.ctx, root, cut, cfg.Lock.Timeout.Duration)
			if err != nil {
				return exitcode.Wrap(exitcode.IO, err)
			}
			return a.emit(res, func(w io.Writer) {
				if res.Folded == 0 {
					fmt.Fprintf(w, "compact: no feedback event older than %s\n", res.Cut.UTC().Format(time.RFC3339))
					return
				}
				fmt.Fprintf(w, "compact: %d lines older than %s folded into the base line (kept verbatim in %s), %d kept; %d → %d bytes\n",
					res.Folded, res.Cut.UTC().Format(time.RFC3339), journal.Path(root, journal.ArchiveFile), res.Kept, res.BytesWas, res.BytesNow)
			})
		},
	}
	cmd.Flags().IntVar(&keepDays, "keep-days", 180, "keep the events of the last N days as they are (180: two half-lives of feedback)")
	return cmd
}
