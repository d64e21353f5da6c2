package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/gitdiff"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/staleness"
)

// IndexOptions shape the session index.
type IndexOptions struct {
	Now    time.Time
	Budget int // tokens (4 characters a token)
	// Role is the consumer role: named in the header, and the evidence
	// tags leave out "via" that role.
	Role string
	// Log is the learning log when the caller has it in memory (the
	// session-start pass's), else nil: it is read from disk.
	Log *manifest.Log
}

// Index loads the knowledge entries, ranks them with the learning engine
// (feedback, maturity, recency, the branch's changed files), marks those
// with a stale file reference and fits them to the budget. The warnings
// are for a person (ranking without feedback).
//
// The learning log (when the caller has none) and the stale marks are read
// and checked while the entries are loaded and ranked: a session start
// waits for the slower of them, not their sum.
func (e *Engine) Index(o IndexOptions) (index.Result, []string, error) {
	defer relaxIndexGC(manifest.PathsFor(e.root).Log)()
	logc := make(chan logView, 1)
	switch {
	case o.Log != nil:
		logc <- logView{log: o.Log}
	case e.logc != nil:
		logc, e.logc = e.logc, nil // read ahead by a replayed session pass
	default:
		go func() { logc <- loadLogView(e.root) }()
	}
	// The feedback is folded while the knowledge files are parsed: neither
	// depends on the other.
	foldc := make(chan fold, 1)
	go func() { foldc <- e.fold(o.Now) }()
	entries, entriesWarn, err := loadEntries(e.root)
	if err != nil {
		<-foldc
		return index.Result{}, nil, err
	}
	refs, refsWarn := e.entryRefs(entries)
	ids := make([]string, 0, len(entries))
	for _, en := range entries {
		ids = append(ids, en.ID)
	}
	type marked struct {
		marks map[string]string
		warn  []string
	}
	marksc := make(chan marked, 1)
	go func() {
		m, w := e.staleMarks(ids, refs)
		marksc <- marked{m, w}
	}()
	// The log is waited for only once the feedback is folded.
	entries, avoid, warn := e.rank(entries, refs, <-foldc, func() logView { return <-logc }, o.Role, o.Now)
	m := <-marksc
	for i := range entries {
		entries[i].Stale = m.marks[entries[i].ID]
	}
	return index.BuildWith(entries, avoid, index.Options{Budget: o.Budget, MinScore: learn.MinScore, Role: o.Role}), slices.Concat(entriesWarn, warn, refsWarn, m.warn), nil
}

// Rank scores index entries with the learning engine and returns them with
// their scores and evidence tags for role, plus the anti-pattern lines.
// log is the learning log when the caller has it, else nil.
func (e *Engine) Rank(entries []index.Entry, log *manifest.Log, role string, now time.Time) ([]index.Entry, []string, []string) {
	refs, refsWarn := e.entryRefs(entries)
	out, avoid, warn := e.rank(entries, refs, e.fold(now), func() logView {
		if log == nil {
			return readLogView(manifest.PathsFor(e.root).Log)
		}
		return logView{log: log}
	}, role, now)
	return out, avoid, append(warn, refsWarn...)
}

// entryRefs extracts the references of each entry (staleness.EntryRefs,
// through its cache): what ranking by the branch's changed files and the
// stale marks both read. A cache not written is a warning.
func (e *Engine) entryRefs(entries []index.Entry) (map[string][]staleness.Ref, []string) {
	ids := make([]string, 0, len(entries))
	texts := make(map[string]string, len(entries))
	for _, en := range entries {
		ids = append(ids, en.ID)
		texts[en.ID] = en.Text
	}
	refs, err := staleness.EntryRefs(e.root, e.cfg.Staleness, ids, texts)
	if err != nil {
		return refs, []string{err.Error()}
	}
	return refs, nil
}

// fold is the feedback journal folded for ranking at a time, with what
// went wrong on the way.
type fold struct {
	stats map[string]learn.Stats
	warn  []string
}

