package journal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// SnapshotFile is the fold snapshot of feedback.jsonl, a disposable cache
// under .memory/.cache/: the learn fold's raw sums and the per-type tally
// of the journal's first Size bytes (complete lines only), so that a
// reader folds only the lines appended since. It is checked against the
// journal before use — same file (device and inode), at least Size bytes,
// the same first bytes and the same last folded line — and ignored (the
// journal is folded from scratch) when missing, unreadable, corrupt, from
// another version or not matching. It never changes a result. It is
// written without a sync: its header holds the SHA-256 of the fold state
// after it, so a snapshot a power cut left half written or zeroed is
// ignored like a corrupt one, and an older one that survived is merely
// older.
const SnapshotFile = "feedback.snapshot"

const (
	snapshotVersion = 2
	// headBytes is how much of the journal's beginning the snapshot
	// hashes: a tool rewriting the file in place is caught there or at
	// the last folded line.
	headBytes = 4096
	// maxLastLine bounds the last folded line re-read to check a snapshot.
	maxLastLine = 1 << 20
)

// snapshotDoc is SnapshotFile: one JSON line (the checks, the per-type
// tally and the SHA-256 of what follows), then the learn fold's raw state
// in its binary form (learn.Folder.MarshalBinary).
type snapshotDoc struct {
	Version int                  `json:"version"`
	Size    int64                `json:"size"`
	Dev     uint64               `json:"dev"`
	Ino     uint64               `json:"ino"`
	HeadLen int64                `json:"head_len"`
	Head    string               `json:"head"`
	LastAt  int64                `json:"last_at"`
	Last    string               `json:"last"`
	Corrupt int                  `json:"corrupt"`
	Since   map[string]time.Time `json:"since"`
	Tally   keptTally            `json:"tally"`
	State   string               `json:"state"` // hashOf the fold state

	fold *learn.Folder // the bytes after the header line
}

// Folded is feedback.jsonl folded: what a full read with ReadFeedback,
// learn.FoldWith and learn.Tally gives, bit for bit.
type Folded struct {
	// Stats is learn.FoldWith of every event as of the fold time.
	Stats map[string]learn.Stats
	// Tally is learn.Tally of every event since Resets (the policy's
	// per-type resets when the journal was folded).
	Tally  map[string]learn.TypeStats
	Resets map[string]time.Time
	// Events and Corrupt count the lines that parsed and those that did not.
	Events, Corrupt int
	// FromSnapshot is set when a valid snapshot was resumed; TailBytes is
	// how much of the journal was read and parsed.
	FromSnapshot bool
	TailBytes    int64
	// SnapshotErr is why a new snapshot could not be written (nil: written
	// or not needed). The fold is complete either way: a warning at most.
	SnapshotErr error

	folder   *learn.Folder
	size     int64 // bytes of the journal folded (-1: unknown)
	dev, ino uint64
}

// StatsAt returns the stats of the same fold as of another time or with
// other parameters (Stats is StatsAt the fold's own).
func (f Folded) StatsAt(now time.Time, p learn.Params) map[string]learn.Stats {
	if f.folder == nil {
		return map[string]learn.Stats{}
	}
	return f.folder.Result(now, p)
}

// Current reports whether the journal is still the one folded — the same
// file at the same size — so that a caller that folded it moments ago
// (the session start's policy refresh) can rank from that fold instead of
// folding again.
func (f Folded) Current(root string) bool {
	if f.folder == nil || f.size < 0 {
		return false
	}
	fi, err := safefs.Lstat(Path(root, FeedbackFile))
	if err != nil {
		return f.size == 0 && errors.Is(err, os.ErrNotExist)
	}
	dev, ino := fileIdentity(fi)
	return fi.Mode().IsRegular() && fi.Size() == f.size && dev == f.dev && ino == f.ino
}

// folding is the raw result of foldJournal.
type folding struct {
	folder       *learn.Folder
	tally        map[string]learn.TypeStats
	since        map[string]time.Time
	corrupt      int
	fromSnapshot bool
	tail         int64
	save         []byte // a new snapshot to write (nil: none)
	size         int64  // bytes of the journal folded (-1: unknown)
	dev, ino     uint64
}

func (fd folding) result(now time.Time, p learn.Params) Folded {
	return Folded{
		Stats: fd.folder.Result(now, p), Tally: fd.tally, Resets: fd.since,
		Events: fd.folder.Events(), Corrupt: fd.corrupt,
		FromSnapshot: fd.fromSnapshot, TailBytes: fd.tail,
		folder: fd.folder, size: fd.size, dev: fd.dev, ino: fd.ino,
	}
}

