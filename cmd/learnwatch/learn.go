package main

// The learning engine's commands (DESIGN.md §6): outcome, verdict, promote,
// deprecate, approve, policy, report. Scoring is package learn, storage
// package journal; this file reads input, calls them and prints.

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/hooks"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
)

// withLearningLock runs fn holding .memory/.learning.lock.
func (a *app) withLearningLock(root string, cfg config.Config, fn func() error) error {
	lock, res, err := inbox.Lock(a.ctx, root, cfg.Lock.Timeout.Duration)
	if err != nil {
		return exitcode.Wrap(exitcode.IO, err)
	}
	defer lock.Release()
	a.reportDrain(res)
	return fn()
}

// readFeedback, readErrors and readOutcomes read a journal, warning about
// the lines that do not parse.
func (a *app) readFeedback(root string) ([]learn.Event, error) {
	evs, corrupt, err := journal.ReadFeedback(root)
	a.warnSkipped(root, journal.FeedbackFile, corrupt)
	return evs, err
}

func (a *app) readErrors(root string) ([]learn.RunError, error) {
	errs, corrupt, err := journal.ReadErrors(root)
	a.warnSkipped(root, journal.ErrorsFile, corrupt)
	return errs, err
}

func (a *app) readOutcomes(root string) ([]learn.Outcome, error) {
	outs, corrupt, err := journal.ReadOutcomes(root)
	a.warnSkipped(root, journal.OutcomesFile, corrupt)
	return outs, err
}

func (a *app) warnSkipped(root, file string, corrupt int) {
	if corrupt > 0 {
		a.log.Warn("skipped lines that do not parse", "file", journal.Path(root, file), "count", corrupt)
	}
}

// refreshPolicy recomputes the overlays after new feedback (the caller holds
// the learning lock) and returns the new policy. A failure is a warning: the
// feedback is recorded.
func (a *app) refreshPolicy(root string, t time.Time) learn.Policy {
	p, err := journal.RefreshPolicyLocked(root, t)
	if err != nil {
		a.log.Warn("could not refresh the learning policy", "err", err)
	}
	return p
}

// stdinExamples shows, per command that reads JSON from stdin, how to pipe
// it in; a terminal on stdin gets this hint instead of a silent wait.
var stdinExamples = map[string]string{
	"learnwatch observe":        `echo '{"id":"obs_deploy","type":"workflow","pattern":"deploy with make release","evidence":["ran make release"]}' | learnwatch observe`,
	"learnwatch outcome record": `echo '{"run_id":"r1","success":true,"duration_ms":60000,"retry_count":0}' | learnwatch outcome record`,
	"learnwatch verdict record": `echo '{"run_id":"r1","verdict":"PASS","role":"sentinel","evidence_level":1}' | learnwatch verdict record`,
}

// maxStdin bounds a command's JSON input: what one inbox item may hold,
// so that input taken here can be queued when the lock is busy and is
// never refused by the drain after it.
const maxStdin = inbox.MaxItemBytes

// readAllStdin reads the command's JSON input, at most maxStdin bytes. A
// terminal on stdin is refused with a hint: waiting silently for input
// nobody knows to type looks like a hang.
func readAllStdin(a *app) ([]byte, error) {
	if stdinIsTerminal(a.stdin) {
		ex := stdinExamples[a.cmdPath]
		if ex == "" {
			ex = "cat input.json | " + a.cmdPath
		}
		return nil, exitcode.Bad("%s reads JSON from stdin, and stdin is a terminal: pipe the input in, e.g.\n  %s", a.cmdPath, ex)
	}
	data, err := io.ReadAll(io.LimitReader(a.stdin, maxStdin+1))
	if err != nil {
		return nil, exitcode.Wrap(exitcode.IO, fmt.Errorf("read stdin: %w", err))
	}
	if len(data) > maxStdin {
		return nil, exitcode.Bad("%s: stdin holds more than %d MiB, more than one run takes: nothing was written; split the input into smaller runs", a.cmdPath, maxStdin>>20)
	}
	return data, nil
}

func newOutcomeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "outcome",
		Short: "Record run outcomes and accumulate a run's errors",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newOutcomeRecordCmd(a), newOutcomeErrorCmd(a), newOutcomeResolveCmd(a), newOutcomeErrorsCmd(a))
	return cmd
}

func newOutcomeRecordCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "record",
		Short: "Record a run outcome read from stdin as JSON and score the entries it cited",
		Long: `Reads one JSON object on stdin:
  {"run_id": "…", "success": true, "duration_ms": 120000, "retry_count": 0,
   "error_count": 0, "quality": 0.8, "cited": ["ADR-001", "PF-002", "obs_…"],
   "failure_type": "timeout", "strategy": "…", "ts": "<RFC3339>"}
run_id, success, duration_ms and retry_count are required. Without error_count
the run's unresolved errors (outcome error) are counted. Any bad field: exit 2,
nothing written.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			data, err := readAllStdin(a)
			if err != nil {
				return err
			}
			o, err := learn.DecodeOutcome(data)
			if err != nil {
				return exitcode.Bad("outcome on stdin: %v", err)
			}
			t := now()
			if o.TS.IsZero() {
				o.TS = t
			}
			entries := a.candidates(root)
			var res struct {
				RunID      string   `json:"run_id"`
				Score      float64  `json:"score"`
				Verdict    string   `json:"verdict"`
				ErrorCount int      `json:"error_count"`
				Feedback   int      `json:"feedback"`
				Cited      []string `json:"cited"`
				Repaired   bool     `json:"repaired,omitempty"`
				// PolicyDiff is what this run changed in the policy overlays.
				PolicyDiff []learn.OverlayChange `json:"policy_diff"`
				// Retries is the suggested retry budget per type the run touched.
				Retries map[string]int `json:"suggested_retries"`
			}
			if why := hooks.InProgress(root); why != "" {
				return queueOutcome(a, root, o, entries, why, nil)
			}
			err = a.withLearningLock(root, queueWait(cfg), func() error {
				outs, err := a.readOutcomes(root)
				if err != nil {
					return err
				}
				if !o.ErrorCountSet {
					errs, err := a.readErrors(root)
					if err != nil {
						return err
					}
					o = learn.WithErrorCount(o, errs)
				}
				res.Score, res.Verdict = learn.ImplicitScore(o)
				fb := learn.OutcomeEvents(o, res.Score, entries, o.TS)
				recorded := slices.ContainsFunc(outs, func(x learn.Outcome) bool { return x.RunID == o.RunID })
				if recorded {
					// Outcome written, feedback missing: a crash between the
					// two appends. Append the feedback now; else a duplicate.
					evs, err := a.readFeedback(root)
					if err != nil {
						return err
					}
					src := learn.OutcomeSourcePrefix + o.RunID
					if len(fb) == 0 || slices.ContainsFunc(evs, func(e learn.Event) bool { return e.Source == src }) {
						return exitcode.Bad("outcome on stdin: field \"run_id\": run %q is already recorded in %s", o.RunID, journal.Path(root, journal.OutcomesFile))
					}
					res.Repaired = true
				} else if err := journal.AppendOutcome(root, o); err != nil {
					return err
				}
				if err := journal.AppendFeedback(root, fb...); err != nil {
					return err
				}
				res.Feedback = len(fb)
				for _, e := range fb {
					res.Cited = append(res.Cited, e.Target)
				}
				prev, _ := journal.LoadPolicy(root)
				next := a.refreshPolicy(root, t)
				res.PolicyDiff = learn.PolicyDiff(prev, next)
				res.Retries = learn.RunRetryBudgets(next, o, fb)
				return nil
			})
			if isLockTimeout(err) {
				return queueOutcome(a, root, o, entries, lockBusy, err)
			}
			if err != nil {
				return err
			}
			res.RunID, res.ErrorCount = o.RunID, o.ErrorCount
			if res.Cited == nil {
				res.Cited = []string{}
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "Recorded run %s: score %.2f (%s), %d feedback event(s)", res.RunID, res.Score, res.Verdict, res.Feedback)
				if res.Repaired {
					fmt.Fprint(w, " (outcome was already recorded; its missing feedback was added)")
				}
				fmt.Fprintln(w)
				for _, c := range res.PolicyDiff {
					fmt.Fprintf(w, "Policy: %s threshold ×%.2f → ×%.2f", c.Type, c.Before, c.After)
					if c.ApprovalAfter != c.ApprovalBefore {
						fmt.Fprintf(w, ", approval required: %v → %v", c.ApprovalBefore, c.ApprovalAfter)
					}
					fmt.Fprintf(w, " (%s)\n", c.Reason)
				}
				for _, typ := range slices.Sorted(maps.Keys(res.Retries)) {
					fmt.Fprintf(w, "Suggested retries for %s: %d\n", typ, res.Retries[typ])
				}
			})
		},
	}
}

func newErrorID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "err_" + hex.EncodeToString(b[:])
}

func newOutcomeErrorCmd(a *app) *cobra.Command {
	var run, typ, msg, tool, context, stack string
	cmd := &cobra.Command{
		Use:   "error --run ID --type TYPE --message TEXT [--tool T] [--context TEXT] [--stack TEXT]",
		Short: "Accumulate an error of a run (validation|timeout|conflict|tool_failure|unknown)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, _, err := a.setup()
			if err != nil {
				return err
			}
			if strings.TrimSpace(run) == "" || strings.ContainsAny(run, "\n\r\x00") {
				return exitcode.Bad("--run: a run id (one line) is required")
			}
			if !slices.Contains(learn.ErrorTypes, typ) {
				return exitcode.Bad("--type: must be one of %s, got %q", strings.Join(learn.ErrorTypes, ", "), typ)
			}
			e, err := learn.CleanRunError(learn.RunError{ID: newErrorID(), RunID: run, Type: typ, Message: msg,
				Tool: tool, Context: context, Stack: stack, TS: now()})
			if fe, ok := err.(*learn.FieldError); ok {
				return exitcode.Bad("--%s: %s", fe.Field, fe.Msg)
			} else if err != nil {
				return exitcode.Bad("%v", err)
			}
			if err := journal.AppendError(root, e); err != nil {
				return err
			}
			return a.emit(e, func(w io.Writer) { fmt.Fprintf(w, "Recorded %s (%s) for run %s\n", e.ID, e.Type, e.RunID) })
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run id")
	cmd.Flags().StringVar(&typ, "type", "unknown", "error type: "+strings.Join(learn.ErrorTypes, "|"))
	cmd.Flags().StringVar(&msg, "message", "", "what went wrong")
	cmd.Flags().StringVar(&tool, "tool", "", "the tool that failed (typecheck, go test, …)")
	cmd.Flags().StringVar(&context, "context", "", "what was being done when it failed")
	cmd.Flags().StringVar(&stack, "stack", "", "a stack trace (kept with its lines)")
	return cmd
}

func newOutcomeResolveCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "resolve ERR_ID",
		Short: "Mark an accumulated error as resolved",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			id := args[0]
			var res struct {
				ID      string `json:"id"`
				RunID   string `json:"run_id"`
				Already bool   `json:"already_resolved"`
			}
			res.ID = id
			err = a.withLearningLock(root, cfg, func() error {
				errs, err := a.readErrors(root)
				if err != nil {
					return err
				}
				i := slices.IndexFunc(errs, func(e learn.RunError) bool { return e.ID == id })
				if i < 0 {
					return exitcode.Bad("no error %q in %s", id, journal.Path(root, journal.ErrorsFile))
				}
				res.RunID, res.Already = errs[i].RunID, errs[i].Resolved
				if res.Already {
					return nil
				}
				return journal.AppendResolve(root, id, now())
			})
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				if res.Already {
					fmt.Fprintf(w, "%s was already resolved\n", id)
					return
				}
				fmt.Fprintf(w, "Resolved %s (run %s)\n", id, res.RunID)
			})
		},
	}
}

func newOutcomeErrorsCmd(a *app) *cobra.Command {
	var run string
	cmd := &cobra.Command{
		Use:   "errors --run ID",
		Short: "Print a run's unresolved errors grouped by type: the context for a retry",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, _, err := a.setup()
			if err != nil {
				return err
			}
			if strings.TrimSpace(run) == "" {
				return exitcode.Bad("--run: a run id is required")
			}
			errs, err := a.readErrors(root)
			if err != nil {
				return err
			}
			res := struct {
				learn.RetryContext
				Stats learn.ErrorStats `json:"stats"`
			}{learn.BuildRetryContext(errs, run), learn.BuildErrorStats(errs, run)}
			rc := res.RetryContext
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "Run %s: %d unresolved error(s), %d resolved, %d in total", run, rc.Unresolved, rc.Resolved, res.Stats.Total)
				for i, typ := range slices.Sorted(maps.Keys(res.Stats.ByType)) {
					sep := ", "
					if i == 0 {
						sep = " ("
					}
					fmt.Fprintf(w, "%s%s %d", sep, typ, res.Stats.ByType[typ])
				}
				if len(res.Stats.ByType) > 0 {
					fmt.Fprint(w, ")")
				}
				fmt.Fprintln(w, ".")
				for _, g := range rc.Groups {
					fmt.Fprintf(w, "%s (%d):\n", g.Type, g.Count)
					for _, e := range g.Errors {
						fmt.Fprintf(w, "  - %s: %s\n", e.ID, e.Message)
						if e.Tool != "" {
							fmt.Fprintf(w, "    tool: %s\n", e.Tool)
						}
						if e.Context != "" {
							fmt.Fprintf(w, "    context: %s\n", e.Context)
						}
						if e.Stack != "" {
							fmt.Fprintln(w, "    stack:")
							for _, l := range strings.Split(e.Stack, "\n") {
								fmt.Fprintf(w, "      %s\n", l)
							}
						}
					}
				}
			})
		},
	}
	cmd.Flags().StringVar(&run, "run", "", "run id")
	return cmd
}

func newVerdictCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verdict",
		Short: "Record validator verdicts",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "record",
		Short: "Record a validator verdict read from stdin as JSON",
		Long: `Reads one JSON object on stdin:
  {"run_id": "…", "verdict": "PASS"|"FAIL", "role": "…", "evidence_level": 1|2|3,
   "false_positives": ["text", …], "cited": ["ADR-001", …], "files": ["src/x.go", …]}
