package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/scaffold"
)

// initResult is the --json output of init.
type initResult struct {
	scaffold.Result
	Hooks *hooksStatus `json:"hooks,omitempty"`
	Next  []string     `json:"next"`
}

func newInitCmd(a *app) *cobra.Command {
	var withHooks, claude bool
	c := &cobra.Command{
		Use:   "init",
		Short: "Set up this repository: the memory layout, a commented config, .gitignore lines, optionally the hooks",
		Long: `init prepares the repository for learnwatch. It creates .memory/ and
.memory/knowledge/, writes .memory/learnwatch.yaml with every setting and its
default commented out, and appends to .gitignore the files that are local to
one checkout (locks, the watcher's pid, backups, temp files) unless a rule
already covers them. --hooks installs the git hooks, --claude the agent's
SessionStart and Stop hooks. Running it again changes nothing.`,
		Example: `  learnwatch init                   # layout, config, .gitignore
  learnwatch init --hooks --claude  # and the git and agent hooks
  learnwatch init --json            # {"created":[…],"gitignore":[…],"next":[…]}`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, err := a.root()
			if err != nil {
				return err
			}
			res, err := scaffold.Apply(root)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, fmt.Errorf("init: %w", err))
			}
			out := initResult{Result: res}
			if res.Created == nil {
				out.Created = []string{}
			}
			if withHooks || claude {
				st := hooksStatus{verb: "install"}
				if withHooks {
					g, err := hooks.Install(root, hooks.Options{Binary: learnwatchBinary()})
					if err != nil {
						return hooksErr(err)
					}
					st.Git = &g
				}
				if claude {
					cs, err := hooks.InstallClaude(root, learnwatchBinary())
					if err != nil {
						return hooksErr(err)
					}
					st.Claude = &cs
				}
				out.Hooks = &st
			}
			out.Next = nextSteps(withHooks, claude)
			return a.emit(out, func(w io.Writer) { printInit(w, out) })
		},
	}
	c.Flags().BoolVar(&withHooks, "hooks", false, "also install the git hooks (pre-commit, post-checkout, post-merge)")
	c.Flags().BoolVar(&claude, "claude", false, "also install the agent's SessionStart and Stop hooks in .claude/settings.json")
	return c
}

// nextSteps are the three things to do after init, given what it installed.
func nextSteps(withHooks, claude bool) []string {
	var next []string
	switch {
	case !withHooks && !claude:
		next = append(next, "install the hooks: learnwatch hooks install --claude  (git hooks + the agent's session hooks)")
	case !withHooks:
		next = append(next, "install the git hooks: learnwatch hooks install  (pre-commit staleness check, post-checkout reconcile)")
	case !claude:
		next = append(next, "install the agent's hooks: learnwatch hooks install --claude  (the ranked index at every session start)")
	default:
		next = append(next, "start a new agent session: its SessionStart hook now reconciles and hands it the knowledge index")
	}
	next = append(next,
		`feed observations from your extractor: echo '{"id":"obs_x","type":"workflow","pattern":"…","evidence":["…"]}' | learnwatch observe`,
		"commit the setup (git add .gitignore .memory/learnwatch.yaml), then see what it knows: learnwatch status",
	)
	return next
}

func printInit(w io.Writer, out initResult) {
	if len(out.Created) == 0 && len(out.Gitignore) == 0 {
		fmt.Fprintln(w, "init: already set up, nothing to change")
	}
	for _, p := range out.Created {
		fmt.Fprintf(w, "created   %s\n", p)
	}
	if len(out.Gitignore) > 0 {
		fmt.Fprintf(w, "appended  .gitignore: %s\n", strings.Join(out.Gitignore, " "))
	}
	if out.Hooks != nil {
		printHooksStatus(w, *out.Hooks)
	}
	fmt.Fprintln(w, "\nNext:")
	for i, s := range out.Next {
		fmt.Fprintf(w, "  %d. %s\n", i+1, s)
	}
}
