package main

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/deadline"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/hooks"
)

// newHookCmd is `learnwatch hook <name>`: the entry points git and the agent
// call.
func newHookCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "hook <name>",
		Short: "Hook entry points called by git and the agent (installed by `hooks install`)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return exitcode.Bad("unknown hook %q (see learnwatch hook --help)", args[0])
			}
			return cmd.Help()
		},
	}
	for _, f := range hookSubcommands() {
		c.AddCommand(f(a))
	}
	return c
}

// hooksStatus is the status object of `hooks install|uninstall|status`.
type hooksStatus struct {
	// verb is the command that produced the status (install, uninstall,
	// status): the words of the text output follow it.
	verb     string              `json:"-"`
	Git      *hooks.Status       `json:"git,omitempty"`
	GitError string              `json:"git_error,omitempty"`
	Claude   *hooks.ClaudeStatus `json:"claude,omitempty"`
}

func newHooksCmd(a *app) *cobra.Command {
	c := &cobra.Command{
		Use:   "hooks",
		Short: "Install, remove or inspect learnwatch's git hooks and the agent's hooks",
		Args:  cobra.NoArgs,
	}
	var gitFlag, claude bool
	flags := func(cmd *cobra.Command, verb string) {
		cmd.Flags().BoolVar(&gitFlag, "git", true, verb+" the git hooks (pre-commit, post-checkout, post-merge, post-rewrite) and the merge drivers")
		cmd.Flags().BoolVar(&claude, "claude", false, verb+" the agent's SessionStart and Stop hooks in .claude/settings.json")
	}
	install := &cobra.Command{
		Use:   "install",
		Short: "Install the git hooks (and with --claude the agent's hooks); existing hooks are chained, installing twice changes nothing",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.hooksApply("install", gitFlag, claude, func(root string) (hooks.Status, error) {
				return hooks.Install(root, hooks.Options{Binary: learnwatchBinary()})
			}, func(root string) (hooks.ClaudeStatus, error) {
				return hooks.InstallClaude(root, learnwatchBinary())
			})
		},
	}
	flags(install, "install")
	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Remove learnwatch's git hooks, putting back the hooks they chained (and with --claude the agent's hooks)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			return a.hooksApply("uninstall", gitFlag, claude, hooks.Uninstall, hooks.UninstallClaude)
		},
	}
	flags(uninstall, "remove")
	status := &cobra.Command{
		Use:   "status",
		Short: "Show which hooks are learnwatch's, chained, someone else's or missing",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, err := a.root()
			if err != nil {
				return err
			}
			st := hooksStatus{verb: "status"}
			if g, err := hooks.Check(root); err != nil {
				st.GitError = err.Error()
			} else {
				st.Git = &g
			}
			cs, err := hooks.CheckClaude(root)
			if err != nil {
				return hooksErr(err)
			}
			st.Claude = &cs
			return a.emit(st, func(w io.Writer) { printHooksStatus(w, st) })
		},
	}
	c.AddCommand(install, uninstall, status)
	return c
}

// hooksApply runs the git part and/or the agent part of install/uninstall
// and prints the resulting status.
func (a *app) hooksApply(verb string, gitFlag, claude bool, git func(string) (hooks.Status, error), agent func(string) (hooks.ClaudeStatus, error)) error {
	if !gitFlag && !claude {
		return exitcode.Bad("nothing to do: --git=false without --claude")
	}
	root, err := a.root()
	if err != nil {
		return err
	}
	st := hooksStatus{verb: verb}
	if gitFlag {
		g, err := git(root)
		if err != nil {
			return hooksErr(err)
		}
		st.Git = &g
	}
	if claude {
		cs, err := agent(root)
		if err != nil {
			return hooksErr(err)
		}
		st.Claude = &cs
	}
	return a.emit(st, func(w io.Writer) { printHooksStatus(w, st) })
}

// hooksErr maps the hooks package's errors to exit codes: a file or
// repository learnwatch cannot work with is bad input (2), the rest I/O (3).
func hooksErr(err error) error {
	var fe *hooks.FileError
	if errors.As(err, &fe) || errors.Is(err, hooks.ErrNotRepo) || errors.Is(err, hooks.ErrConflict) {
		return exitcode.Wrap(exitcode.BadInput, err)
	}
	return err
}

