//go:build unix

package merge

import "syscall"

const noFollow = syscall.O_NOFOLLOW
