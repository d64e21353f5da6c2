// Package journal owns the learning engine's files under .memory/: the
// append-only feedback.jsonl, outcomes.jsonl and errors.jsonl, and the
// learning-policy.json and .kept-stamp.json state files. Appends are one write on an O_APPEND
// descriptor (manifest.AppendLine), so concurrent writers — several
// processes included — never interleave partial lines; readers skip and count
// lines that do not parse and never rewrite them. The policy file is
// replaced atomically under the .memory/.learning.lock lock, keeping keys
// this version does not know. The scoring itself is package learn.
//
// It also owns the fold snapshot of feedback.jsonl (.memory/.cache/
// feedback.snapshot, a disposable cache: FoldFeedback reads only what was
// appended since) and its compaction (CompactFeedback: old events folded
// into one base line, the lines themselves moved verbatim to
// feedback.archive.jsonl).
package journal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// File names under .memory/.
const (
	FeedbackFile = "feedback.jsonl"
	OutcomesFile = "outcomes.jsonl"
	ErrorsFile   = "errors.jsonl"
	PolicyFile   = "learning-policy.json"
)

// Path returns root/.memory/name.
func Path(root, name string) string { return filepath.Join(root, ".memory", name) }

// LockPath is the learning lock shared with the log/manifest writers.
func LockPath(root string) string { return Path(root, manifest.LearningLock) }

// CorruptLine describes a line that did not parse.
type CorruptLine struct {
	File string
	Line int
	Err  error
}

func (c CorruptLine) Error() string { return fmt.Sprintf("%s:%d: %v", c.File, c.Line, c.Err) }

// appendLines appends lines to path in a single write. If the file's last
// byte is not a newline (a torn earlier write), a newline is written first
// so the new lines stay intact.
func appendLines(path string, lines [][]byte) error {
	if len(lines) == 0 {
		return nil
	}
	payload := bytes.Join(lines, []byte{'\n'})
	if !endsWithNewline(path) {
		payload = append([]byte{'\n'}, payload...)
	}
	return manifest.AppendLine(path, payload)
}

// endsWithNewline reports whether path is missing, empty or ends in '\n'.
func endsWithNewline(path string) bool {
	f, err := safefs.Open(path)
	if err != nil {
		return true
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || fi.Size() == 0 {
		return true
	}
	var b [1]byte
	if _, err := f.ReadAt(b[:], fi.Size()-1); err != nil && !errors.Is(err, io.EOF) {
		return true
	}
	return b[0] == '\n'
}

// readLines calls fn for every non-blank line of path. A missing file has
// no lines. Lines fn rejects are returned as corrupt, with their 1-based
// numbers. grow, when not nil, is first told how many lines there are at
// most, so callers can size their slices once.
func readLines(path string, grow func(n int), fn func(line []byte) error) (corrupt []CorruptLine, err error) {
	data, err := safefs.ReadFile(path, safefs.MaxJournal)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if grow != nil {
		grow(bytes.Count(data, []byte{'\n'}) + 1)
	}
	n := 0
	for len(data) > 0 {
		n++
		line, terminated := data, true
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data, terminated = nil, false
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err := fn(line); err != nil && terminated {
			// An unterminated last line that does not parse is an append
			// still being written (a reader may see part of one), or one a
			// crash cut: the next append ends it with a newline first
			// (appendLines), and it is counted corrupt then.
			corrupt = append(corrupt, CorruptLine{File: path, Line: n, Err: err})
		}
	}
	return corrupt, nil
}

// encode marshals v as one JSON line without HTML escaping.
func encode(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func formatTS(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

func parseTS(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New(`field "ts": missing`)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf(`field "ts": not an RFC3339 time: %q`, s)
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		// formatTS writes UTC: such a time could not be read back.
		return time.Time{}, fmt.Errorf(`field "ts": %q is outside the years 0000-9999 in UTC`, s)
	}
	return t, nil
}