Each false-positive text is matched to a knowledge entry and penalised (1.5 for
a role listed in learn.high_confidence_roles — default sentinel, inspector —
else 1.0). A PASS with evidence level 1 or 2 reinforces the cited entries and
those relevant to the files, and ages every other entry one step.`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			data, err := readAllStdin(a)
			if err != nil {
				return err
			}
			v, err := learn.DecodeVerdict(data)
			if err != nil {
				return exitcode.Bad("verdict on stdin: %v", err)
			}
			t := now()
			if v.TS.IsZero() {
				v.TS = t
			}
			entries := a.candidates(root)
			evs, unmatched := learn.VerdictEvents(v, entries, cfg.Learn.HighConfidenceRoles, v.TS)
			res := struct {
				RunID       string   `json:"run_id"`
				Verdict     string   `json:"verdict"`
				Penalised   []string `json:"penalised"`
				Reinforced  []string `json:"reinforced"`
				Aged        []string `json:"aged"`
				Unmatched   []string `json:"unmatched"`
				Regressions []string `json:"regressions"`
			}{RunID: v.RunID, Verdict: "FAIL", Penalised: []string{}, Reinforced: []string{}, Aged: []string{}, Unmatched: []string{}, Regressions: []string{}}
			if v.Pass {
				res.Verdict = "PASS"
			}
			res.Unmatched = append(res.Unmatched, unmatched...)
			for _, e := range evs {
				switch e.Kind {
				case learn.KindFalsePositive:
					res.Penalised = append(res.Penalised, e.Target)
				case learn.KindAged:
					res.Aged = append(res.Aged, e.Target)
				default:
					res.Reinforced = append(res.Reinforced, e.Target)
				}
			}
			if why := hooks.InProgress(root); why != "" {
				return queueFeedback(a, root, "verdict record", v.RunID, evs, why, nil)
			}
			err = a.withLearningLock(root, queueWait(cfg), func() error {
				old, err := a.readFeedback(root)
				if err != nil {
					return err
				}
				if err := journal.AppendFeedback(root, evs...); err != nil {
					return err
				}
				stats := learn.FoldWith(append(slices.Clip(old), evs...), t, learn.ParamsFrom(cfg.Learn))
				for _, id := range res.Penalised {
					if stats[id].Regression {
						res.Regressions = append(res.Regressions, id)
					}
				}
				if len(evs) > 0 {
					a.refreshPolicy(root, t)
				}
				return nil
			})
			if isLockTimeout(err) {
				return queueFeedback(a, root, "verdict record", v.RunID, evs, lockBusy, err)
			}
			if err != nil {
				return err
			}
			return a.emit(res, func(w io.Writer) {
				fmt.Fprintf(w, "Recorded %s verdict for run %s: %d penalised, %d reinforced, %d aged\n", res.Verdict, res.RunID, len(res.Penalised), len(res.Reinforced), len(res.Aged))
				for _, u := range res.Unmatched {
					fmt.Fprintf(w, "  no entry matches false positive %q\n", u)
				}
				for _, r := range res.Regressions {
					fmt.Fprintf(w, "  regression: %s had been reinforced 3+ times\n", r)
				}
			})
		},
	})
	return cmd
}

// validEntry checks an entry id argument, warning when the id is not among
// the known entries (they may not be wired, or the entry may be gone).
func (a *app) validEntry(root, id string) ([]learn.Candidate, error) {
	if !learn.ValidEntryID(id) {
		return nil, exitcode.Bad("%q is not an entry id (ADR-NNN, PF-NNN or obs_…)", id)
	}
	entries := a.candidates(root)
	if len(entries) > 0 && !slices.ContainsFunc(entries, func(c learn.Candidate) bool { return c.ID == id }) {
		a.log.Warn("no knowledge entry or observation has this id; recording anyway", "id", id)
	}
	return entries, nil
}

type maturityResult struct {
	ID       string      `json:"id"`
	Action   string      `json:"action"`
	Previous learn.Level `json:"previous"`
	Level    learn.Level `json:"level"`
	Reason   string      `json:"reason,omitempty"`
}

// manual appends a manual maturity event for id under the lock; check may
// refuse based on the entry's current stats.
func (a *app) manual(id string, value float64, reason, action string, check func(learn.Stats) error) error {
	root, cfg, err := a.setup()
	if err != nil {
		return err
	}
	entries, err := a.validEntry(root, id)
	if err != nil {
		return err
	}
	t := now()
	res := maturityResult{ID: id, Action: action, Reason: reason}
	err = a.withLearningLock(root, cfg, func() error {
		evs, err := a.readFeedback(root)
		if err != nil {
			return err
		}
		params := learn.ParamsFrom(cfg.Learn)
		before := learn.FoldWith(evs, t, params)[id]
		if before.Target == "" {
			before.Level, _ = learn.Maturity(before)
		}
		if err := check(before); err != nil {
			return err
		}
		e := learn.Event{TS: t, Target: id, Kind: learn.KindManual, Value: value, Source: "cli", Type: learn.TypeOf(id, entries), Reason: reason}
		if err := journal.AppendFeedback(root, e); err != nil {
			return err
		}
		after := learn.FoldWith(append(slices.Clip(evs), e), t, params)[id]
		res.Previous, res.Level = before.Level, after.Level
		return nil
	})
	if err != nil {
		return err
	}
	return a.emit(res, func(w io.Writer) {
		fmt.Fprintf(w, "%s: %s → %s (%s)\n", id, res.Previous, res.Level, action)
	})
}

func newPromoteCmd(a *app) *cobra.Command {
	var reset bool
	var reason string
	cmd := &cobra.Command{
		Use:   "promote [--reset] ID",
		Short: "Pin an entry at proven (×1.5); --reset clears its history and any manual override",
		Long: `promote ID pins a knowledge entry (ADR-NNN, PF-NNN) or observation (obs_…)
