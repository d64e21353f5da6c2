package journal

import (
	"bytes"
	"context"
	"encoding/base64"
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

// ArchiveFile receives, verbatim, the lines a compaction folded into the
// base line: nothing a person or another tool wrote is ever lost. The fold
// never reads it.
const ArchiveFile = "feedback.archive.jsonl"

// BaseTarget is the target of a compaction's base line.
const BaseTarget = "learnwatch:base"

// parseBase decodes the base of a "compacted" line; a line of that kind
// without a valid base does not parse (it is counted, never dropped).
func parseBase(l eventLine, cut time.Time) (*learn.Base, error) {
	if l.Base == "" {
		return nil, errors.New(`field "base": missing on a compacted line`)
	}
	raw, err := base64.StdEncoding.DecodeString(l.Base)
	if err != nil {
		return nil, fmt.Errorf(`field "base": %w`, err)
	}
	f := learn.NewFolder()
	if err := f.UnmarshalBinary(raw); err != nil {
		return nil, fmt.Errorf(`field "base": %w`, err)
	}
	for typ, t := range l.Tally {
		if t.N < 0 || t.Successes < 0 || t.Failures < 0 || t.Retries < 0 {
			return nil, fmt.Errorf(`field "tally": negative count for %q`, typ)
		}
	}
	return &learn.Base{Cut: cut, Fold: f, Tally: normalTally(l.Tally.tally()), Since: normalSince(l.Since)}, nil
}

// marshalBase returns the base line of a compaction at cut.
func marshalBase(cut time.Time, f *learn.Folder, tally map[string]learn.TypeStats, since map[string]time.Time) ([]byte, error) {
	return MarshalEvent(learn.Event{
		TS: cut, Target: BaseTarget, Kind: learn.KindCompacted, Value: float64(f.Events()), Source: "learnwatch compact",
		Base: &learn.Base{Cut: cut, Fold: f, Tally: normalTally(tally), Since: normalSince(since)},
	})
}

// keptTally is a tally as the journal keeps it to resume (a compaction's
// base line, the snapshot): learn.TypeStats with the deletions in force,
// which the tally's users (reports, the policy) never see.
type keptTally map[string]keptTypeStats

type keptTypeStats struct {
	learn.TypeStats
	Deleted map[string]string `json:"deleted,omitempty"`
}

// keep is m as the journal keeps it (nil for nil).
func keep(m map[string]learn.TypeStats) keptTally {
	if m == nil {
		return nil
	}
	out := make(keptTally, len(m))
	for typ, t := range m {
		out[typ] = keptTypeStats{TypeStats: t, Deleted: t.Deleted}
	}
	return out
}

// tally is k read back (nil for nil).
func (k keptTally) tally() map[string]learn.TypeStats {
	if k == nil {
		return nil
	}
	out := make(map[string]learn.TypeStats, len(k))
	for typ, t := range k {
		t.TypeStats.Deleted = t.Deleted
		out[typ] = t.TypeStats
	}
	return out
}

// normalTally and normalSince give "none" one representation (nil), as
// the JSON line reads back.
func normalTally(m map[string]learn.TypeStats) map[string]learn.TypeStats {
	if len(m) == 0 {
		return nil
	}
	for k, t := range m {
		if len(t.FailureReasons) == 0 && t.FailureReasons != nil {
			t.FailureReasons = nil
		}
		if len(t.Deleted) == 0 && t.Deleted != nil {
			t.Deleted = nil
		}
		m[k] = t
	}
	return m
}

func normalSince(m map[string]time.Time) map[string]time.Time {
	if len(m) == 0 {
		return nil
	}
	return m
}

// Compaction reports what CompactFeedback did.
type Compaction struct {
	Cut      time.Time `json:"cut"`
	Folded   int       `json:"folded"`    // lines folded into the base (and archived)
	Kept     int       `json:"kept"`      // lines left as they were
	BytesWas int64     `json:"bytes_was"` // the journal's size before
	BytesNow int64     `json:"bytes_now"` // and after
	CaughtUp int64     `json:"caught_up"` // bytes other writers appended meanwhile, carried over
}

// CompactFeedback folds every event of feedback.jsonl older than cut
// (and an earlier base line) into one base line, under the learning lock:
//
//  1. the journal is read; lines that parse and are older than cut (or a
//     base) are folded, every other line — newer events, lines that do
//     not parse — is kept verbatim, in order;
//  2. the folded lines are appended verbatim to feedback.archive.jsonl;
//  3. the journal is replaced atomically by the base line and the kept
//     lines, plus whatever other writers appended since step 1;
//  4. what they appended to the old file during the replacement is
//     carried over to the new one.
//
// A kill at any step leaves either the old journal or the new one, whose
// folds are equal; the archive may then hold some lines twice (it is
// never read). The fold of the new journal equals the old one's: the
// learn fold bit for bit; the per-type tally, a sum in file order, bit for
// bit when the journal's lines were in time order (lines out of order are
// counted as if they came on their side of the cut).
func CompactFeedback(ctx context.Context, root string, cut time.Time, timeout time.Duration) (Compaction, error) {
	res := Compaction{Cut: cut}
	if _, err := os.Stat(Path(root, "")); errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	lock, err := manifest.AcquireLock(ctx, LockPath(root), timeout)
	if err != nil {
		return res, err
	}
	defer lock.Release()
	pol, err := LoadPolicy(root)
	if err != nil {
		return res, err
	}
	path := Path(root, FeedbackFile)
	old, err := safefs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("read %s: %w", path, err)
	}
	defer old.Close()
	data, err := readCappedAt(old, path, 0)
	if err != nil {
		return res, err
	}
	res.BytesWas = int64(len(data))
	end := int64(bytes.LastIndexByte(data, '\n') + 1) // whole lines only
	var folded []learn.Event
	var archived, kept [][]byte
	in := interner{}
	// A base covers the events older than its cut: the new base covers at
	// least what an earlier one did.
	for rest := data[:end]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i]
		rest = rest[i+1:]
		if bytes.Contains(line, []byte(learn.KindCompacted)) {
			if e, err := parseEvent(line, in); err == nil && learn.IsBase(e) && e.Base.Cut.After(cut) {
				cut = e.Base.Cut
			}
		}
	}
	res.Cut = cut
	for rest := data[:end]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		line := rest[:i]
		rest = rest[i+1:]
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := parseEvent(line, in)
		if err == nil && (learn.IsBase(e) || e.TS.Before(cut)) {
			folded = append(folded, e)
			archived = append(archived, line)
			continue
		}
		kept = append(kept, line)
	}
	res.Folded, res.Kept = len(archived), len(kept)
	if len(folded) == 0 || len(folded) == 1 && learn.IsBase(folded[0]) {
		// Nothing new to fold.
		res.Folded = 0
		res.BytesNow = res.BytesWas
		return res, nil
	}
	f := learn.NewFolder()
	f.Add(folded)
	tally := map[string]learn.TypeStats{}
	learn.TallyInto(tally, folded, pol.Resets)
	base, err := marshalBase(cut, f, tally, pol.Resets)
	if err != nil {
		return res, fmt.Errorf("compact %s: %w", path, err)
	}
	if err := appendLines(Path(root, ArchiveFile), archived); err != nil {
		return res, err
	}
	var next bytes.Buffer
	next.Write(base)
	next.WriteByte('\n')
	for _, l := range kept {
		next.Write(l)
		next.WriteByte('\n')
	}
	// Appends hold the file's flock shared while they write
	// (manifest.AppendLine): with it held here, none is under way from
	// the last read to the replacement, and one that opened the old file
	// meanwhile appends to the new one.
	release, _ := manifest.HoldAppends(old, timeout)
	defer release()
	// What other writers appended since the read, up to now.
	more, err := readCappedAt(old, path, end)
	if err != nil {
		return res, err
	}
	next.Write(more)
	res.CaughtUp = int64(len(more))
	done := end + int64(len(more))
	if err := manifest.WriteFile(path, next.Bytes(), 0o644); err != nil {
		return res, err
	}
	release()
	res.BytesNow = int64(next.Len())
	// Appends that reached the old file while it was being replaced, by a
	// writer that does not take the flock (a file system without flock,
	// an older learnwatch): it opens, writes and closes in microseconds,
	// and two looks, a moment apart, carry over whatever made it there.
	for range 2 {
		if err := failpoint.Inject("compact:catch-up"); err != nil {
			return res, err
		}
		late, err := readCappedAt(old, path, done)
		if err != nil {
			return res, err
		}
		if len(late) > 0 {
			if err := appendLines(path, [][]byte{bytes.TrimSuffix(late, []byte{'\n'})}); err != nil {
				return res, err
			}
			done += int64(len(late))
			res.CaughtUp += int64(len(late))
			res.BytesNow += int64(len(late))
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The new journal has another inode: the fold snapshot no longer
	// matches, and the next reader that ranks writes a new one.
	return res, nil
}

// readCappedAt reads f from off to its end, within safefs.MaxJournal.
func readCappedAt(f *os.File, path string, off int64) ([]byte, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if fi.Size() > safefs.MaxJournal {
		return nil, fmt.Errorf("read %s: %w", path, safefs.TooLarge(path, fi.Size(), safefs.MaxJournal))
	}
	if fi.Size() <= off {
		return nil, nil
	}
	b := make([]byte, fi.Size()-off)
	n, err := f.ReadAt(b, off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b[:n], nil
}
