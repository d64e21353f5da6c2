package heal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// ErrNoPenalty is returned by Undo for an observation that has no deletion
// penalty on record.
var ErrNoPenalty = errors.New("no deletion penalty on record")

// ErrNoObservation is returned by Undo for an id the learning log does not
// hold.
var ErrNoObservation = errors.New("no such observation in the learning log")

// UndoResult says what undoing a penalty did.
type UndoResult struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	Confidence float64 `json:"confidence"`
	// Tracked is true when the artifact is there and tracked again; false
	// when it is gone: the entry is dropped and a created observation goes
	// back to ready, so the next render writes it again.
	Tracked bool `json:"tracked"`
	// PenalisedAt is when the penalty was applied (RFC 3339).
	PenalisedAt string `json:"penalised_at,omitempty"`
	// Event is the restored feedback event that cancels the deleted one.
	Event learn.Event `json:"-"`
}

// Undo reverses the deletion penalty of observation id by hand (`learnwatch
// restore`): status, confidence and deprecated_at go back to what the
// deletion record says they were, whatever happened since (the person
// asked). It edits st in memory and does no I/O.
func Undo(st *State, id string, now time.Time) (UndoResult, error) {
	o := st.Log.Find(id)
	if o == nil {
		return UndoResult{}, fmt.Errorf("%s: %w", id, ErrNoObservation)
	}
	i := st.Manifest.Find(id)
	if i < 0 || st.Manifest.Entries[i].Deleted == nil {
		return UndoResult{}, fmt.Errorf("%s (%s): %w", id, o.Status, ErrNoPenalty)
	}
	e := st.Manifest.Entries[i]
	penalised := e // as the penalty left it: the restore names its deletion
	d := e.Deleted
	o.Status, o.Confidence, o.DeprecatedAt = d.Status, d.Confidence, d.DeprecatedAt
	res := UndoResult{ID: id, PenalisedAt: d.At}
	rel, ok := st.Rel[e.Path]
	if ok && st.returned(e, rel, liveAnchors(st)) {
		e.Deleted = nil
		e.ContentHash = manifest.Hash(st.artifact(rel, e.AnchorID, id))
		e.Path = rel
		st.Manifest.Entries[i] = e
		res.Tracked = true
	} else {
		st.Manifest.Entries = append(st.Manifest.Entries[:i:i], st.Manifest.Entries[i+1:]...)
		if o.Status == manifest.Created {
			o.Status = manifest.Ready
			o.ArtifactPath = ""
		}
	}
	res.Status, res.Confidence = o.Status, o.Confidence
	res.Event = signal(penalised, o.ID, o.Type, learn.KindRestored, "restore", now)
	res.Event.Source = "cli"
	return res, nil
}

// artifact returns the current text of a present artifact: the file, or
// the knowledge section.
func (st *State) artifact(rel, anchor, obsID string) []byte {
	if anchor == "" {
		return st.Files[rel]
	}
	src, ok := st.Knowledge[rel]
	secs := st.Sections[rel]
	if !ok {
		src = st.Files[rel]
		secs = nil
	}
	if secs == nil {
		secs = markdown.Sections(src)
	}
	s, _ := findAnchor(secs, anchor, obsID)
	return markdown.SectionText(src, s)
}

// Selection names the deletion penalties Restore undoes: those of the
// observations IDs, or, when Since is set, every penalty applied at or
// after it (a clean-up that took many artifacts at once: `git clean -x`
// with .claude/ ignored, an `rm -r`).
type Selection struct {
	IDs   []string
	Since time.Time
}

// Restoration is what Restore did.
type Restoration struct {
	Undone []UndoResult
	// Inbox is what taking the learning lock drained (inbox.Lock).
	Inbox inbox.Result
	// FeedbackErr is set when the restored events could not be appended
	// after the files were written: their record stays, and the next
	// pass that takes the lock appends them (journal.CompletePending).
	FeedbackErr error
}

