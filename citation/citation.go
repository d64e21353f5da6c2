// Package citation owns what recording knowledge citations writes, and in
// which order: the counts in .memory/.knowledge-usage.json, the Stop
// hook's scan position per session in .memory/.citation-offsets.json, the
// helpful "cited" feedback events in .memory/feedback.jsonl, and the record
// .memory/.citation-pass.json that makes the three agree after a crash at
// any step.
//
// A citation pass (the Stop hook, cite) that holds the learning lock
// writes, in this order (Record):
//
//  1. the record: a pass id, the SHA-256 of the usage file it is about to
//     write, the transcript stretch it counted (session, transcript, the
//     offset the scan reached), the size of feedback.jsonl and the
//     feedback lines;
//  2. the usage file (the commit point);
//  3. the offsets file;
//  4. the feedback lines, each carrying "pass":"<id>";
//  5. the record is removed.
//
// Every pass that takes the learning lock first calls CompletePending: a
// record whose usage hash is the usage file on disk was committed, so
// steps 3 and 4 are done again — the offset is set (idempotent), the
// lines appended unless feedback.jsonl holds a line of that pass id after
// the recorded size. Any other record belongs to a pass that died before
// its usage write, and is dropped: the offsets never moved, so the next
// scan counts that stretch once. Either way the record is then removed.
//
// Citations queued in the inbox while the lock was busy are applied by
// the inbox's drain, which uses AddCites, Advance, Events and AppendEvents.
package citation

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"

	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// OffsetsFile remembers, per session, how far each transcript was scanned,
// relative to the root. PassFile is the record of a citation pass in
// progress. Both are local state.
const (
	OffsetsFile = ".memory/.citation-offsets.json"
	PassFile    = ".memory/.citation-pass.json"
)

// keep is how long a session's scan position is remembered after its last
// scan.
const keep = 30 * 24 * time.Hour

// MaxCount bounds one entry's count in a queued item or a record: a
// transcript stretch of at most 64 MiB cannot cite one id more often.
const MaxCount = 64 << 20

// idRE is a knowledge id: ADR-NNN or PF-NNN, three or more digits.
var idRE = regexp.MustCompile(`^(?:ADR|PF)-[0-9]{3,}$`)

// ValidID reports whether id is a knowledge id (ADR-NNN, PF-NNN).
func ValidID(id string) bool { return len(id) <= 32 && idRE.MatchString(id) }

// ErrCorruptOffsets wraps an offsets file that does not parse.
var ErrCorruptOffsets = errors.New("citation offsets file is not valid (delete it to scan transcripts from the start)")

// Stretch is the part of a session's transcript a scan read: bytes
// [From, To) of Transcript (an absolute path).
type Stretch struct {
	Session    string `json:"session"`
	Transcript string `json:"transcript"`
	From       int64  `json:"from"`
	To         int64  `json:"to"`
}

// maxName bounds a stretch's session id and transcript path.
const maxName = 64 << 10

// Validate checks a stretch read from a file.
func (s Stretch) Validate() error {
	switch {
	case s.Session == "" || len(s.Session) > maxName:
		return fmt.Errorf("stretch: no session (or longer than %d bytes)", maxName)
	case !filepath.IsAbs(s.Transcript) || len(s.Transcript) > maxName:
		return fmt.Errorf("stretch: transcript %.100q is not an absolute path (of at most %d bytes)", s.Transcript, maxName)
	case s.From < 0 || s.To <= s.From:
		return fmt.Errorf("stretch: range [%d, %d) is empty or negative", s.From, s.To)
	}
	return nil
}

// ValidateCounts checks citation counts read from a file: knowledge ids,
// counts from 1 to MaxCount.
func ValidateCounts(counts map[string]int) error {
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		if !ValidID(id) {
			return fmt.Errorf("%.40q is not a knowledge id (ADR-NNN, PF-NNN)", id)
		}
		if n := counts[id]; n < 1 || n > MaxCount {
			return fmt.Errorf("%s: count %d out of range 1..%d", id, n, MaxCount)
		}
	}
	return nil
}

// Total is the sum of the positive counts.
func Total(counts map[string]int) int {
	t := 0
	for _, n := range counts {
		if n > 0 {
			t += n
		}
	}
	return t
}

// AddCites adds counts to u: cites += n and last_cited = now per id,
// registering an id u does not have yet.
func AddCites(u *manifest.Usage, counts map[string]int, now time.Time) {
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		if n := counts[id]; n > 0 {
			u.Cite(id, n, now)
		}
	}
}

// Offsets is the offsets file.
type Offsets struct {
	Version  int                 `json:"version"`
	Sessions map[string]Position `json:"sessions"`
}

// Position is how far a session's transcript was scanned.
type Position struct {
	Transcript string `json:"transcript"`
	Offset     int64  `json:"offset"`
	ScannedAt  string `json:"scanned_at"`
}

