//go:build unix

package merge

import "syscall"

const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK // nor block on a FIFO
