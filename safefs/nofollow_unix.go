//go:build unix

package safefs

import "syscall"

// noFollow makes an open refuse a symlink as its last component and never
// block on a FIFO.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
