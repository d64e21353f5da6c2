package statcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
	"sync"
)

// The cache file is binary: a reconcile reads and writes it whole, and
// at 10,000 artifacts encoding/json spent milliseconds on each. It is
//
//	magic "learnwatch stat cache <Version>\n"
//	the check_stat mode: uvarint length, bytes
//	the entry count: uvarint
//	per entry, by path: the path (uvarint length, bytes), size, mtime and
//	ctime (varints), inode (uvarint), SHA and DJB2 (uvarint length, bytes)
//	the CRC-32C (Castagnoli) of every byte before it: 4 bytes, little endian
//
// and nothing after. Anything else — another magic or version, a length
// past the end, trailing bytes, a checksum that does not match — is not a
// cache file (ignored, rebuilt). The checksum is what lets the file be
// written without an fsync (Cache.write): what a power cut may leave of it
// (zeros, a block of the file before) fails it instead of being decoded
// into entries nobody recorded.

// magic starts a cache file of this Version.
var magic = fmt.Sprintf("learnwatch stat cache %d\n", Version)

// minEntry is the fewest bytes an entry takes: a one-byte path, four
// one-byte numbers, two empty hashes.
const minEntry = 2 + 4 + 2

// encode renders entries in mode, sorted by path (the same entries give
// the same bytes).
func encode(mode Mode, entries map[string]Entry) []byte {
	paths := make([]string, 0, len(entries))
	size := len(magic) + len(mode) + 16
	for p, e := range entries {
		paths = append(paths, p)
		size += len(p) + len(e.SHA) + len(e.DJB2) + 40
	}
	slices.Sort(paths)
	b := make([]byte, 0, size)
	b = append(b, magic...)
	b = appendString(b, string(mode))
	b = binary.AppendUvarint(b, uint64(len(paths)))
	for _, p := range paths {
		e := entries[p]
		b = appendString(b, p)
		b = binary.AppendVarint(b, e.Size)
		b = binary.AppendVarint(b, e.Mtime)
		b = binary.AppendVarint(b, e.Ctime)
		b = binary.AppendUvarint(b, e.Ino)
		b = appendString(b, e.SHA)
		b = appendString(b, e.DJB2)
	}
	return seal(b)
}

// castagnoli is the CRC-32C table (hardware-accelerated on amd64 and
// arm64), made on first use: making it is about 0.2 ms, which a process
// that never reads the stat cache (a replayed pass) does not spend.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// seal appends the checksum of b.
func seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli()))
}

// unsealed returns b without its checksum, false when it does not match.
func unsealed(b []byte) ([]byte, bool) {
	if len(b) < 4 {
		return nil, false
	}
	body, sum := b[:len(b)-4], b[len(b)-4:]
	return body, crc32.Checksum(body, castagnoli()) == binary.LittleEndian.Uint32(sum)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

var errFormat = errors.New("not a stat cache file of this version")

// decode reads what encode wrote. It never panics and allocates no more
// than the input justifies.
func decode(b []byte) (Mode, map[string]Entry, error) {
	if len(b) < len(magic) || string(b[:len(magic)]) != magic {
		return "", nil, errFormat
	}
	b, ok := unsealed(b)
	if !ok || len(b) < len(magic) {
		return "", nil, errFormat
	}
	d := decoder{b: b[len(magic):]}
	mode := Mode(d.str())
	n := d.uvarint()
	if d.err != nil || n > uint64(len(d.b)/minEntry) {
		return "", nil, errFormat
	}
	entries := make(map[string]Entry, n)
	for range n {
		p := d.str()
		var e Entry
		e.Size, e.Mtime, e.Ctime = d.varint(), d.varint(), d.varint()
		e.Ino = d.uvarint()
		e.SHA, e.DJB2 = d.str(), d.str()
		if d.err != nil {
			return "", nil, errFormat
		}
		if _, dup := entries[p]; dup {
			return "", nil, errFormat
		}
		entries[p] = e
	}
	if d.err != nil || len(d.b) != 0 {
		return "", nil, errFormat
	}
	return mode, entries, nil
}

// decoder reads from b; the first error sticks and zero values follow.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errFormat
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.err = errFormat
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if d.err != nil {
		return ""
	}
	if n > uint64(len(d.b)) {
		d.err = errFormat
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}
