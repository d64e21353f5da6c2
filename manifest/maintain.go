package manifest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/learnwatch/learnwatch/safefs"
)

// backupPath names a dated backup next to the log that does not exist yet.
func backupPath(p Paths, kind string, now time.Time) string {
	base := filepath.Join(p.Memory, fmt.Sprintf("learning-log.%s-%s", kind, now.UTC().Format("20060102T150405Z")))
	path := base + ".jsonl"
	for n := 2; ; n++ {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			return path
		}
		path = fmt.Sprintf("%s-%d.jsonl", base, n)
	}
}

// Purge removes the corrupt and invalid lines of the log after writing them
// to a dated backup file (written first, atomically). It returns how many
// lines it removed and the backup's path ("" when nothing was removed). The
// caller holds the learning lock.
func Purge(p Paths, now time.Time) (int, string, error) {
	log, err := ReadLog(p.Log)
	if err != nil {
		return 0, "", err
	}
	var removed bytes.Buffer
	var keep []*Line
	n := 0
	for _, ln := range log.Lines {
		if ln.Err() != nil || (ln.Parsed() && ln.Invalid() != nil) {
			removed.Write(ln.Raw())
			removed.WriteByte('\n')
			n++
			continue
		}
		keep = append(keep, ln)
	}
	if n == 0 {
		return 0, "", nil
	}
	backup := backupPath(p, "purged", now)
	if err := WriteFile(backup, removed.Bytes(), 0o644); err != nil {
		return 0, "", err
	}
	log.Lines = keep
	log.noFinalNewline = false
	if err := WriteLog(p.Log, log); err != nil {
		return 0, backup, err
	}
	return n, backup, nil
}

// Clear empties the log after copying it whole to a dated backup file. It
// returns the number of lines backed up and the backup path. The caller
// holds the learning lock.
func Clear(p Paths, now time.Time) (int, string, error) {
	data, err := safefs.ReadFile(p.Log, safefs.MaxJournal)
	if os.IsNotExist(err) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("read %s: %w", p.Log, err)
	}
	backup := backupPath(p, "cleared", now)
	if err := WriteFile(backup, data, 0o644); err != nil {
		return 0, "", err
	}
	if err := WriteFile(p.Log, nil, 0o644); err != nil {
		return 0, backup, err
	}
	return bytes.Count(data, []byte("\n")), backup, nil
}