// ReadOffsets reads root's offsets file; a missing file has no sessions.
func ReadOffsets(root string) (*Offsets, error) {
	path := filepath.Join(root, OffsetsFile)
	o := &Offsets{Version: 1, Sessions: map[string]Position{}}
	data, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return o, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read citation offsets: %w", err)
	}
	if err := json.Unmarshal(data, o); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorruptOffsets, err)
	}
	if o.Sessions == nil {
		o.Sessions = map[string]Position{}
	}
	return o, nil
}

// Start is where the next scan of transcript for session begins: the
// remembered offset when the session was scanned in that transcript, else 0.
func (o *Offsets) Start(session, transcript string) int64 {
	if p, ok := o.Sessions[session]; ok && p.Transcript == transcript {
		return p.Offset
	}
	return 0
}

// Set remembers that session's transcript was scanned up to offset at now,
// and forgets sessions not scanned for keep.
func (o *Offsets) Set(session, transcript string, offset int64, now time.Time) {
	o.Sessions[session] = Position{Transcript: transcript, Offset: offset, ScannedAt: now.UTC().Format(time.RFC3339)}
	for k, p := range o.Sessions {
		if t, err := time.Parse(time.RFC3339, p.ScannedAt); err == nil && now.Sub(t) > keep {
			delete(o.Sessions, k)
		}
	}
}

// writeOffsets replaces root's offsets file atomically.
func writeOffsets(root string, o *Offsets) error {
	data, err := json.MarshalIndent(o, "", "  ")
	if err != nil {
		return err
	}
	if err := manifest.WriteFile(filepath.Join(root, OffsetsFile), append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write citation offsets: %w", err)
	}
	return nil
}

// advance sets the offset of s's session to s.To (see Advance).
func advance(root string, s Stretch, now time.Time) error {
	return Advance(root, []Stretch{s}, now)
}

// Advance records that the stretches were counted: each session's offset
// becomes its last stretch's end, in one write of the offsets file (none
// when nothing changes). The caller holds the learning lock.
func Advance(root string, stretches []Stretch, now time.Time) error {
	if len(stretches) == 0 {
		return nil
	}
	offs, err := ReadOffsets(root)
	if err != nil {
		return err
	}
	changed := false
	for _, s := range stretches {
		if p, ok := offs.Sessions[s.Session]; ok && p.Transcript == s.Transcript && p.Offset == s.To {
			continue
		}
		offs.Set(s.Session, s.Transcript, s.To, now)
		changed = true
	}
	if !changed {
		return nil
	}
	return writeOffsets(root, offs)
}

