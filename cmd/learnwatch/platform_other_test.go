//go:build !unix

package main

import (
	"errors"
	"os"
)

// mkfifo: no FIFOs on this platform (the case is skipped).
func mkfifo(string, uint32) error { return errors.New("no FIFOs on this platform") }

// inodeOf: no inode numbers on this platform.
func inodeOf(os.FileInfo) uint64 { return 0 }
