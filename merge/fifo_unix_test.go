//go:build unix

package merge

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A FIFO where the record should be is neither read nor written through:
// neither call blocks (no other end ever opens it).
func TestRecordFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, RecordName), 0o644); err != nil {
		t.Skip(err)
	}
	// One at a time: a writer and a reader would open each other's end.
	for name, call := range map[string]func() error{
		"AppendRecord": func() error {
			return AppendRecord(dir, []Moved{{Renumber: Renumber{From: "ADR-003", To: "ADR-004"}, Path: ".memory/knowledge/decisions.md"}})
		},
		"TakeRecord": func() error { _, err := TakeRecord(dir); return err },
	} {
		done := make(chan error, 1)
		go func() { done <- call() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s blocked on the FIFO", name)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, RecordName), 0o644); err != nil && err != syscall.EEXIST {
			t.Fatal(err) // TakeRecord removes what it read
		}
	}
}
