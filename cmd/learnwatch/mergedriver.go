package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/merge"
	"github.com/learnwatch/learnwatch/safefs"
)

// newPostRewriteHook is `learnwatch hook post-rewrite`: a reconcile hook
// with its own example.
func newPostRewriteHook(a *app) *cobra.Command {
	c := newReconcileHook("post-rewrite")(a)
	c.Example = "  learnwatch hook post-rewrite rebase   # run by git after a rebase or an amend"
	return c
}

// maxMergeInput bounds each version a merge driver reads.
const maxMergeInput = 256 << 20

func newMergeDriverCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "merge-driver KIND BASE OURS THEIRS [PATH]",
		Short: "git merge driver for the memory files (KIND: log, manifest, usage, knowledge); installed by `hooks install`",
		Long: `merge-driver is what git runs (merge.<name>.driver = "learnwatch merge-driver KIND %O %A %B %P")
to merge a memory file three ways; it writes the result over OURS and exits 1
only when a part of the file needs a person (lines of a knowledge entry both
sides changed differently, a JSON file one side of which does not parse). JSON and JSONL files
never get conflict markers. Knowledge entries both branches numbered alike are
renumbered for the incoming side; the post-merge and post-rewrite hooks print
one line per renumbered entry and re-anchor the manifest and log.`,
		Example: `  # what hooks install puts in the repository's git config:
  git config merge.learnwatch-log.driver 'learnwatch merge-driver log %O %A %B %P'`,
		Args: cobra.RangeArgs(4, 5),
		RunE: func(_ *cobra.Command, args []string) error {
			kind, path := args[0], ""
			if len(args) == 5 {
				path = args[4]
			}
			var vers [3][]byte
			for i, f := range args[1:4] {
				b, err := readBounded(f)
				if err != nil {
					return err
				}
				vers[i] = b
			}
			var gitDir, label string
			if kind == "knowledge" { // only its conflicts and renumberings name the incoming side
				gitDir, _ = hooks.GitDir(".")
				label = hooks.IncomingLabel(gitDir, os.Environ())
			}
			out, rep, err := merge.File(kind, path, vers[0], vers[1], vers[2], merge.Labels{Ours: "HEAD", Theirs: firstNonEmpty(label, "theirs")})
			if err != nil {
				return exitcode.Bad("merge-driver: %v", err)
			}
			if len(rep.Renumbered) > 0 && gitDir != "" {
				moves := make([]merge.Moved, len(rep.Renumbered))
				for i, r := range rep.Renumbered {
					moves[i] = merge.Moved{Renumber: r, Path: path, Branch: label}
				}
				if err := merge.AppendRecord(gitDir, moves); err != nil {
					fmt.Fprintf(a.stderr, "learnwatch merge-driver: %v\n", err)
				}
			}
			if err := os.WriteFile(args[2], out, 0o644); err != nil {
				return fmt.Errorf("merge-driver: write %s: %w", args[2], err)
			}
			name := firstNonEmpty(path, kind)
			for _, n := range rep.Notes {
				fmt.Fprintf(a.stderr, "learnwatch merge-driver: %s: %s\n", name, n)
			}
			if rep.Conflict {
				return exitSilently(exitcode.Problems)
			}
			return nil
		},
	}
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// readBounded reads one version git hands the driver (a missing file is an
// empty version).
func readBounded(path string) ([]byte, error) {
	b, err := safefs.ReadFollowing(path, maxMergeInput)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil, nil
	case safefs.IsRefused(err):
		return nil, exitcode.Bad("merge-driver: %v", err)
	case err != nil:
		return nil, fmt.Errorf("merge-driver: %w", err)
	}
	return b, nil
}

// printRenumbered prints, once, the knowledge entries the merge driver
// renumbered since the last hook: "ADR-002 (from bob) is now ADR-003".
func printRenumbered(a *app, root string) {
	gitDir, err := hooks.GitDir(root)
	if err != nil {
		return
	}
	moves, err := merge.TakeRecord(gitDir)
	if err != nil {
		fmt.Fprintf(a.stderr, "learnwatch: %v\n", err)
	}
	for _, m := range moves {
		fmt.Fprintf(a.stderr, "learnwatch: %s\n", m.Line())
	}
}

// printDrivers is the merge-driver part of `hooks install|uninstall|status`.
func printDrivers(w io.Writer, verb string, d hooks.DriverState) {
	state := "not configured"
	switch {
	case len(d.Configured) > 0 && verb == "install" && !d.Changed:
		state = "already configured: " + strings.Join(d.Configured, ", ")
	case len(d.Configured) > 0:
		state = strings.Join(d.Configured, ", ")
	case verb == "uninstall" && d.Changed:
		state = "removed"
	case verb == "uninstall":
		state = "were not configured"
	}
	attr := "no learnwatch lines"
	if d.Attributed {
		attr = "learnwatch lines present"
	}
	fmt.Fprintf(w, "merge drivers: %s\n  %s: %s\n", state, d.Attributes, attr)
}
