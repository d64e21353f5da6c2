package manifest

import (
	"crypto/sha256"
	"os"
	"slices"
	"strings"
)

// Volatile reports whether a directory entry's name is learnwatch's own
// passing state, which a listing's sum leaves out: a lock (Lock's
// directory, its owner file and queue) and an atomic write's temporary
// file. Taking and releasing the learning lock moves its directory's
// mtime without changing what a reader of the listing finds.
func Volatile(name string) bool {
	return strings.HasSuffix(name, ".lock") || strings.HasSuffix(name, ".lock.queue") ||
		strings.HasSuffix(name, ".lock.owner") ||
		strings.HasPrefix(name, ".") && strings.Contains(name, TempInfix)
}

// ListingSum is the SHA-256 of a directory's entry names, sorted, the
// volatile ones left out (names is sorted in place).
func ListingSum(names []string) [32]byte {
	slices.Sort(names)
	h := sha256.New()
	for _, n := range names {
		if !Volatile(n) {
			h.Write([]byte(n))
			h.Write([]byte{0})
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// ListDirSum is ListingSum of the directory dir as it is now; the zero
// sum when it cannot be listed.
func ListDirSum(dir string) [32]byte {
	f, err := os.Open(dir)
	if err != nil {
		return [32]byte{}
	}
	names, err := f.Readdirnames(-1)
	f.Close()
	if err != nil {
		return [32]byte{}
	}
	return ListingSum(names)
}
