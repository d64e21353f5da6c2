//go:build !unix

package journal

import "os"

// fileIdentity has no device or inode to offer on this platform: the
// snapshot relies on the size and the hashes alone.
func fileIdentity(os.FileInfo) (dev, ino uint64) { return 0, 0 }
