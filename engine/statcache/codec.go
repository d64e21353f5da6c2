package statcache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
)

// The cache file is binary: a reconcile reads and writes it whole, and
// at 10,000 artifacts encoding/json spent milliseconds on each. It is
//
//	magic "learnwatch stat cache <Version>\n"
//	the check_stat mode: uvarint length, bytes
//	the entry count: uvarint
//	per entry, by path: the path (uvarint length, bytes), size, mtime and
//	ctime (varints), inode (uvarint), SHA and DJB2 (uvarint length, bytes)
//
// and nothing after. Anything else — another magic or version, a length
// past the end, trailing bytes — is not a cache file (ignored, rebuilt).

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
	return b
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
