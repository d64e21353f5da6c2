package staleness

import "syscall"

// ctimeOf is the inode's change time in ns: a file rewritten with its
// mtime put back (cp -p, touch -r) still has a new one.
func ctimeOf(st *syscall.Stat_t) int64 { return st.Ctim.Sec*1e9 + st.Ctim.Nsec }