// FoldFeedback folds .memory/feedback.jsonl as of now with the engine
// parameters p, reading only the lines appended since the fold snapshot
// (SnapshotFile). The tally is taken since the resets of the policy file.
// When it read lines the snapshot did not cover, it refreshes the
// snapshot if the learning lock is free at once; it never waits for it.
// The commands that only record (outcome, verdict, reconcile's feedback)
// never write the snapshot: the readers that rank do.
// Lines that do not parse are counted, as ReadFeedback does.
func FoldFeedback(root string, now time.Time, p learn.Params) (Folded, error) {
	pol, perr := LoadPolicy(root)
	fd, err := foldJournal(root, pol.Resets)
	if err != nil {
		return Folded{}, err
	}
	var serr error
	if fd.save != nil && perr == nil {
		// A snapshot is checked against the journal before use, so one
		// overtaken by a newer one is merely older, never wrong.
		if lock, err := manifest.AcquireLock(context.Background(), LockPath(root), 0); err == nil {
			serr = saveSnapshot(root, fd.save)
			lock.Release()
		}
	}
	f := fd.result(now, p)
	f.SnapshotErr = serr
	return f, nil
}

func saveSnapshot(root string, b []byte) error {
	if _, err := cachedir.Ensure(root); err != nil {
		return err
	}
	// Not synced: two files synced one after the other (the policy's is)
	// were 1–2.5 ms of a reconcile that recorded feedback at 10,000
	// observations, and a snapshot that did not reach the disk whole is
	// told by its sum (SnapshotFile).
	return manifest.WriteFileUnsynced(cachedir.Path(root, SnapshotFile), b, 0o644)
}

// foldJournal folds the journal, resuming the snapshot when it matches and
// folding from scratch otherwise. Whatever goes unexpectedly — the file
// changes while read, a tail event older than the snapshot's newest — it
// falls back to the full read, the reference.
func foldJournal(root string, since map[string]time.Time) (folding, error) {
	if fd, ok := foldIncremental(root, since, true); ok {
		return fd, nil
	}
	if fd, ok := foldIncremental(root, since, false); ok {
		return fd, nil
	}
	return foldFull(root, since)
}

// foldFull is the reference: ReadFeedback, learn.Folder, learn.Tally.
func foldFull(root string, since map[string]time.Time) (folding, error) {
	evs, corrupt, err := ReadFeedback(root)
	if err != nil {
		return folding{}, err
	}
	f := learn.NewFolder()
	f.Add(evs)
	return folding{folder: f, tally: learn.Tally(evs, since), since: since, corrupt: corrupt, tail: -1, size: -1}, nil
}

// foldIncremental folds from the snapshot (useSnap) or from the start of
// the file; ok is false when the caller must take another way.
func foldIncremental(root string, since map[string]time.Time, useSnap bool) (folding, bool) {
	path := Path(root, FeedbackFile)
	f, err := safefs.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && !useSnap {
			return folding{folder: learn.NewFolder(), tally: map[string]learn.TypeStats{}, since: since, size: 0}, true
		}
		return folding{}, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() > safefs.MaxJournal {
		return folding{}, false
	}
	size := fi.Size()
	dev, ino := fileIdentity(fi)

	fd := folding{folder: learn.NewFolder(), tally: map[string]learn.TypeStats{}, since: since, size: size, dev: dev, ino: ino}
	var start int64
	if useSnap {
		s, ok := loadSnapshot(root)
		if !ok || !s.matches(f, size, dev, ino, since) {
			return folding{}, false
		}
		start = s.Size
		fd.folder, fd.corrupt, fd.fromSnapshot = s.fold, s.Corrupt, true
		if s.Tally != nil {
			fd.tally = s.Tally.tally()
		}
	}
	data := make([]byte, size-start)
	if _, err := f.ReadAt(data, start); err != nil && !(errors.Is(err, io.EOF) && len(data) == 0) {
		return folding{}, false
	}
	fd.tail = int64(len(data))
	cut := bytes.LastIndexByte(data, '\n') + 1
	complete, partial := data[:cut], data[cut:]

	in := interner{}
	evs, corrupt := parseLines(complete, in)
	if !fd.folder.Add(evs) {
		return folding{}, false
	}
	learn.TallyInto(fd.tally, evs, since)
	fd.corrupt += corrupt

	if cut > 0 || !useSnap {
		end := start + int64(cut)
		if doc, ok := newSnapshot(f, data, start, end, dev, ino, fd, since); ok {
			fd.save = doc
		}
	}

	if len(bytes.TrimSpace(partial)) > 0 {
		// The last line has no newline yet: folded as ReadFeedback
		// does (when it does not parse, it is an append in progress,
		// not counted), never kept in the snapshot (a writer may
		// complete it).
		if e, err := parseEvent(partial, in); err == nil {
			if !fd.folder.Add([]learn.Event{e}) {
				return folding{}, false
			}
			learn.TallyInto(fd.tally, []learn.Event{e}, since)
		}
	}
	return fd, true
}

