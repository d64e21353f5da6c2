//go:build !unix

package safefs

import "io/fs"

// noFollow is empty where the flags do not exist; the Lstat checks and the
// regular-file check after open still apply.
const noFollow = 0

// nonBlock is empty where the flag does not exist.
const nonBlock = 0

// ownedByMe cannot tell on these platforms; the regular-file check stands.
func ownedByMe(fs.FileInfo) bool { return true }
