//go:build !unix

package safefs

// noFollow is empty where the flags do not exist; the Lstat checks and the
// regular-file check after open still apply.
const noFollow = 0
