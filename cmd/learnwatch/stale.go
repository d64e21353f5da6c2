package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/deadline"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/staleness"
	"github.com/learnwatch/learnwatch/textsafe"
)

func newStaleCmd(a *app) *cobra.Command {
	var staged, fail, explain bool
	c := &cobra.Command{
		Use:   "stale",
		Short: "Check the file references of knowledge entries and observations against the git tree",
		Long: `stale extracts file references (paths with a source extension, optionally
:LINE) from the active ADR/PF entries and from the observations that are not
deprecated, and checks them against HEAD (--staged: the index; outside git:
the working tree). A missing path that was renamed in history is reported
with where it went; a line past the end of its file is stale too. Stale
observations are marked mayBeStale/needsReview in the log when .memory is
writable (a read-only checkout still gets the report). Besides the knowledge
base, Markdown sources are checked read-only: staleness.sources globs, ADRs
in docs/adr, doc/adr, docs/decisions and every KNOWLEDGE.md. --explain (or
-v) lists every extracted reference with how it resolved.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			mode := staleness.Auto
			if staged {
				mode = staleness.Staged
			}
			chk, err := staleness.Open(root, mode, cfg.Staleness)
			if errors.Is(err, staleness.ErrNotGit) {
				return exitcode.Bad("--staged: %v", err)
			}
			if err != nil {
				return exitcode.Wrap(exitcode.IO, err)
			}
			rep, marked, readOnly, err := a.staleScan(root, chk, cfg, explain || a.verbose)
			if err != nil {
				return err
			}
			if err := chk.Err(); err != nil {
				a.log.Warn("some references could not be checked", "err", err)
			}
			if err := a.emit(rep, func(w io.Writer) {
				printResolutions(w, rep.Refs)
				printFindings(w, rep.Stale)
				switch len(rep.Stale) {
				case 0:
					fmt.Fprintf(w, "no stale references (%d checked against %s)\n", rep.Checked, treeName(chk))
				default:
					fmt.Fprintf(w, "%d stale of %d references checked against %s\n", len(rep.Stale), rep.Checked, treeName(chk))
				}
				if len(rep.Sources) > 0 {
					fmt.Fprintf(w, "sources checked besides the knowledge base: %d Markdown file(s)\n", len(rep.Sources))
				}
				if marked > 0 {
					fmt.Fprintf(w, "%d observation(s) updated in the learning log\n", marked)
				}
				if readOnly {
					fmt.Fprintln(w, ".memory is read-only: observations not marked (run learnwatch reconcile where it is writable)")
				}
			}); err != nil {
				return err
			}
			if fail && len(rep.Stale) > 0 {
				return exitSilently(exitcode.Problems)
			}
			return nil
		},
	}
	c.Flags().BoolVar(&staged, "staged", false, "check against the index (what the next commit holds) instead of HEAD")
	c.Flags().BoolVar(&fail, "fail", false, "exit 1 when anything is stale")
	c.Flags().BoolVar(&explain, "explain", false, "list every extracted reference with how it resolved (also with -v)")
	return c
}

// staleScan runs the engine's stale pass (the scan under the learning
// lock, the marks written; a read-only .memory gets the report, readOnly
// set, nothing marked).
func (a *app) staleScan(root string, chk *staleness.Checker, cfg config.Config, explain bool) (rep staleness.Report, marked int, readOnly bool, err error) {
	res, err := a.engine(root, cfg).Stale(a.ctx, chk, explain)
	a.reportDrain(res.Inbox)
	if err != nil {
		return res.Report, 0, false, exitcode.Wrap(exitcode.IO, err)
	}
	return res.Report, res.Marked, res.ReadOnly, nil
}

// printResolutions lists how each reference resolved (stale --explain).
func printResolutions(w io.Writer, refs []staleness.Resolution) {
	if len(refs) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range refs {
		how := ""
		switch {
		case r.ResolvedAs != "" && r.Reason != "":
			how = fmt.Sprintf("%s (by %s): %s", r.ResolvedAs, r.How, r.Reason)
		case r.ResolvedAs != "":
			how = fmt.Sprintf("%s (by %s)", r.ResolvedAs, r.How)
		default:
			how = r.Reason
			if r.RenamedTo != "" {
				how += ", renamed to " + r.RenamedTo
			}
			if r.Searched > 0 || r.Truncated {
				how += fmt.Sprintf(" (%d commit(s) searched", r.Searched)
				if r.Truncated {
					how += ", walk cut short at staleness.rename_depth"
				}
				how += ")"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Source, r.Ref, how)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

// treeName names the checked tree in a sentence.
func treeName(chk *staleness.Checker) string {
	if s := chk.Source(); s != "HEAD" {
		return "the " + s
	}
	return "HEAD"
}

// cell is repository text in one cell of a table: one line (a path may
// hold a newline or a tab), no control characters, at most 160 characters.
func cell(s string) string { return textsafe.Line(s, 160) }

// printFindings lists findings as an aligned table: entry, ref, reason.
func printFindings(w io.Writer, findings []staleness.Finding) {
	if len(findings) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, f := range findings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", cell(findingWhere(f)), cell(f.Ref), cell(describe(f)))
	}
	tw.Flush()
}

// findingWhere names where a finding's reference was written: the entry
// id, or a source file and its heading.
func findingWhere(f staleness.Finding) string {
	if f.Heading != "" {
		return f.ID + " § " + f.Heading
	}
	return f.ID
}

func describe(f staleness.Finding) string {
	switch {
	case f.Reason == staleness.LinePastEOF:
		return "line past the end of the file"
	case f.RenamedTo != "":
		return "missing, renamed to " + f.RenamedTo
	case f.Truncated:
		return fmt.Sprintf("missing (not found in the %d commits searched: staleness.rename_depth)", f.Searched)
	default:
		return "missing"
	}
}

// newPreCommitHook is `learnwatch hook pre-commit`: it reports active
// knowledge entries and observations that reference files the staged
// commit deletes or renames. It warns (exit 0) unless precommit.block is
// set (exit 1), and fails open: any error is one line on stderr, exit 0.
// It writes nothing: the log may be part of the commit.
func newPreCommitHook(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "pre-commit",
		Short: "git pre-commit hook: warn (or with precommit.block: true, fail) when the commit deletes or renames files the knowledge references",
		Args:  cobra.ArbitraryArgs,
		RunE: func(*cobra.Command, []string) error {
			block := false
			finished := failOpen(a, "hook pre-commit", deadline.PreCommit, func() error {
				root, err := a.root()
				if err != nil {
					return err
				}
				cfg := a.hookConfig(root)
				rep, v, err := a.engine(root, cfg).PreCommit(a.ctx)
				if err != nil {
					return err
				}
				if a.jsonOut {
					out := struct {
						Checked int `json:"checked"`
						staleness.Verdict
					}{rep.Checked, v}
					if err := a.emit(out, nil); err != nil {
						return err
					}
				}
				if len(v.Blocking)+len(v.Warnings) == 0 {
					return nil
				}
				w := a.stderr
				printIssues := func(issues []staleness.Issue) {
					tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
					for _, is := range issues {
						what := "removed"
						if is.RenamedTo != "" {
							what = "renamed to " + is.RenamedTo
						}
						fmt.Fprintf(tw, "  %s\t%s\t%s\n", cell(strings.Join(is.Where, ", ")), cell(is.Ref), cell(what))
					}
					tw.Flush()
					for _, is := range issues {
						for i := range is.IDs {
							fmt.Fprintf(w, "    %s (%s): %s\n", cell(is.Ref), cell(is.Where[i]), textsafe.Line(is.Fix[i], 400))
						}
					}
				}
				if len(v.Blocking) > 0 {
					fmt.Fprintln(w, "learnwatch: this commit deletes or renames files that the knowledge base references:")
					printIssues(v.Blocking)
				}
				if len(v.Warnings) > 0 {
					fmt.Fprintln(w, "learnwatch: observations not reviewed yet reference files this commit deletes or renames (never blocks):")
					printIssues(v.Warnings)
				}
				if len(v.Blocking) == 0 {
					return nil
				}
				if cfg.Precommit.Block {
					block = true
					fmt.Fprintln(w, "learnwatch: commit blocked (precommit.block: true); update those entries, or commit with --no-verify")
				} else {
					fmt.Fprintln(w, "learnwatch: update those entries (`learnwatch stale --staged` lists them); set precommit.block: true in .memory/learnwatch.yaml to block such commits")
				}
				return nil
			})
			// A pre-commit past its deadline fails open, even a blocking
			// one: block is only read when the check finished.
			if finished && block {
				return exitSilently(exitcode.Problems)
			}
			return nil
		},
	}
}
