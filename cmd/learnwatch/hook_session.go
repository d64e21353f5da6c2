package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/manifest"
)

func init() {
	hookSubcommands = append(hookSubcommands, newSessionStartHook, newReconcileHook("post-checkout"), newReconcileHook("post-merge"))
}

// failOpen runs f, turning any error or panic into one line on stderr and
// exit 0: hook entry points never block the agent or git because learnwatch
// broke.
func failOpen(a *app, name string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(a.stderr, "learnwatch %s: internal error (ignored): %v\n", name, r)
			err = nil
		}
	}()
	if e := f(); e != nil {
		fmt.Fprintf(a.stderr, "learnwatch %s: %s (ignored)\n", name, strings.ReplaceAll(e.Error(), "\n", " "))
	}
	return nil
}

// stdinIsTerminal reports whether stdin is an interactive terminal (a human
// running the hook by hand), which must not be read.
func stdinIsTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
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
		fmt.Fprintf(a.stderr, "learnwatch: %v (using defaults)\n", err)
		cfg = config.Default()
	}
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
			return failOpen(a, "hook session-start", func() error {
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
				res, err := reconcile(a, root, cfg, true)
				log := res.Log
				if err != nil {
					// The index is still worth giving: say why the
					// reconcile was skipped and go on.
					fmt.Fprintf(a.stderr, "learnwatch hook session-start: reconcile skipped: %v\n", err)
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
				b, err := json.Marshal(out)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(a.stdout, "%s\n", b)
				return err
			})
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
				return failOpen(a, "hook "+name, func() error {
					root, err := a.root()
					if err != nil {
						return err
					}
					res, err := reconcile(a, root, a.hookConfig(root), false)
					if err != nil {
						return err
					}
					if res.Deletions+res.Edits+res.Healed+res.Stale > 0 {
						fmt.Fprintf(a.stderr, "learnwatch: %s\n", res.Summary())
					}
					return nil
				})
			},
		}
	}
}