// fold folds the feedback journal for ranking at now: the fold of the
// policy refresh this engine just made, while the journal is unchanged;
// else the journal folded from its snapshot (only the tail appended since
// is read).
func (e *Engine) fold(now time.Time) fold {
	var out fold
	params := learn.ParamsFrom(e.cfg.Learn)
	var folded journal.Folded
	var err error
	if f := e.folded; f != nil && f.Current(e.root) {
		folded = *f
		folded.Stats, folded.SnapshotErr = f.StatsAt(now, params), nil
	} else if folded, err = journal.FoldFeedback(e.root, now, params); err != nil {
		out.warn = append(out.warn, fmt.Sprintf("%v (ranking without feedback)", err))
		folded.Stats = map[string]learn.Stats{}
	}
	if folded.SnapshotErr != nil {
		out.warn = append(out.warn, fmt.Sprintf("fold snapshot not saved: %v", folded.SnapshotErr))
	}
	out.stats = folded.Stats
	return out
}

// rank is Rank with the entries' references extracted, the feedback
// folded, and the log given by a function called once it is needed (the
// caller may still be reading it). When the log's facts stand in for it
// and an inverted observation must be named, the log is read after all.
func (e *Engine) rank(entries []index.Entry, refs map[string][]staleness.Ref, folded fold, getView func() logView, role string, now time.Time) ([]index.Entry, []string, []string) {
	warn := folded.warn
	params := learn.ParamsFrom(e.cfg.Learn)
	stats := folded.stats
	view := getView()
	if view.log == nil {
		for id, s := range stats {
			if learn.Inverted(s) && !strings.HasPrefix(id, "ADR-") && !strings.HasPrefix(id, "PF-") {
				// An AVOID line names an observation's pattern: the
				// facts do not hold it.
				view = readLogView(manifest.PathsFor(e.root).Log)
				break
			}
		}
	}
	usage, _ := manifest.ReadUsage(manifest.PathsFor(e.root).Usage)
	cands := make([]learn.Candidate, len(entries))
	for i, en := range entries {
		cands[i] = candidateOf(en, view.confidence, usage, refs[en.ID])
	}
	ranked := learn.RankWith(cands, stats, now, e.changedFiles(), params)
	score := map[string]float64{}
	for _, r := range ranked {
		score[r.ID] = r.Score
	}
	out := make([]index.Entry, 0, len(entries))
	for _, en := range entries {
		if s, ok := score[en.ID]; ok {
			en.Score = s
			en.Tags = learn.EvidenceTags(stats[en.ID], role)
		} else {
			en.Score = 0 // dropped by the ranking (deprecated or decayed)
		}
		out = append(out, en)
	}
	var avoid []string
	// Observations are anti-pattern candidates too: an AVOID line names the
	// observation's pattern, not its id. Only an inverted one can be one:
	// only those lines are decoded.
	inverted := func(e manifest.LogEntry) bool {
		s, ok := stats[e.ID]
		return ok && learn.Inverted(s)
	}
	var obsCands []learn.Candidate
	if view.log != nil {
		obsCands = observationCandidates(view.log, inverted)
	}
	for _, ap := range learn.AntiPatterns(stats, append(slices.Clip(cands), obsCands...)) {
		avoid = append(avoid, ap.Text)
	}
	return out, avoid, warn
}

// Candidates lists the knowledge entries and the log's workflow and
// procedural observations as plain data for the learning engine (the ids
// feedback may name).
func (e *Engine) Candidates() ([]learn.Candidate, error) {
	entries, warn, err := loadEntries(e.root)
	if err != nil {
		return nil, err
	}
	for _, w := range warn {
		e.log.Debug(w)
	}
	log, err := manifest.ReadLog(manifest.PathsFor(e.root).Log)
	if err != nil {
		return nil, err
	}
	usage, err := manifest.ReadUsage(manifest.PathsFor(e.root).Usage)
	if err != nil {
		usage = &manifest.Usage{}
	}
	out := make([]learn.Candidate, 0, len(entries))
	refs, warn := e.entryRefs(entries)
	for _, w := range warn {
		e.log.Debug(w)
	}
	for _, en := range entries {
		out = append(out, candidateOf(en, logView{log: log}.confidence, usage, refs[en.ID]))
	}
	return append(out, observationCandidates(log, nil)...), nil
}

