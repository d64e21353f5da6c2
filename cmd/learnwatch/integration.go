package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/gitdiff"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/staleness"
	"github.com/learnwatch/learnwatch/watch"
)

// This file wires the optional passes (staleness, the learning engine) into
// the core commands: each function reads state, calls the pure package and
// hands the result back; failures of a pass are warnings, never a reason to
// fail the core command.

var getenv = os.Getenv

// minIndexScore drops entries scoring below it from the index (DESIGN.md §6).
const minIndexScore = learn.MinScore

func init() {
	knowledgeCandidates = loadCandidates
}

// recordFeedback reports the learning signals a reconcile recorded (heal
// appends them under the lock, exactly once across a crash, with
// Options.Feedback; kept events only for the session's reconcile, at most
// once per UTC day) and recomputes the policy overlays.
//
// session marks the session start's reconcile: its refresh keeps the fold
// for the ranking that follows (one fold of the journal per session start).
func recordFeedback(a *app, root string, cfg config.Config, res heal.Result, now time.Time, session bool) {
	if res.Recorded+res.Inbox.Feedback == 0 {
		return
	}
	if session {
		// The session start ranks next: keep the refresh's fold for it.
		_, f, err := journal.RefreshPolicyFolded(a.ctx, root, now, cfg.Lock.Timeout.Duration, learn.ParamsFrom(cfg.Learn))
		if err != nil {
			fmt.Fprintf(a.stderr, "learnwatch: policy not refreshed: %v\n", err)
			return
		}
		if f.SnapshotErr != nil {
			fmt.Fprintf(a.stderr, "learnwatch: fold snapshot not saved: %v\n", f.SnapshotErr)
		}
		a.feedbackFold = &f
		return
	}
	if _, err := journal.RefreshPolicy(a.ctx, root, now, cfg.Lock.Timeout.Duration); err != nil {
		fmt.Fprintf(a.stderr, "learnwatch: policy not refreshed: %v\n", err)
	}
}

// loadPolicy reads the policy overlays; a broken policy file is a warning
// and no overlay.
func loadPolicy(a *app, root string) learn.Policy {
	p, err := journal.LoadPolicy(root)
	if err != nil {
		fmt.Fprintf(a.stderr, "learnwatch: %v (ignoring policy overlays)\n", err)
	}
	return p
}

// policyMultiplier returns the promote-threshold multiplier per type.
func policyMultiplier(a *app, root string) func(string) float64 {
	p := loadPolicy(a, root)
	return func(typ string) float64 {
		if o, ok := p.Overlays[typ]; ok && o.ThresholdMultiplier > 0 {
			return o.ThresholdMultiplier
		}
		return 1
	}
}

// policyHold reports whether render must hold an observation for approval.
func policyHold(a *app, root string) func(*manifest.Observation) bool {
	p := loadPolicy(a, root)
	return func(o *manifest.Observation) bool { return learn.Held(p, o.Type, o.ID) }
}

// loadCandidates lists the knowledge entries and observations as plain
// data for the learning engine.
func loadCandidates(a *app, root string) ([]learn.Candidate, error) {
	entries, err := index.Load(root)
	if err != nil {
		return nil, err
	}
	log, err := manifest.ReadLog(manifest.PathsFor(root).Log)
	if err != nil {
		return nil, err
	}
	usage, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err != nil {
		usage = &manifest.Usage{}
	}
	cfg, err := config.Load(root)
	if err != nil {
		cfg = config.Default()
	}
	opts := staleness.OptionsFor(cfg.Staleness)
	out := make([]learn.Candidate, 0, len(entries))
	for _, e := range entries {
		c := candidateOf(e, log, usage)
		// The files an entry references: a verdict's changed files make it
		// relevant.
		for _, r := range staleness.ExtractMarkdown([]byte(e.Text), opts) {
			c.Refs = append(c.Refs, r.Path)
		}
		out = append(out, c)
	}
	return append(out, observationCandidates(log)...), nil
}

// observationCandidates lists the log's workflow and procedural
// observations as learning candidates (their pattern is what an AVOID line
// names).
func observationCandidates(log *manifest.Log) []learn.Candidate {
	var out []learn.Candidate
	for _, o := range log.Observations() {
		if o.Type == manifest.Workflow || o.Type == manifest.Procedural {
			out = append(out, learn.Candidate{ID: o.ID, Type: o.Type, Title: o.Pattern, Status: o.Status,
				BaseScore: o.Confidence, Pattern: o.Pattern, Text: o.Pattern + "\n" + o.Details})
		}
	}
	return out
}

