package manifest

import (
	"os"
	"path/filepath"
	"testing"
)

func TestVolatile(t *testing.T) {
	for name, want := range map[string]bool{
		".learning.lock":       true,
		".learning.lock.owner": true,
		".learning.lock.queue": true,
		".knowledge.lock":      true,
		"." + "learning-log.jsonl" + TempInfix + "ab12cd": true,
		"learning-log.jsonl":                              false,
		"decisions.md":                                    false,
		"lock.md":                                         false,
		".cache":                                          false,
		"x" + TempInfix + "1":                             false, // not hidden: not an atomic write's
	} {
		if got := Volatile(name); got != want {
			t.Errorf("Volatile(%q) = %v, want %v", name, got, want)
		}
	}
}

// A listing's sum moves with a real entry, not with the lock.
func TestListDirSum(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "a.md"), nil, 0o644)
	before := ListDirSum(dir)
	if before != ListingSum([]string{"a.md"}) {
		t.Fatal("ListDirSum differs from ListingSum of the same names")
	}
	os.Mkdir(filepath.Join(dir, ".learning.lock"), 0o755)
	os.WriteFile(filepath.Join(dir, ".learning.lock.owner"), nil, 0o644)
	if ListDirSum(dir) != before {
		t.Error("the lock changed the listing's sum")
	}
	os.WriteFile(filepath.Join(dir, "b.md"), nil, 0o644)
	if ListDirSum(dir) == before {
		t.Error("an entry added left the sum as it was")
	}
	if ListDirSum(filepath.Join(dir, "missing")) != ([32]byte{}) {
		t.Error("a directory that cannot be listed has a sum")
	}
}
