// Package cachedir owns the directory of learnwatch's disposable caches,
// .memory/.cache/. It is a real directory inside the memory directory
// (never a symlink: safefs rules), and it holds a .gitignore of "*", so git
// never commits it whatever the repository's own ignore rules say. Anything
// in it may be deleted at any time: a cache that is missing, unreadable or
// from another version is ignored and rebuilt.
package cachedir

import (
	"bytes"
	"encoding/gob"
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

// ReadGob decodes into v the cache file name of root as WriteGob wrote it
// with magic (read like every file under .memory: no symlink, at most max
// bytes). False when the file is missing, unreadable, too big, of another
// version (another magic) or does not decode: the cache is then rebuilt.
func ReadGob(root, name, magic string, max int64, v any) bool {
	data, err := safefs.ReadFile(Path(root, name), max)
	if err != nil || !bytes.HasPrefix(data, []byte(magic)) {
		return false
	}
	return gob.NewDecoder(bytes.NewReader(data[len(magic):])).Decode(v) == nil
}

// WriteGob replaces the cache file name of root with magic followed by v
// gob-encoded, creating the cache directory when missing (atomic write).
// A memory directory that cannot be written (a read-only checkout) is not
// an error: the cache is only missing.
func WriteGob(root, name, magic string, v any) error {
	return writeGob(root, name, magic, v, manifest.WriteFile)
}

// WriteGobUnsynced is WriteGob without the fsyncs, for a cache whose loss
// or truncation by a power cut costs nothing but a pass (ReadGob refuses
// a file that does not decode).
func WriteGobUnsynced(root, name, magic string, v any) error {
	return writeGob(root, name, magic, v, manifest.WriteFileUnsynced)
}

func writeGob(root, name, magic string, v any, write func(string, []byte, os.FileMode) error) error {
	var buf bytes.Buffer
	buf.WriteString(magic)
	if err := gob.NewEncoder(&buf).Encode(v); err != nil {
		return err
	}
	return writeCache(root, name, buf.Bytes(), write)
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
