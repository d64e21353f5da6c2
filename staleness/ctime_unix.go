//go:build unix && !linux

package staleness

import "syscall"

// ctimeOf is 0 where Stat_t's field is spelled otherwise: the stamp
// stands on the mtime, size and inode there.
func ctimeOf(*syscall.Stat_t) int64 { return 0 }
