package manifest

import (
	"strings"
	"testing"
	"time"
	"unsafe"
)

// Register keeps an id of its own: an id sliced from the manifest's text
// (decoded in place) must not keep that text as long as the usage file.
func TestRegisterCopiesID(t *testing.T) {
	text := strings.Repeat("x", 4096) + "ADR-001"
	id := text[4096:]
	u := NewUsage()
	if !u.Register(id, time.Unix(0, 0)) {
		t.Fatal("not registered")
	}
	for k := range u.Entries {
		if k != "ADR-001" || unsafe.StringData(k) == unsafe.StringData(id) {
			t.Fatalf("key %q shares the caller's bytes", k)
		}
	}
}