// candidateOf turns an index entry into a ranking candidate: its base
// score is the confidence of the observation it was rendered from, 1.0 for
// a human-written entry.
func candidateOf(e index.Entry, log *manifest.Log, usage *manifest.Usage) learn.Candidate {
	c := learn.Candidate{ID: e.ID, Title: e.Title, Status: e.Status, Area: e.Area, Refs: e.Refs,
		BaseScore: 1, Pattern: e.Title, Text: e.Text}
	c.Type = manifest.Decision
	if e.Kind == markdown.PF {
		c.Type = manifest.Pitfall
	}
	if e.Source != "" {
		if o := log.Find(e.Source); o != nil && o.Confidence > 0 {
			c.BaseScore = o.Confidence
		}
	}
	if usage != nil {
		if u, ok := usage.Entries[e.ID]; ok {
			var s string
			if raw, ok := u["created"]; ok && len(raw) > 2 {
				s = strings.Trim(string(raw), `"`)
			}
			c.Created, _ = time.Parse(time.RFC3339, s)
		}
	}
	return c
}

// rankEntries scores index entries with the learning engine (feedback,
// maturity, recency, context boost) and returns them with their scores,
// plus the anti-pattern lines.
func rankEntries(a *app, root string, cfg config.Config, entries []index.Entry, log *manifest.Log) ([]index.Entry, []string) {
	return rankEntriesFor(a, root, cfg, entries, log, "")
}

// rankEntriesFor is rankEntries for a consumer role: each entry also gets
// its evidence tags (learn.EvidenceTags).
func rankEntriesFor(a *app, root string, cfg config.Config, entries []index.Entry, log *manifest.Log, role string) ([]index.Entry, []string) {
	n := now()
	params := learn.ParamsFrom(cfg.Learn)
	var folded journal.Folded
	var err error
	if f := a.feedbackFold; f != nil && f.Current(root) {
		folded = *f
		folded.Stats, folded.SnapshotErr = f.StatsAt(n, params), nil // warned about already
	} else if folded, err = journal.FoldFeedback(root, n, params); err != nil {
		fmt.Fprintf(a.stderr, "learnwatch: %v (ranking without feedback)\n", err)
		folded.Stats = map[string]learn.Stats{}
	}
	if folded.SnapshotErr != nil {
		fmt.Fprintf(a.stderr, "learnwatch: fold snapshot not saved: %v\n", folded.SnapshotErr)
	}
	stats := folded.Stats
	if log == nil {
		log, _ = manifest.ReadLog(manifest.PathsFor(root).Log)
	}
	if log == nil {
		log = &manifest.Log{}
	}
	usage, _ := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	cands := make([]learn.Candidate, len(entries))
	opts := staleness.OptionsFor(cfg.Staleness)
	for i, e := range entries {
		cands[i] = candidateOf(e, log, usage)
		for _, r := range staleness.ExtractMarkdown([]byte(e.Text), opts) {
			cands[i].Refs = append(cands[i].Refs, r.Path)
		}
	}
	ranked := learn.RankWith(cands, stats, n, changedFiles(a, root), params)
	score := map[string]float64{}
	for _, r := range ranked {
		score[r.ID] = r.Score
	}
	out := make([]index.Entry, 0, len(entries))
	for _, e := range entries {
		if s, ok := score[e.ID]; ok {
			e.Score = s
			e.Tags = learn.EvidenceTags(stats[e.ID], role)
		} else {
			e.Score = 0 // dropped by the ranking (deprecated or decayed)
		}
		out = append(out, e)
	}
	var avoid []string
	// Observations are anti-pattern candidates too: an AVOID line names the
	// observation's pattern, not its id.
	for _, ap := range learn.AntiPatterns(stats, append(slices.Clip(cands), observationCandidates(log)...)) {
		avoid = append(avoid, ap.Text)
	}
	return out, avoid
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
	if st.LastError != "" {
		sum += "; last error: " + st.LastError
	}
	return map[string]any{"running": running, "state": st, "summary": sum}
}

type reviewExtra struct {
	json  map[string]any
	lines []string
}

