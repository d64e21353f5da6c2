package manifest

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A temp file of a killed WriteFile is removed once it is old enough; a
// fresh one (a write in progress), other files and directories stay.
func TestRemoveStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	files := map[string]bool{ // name → removed
		".learning-log.jsonl.tmp-0a1b2c": true,
		".decisions.md.tmp-ffffff":       false, // fresh
		"learning-log.jsonl":             false,
		"notes.tmp-123":                  false, // not ours: no leading dot
	}
	for name, removed := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		if removed || name == "learning-log.jsonl" || name == "notes.tmp-123" {
			os.Chtimes(p, old, old)
		}
	}
	sub := filepath.Join(dir, ".sub.tmp-aaaa")
	os.Mkdir(sub, 0o755)
	os.Chtimes(sub, old, old)

	RemoveStaleTemps(dir, 10*time.Minute)
	for name, removed := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if gone := os.IsNotExist(err); gone != removed {
			t.Errorf("%s: removed %v, want %v", name, gone, removed)
		}
	}
	if _, err := os.Stat(sub); err != nil {
		t.Errorf("a directory was removed: %v", err)
	}
	// A completed WriteFile leaves no temp file behind: only the two kept
	// above match the pattern.
	if err := WriteFile(filepath.Join(dir, "state.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, ".*"+tempInfix+"*")); len(m) != 2 {
		t.Errorf("temp pattern matches %v, want only the fresh temp file and the directory", m)
	}
}
