//go:build !unix

package staleness

// localIdentity cannot name a directory on these platforms: the cache is
// not used there.
func localIdentity(...string) string { return "" }

// stampOf is never called on these platforms (no local identity, so no
// answer is kept with stats); it stamps nothing.
func stampOf(string) statStamp { return statStamp{} }
