package journal

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
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
	"github.com/learnwatch/learnwatch/safefs"
)

// Exactly-once learning signals of a reconcile. A reconcile's feedback
// events (deleted, edited, kept) describe the state it writes; they must
// be in feedback.jsonl exactly once whatever step the pass is killed at.
// Under the learning lock, a pass:
//
//  1. completes an interrupted pass (CompletePending, called by every pass
//     that takes the lock, before it writes anything);
//  2. writes its record, .memory/.feedback-pass.json (Prepare): a pass id,
//     the journal's size, the events, and the SHA-256 of the manifest it
//     is about to write (a deletion removes the manifest entry, an edit
//     updates its hash: the manifest is the state the events describe);
//  3. writes the log and the manifest;
//  4. appends its events, each line carrying "pass":"<id>", writes the
//     kept stamp when it recorded kept events, and removes the record
//     (Commit).
//
// CompletePending reads a record left by a killed pass: when the manifest
// on disk is not the one the record names, the pass died before its state
// was written and no event is due (the next reconcile sees the same
// deletion and records it); otherwise the events are appended unless
// feedback.jsonl already holds a line of that pass id (after the size it
// had then). Then the record is removed. A pass with only kept events
// changes no state: its record alone commits them.

// PassFile is the record of the reconcile in progress (local state).
const PassFile = ".feedback-pass.json"

// Pass is the feedback of one reconcile.
type Pass struct {
	ID string `json:"pass"`
	// Offset is the size of feedback.jsonl before the pass appended.
	Offset int64 `json:"offset"`
	// Manifest is the SHA-256 (hex) of the manifest the pass writes, empty
	// when its events need no manifest write (kept only).
	Manifest string `json:"manifest,omitempty"`
	// Kept is set when the events include the day's kept events.
	Kept   bool              `json:"kept,omitempty"`
	At     string            `json:"at"`
	Events []json.RawMessage `json:"events"`
}

func newPassID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "pass-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// ManifestSum is the hex SHA-256 of manifest bytes, as Pass.Manifest.
func ManifestSum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// journaled reports whether feedback.jsonl holds a line of pass id at or
// after offset (anywhere, when the file shrank).
func journaled(root, id string, offset int64) (bool, error) {
	f, err := safefs.Open(Path(root, FeedbackFile))
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
	b, err := io.ReadAll(io.LimitReader(f, safefs.MaxJournal))
	if err != nil {
		return false, err
	}
	return bytes.Contains(b, []byte(`"pass":"`+id+`"`)), nil
}

// CompletePending finishes the pass a crash interrupted (see above) and
// returns how many of its events it appended. The caller holds the
// learning lock. A record that does not parse is kept aside as
// .feedback-pass.json.corrupt-<time>, never used.
func CompletePending(root string) (int, error) {
	path := Path(root, PassFile)
	b, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	var p Pass
	if err := json.Unmarshal(b, &p); err != nil || p.ID == "" {
		aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(path, aside); err != nil {
			return 0, err
		}
		return 0, nil
	}
	n := 0
	if committed(root, p.Manifest) {
		done, err := journaled(root, p.ID, p.Offset)
		if err != nil {
			return 0, err
		}
		if !done {
			if err := appendPass(root, &p); err != nil {
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
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return n, err
	}
	return n, nil
}

// committed reports whether the manifest on disk is the one with sum (any
// manifest when sum is empty).
func committed(root, sum string) bool {
	if sum == "" {
		return true
	}
	b, err := safefs.ReadFile(manifest.PathsFor(root).Manifest, safefs.MaxState)
	return err == nil && ManifestSum(b) == sum
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

// Prepare writes the record of a pass about to write its state: evs, and
// manifestSum, the ManifestSum of the manifest it will write ("" when it
// writes none). kept says evs include the day's kept events. No events:
// nothing is written and the pass is nil.
func Prepare(root string, evs []learn.Event, kept bool, manifestSum string, now time.Time) (*Pass, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	p := &Pass{ID: newPassID(now), Manifest: manifestSum, Kept: kept, At: now.UTC().Format(time.RFC3339)}
	if fi, err := safefs.Lstat(Path(root, FeedbackFile)); err == nil && fi.Mode().IsRegular() {
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
	if err := manifest.WriteFile(Path(root, PassFile), append(raw, '\n'), 0o644); err != nil {
		return nil, err
	}
	return p, nil
}

// Commit appends the pass's events once its state is written, writes the
// kept stamp and removes the record.
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
		if err := MarkKept(root, at); err != nil {
			return err
		}
	}
	if err := os.Remove(Path(root, PassFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// SelectEvents picks the events a reconcile records: all but kept, and
// kept only for the session's reconcile at most once per UTC day
// (KeptDue). It reports whether kept events are included, and whether
// they were due: a session pass that was due and had none (nothing
// unchanged, nothing rendered yet) settles the day all the same (the
// caller writes the stamp with MarkKept once its state is written), or
// every session pass of the day would run in full, due again.
func SelectEvents(root string, evs []learn.Event, session bool, now time.Time) (out []learn.Event, kept, due bool) {
	keep := session && KeptDue(root, now)
	for _, e := range evs {
		if e.Kind == learn.KindKept {
			if !keep {
				continue
			}
			kept = true
		}
		out = append(out, e)
	}
	return out, kept, keep
}

// Journaled reports whether feedback.jsonl holds a line recorded with
// pass id at or after offset (the file's size before the events could
// have been appended). Inbox items use their id as the pass id.
func Journaled(root, id string, offset int64) (bool, error) { return journaled(root, id, offset) }

// AppendFeedbackPass appends events (feedback.jsonl lines, as MarshalEvent
// writes them) in one write, each carrying "pass":id.
func AppendFeedbackPass(root, id string, events []json.RawMessage) error {
	return appendPass(root, &Pass{ID: id, Events: events})
}

// FeedbackSize is the size of feedback.jsonl (0 when missing).
func FeedbackSize(root string) int64 {
	fi, err := safefs.Lstat(Path(root, FeedbackFile))
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}