// parseLines parses the non-blank lines of data as readLines does.
func parseLines(data []byte, in interner) (evs []learn.Event, corrupt int) {
	evs = make([]learn.Event, 0, bytes.Count(data, []byte{'\n'})+1)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := parseEvent(line, in)
		if err != nil {
			corrupt++
			continue
		}
		evs = append(evs, e)
	}
	return evs, corrupt
}

// newSnapshot encodes the state fd reached at byte end of the journal
// (a line boundary); data holds the bytes from start. ok is false when the
// state cannot be kept (nothing folded, or sums JSON cannot hold).
func newSnapshot(f *os.File, data []byte, start, end int64, dev, ino uint64, fd folding, since map[string]time.Time) ([]byte, bool) {
	if end == 0 {
		return nil, false
	}
	headLen := min(end, headBytes)
	head := make([]byte, headLen)
	if headLen <= int64(len(data)) && start == 0 {
		copy(head, data)
	} else if _, err := f.ReadAt(head, 0); err != nil {
		return nil, false
	}
	complete := data[:end-start]
	lastAt := start + int64(bytes.LastIndexByte(complete[:len(complete)-1], '\n')+1)
	if end-lastAt > maxLastLine {
		return nil, false
	}
	doc := snapshotDoc{
		Version: snapshotVersion, Size: end, Dev: dev, Ino: ino,
		HeadLen: headLen, Head: hashOf(head),
		LastAt: lastAt, Last: hashOf(data[lastAt-start : end-start]),
		Corrupt: fd.corrupt, Since: since, Tally: keep(fd.tally),
	}
	state, err := fd.folder.MarshalBinary()
	if err != nil {
		return nil, false
	}
	doc.State = hashOf(state)
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, false
	}
	return append(append(b, '\n'), state...), true
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// loadSnapshot reads SnapshotFile; ok is false when it is missing,
// unreadable, corrupt or from another version.
func loadSnapshot(root string) (snapshotDoc, bool) {
	b, err := safefs.ReadFile(cachedir.Path(root, SnapshotFile), safefs.MaxState)
	if err != nil {
		return snapshotDoc{}, false
	}
	header, state, ok := bytes.Cut(b, []byte{'\n'})
	if !ok {
		return snapshotDoc{}, false
	}
	var s snapshotDoc
	if err := json.Unmarshal(header, &s); err != nil || s.Version != snapshotVersion || s.State != hashOf(state) {
		return snapshotDoc{}, false
	}
	s.fold = learn.NewFolder()
	if err := s.fold.UnmarshalBinary(state); err != nil {
		return snapshotDoc{}, false
	}
	if s.Size <= 0 || s.HeadLen != min(s.Size, headBytes) || s.LastAt < 0 || s.LastAt >= s.Size || s.Size-s.LastAt > maxLastLine || s.Corrupt < 0 {
		return snapshotDoc{}, false
	}
	return s, true
}

// matches checks the snapshot against the open journal.
func (s snapshotDoc) matches(f *os.File, size int64, dev, ino uint64, since map[string]time.Time) bool {
	if s.Size > size || s.Dev != dev || s.Ino != ino || !sameResets(s.Since, since) {
		return false
	}
	head := make([]byte, s.HeadLen)
	if _, err := f.ReadAt(head, 0); err != nil || hashOf(head) != s.Head {
		return false
	}
	last := make([]byte, s.Size-s.LastAt)
	if _, err := f.ReadAt(last, s.LastAt); err != nil || hashOf(last) != s.Last {
		return false
	}
	return last[len(last)-1] == '\n'
}

func sameResets(a, b map[string]time.Time) bool {
	if len(a) != len(b) {
		return false
	}
	for k, t := range a {
		u, ok := b[k]
		if !ok || !t.Equal(u) {
			return false
		}
	}
	return true
}
