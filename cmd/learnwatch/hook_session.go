package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/deadline"
	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/textsafe"
)

// failOpen runs f under the hook's deadline (def, or $LEARNWATCH_HOOK_TIMEOUT),
// turning any error or panic into one line on stderr: hook entry points
// never block the agent or git because learnwatch broke or was given a
// repository crafted to be slow. f sees the deadline (and SIGTERM/SIGINT)
// through a.ctx. When the deadline passes or a signal arrives first, one
// line says so, the output f may still write is discarded, and failOpen
// returns false at once; the caller returns and the process exits 0,
// abandoning f (writes are atomic; a lock left behind names a dead owner
// and is taken over). finished reports whether f ran to its end; only
// then may the caller read what f set.
func failOpen(a *app, name string, def time.Duration, f func() error) (finished bool) {
	d, warn := deadline.FromEnv(getenv(deadline.EnvVar), def)
	if warn != "" {
		fmt.Fprintf(a.stderr, "learnwatch %s: %s\n", name, warn)
	}
	finished, err := deadline.Run(a.ctx, d, func(ctx context.Context) error {
		a.ctx = ctx
		failpoint.Hang("hook:" + strings.TrimPrefix(name, "hook "))
		return f()
	})
	if !finished {
		closeOutput(a.stdout)
		why := fmt.Sprintf("gave up after %s (the hook deadline; %s sets it)", d, deadline.EnvVar)
		if !errors.Is(err, deadline.ErrExpired) {
			why = "stopped by a signal"
		}
		fmt.Fprintf(a.stderr, "learnwatch %s: %s; nothing more done (ignored)\n", name, why)
		closeOutput(a.stderr)
		return false
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "learnwatch %s: %s (ignored)\n", name, textsafe.Line(err.Error(), 2000))
	}
	return true
}

// closeOutput discards whatever is written to w from now on (a
// textsafe.Writer), once a write in progress is done.
func closeOutput(w io.Writer) {
	if c, ok := w.(io.Closer); ok {
		c.Close()
	}
}

// stdinIsTerminal reports whether stdin is an interactive terminal (a human
// running the hook by hand), which must not be read. Asked of the terminal
// driver (golang.org/x/term): a character device is not one, and
// `learnwatch observe </dev/null` (a script, a CI job) was told to pipe
// its input in instead of that there was none.
func stdinIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// hookRoot returns the repository root for a hook: --root, else the
// repository containing dir (the agent's cwd), else the current directory.
func (a *app) hookRoot(dir string) (string, error) {
	if a.rootFlag != "" || dir == "" {
		return a.root()
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return a.root()
	}
	return findRoot(dir), nil
}

// hookConfig loads the config for a hook; a bad config falls back to the
// defaults with a warning rather than failing the hook.
func (a *app) hookConfig(root string) config.Config {
	cfg, err := config.Load(root)
	if err != nil {
		fmt.Fprintf(a.stderr, "learnwatch: %s (using defaults)\n", textsafe.Line(err.Error(), 2000))
		cfg = config.Default()
	}
	a.warnConfig(cfg)
	// A hook waits at most lock.hook_timeout for another writer: an agent
	// session must not stall on the lock.
	if cfg.Lock.Timeout.Duration > cfg.Lock.HookTimeout.Duration {
		cfg.Lock.Timeout.Duration = cfg.Lock.HookTimeout.Duration
	}
	return cfg
}

func newSessionStartHook(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "session-start",
		Short: "Agent SessionStart hook: reconcile, then print the knowledge index as additionalContext (always exits 0)",
		Args:  cobra.ArbitraryArgs,
		RunE: func(*cobra.Command, []string) error {
			failOpen(a, "hook session-start", deadline.Default, func() error {
				var in hooks.SessionStart
				if !stdinIsTerminal(a.stdin) {
					var err error
					in, err = hooks.ParseSessionStart(a.stdin)
					if err != nil {
						fmt.Fprintf(a.stderr, "learnwatch hook session-start: %v; using the current directory\n", err)
					}
				}
				root, err := a.hookRoot(in.Cwd)
				if err != nil {
					return err
				}
				if _, err := os.Stat(manifest.PathsFor(root).Memory); err != nil {
					// No memory in this repository: nothing to add to the
					// agent's context.
					return nil
				}
				cfg := a.hookConfig(root)
				// The index ranks with the log the reconcile left, when it
				// wrote it: no second parse of the file.
				res, err := reconcileSession(a, root, cfg)
				log := res.Log
				if err != nil {
					// The index is still worth giving: say why the
					// reconcile was skipped and go on.
					fmt.Fprintf(a.stderr, "learnwatch hook session-start: reconcile skipped: %s\n", textsafe.Line(err.Error(), 2000))
					log = nil // what is on disk, not what failed to be written
				}
				ix, err := buildIndex(a, root, cfg, cfg.Index.Budget, log)
				if err != nil {
					return err
				}
				out := map[string]any{"hookSpecificOutput": map[string]string{
					"hookEventName":     "SessionStart",
					"additionalContext": ix.Text,
				}}
				if hint := heal.UndoHint(res); hint != "" {
					// Shown to the person, not the agent: a clean-up that
					// took many artifacts at once is penalised like any
					// deletion, and this is the moment to undo it.
					out["systemMessage"] = "learnwatch: " + hint
				}
				b, err := json.Marshal(out)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.stdout, "%s\n", b)
				return err
			})
			return nil
		},
	}
}

// newReconcileHook is a git hook (post-checkout, post-merge) that runs a
// quiet reconcile and always exits 0.
func newReconcileHook(name string) func(a *app) *cobra.Command {
	return func(a *app) *cobra.Command {
		return &cobra.Command{
			Use:   name,
			Short: "git " + name + " hook: reconcile after the working tree changed (always exits 0)",
			Args:  cobra.ArbitraryArgs,
			RunE: func(*cobra.Command, []string) error {
				failOpen(a, "hook "+name, deadline.Default, func() error {
					root, err := a.root()
					if err != nil {
						return err
					}
					res, err := reconcileAfterGit(a, root, a.hookConfig(root), name == "post-checkout")
					if errors.Is(err, engine.ErrGitBusy) {
						// A rebase checks out commits on its way; writing
						// to tracked files then would stop it. post-rewrite
						// reconciles when it has finished.
						a.log.Debug("pass held: post-rewrite reconciles when a rebase ends", "hook", name, "why", err.Error())
						return nil
					}
					defer printRenumbered(a, root) // after a merge, rebase or cherry-pick (mergedriver.go)
					if err != nil {
						return err
					}
					// Quiet unless a person's deletion was penalised, a
					// penalty reversed or an entry healed.
					if res.Deletions+res.Restored+res.Healed > 0 {
						fmt.Fprintf(a.stderr, "learnwatch: %s\n", res.Summary())
					}
					return nil
				})
				return nil
			},
		}
	}
}