at maturity proven until reset. A deprecated entry cannot be promoted: run
'learnwatch promote --reset ID' first, which discards the entry's feedback
history (it starts again as a candidate), then promote it if you still want to.`,
		Args: cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			id := args[0]
			if reset {
				return a.manual(id, learn.ManualReset, reason, "reset", func(learn.Stats) error { return nil })
			}
			return a.manual(id, learn.ManualPromote, reason, "promote", func(s learn.Stats) error {
				if s.Level == learn.LevelDeprecated {
					why := "its feedback"
					if s.Manual == learn.LevelDeprecated {
						why = "a manual deprecate"
						if s.ManualReason != "" {
							why += fmt.Sprintf(" (%s)", s.ManualReason)
						}
					} else if learn.Inverted(s) {
						why = fmt.Sprintf("its outcomes (failed %d/%d runs)", s.OutcomeFailures, s.Outcomes)
					}
					return exitcode.Bad("%s is deprecated by %s and cannot be promoted; reset it first with `learnwatch promote --reset %s`", id, why, id)
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&reset, "reset", false, "clear the entry's feedback history and manual override")
	cmd.Flags().StringVar(&reason, "reason", "", "why (recorded with the event)")
	return cmd
}

func newDeprecateCmd(a *app) *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:   "deprecate ID --reason TEXT",
		Short: "Pin an entry at deprecated (×0: left out of the index) until reset",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			if strings.TrimSpace(reason) == "" {
				return exitcode.Bad("--reason: say why %s is deprecated", args[0])
			}
			return a.manual(args[0], learn.ManualDeprecate, reason, "deprecate", func(learn.Stats) error { return nil })
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why the entry is deprecated (required)")
	return cmd
}

func newApproveCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "approve OBS_ID",
		Short: "Let render create a ready observation whose type's policy requires approval",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			id := args[0]
			if !strings.HasPrefix(id, "obs_") || !learn.ValidEntryID(id) {
				return exitcode.Bad("%q is not an observation id (obs_…)", id)
			}
			if err := approvable(root, id); err != nil {
				return err
			}
			p, err := journal.UpdatePolicy(a.ctx, root, cfg.Lock.Timeout.Duration, func(p learn.Policy) (learn.Policy, error) {
				return learn.Approve(p, id), nil
			})
			if err != nil {
				return err
			}
			res := map[string]any{"approved": id, "approvals": p.Approvals}
			return a.emit(res, func(w io.Writer) { fmt.Fprintf(w, "Approved %s: render may create it\n", id) })
		},
	}
}

// approvable refuses to approve an observation that is already rendered:
// approval only lets render create one the policy holds.
func approvable(root, id string) error {
	log, err := manifest.ReadLog(manifest.PathsFor(root).Log)
	if err != nil {
		return err
	}
	if o := log.Find(id); o != nil && o.Status == manifest.Created {
		return exitcode.Bad("%s is already rendered (%s): approve only lets render create an observation its type's policy holds; change it with learnwatch edit %s", id, o.ArtifactPath, id)
	}
	return nil
}

// policyView is the policy with the evidence behind it.
type policyView struct {
	Overlays    map[string]learn.Overlay   `json:"overlays"`
	Approvals   []string                   `json:"approvals"`
	Resets      map[string]time.Time       `json:"resets"`
	Reliability map[string]float64         `json:"reliability"`
	Tallies     map[string]learn.TypeStats `json:"tallies"`
	Stale       []string                   `json:"stale"`
}

func (a *app) policyView(root string, p learn.Policy, t time.Time) (policyView, error) {
	evs, err := a.readFeedback(root)
	if err != nil {
		return policyView{}, err
	}
	v := policyView{Overlays: p.Overlays, Approvals: p.Approvals, Resets: p.Resets, Reliability: map[string]float64{},
		Tallies: learn.Tally(evs, p.Resets), Stale: learn.StaleOverlays(p, t)}
	for _, typ := range learn.Types {
		v.Reliability[typ] = math.Round(learn.Reliability(v.Tallies[typ])*10000) / 10000
	}
	if v.Overlays == nil {
		v.Overlays = map[string]learn.Overlay{}
	}
	if v.Approvals == nil {
		v.Approvals = []string{}
	}
	if v.Resets == nil {
		v.Resets = map[string]time.Time{}
	}
	if v.Stale == nil {
		v.Stale = []string{}
	}
	return v, nil
}

func printPolicy(w io.Writer, v policyView) {
	if len(v.Overlays) == 0 {
		fmt.Fprintln(w, "No overlays: every type renders at its base threshold.")
	}
	for _, t := range slices.Sorted(maps.Keys(v.Overlays)) {
		o := v.Overlays[t]
		fmt.Fprintf(w, "%s: threshold ×%.2f", t, o.ThresholdMultiplier)
		if o.RequiresApproval {
			fmt.Fprint(w, ", render waits for `learnwatch approve`")
		}
		fmt.Fprintf(w, " — %s (since %s)", o.Reason, o.UpdatedAt.UTC().Format("2006-01-02"))
		if slices.Contains(v.Stale, t) {
			fmt.Fprint(w, " — older than 30 days: review it")
		}
		fmt.Fprintln(w)
	}
	for _, t := range learn.Types {
		ts := v.Tallies[t]
		if ts.Total() == 0 {
			fmt.Fprintf(w, "  %-10s reliability  -   (no evidence)\n", t)
			continue
		}
		fmt.Fprintf(w, "  %-10s reliability %.2f (%d kept/succeeded, %d failed)\n", t, v.Reliability[t], ts.Successes, ts.Failures)
	}
	if len(v.Approvals) > 0 {
		fmt.Fprintf(w, "Approved: %s\n", strings.Join(v.Approvals, ", "))
	}
}

func newPolicyCmd(a *app) *cobra.Command {
	show := func(*cobra.Command, []string) error {
		root, _, err := a.setup()
		if err != nil {
			return err
		}
		p, err := journal.LoadPolicy(root)
		if err != nil {
			return exitcode.Wrap(exitcode.BadInput, err)
		}
		v, err := a.policyView(root, p, now())
		if err != nil {
			return err
		}
		return a.emit(v, func(w io.Writer) { printPolicy(w, v) })
	}
	cmd := &cobra.Command{
		Use:   "policy [show|reset TYPE|relax TYPE --reason TEXT|refresh]",
		Short: "Show the adaptive render policy (overlays per artifact type)",
		Args:  cobra.NoArgs,
		RunE:  show,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "show",
		Short: "Show overlays, approvals and per-type reliability",
		Args:  cobra.NoArgs,
		RunE:  show,
	})
	cmd.AddCommand(newPolicyRelaxCmd(a))
	cmd.AddCommand(&cobra.Command{
		Use:   "refresh",
		Short: "Recompute the overlays from the feedback (overlays only tighten)",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			t := now()
			p, err := journal.RefreshPolicy(a.ctx, root, t, cfg.Lock.Timeout.Duration)
			if err != nil {
				return err
			}
			v, err := a.policyView(root, p, t)
			if err != nil {
				return err
			}
			return a.emit(v, func(w io.Writer) { printPolicy(w, v) })
		},
	})
	cmd.AddCommand(&cobra.Command{
		Use:   "reset TYPE",
		Short: "Remove a type's overlay and restart its reliability from now (the only way to relax)",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			typ := args[0]
			if !learn.IsType(typ) {
				return exitcode.Bad("type must be one of %s, got %q", strings.Join(learn.Types, ", "), typ)
			}
			had := false
			_, err = journal.UpdatePolicy(a.ctx, root, cfg.Lock.Timeout.Duration, func(p learn.Policy) (learn.Policy, error) {
				_, had = p.Overlays[typ]
				return learn.ResetType(p, typ, now()), nil
			})
			if err != nil {
				return err
			}
			res := map[string]any{"type": typ, "reset": true, "had_overlay": had}
			return a.emit(res, func(w io.Writer) {
				if had {
					fmt.Fprintf(w, "Reset %s: overlay removed, reliability counts from now\n", typ)
				} else {
					fmt.Fprintf(w, "Reset %s: it had no overlay; reliability counts from now\n", typ)
				}
			})
		},
	})
	return cmd
}

func newReportCmd(a *app) *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "report [--format md|json]",
		Short: "Learning report: strongest/weakest types, failure patterns, overlays, maturity, decay",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			root, cfg, err := a.setup()
			if err != nil {
				return err
			}
			switch format {
			case "md", "markdown", "json":
			default:
				return exitcode.Bad("--format must be md or json, not %q", format)
			}
			t := now()
			evs, err := a.readFeedback(root)
			if err != nil {
				return err
			}
			outs, err := a.readOutcomes(root)
			if err != nil {
				return err
			}
			p, err := journal.LoadPolicy(root)
			if err != nil {
				return exitcode.Wrap(exitcode.BadInput, err)
			}
			r := learn.BuildReport(learn.FoldWith(evs, t, learn.ParamsFrom(cfg.Learn)), learn.Tally(evs, p.Resets), outs, p, a.candidates(root), t)
			if format == "json" {
				a.jsonOut = true
			}
			return a.emit(r, func(w io.Writer) { fmt.Fprint(w, r.Markdown()) })
		},
	}
	cmd.Flags().StringVar(&format, "format", "md", "md or json")
	return cmd
}
