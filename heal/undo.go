package heal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// ErrNoPenalty is returned by Undo for an observation that has no deletion
// penalty on record.
var ErrNoPenalty = errors.New("no deletion penalty on record")

// UndoResult says what undoing a penalty did.
type UndoResult struct {
	ID         string  `json:"id"`
	Status     string  `json:"status"`
	Confidence float64 `json:"confidence"`
	// Tracked is true when the artifact is there and tracked again; false
	// when it is gone: the entry is dropped and a created observation goes
	// back to ready, so the next render writes it again.
	Tracked bool `json:"tracked"`
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
		return UndoResult{}, fmt.Errorf("%s: no such observation in the learning log", id)
	}
	i := st.Manifest.Find(id)
	if i < 0 || st.Manifest.Entries[i].Deleted == nil {
		return UndoResult{}, fmt.Errorf("%s (%s): %w", id, o.Status, ErrNoPenalty)
	}
	e := st.Manifest.Entries[i]
	penalised := e // as the penalty left it: the restore names its deletion
	d := e.Deleted
	o.Status, o.Confidence, o.DeprecatedAt = d.Status, d.Confidence, d.DeprecatedAt
	res := UndoResult{ID: id}
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

// Restore runs Undo on the repository at root under the learning lock and
// writes the log, then the manifest.
func Restore(ctx context.Context, root, id string, opts Options) (UndoResult, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	p := manifest.PathsFor(root)
	lock, err := manifest.AcquireLock(ctx, p.LearningLock, opts.LockTimeout)
	if err != nil {
		return UndoResult{}, err
	}
	defer lock.Release()
	st, err := Load(root)
	if err != nil {
		return UndoResult{}, err
	}
	if st.ManifestErr != nil {
		return UndoResult{}, fmt.Errorf("%w: run learnwatch reconcile first", st.ManifestErr)
	}
	res, err := Undo(st, id, opts.Now)
	if err != nil {
		return res, err
	}
	if err := manifest.WriteLog(p.Log, st.Log); err != nil {
		return res, err
	}
	return res, manifest.WriteManifest(p.Manifest, st.Manifest)
}