// reviewExtras adds what other passes flag for review: regressions of the
// learning engine, stale knowledge, knowledge-capacity notifications and
// policy overlays older than 30 days.
func reviewExtras(a *app, root string, log *manifest.Log) reviewExtra {
	x := reviewExtra{json: map[string]any{}}
	evs, _, err := journal.ReadFeedback(root)
	if err == nil {
		reg := learn.Regressions(learn.Fold(evs, now()))
		if len(reg) > 0 {
			x.json["regressions"] = reg
			for _, id := range reg {
				x.lines = append(x.lines, fmt.Sprintf("%s: regression — reinforced 3+ times, now flagged as a false positive", id))
			}
		}
	}
	if cfg, err := config.Load(root); err == nil {
		if st, err := staleKnowledge(root, cfg, log); err == nil && len(st) > 0 {
			x.json["stale_knowledge"] = st
			for _, f := range st {
				line := fmt.Sprintf("%s references %s (%s)", findingWhere(f), f.Ref, f.Reason)
				if f.RenamedTo != "" {
					line += ", renamed to " + f.RenamedTo
				}
				x.lines = append(x.lines, line)
			}
		} else if err != nil {
			a.log.Debug("staleness check skipped in review", "err", err)
		}
	}
	if notices := capacityNotices(a, root); len(notices) > 0 {
		x.json["notifications"] = notices
		for _, n := range notices {
			x.lines = append(x.lines, capacityLine(n))
		}
	}
	if ib, lines := inboxReview(root, time.Now()); ib != nil {
		x.json["inbox"] = ib
		x.lines = append(x.lines, lines...)
	}
	p := loadPolicy(a, root)
	if old := learn.StaleOverlays(p, now()); len(old) > 0 {
		x.json["stale_overlays"] = old
		for _, t := range old {
			x.lines = append(x.lines, fmt.Sprintf("policy overlay for %s is older than 30 days: check it (learnwatch policy), reset with learnwatch policy reset %s", t, t))
		}
	}
	return x
}

// changedFiles lists the files the current branch changes (context boost).
func changedFiles(a *app, root string) []string {
	files, err := gitdiff.Branch(root)
	if err != nil {
		a.log.Debug("no branch context for ranking", "err", err)
	}
	return files
}

// staleHook returns the staleness pass reconcile runs under its lock: the
// knowledge files and the log's observations are checked against HEAD (the
// working tree outside git), stale observations are marked in the log
// (reconcile writes it) and the number of stale references is returned.
func staleHook(a *app, cfg config.Config) func(root string, log *manifest.Log) (int, error) {
	return func(root string, log *manifest.Log) (int, error) {
		rep, err := staleness.ScanTreeContext(a.ctx, root, staleness.Auto, cfg.Staleness, log)
		if err != nil {
			return 0, err
		}
		staleness.Mark(log, rep.Stale)
		return len(rep.Stale), nil
	}
}

// staleKnowledge lists stale references of knowledge entries (ADR/PF) and
// of source files (ADRs, KNOWLEDGE.md, staleness.sources), for review;
// observations carry their own mayBeStale flag.
func staleKnowledge(root string, cfg config.Config, log *manifest.Log) ([]staleness.Finding, error) {
	rep, err := staleness.ScanTree(root, staleness.Auto, cfg.Staleness, log)
	if err != nil {
		return nil, err
	}
	var out []staleness.Finding
	for _, f := range rep.Stale {
		if strings.HasPrefix(f.ID, "ADR-") || strings.HasPrefix(f.ID, "PF-") || f.File != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// recordCitations appends one helpful "cited" feedback event per entry an
// agent cited in the scanned part of a transcript (however many times: one
// chatty session must not outweigh the others).
func recordCitations(a *app, root string, counts map[string]int, at time.Time) {
	var evs []learn.Event
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		if counts[id] <= 0 {
			continue
		}
		typ := manifest.Decision
		if strings.HasPrefix(id, "PF-") {
			typ = manifest.Pitfall
		}
		evs = append(evs, learn.Event{TS: at, Target: id, Kind: learn.KindCited, Value: 1, Source: "transcript", Type: typ})
	}
	if len(evs) == 0 {
		return
	}
	if err := journal.AppendFeedback(root, evs...); err != nil {
		fmt.Fprintf(a.stderr, "learnwatch: citations not recorded as feedback: %v\n", err)
	}
}
