package main

import (
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/watch"
)

func newWatchCmd(a *app) *cobra.Command {
	var opts watch.Options
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Reconcile continuously: react to deleted and edited artifacts as they happen",
		Long: `watch runs until SIGINT or SIGTERM, reconciling the moment a rendered
artifact, a knowledge file, the learning log or the manifest changes. A burst
of events (a git checkout, an editor's save) becomes one reconcile after the
debounce window; a steady stream is reconciled at least every --max-delay.

One watcher runs per repository: a second one exits 3 naming the pid of the
first (.memory/.watch.pid). SIGTERM/SIGINT finish the reconcile in flight and
exit 0; SIGHUP re-reads .memory/learnwatch.yaml. Logs are structured (slog)
on stderr: info level, debug with -v, --log-format json for machines. The
watcher's counters are in .memory/.watch-state.json (learnwatch status).

Settings (.memory/learnwatch.yaml): watch.debounce (200ms), watch.max_delay
(2s), watch.render (false: also render ready observations), watch.rescan
(30s: full reconciles, only while the inotify limits keep directories
unwatched), lock.timeout (10s).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if a.jsonOut {
				return exitcode.Bad("watch prints no result object; for machine-readable logs use --log-format json")
			}
			root, _, err := a.setup() // bad YAML is bad input before the watcher starts
			if err != nil {
				return err
			}
			for name, d := range map[string]float64{"--debounce": opts.Debounce.Seconds(), "--max-delay": opts.MaxDelay.Seconds(),
				"--poll": opts.Poll.Seconds(), "--grace": opts.Grace.Seconds()} {
				if d < 0 {
					return exitcode.Bad("%s must not be negative", name)
				}
				// A watcher started in the wrong directory must not
				// create a memory there.
				if fi, err := os.Lstat(filepath.Join(root, ".memory")); err != nil || !fi.IsDir() {
					return exitcode.Bad("%s has no .memory/ directory: run learnwatch init there first, or pass --root (watch creates nothing)", root)
				}
			}
			opts.Log = watchLogger(a)
			// Like `learnwatch reconcile` (the watcher's engine runs the
			// staleness pass and the policy refresh): the deletion/edit
			// signals go into the feedback journal (kept artifacts count
			// once per session, not per watcher reconcile).
			opts.Feedback = true

			hup := make(chan os.Signal, 1)
			signal.Notify(hup, syscall.SIGHUP)
			defer signal.Stop(hup)
			reload := make(chan struct{}, 1)
			done := make(chan struct{})
			defer close(done)
			go func() {
				for {
					select {
					case <-hup:
						select {
						case reload <- struct{}{}:
						default: // one reload pending is enough
						}
					case <-done:
						return
					}
				}
			}()
			opts.Reload = reload

			// A second watcher (*watch.RunningError), or one that
			// cannot take .memory/.watch.pid: exit 3.
			return exitcode.Wrap(exitcode.IO, watch.Run(a.ctx, root, opts))
		},
	}
	f := cmd.Flags()
	f.DurationVar(&opts.Debounce, "debounce", 0, "quiet time after the last event before reconciling (default: watch.debounce, 200ms)")
	f.DurationVar(&opts.MaxDelay, "max-delay", 0, "longest a stream of events may postpone a reconcile (default: watch.max_delay, 2s)")
	f.DurationVar(&opts.Grace, "grace", 0, "how long an artifact must stay missing before it counts as deleted (default: watch.grace, 2s)")
	f.DurationVar(&opts.Poll, "poll", 0, "also reconcile every D, for file systems whose changes inotify does not see (default off)")
	return cmd

}

// watchLogger is the daemon's logger: like the root's (stderr,
// --log-format), but at info level, since a long-running process should
// say what it does; -v adds debug.
func watchLogger(a *app) *slog.Logger {
	opts := &slog.HandlerOptions{Level: slog.LevelInfo}
	if a.verbose {
		opts.Level = slog.LevelDebug
	}
	if a.logFormat == "json" {
		return slog.New(slog.NewJSONHandler(a.stderr, opts))
	}
	return slog.New(slog.NewTextHandler(a.stderr, opts))
}
