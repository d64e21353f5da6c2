// Command learnwatch reconciles a repository's self-learning memory. This
// package only parses flags, wires the packages together and prints; see
// README.md for the commands.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
	"github.com/learnwatch/learnwatch/textsafe"
)

// app is the state shared by every command: global flags and I/O.
type app struct {
	rootFlag  string
	jsonOut   bool
	logFormat string
	verbose   bool
	quiet     bool
	// cmdPath is the running command ("learnwatch observe"), for messages.
	cmdPath string

	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	log    *slog.Logger
	ctx    context.Context

	// engines holds the engine of each root this command works on.
	engines map[string]*engine.Engine
}

// commands lists the subcommands of learnwatch, built explicitly (no
// package-level registration in init): a new command file adds its
// constructor here.
func commands() []func(a *app) *cobra.Command {
	return []func(a *app) *cobra.Command{
		newObserveCmd, newRenderCmd, newReconcileCmd, newIndexCmd,
		newDemoCmd,
		newHookCmd, newHooksCmd, newCiteCmd,
		newInitCmd,
		newOutcomeCmd, newVerdictCmd, newPromoteCmd, newDeprecateCmd, newApproveCmd, newPolicyCmd, newReportCmd, newCompactCmd,
		newStatusCmd, newListCmd, newReviewCmd, newPurgeCmd, newClearCmd, newHudCmd,
		newMergeDriverCmd,
		newStaleCmd,
		newVersionCmd,
		newWatchCmd,
		newRestoreCmd, newResolveCmd, newEditCmd,
	}
}

// hookSubcommands lists the subcommands of `learnwatch hook`.
func hookSubcommands() []func(a *app) *cobra.Command {
	return []func(a *app) *cobra.Command{
		newSessionStartHook, newReconcileHook("post-checkout"), newReconcileHook("post-merge"),
		newStopHook,
		newPostRewriteHook,
		newPreCommitHook,
	}
}

func main() {
	// LEARNWATCH_CPUPROFILE=file writes a CPU profile of the whole command
	// (go tool pprof file), for the figures' slow rows.
	if path := os.Getenv("LEARNWATCH_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil && pprof.StartCPUProfile(f) == nil {
			code := run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
	}
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Everything printed passes the terminal filter: repository text can
	// carry escape sequences and invisible characters (textsafe).
	stdout, stderr = textsafe.NewWriter(stdout), textsafe.NewWriter(stderr)
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, ctx: ctx}
	root := newRootCmd(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
	}
	code := exitcode.Of(err)
	if errors.Is(err, manifest.ErrCorruptManifest) || errors.Is(err, manifest.ErrCorruptUsage) {
		code = exitcode.BadInput // a file that does not parse is bad input
	}
	if code == exitcode.IO && (safefs.IsRefused(err) || manifest.IsRefused(err)) {
		code = exitcode.BadInput // a refused path (symlink, special file, too big) is bad input
	}
	var silent *silentError
	if !errors.As(err, &silent) {
		if a.logFormat == "json" {
			// --log-format json covers the final error too: a machine
			// reading stderr gets one JSON object a line throughout.
			slog.New(slog.NewJSONHandler(stderr, nil)).Error(textsafe.Line(err.Error(), 2000), "exit", code)
		} else {
			// One line, bounded: an error may quote repository content.
			fmt.Fprintf(stderr, "learnwatch: %s\n", textsafe.Line(err.Error(), 2000))
		}
	}
	return code
}

// silentError exits with a code without printing (the command already said
// what it had to say).
type silentError struct{ code int }

func (e *silentError) Error() string { return fmt.Sprintf("exit %d", e.code) }

func exitSilently(code int) error {
	return &exitcode.Error{Code: code, Err: &silentError{code: code}}
}

