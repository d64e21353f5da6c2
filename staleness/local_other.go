//go:build !unix

package staleness

// localIdentity cannot name a directory on these platforms: the cache is
// not used there.
func localIdentity(...string) string { return "" }
