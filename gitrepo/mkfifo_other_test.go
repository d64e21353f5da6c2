//go:build !unix

package gitrepo

import "errors"

// mkfifo: no FIFOs on this platform (the case is skipped).
func mkfifo(string, uint32) error { return errors.New("no FIFOs on this platform") }