// Restore runs Undo on the repository at root under the learning lock for
// every penalty sel names, in the manifest's order for Since, and writes
// the log, then the manifest, once. An id without a penalty on record is an
// error that writes nothing; Since matching none restores none. The
// restored events are recorded exactly once, as a reconcile's are: the
// lock is taken through inbox.Lock (an interrupted reconcile's feedback is
// completed before this manifest replaces the one it names), and the
// events' record names the manifest written (journal.Prepare, Commit). A
// restore killed before its manifest was written can be run again: the
// penalties are still on record and are undone the same way.
func Restore(ctx context.Context, root string, sel Selection, opts Options) (Restoration, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	p := manifest.PathsFor(root)
	lock, drained, err := inbox.Lock(ctx, root, opts.LockTimeout)
	if err != nil {
		return Restoration{}, err
	}
	defer lock.Release()
	out := Restoration{Inbox: drained}
	st, err := Load(root)
	if err != nil {
		return out, err
	}
	if st.ManifestErr != nil {
		return out, fmt.Errorf("%w: run learnwatch reconcile first", st.ManifestErr)
	}
	ids := sel.IDs
	if !sel.Since.IsZero() {
		ids = PenalisedSince(st.Manifest, sel.Since)
	}
	undone := make([]UndoResult, 0, len(ids))
	named := map[string]bool{}
	for _, id := range ids {
		if named[id] {
			continue // named twice: undone once
		}
		named[id] = true
		res, err := Undo(st, id, opts.Now)
		if err != nil {
			return out, err
		}
		undone = append(undone, res)
	}
	if len(undone) == 0 {
		out.Undone = undone
		return out, nil
	}
	b, err := st.Manifest.Encode()
	if err != nil {
		return out, fmt.Errorf("encode manifest: %w", err)
	}
	evs := make([]learn.Event, len(undone))
	for i, r := range undone {
		evs[i] = r.Event
	}
	jp, err := journal.Prepare(root, evs, false, journal.ManifestSum(b), opts.Now)
	if err != nil {
		return out, fmt.Errorf("record feedback: %w", err)
	}
	if err := manifest.WriteLog(p.Log, st.Log); err != nil {
		return out, err
	}
	if err := manifest.WriteFile(p.Manifest, b, 0o644); err != nil {
		return out, err
	}
	out.Undone = undone
	if out.FeedbackErr = failpoint.Inject("restore:before-feedback"); out.FeedbackErr == nil {
		out.FeedbackErr = journal.Commit(root, jp)
	}
	return out, nil
}

// ManyDeleted is how many deletions in one pass make it say how to undo
// them all (UndoHint).
const ManyDeleted = 3

// UndoHint is what a pass that penalised ManyDeleted deletions or more
// tells the person (reconcile's text, the session-start hook's message, the
// watcher's log), naming the pass's time, which its penalties carry: ""
// for fewer.
func UndoHint(res Result) string {
	if res.Deletions < ManyDeleted {
		return ""
	}
	return fmt.Sprintf("%d artifacts deleted at once: if that was a clean-up (git clean -x, rm -r) and not a verdict on them, put them back (git restore, when git has them) or undo the penalties with `learnwatch restore --since %s`",
		res.Deletions, res.At.UTC().Truncate(time.Second).Format(time.RFC3339))
}

// PenalisedSince lists the observations of m's entries whose deletion
// penalty was applied at or after since, in the manifest's order, each
// once. A penalty whose time does not parse is left out.
func PenalisedSince(m *manifest.Manifest, since time.Time) []string {
	var ids []string
	seen := map[string]bool{}
	for _, e := range m.Entries {
		if e.Deleted == nil || seen[e.ObservationID] {
			continue
		}
		at, err := time.Parse(time.RFC3339, e.Deleted.At)
		if err != nil || at.Before(since) {
			continue
		}
		seen[e.ObservationID] = true
		ids = append(ids, e.ObservationID)
	}
	return ids
}
