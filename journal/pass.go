package journal

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
)

// Exactly-once learning signals of a reconcile. A reconcile's feedback
// events (deleted, edited, kept) describe the state it writes; they must
// be in feedback.jsonl exactly once whatever point the pass is killed at.
// Under the learning lock, a pass:
//
//  1. completes the pass recorded in the manifest (CompletePending): if
//     feedback.jsonl, from the size it had then, has no line of that pass
//     id, the recorded events are appended now;
//  2. records its own events, with a new pass id and the journal's current
//     size, in the manifest (Prepare): the same atomic write as the state
//     they describe (a deletion removes the manifest entry, an edit updates
//     its hash);
//  3. writes the log and the manifest;
//  4. appends its events, each line carrying "pass":"<id>" (Commit).
//
// Killed before 3: the state was not written, no event is due (the next
// pass sees the same deletion and records it). Killed between 3 and 4: the
// next pass finds the record and appends the events. Killed after 4: the
// next pass finds the pass id in the journal and appends nothing. The
// record stays in the manifest until a later pass with events replaces it
// (or clears it when the manifest is written anyway).

// PendingKey is the manifest field that holds the last pass's events.
const PendingKey = "learnwatch_feedback_pass"

// Pass is the feedback of one reconcile.
type Pass struct {
	ID string `json:"pass"`
	// Offset is the size of feedback.jsonl before the pass appended.
	Offset int64 `json:"offset"`
	// Kept is set when the events include the day's kept events (the kept
	// stamp is written after them).
	Kept   bool              `json:"kept,omitempty"`
	At     string            `json:"at"`
	Events []json.RawMessage `json:"events"`
}

func newPassID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "pass-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// pendingOf returns the pass recorded in m, if any.
func pendingOf(m *manifest.Manifest) (*Pass, error) {
	raw, ok := m.Extra(PendingKey)
	if !ok {
		return nil, nil
	}
	var p Pass
	if err := json.Unmarshal(raw, &p); err != nil || p.ID == "" {
		// Not ours to read (edited by hand, another tool): nothing to
		// complete; the next pass with events replaces it.
		return nil, nil
	}
	return &p, nil
}

// journaled reports whether feedback.jsonl holds a line of pass id at or
// after offset (before it, when the file shrank).
func journaled(root, id string, offset int64) (bool, error) {
	f, err := os.Open(Path(root, FeedbackFile))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() >= offset {
		if _, err := f.Seek(offset, io.SeekStart); err != nil {
			return false, err
		}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte(`"pass":"`+id+`"`)), nil
}

// CompletePending appends the events of the pass recorded in m that a
// crash kept out of feedback.jsonl, and writes the kept stamp that pass
// owed. It returns how many events it appended. The caller holds the
// learning lock.
func CompletePending(root string, m *manifest.Manifest) (int, error) {
	p, err := pendingOf(m)
	if err != nil || p == nil {
		return 0, err
	}
	done, err := journaled(root, p.ID, p.Offset)
	if err != nil {
		return 0, err
	}
	n := 0
	if !done {
		if err := appendPass(root, p); err != nil {
			return 0, err
		}
		n = len(p.Events)
	}
	if p.Kept {
		if at, err := time.Parse(time.RFC3339, p.At); err == nil && KeptDue(root, at) {
			if err := MarkKept(root, at); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}

func appendPass(root string, p *Pass) error {
	lines := make([][]byte, 0, len(p.Events))
	for _, raw := range p.Events {
		e, err := ParseEvent(raw)
		if err != nil {
			return fmt.Errorf("feedback pass %s: %w", p.ID, err)
		}
		b, err := marshalEventPass(e, p.ID)
		if err != nil {
			return err
		}
		lines = append(lines, b)
	}
	return appendLines(Path(root, FeedbackFile), lines)
}

// Prepare records evs as this pass's feedback in m (to be written with the
// state they describe) and returns the pass; with no events it drops the
// record of an earlier pass, already complete, and returns nil. kept says
// evs include the day's kept events.
func Prepare(root string, m *manifest.Manifest, evs []learn.Event, kept bool, now time.Time) (*Pass, error) {
	if len(evs) == 0 {
		m.SetExtra(PendingKey, nil)
		return nil, nil
	}
	p := &Pass{ID: newPassID(now), Kept: kept, At: now.UTC().Format(time.RFC3339)}
	if fi, err := os.Stat(Path(root, FeedbackFile)); err == nil {
		p.Offset = fi.Size()
	}
	for _, e := range evs {
		b, err := MarshalEvent(e)
		if err != nil {
			return nil, err
		}
		p.Events = append(p.Events, b)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	m.SetExtra(PendingKey, raw)
	return p, nil
}

// Commit appends the pass's events (after the manifest holding its record
// was written) and writes the kept stamp.
func Commit(root string, p *Pass) error {
	if p == nil {
		return nil
	}
	if err := appendPass(root, p); err != nil {
		return err
	}
	if err := failpoint.Inject("reconcile:after-feedback"); err != nil {
		return err
	}
	if p.Kept {
		at, _ := time.Parse(time.RFC3339, p.At)
		return MarkKept(root, at)
	}
	return nil
}

// SelectEvents picks the events a reconcile records: all but kept, and
// kept only for the session's reconcile at most once per UTC day
// (KeptDue). It reports whether kept events are included.
func SelectEvents(root string, evs []learn.Event, session bool, now time.Time) ([]learn.Event, bool) {
	keep := session && KeptDue(root, now)
	var out []learn.Event
	kept := false
	for _, e := range evs {
		if e.Kind == learn.KindKept {
			if !keep {
				continue
			}
			kept = true
		}
		out = append(out, e)
	}
	return out, kept
}