func newRootCmd(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "learnwatch",
		Short: "Reconcile a repository's self-learning memory",
		Long: `learnwatch keeps .memory/ (the learning log, the manifest of rendered
artifacts and the ADR/PF knowledge files) consistent with the files people
actually keep, and turns deletions and edits into learning signal.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			a.ctx = cmd.Context()
			a.cmdPath = cmd.CommandPath()
			var h slog.Handler
			opts := &slog.HandlerOptions{Level: slog.LevelWarn}
			if a.verbose && a.quiet {
				return exitcode.Bad("-v and -q contradict each other")
			}
			if a.verbose {
				opts.Level = slog.LevelDebug
			}
			if a.quiet {
				opts.Level = slog.LevelError
			}
			switch a.logFormat {
			case "json":
				h = slog.NewJSONHandler(a.stderr, opts)
			case "text", "":
				h = slog.NewTextHandler(a.stderr, opts)
			default:
				return exitcode.Bad("--log-format must be text or json, not %q", a.logFormat)
			}
			a.log = slog.New(h)
			return nil
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return exitcode.Wrap(exitcode.BadInput, err)
	})
	pf := root.PersistentFlags()
	pf.StringVar(&a.rootFlag, "root", "", "repository root (default: the git worktree containing the current directory)")
	pf.BoolVar(&a.jsonOut, "json", false, "print one JSON object on stdout")
	pf.StringVar(&a.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.BoolVarP(&a.verbose, "verbose", "v", false, "debug logging on stderr")
	pf.BoolVarP(&a.quiet, "quiet", "q", false, "print only errors (and the --json object): for hooks and scripts")
	for _, f := range commands() {
		root.AddCommand(f(a))
	}
	applyHelp(root)
	root.Version = versionString()
	root.SetVersionTemplate("learnwatch {{.Version}}\n")
	usageErrorsAreBadInput(root)
	return root
}

// usageErrorsAreBadInput makes every way of calling a command wrongly exit 2:
// a wrong number of arguments, an unknown command, and a misspelt
// subcommand of a command that only groups others (cobra would print the
// group's help and exit 0).
func usageErrorsAreBadInput(c *cobra.Command) {
	if args := c.Args; args != nil {
		c.Args = func(cmd *cobra.Command, a []string) error {
			return exitcode.Wrap(exitcode.BadInput, args(cmd, a))
		}
	}
	if c.HasSubCommands() && c.Run == nil && c.RunE == nil {
		c.Args = cobra.ArbitraryArgs
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			if !cmd.HasParent() {
				return exitcode.Bad("unknown command %q; run 'learnwatch --help' for the list", args[0])
			}
			return exitcode.Bad("unknown subcommand %q for %q; run '%s --help' for the list", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
	}
	for _, sub := range c.Commands() {
		usageErrorsAreBadInput(sub)
	}
}

// root returns the repository root: --root, else the nearest directory
// upwards holding .git, else the current directory.
func (a *app) root() (string, error) {
	if a.rootFlag != "" {
		abs, err := filepath.Abs(a.rootFlag)
		if err != nil {
			return "", exitcode.Bad("--root %s: %v", a.rootFlag, err)
		}
		fi, err := os.Stat(abs)
		if errors.Is(err, os.ErrNotExist) {
			return "", exitcode.Bad("no such directory: %s", a.rootFlag)
		}
		if err != nil {
			return "", exitcode.Bad("--root %s: %v", a.rootFlag, err)
		}
		if !fi.IsDir() {
			return "", exitcode.Bad("--root %s: not a directory", a.rootFlag)
		}
		return abs, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return findRoot(wd), nil
}

// findRoot walks up from dir to the nearest directory holding .git.
func findRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// config loads .memory/learnwatch.yaml of the root (bad YAML is bad input).
func (a *app) config(root string) (config.Config, error) {
	c, err := config.Load(root)
	if err != nil {
		return c, exitcode.Wrap(exitcode.BadInput, err)
	}
	a.warnConfig(c)
	return c, nil
}

// warnConfig prints the settings Load clamped to their safe range.
func (a *app) warnConfig(c config.Config) {
	for _, w := range c.Warnings {
		fmt.Fprintf(a.stderr, "learnwatch: %s\n", w)
	}
}

// emit prints v as one JSON object with --json, else calls human.
func (a *app) emit(v any, human func(w io.Writer)) error {
	if a.quiet && !a.jsonOut {
		return nil
	}
	if a.jsonOut {
		enc := json.NewEncoder(a.stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(v)
	}
	human(a.stdout)
	return nil
}
