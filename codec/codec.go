// Package codec owns the binary form of the files learnwatch writes for
// itself and reads back: the caches under .memory/.cache (their files
// sealed: cachedir) and the feedback fold state the journal's snapshot
// and compaction bases hold (learn). Fields are written one by one with
// an Encoder and read back with a Decoder:
//
//	uvarints and varints (encoding/binary)
//	strings and byte strings: a uvarint length, then the bytes
//	string lists: a count, each length, then the bytes of all of them
//	float64s: 8 bytes, little endian; bools: one byte, 0 or 1
//
// A sealed file is a magic line (its name and version, ending in "\n"),
// such fields, then the CRC-32 (IEEE) of every byte before it: 4 bytes,
// little endian (Seal, Unseal). Another magic, a checksum that does not
// match (a torn write, planted bytes), a length past the end or bytes
// left over mean the file is not used.
//
// The caches read on every session start (the pass replay's record, the
// log facts, the knowledge entries and their references, the entry marks,
// git's index digest) were gob: gob builds its decoder for the types at
// each read, and those reads were about 4 ms of a 10k session start's
// 26 ms of CPU.
package codec

import (
	"encoding/binary"
	"hash/crc32"
	"math"
	"slices"
)

// Encoder appends a file's fields.
type Encoder struct{ b []byte }

// NewEncoder starts a file with magic; size is a guess of its length.
func NewEncoder(magic string, size int) *Encoder {
	b := make([]byte, 0, len(magic)+size+4)
	return &Encoder{b: append(b, magic...)}
}

// Uvarint appends v.
func (e *Encoder) Uvarint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }

// Varint appends v.
func (e *Encoder) Varint(v int64) { e.b = binary.AppendVarint(e.b, v) }

// Uint32 appends v as a uvarint.
func (e *Encoder) Uint32(v uint32) { e.Uvarint(uint64(v)) }

// Bool appends v as a byte.
func (e *Encoder) Bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

// Float64 appends v's bits.
func (e *Encoder) Float64(v float64) {
	e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(v))
}

// String appends s: its length, then its bytes.
func (e *Encoder) String(s string) {
	e.Uvarint(uint64(len(s)))
	e.b = append(e.b, s...)
}

// Bytes appends b: its length, then its bytes.
func (e *Encoder) Bytes(b []byte) {
	e.Uvarint(uint64(len(b)))
	e.b = append(e.b, b...)
}

// Fixed appends b as it is (its length is the reader's to know).
func (e *Encoder) Fixed(b []byte) { e.b = append(e.b, b...) }

// Strings appends ss: the count, each length, then all the bytes (read
// back into one string the parts share: Decoder.Strings).
func (e *Encoder) Strings(ss []string) {
	e.Uvarint(uint64(len(ss)))
	n := 0
	for _, s := range ss {
		e.Uvarint(uint64(len(s)))
		n += len(s)
	}
	e.b = slices.Grow(e.b, n)
	for _, s := range ss {
		e.b = append(e.b, s...)
	}
}

// Sealed returns the file: what was appended and its checksum. The
// Encoder is done with.
func (e *Encoder) Sealed() []byte { return Seal(e.b) }

// Appended returns what was appended, without a checksum (a file some
// other checksum covers). The Encoder is done with.
func (e *Encoder) Appended() []byte { return e.b }

// Seal appends the checksum of b (the magic and the body) to it.
func Seal(b []byte) []byte {
	return binary.LittleEndian.AppendUint32(b, crc32.ChecksumIEEE(b))
}

// Unseal returns the body of data, a sealed file starting with magic:
// false when it starts otherwise or its checksum does not match.
func Unseal(data []byte, magic string) ([]byte, bool) {
	if len(data) < len(magic)+4 || string(data[:len(magic)]) != magic {
		return nil, false
	}
	body, sum := data[:len(data)-4], data[len(data)-4:]
	if crc32.ChecksumIEEE(body) != binary.LittleEndian.Uint32(sum) {
		return nil, false
	}
	return body[len(magic):], true
}

// Decoder reads a file's fields one by one. The first failure (a value
// past the end, a count the bytes left cannot hold) sticks: the reads
// after it return zero values, and OK is false.
type Decoder struct {
	b   []byte
	bad bool
}

// NewDecoder reads the fields in body: what follows the magic (for a
// sealed file, what Unseal returns).
func NewDecoder(body []byte) *Decoder { return &Decoder{b: body} }

// OK reports whether every read succeeded and nothing is left over.
func (d *Decoder) OK() bool { return !d.bad && len(d.b) == 0 }

// Failed reports whether a read failed.
func (d *Decoder) Failed() bool { return d.bad }

func (d *Decoder) fail() { d.bad, d.b = true, nil }

// Uvarint reads a uvarint.
func (d *Decoder) Uvarint() uint64 { return varint(d, binary.Uvarint) }

// Varint reads a varint.
func (d *Decoder) Varint() int64 { return varint(d, binary.Varint) }

// varint reads a value with read (binary.Uvarint, binary.Varint), which
// returns it and how many bytes it took, 0 or less for none.
func varint[T uint64 | int64](d *Decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
	if n <= 0 {
		d.fail()
		return 0
	}
	d.b = d.b[n:]
	return v
}

// Uint32 reads a uvarint that fits a uint32.
func (d *Decoder) Uint32() uint32 {
	v := d.Uvarint()
	if v > math.MaxUint32 {
		d.fail()
		return 0
	}
	return uint32(v)
}

// Bool reads a bool (a byte of 0 or 1).
func (d *Decoder) Bool() bool {
	if len(d.b) == 0 || d.b[0] > 1 {
		d.fail()
		return false
	}
	v := d.b[0] == 1
	d.b = d.b[1:]
	return v
}

// Float64 reads a float64.
func (d *Decoder) Float64() float64 {
	if len(d.b) < 8 {
		d.fail()
		return 0
	}
	v := math.Float64frombits(binary.LittleEndian.Uint64(d.b))
	d.b = d.b[8:]
	return v
}

// Count reads a count of items each at least min bytes long (min ≥ 1):
// 0 and a failure when the bytes left cannot hold that many, so that no
// planted count makes the reader allocate more than the file justifies.
func (d *Decoder) Count(min int) int {
	n := d.Uvarint()
	if n > uint64(len(d.b)/max(min, 1)) {
		d.fail()
		return 0
	}
	return int(n)
}

// Fixed reads n bytes as they are (sharing the body's memory).
func (d *Decoder) Fixed(n int) []byte {
	if n < 0 || n > len(d.b) {
		d.fail()
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

// Bytes reads a byte string (a copy).
func (d *Decoder) Bytes() []byte {
	n := d.Count(1)
	if d.bad {
		return nil
	}
	return append([]byte(nil), d.Fixed(n)...)
}

// String reads a string.
func (d *Decoder) String() string {
	n := d.Count(1)
	if d.bad {
		return ""
	}
	return string(d.Fixed(n))
}

// Strings reads a string list (Encoder.Strings): the parts share one
// allocation.
func (d *Decoder) Strings() []string {
	n := d.Count(1)
	if d.bad || n == 0 {
		return nil
	}
	lens := make([]int, n)
	total := 0
	for i := range lens {
		l := d.Uvarint()
		if d.bad || l > uint64(len(d.b)) {
			d.fail()
			return nil
		}
		lens[i] = int(l)
		total += int(l) // at most the body's length squared: no overflow
	}
	all := string(d.Fixed(total))
	if d.bad {
		return nil
	}
	out := make([]string, n)
	for i, l := range lens {
		out[i], all = all[:l], all[l:]
	}
	return out
}
