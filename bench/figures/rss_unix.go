//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
)

// maxRSS is a finished child's peak resident set (bytes) from its rusage:
// ru_maxrss is in KiB, in bytes on macOS.
func maxRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss)
	}
	return int64(ru.Maxrss) * 1024
}