// observationCandidates lists the log's workflow and procedural
// observations (those keep selects, all when nil) as learning candidates
// (their pattern is what an AVOID line names). Only those lines are
// decoded.
func observationCandidates(log *manifest.Log, keep func(manifest.LogEntry) bool) []learn.Candidate {
	var out []learn.Candidate
	for _, o := range log.Select(func(e manifest.LogEntry) bool {
		return (e.Type == manifest.Workflow || e.Type == manifest.Procedural) && (keep == nil || keep(e))
	}) {
		if o.Type == manifest.Workflow || o.Type == manifest.Procedural {
			out = append(out, learn.Candidate{ID: o.ID, Type: o.Type, Title: o.Pattern, Status: o.Status,
				BaseScore: o.Confidence, Pattern: o.Pattern, Text: o.Pattern + "\n" + o.Details})
		}
	}
	return out
}

// candidateOf turns an index entry into a ranking candidate: its base
// score is the confidence of the observation it was rendered from (as
// confidence answers), 1.0 for
// a human-written entry; the files it references (refs) make it relevant
// to a branch that changes them.
func candidateOf(e index.Entry, confidence func(id string) float64, usage *manifest.Usage, refs []staleness.Ref) learn.Candidate {
	c := learn.Candidate{ID: e.ID, Title: e.Title, Status: e.Status, Area: e.Area, Refs: e.Refs,
		BaseScore: 1, Pattern: e.Title, Text: e.Text}
	c.Type = manifest.Decision
	if e.Kind == markdown.PF {
		c.Type = manifest.Pitfall
	}
	if e.Source != "" {
		if conf := confidence(e.Source); conf > 0 {
			c.BaseScore = conf
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
	for _, r := range refs {
		c.Refs = append(c.Refs, r.Path)
	}
	return c
}

// changedFiles lists the files the current branch changes (context boost).
func (e *Engine) changedFiles() []string {
	files, err := gitdiff.Branch(e.root)
	if err != nil {
		e.log.Debug("no branch context for ranking", "err", err)
	}
	return files
}

// staleMarks returns, per knowledge entry (ids) with a stale file reference,
// the first such reference (index.Entry.Stale), so the session-start index
// warns the agent before it follows one. A failed check marks nothing (the
// index is still built); a cache not written is a warning.
func (e *Engine) staleMarks(ids []string, refs map[string][]staleness.Ref) (map[string]string, []string) {
	marks, cacheErr, err := staleness.EntryMarks(e.root, e.cfg.Staleness, ids, refs)
	if err != nil {
		e.log.Debug("index: staleness not checked", "err", err)
	}
	if cacheErr != nil {
		return marks, []string{cacheErr.Error()}
	}
	return marks, nil
}

// StaleKnowledge lists stale references of knowledge entries (ADR/PF) and
// of source files (ADRs, KNOWLEDGE.md, staleness.sources), for review;
// observations carry their own mayBeStale flag.
func (e *Engine) StaleKnowledge(log *manifest.Log) ([]staleness.Finding, error) {
	rep, err := staleness.ScanTree(e.root, staleness.Auto, e.cfg.Staleness, log)
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

// Regressions lists the entries the learning engine flags as regressions
// (reinforced 3+ times, now a false positive).
func (e *Engine) Regressions(now time.Time) ([]string, error) {
	evs, _, err := journal.ReadFeedback(e.root)
	if err != nil {
		return nil, err
	}
	return learn.Regressions(learn.Fold(evs, now)), nil
}
