package hooks

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"time"

	"github.com/learnwatch/learnwatch/citation"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// citeRE matches a knowledge ID: ADR-NNN or PF-NNN (three or more digits),
// as a whole word.
var citeRE = regexp.MustCompile(`\b(?:ADR|PF)-[0-9]{3,}\b`)

// Citations counts the knowledge IDs (ADR-NNN, PF-NNN) cited in a transcript.
//
// What counts: a transcript is read line by line. A line holding a JSON
// object is a message of the agent's JSONL transcript; only the text the
// assistant wrote counts — text content blocks (or string content) of a
// message whose role is "assistant". User prompts, the index learnwatch
// injects at session start, tool calls, tool results (files the agent read)
// and thinking are not citations. Any other line (a plain-text transcript)
// counts as text. An ID counts once per message (once per line of plain
// text), however often the message repeats it; the parts of one assistant
// message written as several lines sharing a message id count as one
// message.
func Citations(r io.Reader) (map[string]int, error) {
	counts := map[string]int{}
	_, err := scan(r, counts, true)
	return counts, err
}

// scan counts citations of the lines of r into counts and returns the number
// of bytes consumed. With partial false a last line without a newline is
// left unconsumed (the agent may still be writing it).
func scan(r io.Reader, counts map[string]int, partial bool) (int64, error) {
	br := bufio.NewReaderSize(io.LimitReader(r, MaxTranscriptScan), 64<<10)
	seen := map[string]bool{} // message id + "\x00" + cited id
	var n int64
	for {
		line, m, err := readLine(br, MaxTranscriptLine)
		if m > 0 && (err == nil || partial) {
			if line != nil {
				countLine(line, counts, seen)
			}
			n += m
		}
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, fmt.Errorf("read transcript: %w", err)
		}
	}
}

// Bounds on one scan of a transcript. A line longer than MaxTranscriptLine
// is skipped unread (it is consumed, never parsed); one scan reads at most
// MaxTranscriptScan bytes, and the remembered offset lets the next scan go
// on from there.
const (
	MaxTranscriptLine = 8 << 20
	MaxTranscriptScan = 64 << 20
)

