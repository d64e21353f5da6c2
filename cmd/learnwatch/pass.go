package main

import (
	"fmt"
	"os"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/watch"
)

// Every pass runs through package engine; the functions here only open it
// with the command's root, config and clock and print what it reports.

var getenv = os.Getenv

// engine opens the memory of root for a pass.
//
// One engine per root for the whole command: the session-start hook's
// reconcile and its index share it, so the ranking reuses the feedback fold
// the reconcile's policy refresh made (the journal is folded once) and the
// stat cache is loaded once. The first caller's configuration is the
// engine's.
func (a *app) engine(root string, cfg config.Config) *engine.Engine {
	if e, ok := a.engines[root]; ok {
		return e
	}
	e := engine.New(root, cfg, a.log)
	if a.engines == nil {
		a.engines = map[string]*engine.Engine{}
	}
	a.engines[root] = e
	return e
}

// anyEngine is the engine of root for calls that read no configuration
// (the policy file): the command's engine when it has one, else a
// throwaway one — never cached, so the engine a later pass gets carries
// the command's real configuration, not the defaults.
func (a *app) anyEngine(root string) *engine.Engine {
	if e, ok := a.engines[root]; ok {
		return e
	}
	return engine.New(root, config.Default(), a.log)
}

// warn prints warnings a pass returned, one line each.
func (a *app) warn(warnings []string) {
	for _, w := range warnings {
		fmt.Fprintf(a.stderr, "learnwatch: %s\n", w)
	}
}

// reconcile runs one engine pass. session marks the once-per-session pass
// (session-start hook), the only one that records kept artifacts as
// helpful feedback.
func reconcile(a *app, root string, cfg config.Config, session bool) (heal.Result, error) {
	return runPass(a, root, cfg, engine.Pass{Session: session})
}

// reconcileSession is the session-start hook's pass, which may run while
// git is in the middle of an operation: it then does not run
// (engine.ErrGitBusy).
func reconcileSession(a *app, root string, cfg config.Config) (heal.Result, error) {
	return runPass(a, root, cfg, engine.Pass{Session: true, WaitForGit: true})
}

// reconcileAfterGit is the pass of a git hook after git changed the
// worktree: not run when only git's own state moved (engine.Pass.AfterGit).
// With wait (post-checkout, which runs during a rebase too) it does not
// run while git is in the middle of an operation; post-merge and
// post-rewrite run when theirs has ended (though git may not have removed
// MERGE_HEAD yet).
func reconcileAfterGit(a *app, root string, cfg config.Config, wait bool) (heal.Result, error) {
	return runPass(a, root, cfg, engine.Pass{WaitForGit: wait, AfterGit: true})
}

// reconcileExplicit is the reconcile command's: a person asked for it, so
// the staleness marks are written even into a log git tracks.
func reconcileExplicit(a *app, root string, cfg config.Config) (heal.Result, error) {
	return runPass(a, root, cfg, engine.Pass{MarkTracked: true})
}

func runPass(a *app, root string, cfg config.Config, p engine.Pass) (heal.Result, error) {
	p.Now = now()
	rep, err := a.engine(root, cfg).Reconcile(a.ctx, p)
	a.reportDrain(rep.Inbox)
	if err != nil {
		return rep.Result, err
	}
	a.warn(rep.Warnings)
	return rep.Result, nil
}

// buildIndex builds the ranked session index; log is the learning log when
// the caller has it in memory, else nil.
func buildIndex(a *app, root string, cfg config.Config, budget int, log *manifest.Log) (index.Result, error) {
	return buildIndexFor(a, root, cfg, budget, log, "")
}

// buildIndexFor is buildIndex for a consumer role.
func buildIndexFor(a *app, root string, cfg config.Config, budget int, log *manifest.Log, role string) (index.Result, error) {
	res, warn, err := a.engine(root, cfg).Index(engine.IndexOptions{Now: now(), Budget: budget, Role: role, Log: log})
	a.warn(warn)
	return res, err
}

// policy reads the policy overlays, printing a broken file's warning.
func (a *app) policy(root string) learn.Policy {
	p, warn := a.anyEngine(root).Policy()
	a.warn(warn)
	return p
}

