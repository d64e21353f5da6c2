//go:build unix

package hooks

import "syscall"

// noFollow makes an open fail on a symlink (files under a cloned repository
// are untrusted).
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK // nor block on a FIFO
