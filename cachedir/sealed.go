package cachedir

import (
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// The caches other packages keep here are sealed files (codec: a magic
// line, fields, a checksum), read and written whole.

// ReadSealed returns the body of the sealed cache file name of root (read
// like every file under .memory: no symlink, at most max bytes): false
// when it is missing, unreadable, too big, of another version or does not
// match its checksum.
func ReadSealed(root, name, magic string, max int64) ([]byte, bool) {
	data, err := safefs.ReadFile(Path(root, name), max)
	if err != nil {
		return nil, false
	}
	return codec.Unseal(data, magic)
}

// WriteSealed replaces the cache file name of root with data (a
// codec.Encoder's Sealed), creating the cache directory when missing
// (atomic write). A memory directory that cannot be written (a read-only
// checkout) is not an error: the cache is only missing.
func WriteSealed(root, name string, data []byte) error {
	return writeCache(root, name, data, manifest.WriteFile)
}

// WriteSealedUnsynced is WriteSealed without the fsyncs, for a cache
// whose loss costs nothing but a pass: what a power cut leaves of the
// file fails its checksum.
func WriteSealedUnsynced(root, name string, data []byte) error {
	return writeCache(root, name, data, manifest.WriteFileUnsynced)
}
