//go:build !unix

package gitrepo

import "io/fs"

// inode is unknown here: size and modification time stand alone.
func inode(fs.FileInfo) uint64 { return 0 }