// candidates lists the entries the learning engine can name (the knowledge
// files' ADR/PF sections and the log's observations): used to give cited
// entries their type, to match validator false positives and to label
// reports. An error is a warning and no candidates (types then come from
// the entry ids).
func (a *app) candidates(root string) []learn.Candidate {
	cfg, err := config.Load(root)
	if err != nil {
		cfg = config.Default()
	}
	c, err := a.engine(root, cfg).Candidates()
	if err != nil {
		a.log.Warn("could not list knowledge entries; types come from entry ids", "err", err)
	}
	return c
}

// watcherStatus describes the watcher of root from its state file, nil
// when none ever ran.
func watcherStatus(root string) map[string]any {
	st, running, err := watch.ReadState(root)
	if err != nil || st.PID == 0 {
		return nil
	}
	var sum string
	if running {
		sum = fmt.Sprintf("running (pid %d) since %s, %d directories watched", st.PID, ago(st.StartedAt, now()), st.Watches)
	} else {
		sum = fmt.Sprintf("not running (last pid %d, stopped %s)", st.PID, ago(st.StoppedAt, now()))
	}
	c := st.Counters
	sum += fmt.Sprintf("; last reconcile %s; %d reconciles, %d deletions, %d edits, %d healed, %d overflows, %d errors",
		ago(st.LastReconcileAt, now()), c.Reconciles, c.Deletions, c.Edits, c.Healed, c.Overflows, c.Errors)
	if st.WatchLimitHit {
		sum += fmt.Sprintf("; inotify watch limit hit (%d directories unwatched): rescanning every watch.rescan", st.Unwatched)
	}
	if running && st.HeldBy != "" {
		sum += "; passes held until the git " + st.HeldBy + " in progress ends"
	}
	if st.LastError != "" {
		sum += "; last error: " + st.LastError
	}
	return map[string]any{"running": running, "state": st, "summary": sum}
}

type reviewExtra struct {
	json     map[string]any
	sections []reviewSection
}

// reviewSection is one headed block of review's text output.
type reviewSection struct {
	title string
	lines []string
}

// add appends lines under title (a new section, or the last one of that
// title).
func (x *reviewExtra) add(title string, lines ...string) {
	if n := len(x.sections); n > 0 && x.sections[n-1].title == title {
		x.sections[n-1].lines = append(x.sections[n-1].lines, lines...)
		return
	}
	x.sections = append(x.sections, reviewSection{title: title, lines: lines})
}

// reviewExtras adds what other passes flag for review: regressions of the
// learning engine, stale knowledge, knowledge-capacity notifications and
// policy overlays older than 30 days.
func reviewExtras(a *app, root string, log *manifest.Log) reviewExtra {
	x := reviewExtra{json: map[string]any{}}
	cfg, cfgErr := config.Load(root)
	eng := a.engine(root, cfg)
	if reg, err := eng.Regressions(now()); err == nil && len(reg) > 0 {
		x.json["regressions"] = reg
		for _, id := range reg {
			x.add("Regressions", fmt.Sprintf("%s: reinforced 3+ times, now flagged as a false positive", id))
		}
	}
	if cfgErr == nil {
		if st, err := eng.StaleKnowledge(log); err == nil && len(st) > 0 {
			x.json["stale_knowledge"] = st
			for _, f := range st {
				line := fmt.Sprintf("%s references %s (%s)", findingWhere(f), f.Ref, f.Reason)
				if f.RenamedTo != "" {
					line += ", renamed to " + f.RenamedTo
				}
				x.add("Stale references in knowledge", line)
			}
		} else if err != nil {
			a.log.Debug("staleness check skipped in review", "err", err)
		}
	}
	if notices := capacityNotices(a, root); len(notices) > 0 {
		x.json["notifications"] = notices
		for _, n := range notices {
			x.add("Knowledge capacity", capacityLine(n))
		}
	}
	if ib, lines := inboxReview(root, time.Now()); ib != nil {
		x.json["inbox"] = ib
		x.add("Inbox", lines...)
	}
	p := a.policy(root)
	if old := learn.StaleOverlays(p, now()); len(old) > 0 {
		x.json["stale_overlays"] = old
		for _, t := range old {
			x.add("Policy overlays", fmt.Sprintf("overlay for %s is older than 30 days: check it (learnwatch policy), reset with learnwatch policy reset %s", t, t))
		}
	}
	return x
}