// readLine reads one line, its '\n' included, and how many bytes it
// consumed. A line longer than max is consumed whole but returned as nil.
func readLine(br *bufio.Reader, max int) (line []byte, n int64, err error) {
	over := false
	for {
		frag, err := br.ReadSlice('\n')
		n += int64(len(frag))
		if !over && len(line)+len(frag) > max {
			over, line = true, nil
		}
		if !over {
			line = append(line, frag...)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if over {
			return nil, n, err
		}
		return line, n, err
	}
}

// transcriptLine is the part of a transcript line the scan reads. Two
// shapes are understood: the agent's {"type":"assistant","message":{"id",
// "role","content"}} and a bare {"role","content"} message.
type transcriptLine struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Message *struct {
		ID      string          `json:"id"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Content json.RawMessage `json:"content"`
}

func countLine(line []byte, counts map[string]int, seen map[string]bool) {
	t := bytes.TrimSpace(line)
	// Fast path: most lines of a transcript cite nothing.
	if !bytes.Contains(t, []byte("ADR-")) && !bytes.Contains(t, []byte("PF-")) {
		return
	}
	var m transcriptLine
	if t[0] != '{' {
		countText(t, counts)
		return
	}
	if err := json.Unmarshal(t, &m); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) { // not JSON after all: plain text
			countText(t, counts)
		}
		return
	}
	role, content, msgID := m.Role, m.Content, ""
	if m.Message != nil {
		role, content, msgID = m.Message.Role, m.Message.Content, m.Message.ID
	}
	if role == "" && m.Type == "assistant" {
		role = "assistant"
	}
	if role != "assistant" {
		return
	}
	ids := map[string]bool{}
	for _, text := range texts(content) {
		for _, id := range citeRE.FindAllString(text, -1) {
			ids[id] = true
		}
	}
	for id := range ids {
		if msgID != "" {
			k := msgID + "\x00" + id
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		counts[id]++
	}
}

// countText counts the IDs of one line of plain text, once each.
func countText(t []byte, counts map[string]int) {
	ids := map[string]bool{}
	for _, id := range citeRE.FindAll(t, -1) {
		ids[string(id)] = true
	}
	for id := range ids {
		counts[id]++
	}
}

// texts returns the text of a message content: a string, or the "text" of
// every block of type "text" in an array.
func texts(content json.RawMessage) []string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []string{s}
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return nil
	}
	var out []string
	for _, b := range blocks {
		if b.Type == "text" {
			out = append(out, b.Text)
		}
	}
	return out
}

// OffsetsFile remembers, per session, how far each transcript was scanned,
// relative to the root (package citation owns it).
const OffsetsFile = citation.OffsetsFile

// Recorded says what a citation scan counted and where the counts went.
type Recorded struct {
	Counts map[string]int
	// Queued is the inbox item the counts were queued as because the
	// learning lock stayed busy ("" when they were recorded directly).
	Queued string
}

// RecordCitations adds counts to .memory/.knowledge-usage.json under root:
// cites += n and last_cited = now for each ID, registering an ID the file
// does not have yet. Unknown keys and fields are kept. The read-modify-write
// holds .memory/.learning.lock (waiting up to lockTimeout) and replaces the
// file atomically. When the lock stays busy the counts are queued in the
// inbox instead (Recorded.Queued), for the next pass to add. A usage file
// that is not valid JSON is a *FileError and nothing is written.
func RecordCitations(ctx context.Context, root string, counts map[string]int, now time.Time, lockTimeout time.Duration) (Recorded, error) {
	counts = knowledgeCounts(counts)
	rec := Recorded{Counts: counts}
	if citation.Total(counts) == 0 {
		return rec, nil
	}
	p := manifest.PathsFor(root)
	lock, err := lockMemory(ctx, p, lockTimeout)
	if errors.Is(err, manifest.ErrLockTimeout) {
		return queue(root, now, counts, nil, err)
	}
	if err != nil {
		return rec, err
	}
	defer lock.Release()
	return rec, fileErr(root, citation.Record(root, counts, now, nil))
}

// RecordTranscript scans the part of the transcript file not yet scanned for
// session (a session ID; empty means the transcript's path), records its
// citations like RecordCitations and remembers how far it got in
// .memory/.citation-offsets.json, so that the Stop hook, which runs after
// every turn of the agent, never counts a message twice. Only complete lines
// are consumed. A transcript shorter than the remembered position was
// replaced and is scanned from the start.
//
// The usage write and the offset advance agree after a crash at any step
// (citation.Record). When the learning lock stays busy for lockTimeout,
// the stretch is still scanned and its counts queued in the inbox with
// the range it covers; the offsets move only when the item is drained,
// and until then a scan of the same session starts after the last queued
// stretch (inbox.QueuedEnd), so nothing is counted twice.
//
// With waitForGit (the Stop hook), the counts are queued the same way,
// without taking the lock, while git is in the middle of a rebase, merge,
// cherry-pick or revert (Operation): the usage file and the feedback
// journal are committed files, and one modified then would stop the
// operation (`git rebase --continue` refuses). The pass after it adds them.
func RecordTranscript(ctx context.Context, root, session, transcript string, now time.Time, lockTimeout time.Duration, waitForGit bool) (Recorded, error) {
	abs, err := filepath.Abs(transcript)
	if err != nil {
		return Recorded{}, fmt.Errorf("transcript %s: %w", transcript, err)
	}
	if session == "" {
		session = "file:" + abs
	}
	// The path comes from the hook input: never a symlink, a FIFO or a
	// device, only a regular file of the current user.
	f, err := safefs.OpenOwned(abs)
	if err != nil {
		return Recorded{}, fmt.Errorf("open transcript: %w", err)
	}
	defer f.Close()

	p := manifest.PathsFor(root)
	var lockErr error
	queued := false
	if waitForGit {
		if why := InProgress(root); why != "" {
			lockErr, queued = errors.New(why), true
		}
	}
	if !queued {
		var lock *manifest.Lock
		lock, lockErr = lockMemory(ctx, p, lockTimeout)
		queued = errors.Is(lockErr, manifest.ErrLockTimeout)
		if lockErr != nil && !queued {
			return Recorded{}, lockErr
		}
		if lock != nil {
			defer lock.Release()
		}
	}
	// The queued stretches and an interrupted pass's first, then the
	// offsets: a drain or a completion running meanwhile advances the
	// offsets before it removes an item or the record.
	end := max(inbox.QueuedEnd(root, session, abs), citation.CommittedEnd(root, session, abs))
	offs, err := citation.ReadOffsets(root)
	if err != nil {
		return Recorded{}, fileErr(root, err)
	}
	start := max(offs.Start(session, abs), end)
	if fi, err := f.Stat(); err == nil && fi.Size() < start {
		start = 0
	}
	if _, err := f.Seek(start, io.SeekStart); err != nil {
		return Recorded{}, fmt.Errorf("seek transcript %s: %w", abs, err)
	}
	counts := map[string]int{}
	n, err := scan(f, counts, false)
	if err != nil {
		return Recorded{}, fmt.Errorf("%s: %w", abs, err)
	}
	counts = knowledgeCounts(counts)
	rec := Recorded{Counts: counts}
	if n == 0 {
		return rec, nil // nothing new: nothing to remember
	}
	s := &citation.Stretch{Session: session, Transcript: abs, From: start, To: start + n}
	if queued {
		if citation.Total(counts) == 0 {
			// Nothing cited: the next scan reads this stretch again and
			// counts nothing again.
			return rec, nil
		}
		return queue(root, now, counts, s, lockErr)
	}
	return rec, fileErr(root, citation.Record(root, counts, now, s))
}

// knowledgeCounts keeps the counts of knowledge ids a drain would accept
// (citation.ValidID: an ADR-/PF- id of at most 32 characters), each at
// most citation.MaxCount. Recorded at once or queued, a scan records the
// same ids: the queue kept only these, and the usage file took any
// `ADR-` followed by digits directly.
func knowledgeCounts(counts map[string]int) map[string]int {
	valid := make(map[string]int, len(counts))
	for id, n := range counts {
		if n > 0 && citation.ValidID(id) {
			valid[id] = min(n, citation.MaxCount)
		}
	}
	return valid
}

// queue writes counts (knowledgeCounts, and the stretch they come from) as
// an inbox item.
func queue(root string, now time.Time, valid map[string]int, s *citation.Stretch, lockErr error) (Recorded, error) {
	rec := Recorded{Counts: valid}
	if len(valid) == 0 {
		return rec, nil
	}
	if s != nil && s.Validate() != nil {
		// A stretch a drain would refuse (a session id over 64 KiB): not
		// queued, the lock error stands and the offsets do not move.
		return Recorded{}, lockErr
	}
	it, err := inbox.EnqueueCite(root, now, valid, s)
	if err != nil {
		return Recorded{}, fmt.Errorf("%w; and queuing in the inbox failed: %v", lockErr, err)
	}
	rec.Queued = it.ID
	return rec, nil
}

func lockMemory(ctx context.Context, p manifest.Paths, timeout time.Duration) (*manifest.Lock, error) {
	if err := safefs.MkdirAll(p.Memory); err != nil {
		return nil, fmt.Errorf("create %s: %w", p.Memory, err)
	}
	lock, _, err := inbox.Lock(ctx, filepath.Dir(p.Memory), timeout)
	return lock, err
}

// fileErr makes a usage or offsets file that does not parse a *FileError
// (bad input: the caller exits 2 naming it).
func fileErr(root string, err error) error {
	switch {
	case errors.Is(err, manifest.ErrCorruptUsage):
		return &FileError{Path: manifest.PathsFor(root).Usage, Err: err}
	case errors.Is(err, citation.ErrCorruptOffsets):
		return &FileError{Path: filepath.Join(root, OffsetsFile), Err: err}
	}
	return err
}
