//go:build !unix

package main

import "os"

// maxRSS is 0 where the platform's rusage has no peak resident set: the
// figure is left out.
func maxRSS(*os.ProcessState) int64 { return 0 }