// printHooksStatus prints what install, uninstall or status found or did,
// each in its own words: install says "installed" or "already installed",
// uninstall "removed" or "was not installed", status the state.
func printHooksStatus(w io.Writer, st hooksStatus) {
	if st.GitError != "" {
		fmt.Fprintf(w, "git hooks: %s\n", st.GitError)
	}
	if st.Git != nil {
		fmt.Fprintf(w, "git hooks in %s\n", st.Git.Dir)
		for _, h := range st.Git.Hooks {
			note := ""
			switch h.State {
			case hooks.OursChained:
				note = " (runs " + filepath.Base(h.Chained) + " first)"
				if h.ChainedFramework {
					note = " (runs the pre-commit framework's hook first, then learnwatch's check)"
				}
			case hooks.Foreign:
				note = " (not learnwatch's; left alone)"
			}
			fmt.Fprintf(w, "  %-14s %s%s\n", h.Name, hookWord(st.verb, h), note)
		}
		if d := st.Git.Drivers; d != nil {
			printDrivers(w, st.verb, *d)
		}
		if x := st.Git.Excluded; len(x) > 0 {
			fmt.Fprintf(w, "added to .git/info/exclude (local to this checkout; git add -A would have committed them): %s\n", strings.Join(x, " "))
		}
		if u := st.Git.Unignored; len(u) > 0 {
			fmt.Fprintf(w, "not in .gitignore, though local to this checkout (git add -A would commit them): %s\n  learnwatch init appends them to .gitignore\n", strings.Join(u, " "))
		}
	}
	if c := st.Claude; c != nil {
		word := func(present bool) string {
			switch {
			case st.verb == "uninstall" && !present && c.Changed:
				return "removed"
			case st.verb == "uninstall" && !present:
				return "was not installed"
			case st.verb == "install" && present && !c.Changed:
				return "already installed"
			case present:
				return "installed"
			}
			return "not installed"
		}
		fmt.Fprintf(w, "agent hooks in %s\n", c.Settings)
		fmt.Fprintf(w, "  %-14s %s\n", "SessionStart", word(c.SessionStart))
		fmt.Fprintf(w, "  %-14s %s\n", "Stop", word(c.Stop))
		if c.Command != "" && (c.SessionStart || c.Stop) {
			fmt.Fprintf(w, "  they run %s (an absolute path: the agent may start hooks with a minimal PATH)\n", c.Command)
		}
	}
}

// hookWord is one git hook's state in the words of the command that ran.
func hookWord(verb string, h hooks.Hook) string {
	ours := h.State == hooks.Ours || h.State == hooks.OursChained
	switch {
	case verb == "install" && ours && h.Changed:
		return "installed"
	case verb == "install" && ours:
		return "already installed"
	case verb == "uninstall" && h.Changed:
		return "removed"
	case verb == "uninstall" && h.State == hooks.Missing:
		return "was not installed"
	case h.State == hooks.Missing:
		return "not installed"
	}
	return string(h.State)
}

// learnwatchBinary is the absolute path the git hooks call: this binary
// when it is installed as learnwatch, else learnwatch on PATH, else "" (the
// hooks then look it up on PATH when they run).
func learnwatchBinary() string {
	if exe, err := os.Executable(); err == nil && filepath.Base(exe) == "learnwatch" &&
		!strings.Contains(exe, string(filepath.Separator)+"go-build") { // not `go run`'s temporary binary
		return exe
	}
	if p, err := exec.LookPath("learnwatch"); err == nil {
		if abs, err := filepath.Abs(p); err == nil {
			return abs
		}
	}
	return ""
}

// citeResult is the --json output of cite. Queued and Item are set when
// the learning lock stayed busy and the counts were queued in the inbox.
type citeResult struct {
	Queued bool           `json:"queued,omitempty"`
	Item   string         `json:"item,omitempty"`
	Cited  map[string]int `json:"cited"`
	Total  int            `json:"total"`
}

