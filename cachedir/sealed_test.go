package cachedir

import (
	"os"
	"testing"

	"github.com/learnwatch/learnwatch/codec"
)

const testMagic = "learnwatch test cache 1\n"

// What a sealed file holds comes back from the cache directory, synced
// or not; a file of another magic reads as missing.
func TestWriteReadSealed(t *testing.T) {
	root := t.TempDir()
	if err := os.Mkdir(root+"/.memory", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, write := range []func(root, name string, data []byte) error{WriteSealed, WriteSealedUnsynced} {
		e := codec.NewEncoder(testMagic, 0)
		e.String("kept")
		if err := write(root, "test.cache", e.Sealed()); err != nil {
			t.Fatal(err)
		}
		body, ok := ReadSealed(root, "test.cache", testMagic, 1<<20)
		if d := codec.NewDecoder(body); !ok || d.String() != "kept" || !d.OK() {
			t.Fatalf("read back %q, %t", body, ok)
		}
		if _, ok := ReadSealed(root, "test.cache", "learnwatch other cache 1\n", 1<<20); ok {
			t.Fatal("read under another magic")
		}
		if _, ok := ReadSealed(root, "test.cache", testMagic, 8); ok {
			t.Fatal("read past its bound")
		}
	}
	if _, ok := ReadSealed(root, "missing.cache", testMagic, 1<<20); ok {
		t.Fatal("a missing file reads")
	}
}
