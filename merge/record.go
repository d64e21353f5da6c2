package merge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"unicode"

	"github.com/learnwatch/learnwatch/safefs"
)

// RecordName is the file, in the git directory of the worktree being
// merged, where the knowledge driver records renumbered entries for the
// post-merge / post-rewrite hook. It is local state: never committed.
const RecordName = "learnwatch-renumbered.jsonl"

// maxRecordBytes bounds what the hook reads of the record.
const maxRecordBytes = 1 << 20

// Moved is one line of the record: a renumbered entry, the file it is in
// and the branch (or commit) it came from.
type Moved struct {
	Renumber
	Path   string `json:"path"`
	Branch string `json:"branch,omitempty"`
}

// Line is the message the hooks print: "ADR-002 (from bob) is now ADR-003".
func (m Moved) Line() string {
	from := ""
	if m.Branch != "" {
		from = " (from " + clean(m.Branch, 80) + ")"
	}
	return fmt.Sprintf("%s%s is now %s", clean(m.From, 40), from, clean(m.To, 40))
}

// clean drops control and format characters and bounds s to n runes.
func clean(s string, n int) string {
	var b strings.Builder
	i := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			continue
		}
		if i == n {
			b.WriteString("…")
			break
		}
		b.WriteRune(r)
		i++
	}
	return b.String()
}

// AppendRecord adds moves to the record in gitDir.
func AppendRecord(gitDir string, moves []Moved) error {
	if len(moves) == 0 {
		return nil
	}
	var buf bytes.Buffer
	for _, m := range moves {
		b, err := json.Marshal(m)
		if err != nil {
			return err
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	path := filepath.Join(gitDir, RecordName)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE|safefs.NoFollow, 0o644)
	if err != nil {
		return fmt.Errorf("record renumbered entries: %w", err)
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("record renumbered entries: %w", err)
	}
	return f.Close()
}

// TakeRecord reads the record in gitDir and removes it. A missing record is
// no moves; lines that do not parse are skipped.
func TakeRecord(gitDir string) ([]Moved, error) {
	path := filepath.Join(gitDir, RecordName)
	f, err := os.OpenFile(path, os.O_RDONLY|safefs.NoFollow, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxRecordBytes))
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var out []Moved
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxRecordBytes)
	for sc.Scan() {
		var m Moved
		if json.Unmarshal(sc.Bytes(), &m) == nil && m.From != "" && m.To != "" {
			out = append(out, m)
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return out, fmt.Errorf("remove %s: %w", path, err)
	}
	return out, nil
}