func newCiteCmd(a *app) *cobra.Command {
	var transcript, session string
	c := &cobra.Command{
		Use:   "cite",
		Short: "Count ADR-NNN/PF-NNN citations in a transcript (a file, or stdin) into .memory/.knowledge-usage.json",
		Long: `cite counts the knowledge IDs the assistant cited in a session transcript
and adds them to .memory/.knowledge-usage.json (cites, last_cited).

In the agent's JSONL transcript only text the assistant wrote counts, once per
message; any other line counts as plain text. With --transcript the part of
the file already counted (for --session, or for that file) is skipped, so
running cite again only counts what was added since. Input on stdin is
counted in full every time.

When the learning lock stays busy for lock.queue_after (another tool is
writing), the counts are queued in .memory/inbox (exit 0, {"queued":true,…}
with --json) and the next pass that takes the lock adds them, once.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if session != "" && transcript == "" {
				return exitcode.Bad("--session needs --transcript")
			}
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			timeout := queueWait(cfg).Lock.Timeout.Duration
			var rec hooks.Recorded
			if transcript != "" {
				if fi, err := os.Stat(transcript); err != nil || fi.IsDir() {
					return exitcode.Bad("--transcript %s: not a readable file", transcript)
				}
				rec, err = hooks.RecordTranscript(a.ctx, root, session, transcript, now(), timeout, false)
				if err != nil {
					return hooksErr(err)
				}
			} else {
				counts, err := hooks.Citations(a.stdin)
				if err != nil {
					return err
				}
				rec, err = hooks.RecordCitations(a.ctx, root, counts, now(), timeout)
				if err != nil {
					return hooksErr(err)
				}
			}
			counts := rec.Counts
			res := citeResult{Cited: counts, Queued: rec.Queued != "", Item: rec.Queued}
			for _, n := range counts {
				res.Total += n
			}
			return a.emit(res, func(w io.Writer) {
				if res.Queued {
					fmt.Fprintf(w, "cite: queued %d citation(s) as %s in .memory/inbox (the learning lock is busy); the next reconcile, render or observe adds them\n", res.Total, res.Item)
					return
				}
				if res.Total == 0 {
					fmt.Fprintln(w, "no citations")
					return
				}
				ids := slices.Sorted(maps.Keys(counts))
				parts := make([]string, len(ids))
				for i, id := range ids {
					parts[i] = fmt.Sprintf("%s×%d", id, counts[id])
				}
				fmt.Fprintf(w, "recorded %d citations: %s\n", res.Total, strings.Join(parts, ", "))
			})
		},
	}
	c.Flags().StringVar(&transcript, "transcript", "", "transcript file (default: read stdin)")
	c.Flags().StringVar(&session, "session", "", "session ID to remember the scan position under (default: the transcript's path)")
	return c
}

// newStopHook is `learnwatch hook stop`, the agent's Stop hook: it scans
// the session's transcript for citations (queued in the inbox when the
// learning lock stays busy). It prints nothing on stdout and always exits 0.
func newStopHook(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "stop",
		Short: "Agent Stop hook: count the knowledge cited in the session transcript (always exits 0)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(*cobra.Command, []string) error {
			failOpen(a, "hook stop", deadline.Default, func() error {
				if stdinIsTerminal(a.stdin) {
					return errors.New("expects the agent's Stop hook JSON on stdin; nothing recorded")
				}
				in, err := hooks.ParseStop(a.stdin)
				if err != nil {
					return fmt.Errorf("%v; nothing recorded", err)
				}
				if in.TranscriptPath == "" {
					return errors.New("no transcript_path in the hook input; nothing recorded")
				}
				root, err := a.hookRoot(in.Cwd)
				if err != nil {
					return err
				}
				if fi, err := os.Stat(filepath.Join(root, ".memory")); err != nil || !fi.IsDir() {
					a.log.Debug("no .memory directory; citations not recorded", "root", root)
					return nil
				}
				tr := in.TranscriptPath
				if !filepath.IsAbs(tr) && in.Cwd != "" {
					tr = filepath.Join(in.Cwd, tr)
				}
				// Wait lock.queue_after at most, then queue the stretch read.
				wait := queueWait(a.hookConfig(root)).Lock.Timeout.Duration
				rec, err := hooks.RecordTranscript(a.ctx, root, in.SessionID, tr, now(), wait, true)
				if err != nil {
					return err
				}
				a.log.Debug("citations recorded", "root", root, "session", in.SessionID, "counts", rec.Counts, "queued", rec.Queued)
				return nil
			})
			return nil
		},
	}
}
