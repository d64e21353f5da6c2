package statcache

import (
	"errors"
	"fmt"
	"slices"

	"github.com/learnwatch/learnwatch/codec"
)

// The cache file is binary: a reconcile reads and writes it whole, and
// at 10,000 artifacts encoding/json spent milliseconds on each. It is a
// sealed cache file (codec.Encoder):
//
//	magic "learnwatch stat cache <Version>\n"
//	the check_stat mode: uvarint length, bytes
//	the entry count: uvarint
//	per entry, by path: the path (uvarint length, bytes), size, mtime and
//	ctime (varints), inode (uvarint), SHA and DJB2 (uvarint length, bytes)
//	the CRC-32 (IEEE) of every byte before it: 4 bytes, little endian
//
// and nothing after. Anything else — another magic or version, a length
// past the end, trailing bytes, a checksum that does not match — is not a
// cache file (ignored, rebuilt). The checksum is what lets the file be
// written without an fsync (Cache.write): what a power cut may leave of it
// (zeros, a block of the file before) fails it instead of being decoded
// into entries nobody recorded. Version 3 was the same with a CRC-32C and
// a codec of its own.

// magic starts a cache file of this Version.
var magic = fmt.Sprintf("learnwatch stat cache %d\n", Version)

// minEntry is the fewest bytes an entry takes: a one-byte path, four
// one-byte numbers, two empty hashes.
const minEntry = 2 + 4 + 2

// encode renders entries in mode, sorted by path (the same entries give
// the same bytes).
func encode(mode Mode, entries map[string]Entry) []byte {
	paths := make([]string, 0, len(entries))
	size := len(mode) + 16
	for p, e := range entries {
		paths = append(paths, p)
		size += len(p) + len(e.SHA) + len(e.DJB2) + 40
	}
	slices.Sort(paths)
	enc := codec.NewEncoder(magic, size)
	enc.String(string(mode))
	enc.Uvarint(uint64(len(paths)))
	for _, p := range paths {
		e := entries[p]
		enc.String(p)
		e.Stat.Encode(enc)
		enc.String(e.SHA)
		enc.String(e.DJB2)
	}
	return enc.Sealed()
}

// Encode appends s to a cache file: size, mtime and ctime as varints, the
// inode as a uvarint (the stat cache's entries, and the stats the pass
// replay, the log facts and the entry marks keep).
func (s Stat) Encode(e *codec.Encoder) {
	e.Varint(s.Size)
	e.Varint(s.Mtime)
	e.Varint(s.Ctime)
	e.Uvarint(s.Ino)
}

// DecodeStat reads what Stat.Encode wrote.
func DecodeStat(d *codec.Decoder) Stat {
	return Stat{Size: d.Varint(), Mtime: d.Varint(), Ctime: d.Varint(), Ino: d.Uvarint()}
}

var errFormat = errors.New("not a stat cache file of this version")

// decode reads what encode wrote. It never panics and allocates no more
// than the input justifies.
func decode(b []byte) (Mode, map[string]Entry, error) {
	body, ok := codec.Unseal(b, magic)
	if !ok {
		return "", nil, errFormat
	}
	d := codec.NewDecoder(body)
	mode := Mode(d.String())
	n := d.Count(minEntry)
	if d.Failed() {
		return "", nil, errFormat
	}
	entries := make(map[string]Entry, n)
	for range n {
		p := d.String()
		var e Entry
		e.Stat = DecodeStat(d)
		e.SHA, e.DJB2 = d.String(), d.String()
		if d.Failed() {
			return "", nil, errFormat
		}
		// No path is empty, and none twice. (An empty one written with a
		// padded length passed Count's bound, which counts a path's
		// length byte and one byte of it: re-encoded, it did not.)
		if _, dup := entries[p]; dup || p == "" {
			return "", nil, errFormat
		}
		entries[p] = e
	}
	if !d.OK() {
		return "", nil, errFormat
	}
	return mode, entries, nil
}
