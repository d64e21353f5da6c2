// Package cachedir owns the directory of learnwatch's disposable caches,
// .memory/.cache/. It is a real directory inside the memory directory
// (never a symlink: safefs rules), and it holds a .gitignore of "*", so git
// never commits it whatever the repository's own ignore rules say. Anything
// in it may be deleted at any time: a cache that is missing, unreadable or
// from another version is ignored and rebuilt. The caches other packages
// keep there are sealed files (codec), read and written whole here
// (ReadSealed, WriteSealed: sealed.go), but for the staleness cache,
// which has a codec of its own.
package cachedir

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// Name is the cache directory's name under .memory.
const Name = ".cache"

// ignoreAll is the .gitignore written into the cache directory.
const ignoreAll = "# learnwatch's disposable caches: never committed, safe to delete.\n*\n"

// Dir returns root's cache directory without creating it.
func Dir(root string) string {
	return filepath.Join(root, safefs.MemoryDirName, Name)
}

// Path returns the path of the cache file name in root's cache directory.
func Path(root, name string) string { return filepath.Join(Dir(root), name) }

// Ensure creates the cache directory and its .gitignore when missing and
// returns the directory. A component that is not a real directory is
// refused (safefs).
func Ensure(root string) (string, error) {
	dir := Dir(root)
	if err := safefs.MkdirAll(dir); err != nil {
		return "", err
	}
	gi := filepath.Join(dir, ".gitignore")
	if _, err := safefs.Lstat(gi); errors.Is(err, fs.ErrNotExist) {
		if err := manifest.WriteFile(gi, []byte(ignoreAll), 0o644); err != nil {
			return "", err
		}
	} else if err != nil {
		return "", err
	}
	return dir, nil
}

// writeCache replaces the cache file name of root with data by write,
// creating the cache directory when missing; a memory directory that
// cannot be written is not an error.
func writeCache(root, name string, data []byte, write func(string, []byte, os.FileMode) error) error {
	_, err := Ensure(root)
	if err == nil {
		err = write(Path(root, name), data, 0o644)
	}
	if errors.Is(err, fs.ErrPermission) {
		return nil
	}
	return err
}
