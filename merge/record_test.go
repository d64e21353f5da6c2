package merge

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRecordRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if moves, err := TakeRecord(dir); err != nil || moves != nil {
		t.Fatalf("no record: %v %v", moves, err)
	}
	a := Moved{Renumber: Renumber{From: "ADR-002", To: "ADR-003", Source: "obs_b"}, Path: ".memory/knowledge/decisions.md", Branch: "bob"}
	b := Moved{Renumber: Renumber{From: "PF-001", To: "PF-002"}, Path: ".memory/knowledge/pitfalls.md"}
	if err := AppendRecord(dir, []Moved{a}); err != nil {
		t.Fatal(err)
	}
	if err := AppendRecord(dir, []Moved{b}); err != nil {
		t.Fatal(err)
	}
	// A line another process cut short is skipped, not fatal.
	f, _ := os.OpenFile(filepath.Join(dir, RecordName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"from":"ADR-00`)
	f.Close()
	moves, err := TakeRecord(dir)
	if err != nil || len(moves) != 2 || moves[0] != a || moves[1] != b {
		t.Fatalf("got %+v, %v", moves, err)
	}
	if moves[0].Line() != "ADR-002 (from bob) is now ADR-003" || moves[1].Line() != "PF-001 is now PF-002" {
		t.Fatalf("lines %q %q", moves[0].Line(), moves[1].Line())
	}
	if again, _ := TakeRecord(dir); again != nil {
		t.Fatalf("the record is read once: %+v", again)
	}
}

func TestLineIsSanitised(t *testing.T) {
	m := Moved{Renumber: Renumber{From: "ADR-002\x1b[2J", To: "ADR-003"}, Branch: "evil\u202e\rbranch"}
	if got := m.Line(); got != "ADR-002[2J (from evilbranch) is now ADR-003" {
		t.Fatalf("%q", got)
	}
}

func TestRecordRefusesSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	if err := os.Symlink(target, filepath.Join(dir, RecordName)); err != nil {
		t.Skip(err)
	}
	if err := AppendRecord(dir, []Moved{{Renumber: Renumber{From: "ADR-1", To: "ADR-2"}}}); err == nil {
		t.Fatal("wrote through a symlink")
	}
	if _, err := os.Stat(target); err == nil {
		t.Fatal("symlink target created")
	}
}