// pass is the record of a citation pass in progress.
type pass struct {
	Version int    `json:"v"`
	ID      string `json:"id"`    // the "pass" id its feedback lines carry
	Usage   string `json:"usage"` // SHA-256 (hex) of the usage file the pass writes
	// Stretch is the transcript range counted (none for citations read
	// from stdin).
	Stretch *Stretch `json:"stretch,omitempty"`
	At      string   `json:"at"`
	// Offset is the size of feedback.jsonl before the pass appended its
	// Events (one helpful "cited" event per entry).
	Offset int64             `json:"offset"`
	Events []json.RawMessage `json:"events"`
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func newPassID(now time.Time) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "cite-" + now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Events returns the feedback lines of counts: one helpful "cited" event
// per entry (learn.CitationEvents), as journal.MarshalEvent writes them.
func Events(counts map[string]int, now time.Time) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, e := range learn.CitationEvents(counts, now) {
		b, err := journal.MarshalEvent(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// AppendEvents appends the feedback lines of a pass or a queued item
// (id) unless feedback.jsonl already holds a line of id after offset,
// and returns how many it appended.
func AppendEvents(root, id string, offset int64, events []json.RawMessage) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	if done, err := journal.Journaled(root, id, offset); err != nil || done {
		return 0, err
	}
	if err := journal.AppendFeedbackPass(root, id, events); err != nil {
		return 0, err
	}
	return len(events), nil
}

// Record adds counts to the usage file, advances s's session to s.To when
// s is not nil, and appends a helpful "cited" feedback event per entry,
// in the order of the package comment. The caller holds the learning
// lock. A usage file that does not parse is an error wrapping
// manifest.ErrCorruptUsage, and nothing is written.
func Record(root string, counts map[string]int, now time.Time, s *Stretch) error {
	if Total(counts) == 0 {
		if s == nil {
			return nil
		}
		// Nothing counted: only the offset moves, in one atomic write.
		return advance(root, *s, now)
	}
	u, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err != nil {
		return err
	}
	AddCites(u, counts, now)
	b, err := u.Encode()
	if err != nil {
		return fmt.Errorf("encode knowledge usage: %w", err)
	}
	evs, err := Events(counts, now)
	if err != nil {
		return err
	}
	p := pass{Version: 1, ID: newPassID(now), Usage: sum(b), Stretch: s, At: now.UTC().Format(time.RFC3339),
		Offset: journal.FeedbackSize(root), Events: evs}
	rec, err := json.Marshal(p)
	if err != nil {
		return err
	}
	recPath := filepath.Join(root, PassFile)
	if err := manifest.WriteFile(recPath, append(rec, '\n'), 0o644); err != nil {
		return fmt.Errorf("write citation record: %w", err)
	}
	if err := manifest.WriteFile(manifest.PathsFor(root).Usage, b, 0o644); err != nil {
		return fmt.Errorf("write knowledge usage: %w", err)
	}
	if err := failpoint.Inject("cite:after-usage"); err != nil {
		return fmt.Errorf("citations: %w", err)
	}
	if err := complete(root, &p, now); err != nil {
		return err
	}
	if err := os.Remove(recPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove citation record: %w", err)
	}
	return nil
}

// complete does what follows a pass's usage write: the offset, then the
// feedback; both are idempotent, so a crashed pass is completed by
// running it again.
func complete(root string, p *pass, at time.Time) error {
	if p.Stretch != nil {
		if err := advance(root, *p.Stretch, at); err != nil {
			return err
		}
		if err := failpoint.Inject("cite:after-offsets"); err != nil {
			return fmt.Errorf("citations: %w", err)
		}
	}
	if _, err := AppendEvents(root, p.ID, p.Offset, p.Events); err != nil {
		return fmt.Errorf("cited feedback: %w", err)
	}
	if err := failpoint.Inject("cite:after-feedback"); err != nil {
		return fmt.Errorf("citations: %w", err)
	}
	return nil
}

// CommittedEnd is where a citation pass that wrote its usage but not yet
// its offset (interrupted by a failed write; the next holder of the
// learning lock completes it, CompletePending) left the transcript of
// session: its stretch's end when the record names that session and
// transcript and the usage file is the one it wrote, else 0. A scan that
// cannot take the lock queues what it reads; it starts there, or it
// would queue counts the usage file already holds. Read before the
// offsets: a completion advances them before it removes the record.
func CommittedEnd(root, session, transcript string) int64 {
	b, err := safefs.ReadFile(filepath.Join(root, PassFile), safefs.MaxState)
	if err != nil {
		return 0
	}
	p, err := parsePass(b)
	if err != nil || p.Stretch == nil || p.Stretch.Session != session || p.Stretch.Transcript != transcript {
		return 0
	}
	if u, err := safefs.ReadFile(manifest.PathsFor(root).Usage, safefs.MaxState); err != nil || sum(u) != p.Usage {
		return 0
	}
	return p.Stretch.To
}

// Pending reports whether a citation record exists (a pass is in progress
// or was interrupted).
func Pending(root string) bool {
	_, err := os.Lstat(filepath.Join(root, PassFile))
	return err == nil
}

// CompletePending finishes a citation pass a crash interrupted (see the
// package comment) and reports whether it found one that had committed.
// The caller holds the learning lock. A record that does not parse is
// kept aside as .citation-pass.json.corrupt-<time>, never used.
func CompletePending(root string) (bool, error) {
	path := filepath.Join(root, PassFile)
	b, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("citation record: %w", err)
	}
	p, err := parsePass(b)
	if err != nil {
		aside := path + ".corrupt-" + time.Now().UTC().Format("20060102T150405Z")
		if err := os.Rename(path, aside); err != nil {
			return false, fmt.Errorf("citation record: %w", err)
		}
		return false, nil
	}
	done := false
	if u, err := safefs.ReadFile(manifest.PathsFor(root).Usage, safefs.MaxState); err == nil && sum(u) == p.Usage {
		at, err := time.Parse(time.RFC3339, p.At)
		if err != nil {
			at = time.Now()
		}
		if err := complete(root, &p, at); err != nil {
			return false, err
		}
		done = true
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return done, fmt.Errorf("remove citation record: %w", err)
	}
	return done, nil
}

// parsePass decodes a citation record: version 1, an id, a stretch that
// validates, feedback lines that parse.
func parsePass(b []byte) (pass, error) {
	var p pass
	if err := json.Unmarshal(b, &p); err != nil {
		return p, err
	}
	if p.Version != 1 || p.ID == "" || p.Usage == "" {
		return p, fmt.Errorf("citation record: version %d, id %q", p.Version, p.ID)
	}
	if p.Stretch != nil {
		if err := p.Stretch.Validate(); err != nil {
			return p, err
		}
	}
	for i, e := range p.Events {
		if _, err := journal.ParseEvent(e); err != nil {
			return p, fmt.Errorf("citation record: event %d: %w", i+1, err)
		}
	}
	return p, nil
}
