package codec

import (
	"bytes"
	"math"
	"slices"
	"testing"
)

const testMagic = "learnwatch test cache 1\n"

// values is one of each kind of field, in the order writeValues writes
// them and readValues reads them.
type values struct {
	u       uint64
	i       int64
	ok      bool
	f       float64
	s       string
	b       []byte
	fixed   []byte
	strs    []string
	trailer uint64
}

func writeValues(e *Encoder, v values) {
	e.Uvarint(v.u)
	e.Varint(v.i)
	e.Bool(v.ok)
	e.Float64(v.f)
	e.String(v.s)
	e.Bytes(v.b)
	e.Fixed(v.fixed)
	e.Strings(v.strs)
	e.Uvarint(v.trailer)
}

func readValues(d *Decoder, fixed int) values {
	return values{u: d.Uvarint(), i: d.Varint(), ok: d.Bool(), f: d.Float64(), s: d.String(), b: d.Bytes(),
		fixed: d.Fixed(fixed), strs: d.Strings(), trailer: d.Uvarint()}
}

func sameValues(a, b values) bool {
	return a.u == b.u && a.i == b.i && a.ok == b.ok && math.Float64bits(a.f) == math.Float64bits(b.f) &&
		a.s == b.s && bytes.Equal(a.b, b.b) && bytes.Equal(a.fixed, b.fixed) && slices.Equal(a.strs, b.strs) && a.trailer == b.trailer
}

func TestSealedRoundTrip(t *testing.T) {
	for _, v := range []values{
		{},
		{u: 1, i: -1, ok: true, f: 0.5, s: "a", b: []byte{0}, fixed: []byte{1, 2, 3}, strs: []string{"x"}, trailer: 7},
		{u: math.MaxUint64, i: math.MinInt64, f: math.Inf(-1), s: "päth/with\x00nul", b: bytes.Repeat([]byte{0xff}, 300),
			fixed: make([]byte, 32), strs: []string{"", "obs_a", "", "a/b/c.go", "é"}, trailer: math.MaxUint64},
		{i: math.MaxInt64, f: math.NaN(), strs: []string{""}},
	} {
		e := NewEncoder(testMagic, 0)
		writeValues(e, v)
		data := e.Sealed()
		body, ok := Unseal(data, testMagic)
		if !ok {
			t.Fatalf("%+v: the sealed file is refused", v)
		}
		d := NewDecoder(body)
		got := readValues(d, len(v.fixed))
		if !d.OK() || !sameValues(got, v) {
			t.Fatalf("read back %+v (ok %t), want %+v", got, d.OK(), v)
		}
	}
}

// A sealed file is refused whole when any byte of it is changed, when it
// is cut anywhere, when bytes follow it and when its magic is another
// version's.
func TestUnsealRefuses(t *testing.T) {
	e := NewEncoder(testMagic, 0)
	writeValues(e, values{u: 300, i: -5, ok: true, f: 1.25, s: "src/a.go", b: []byte("report"), fixed: []byte{9, 9}, strs: []string{"a", "bc"}, trailer: 1})
	data := e.Sealed()
	if _, ok := Unseal(data, testMagic); !ok {
		t.Fatal("the file as written is refused")
	}
	for i := range data {
		for _, bit := range []byte{1, 0x80} {
			b := bytes.Clone(data)
			b[i] ^= bit
			if _, ok := Unseal(b, testMagic); ok {
				t.Fatalf("byte %d flipped (%#x): accepted", i, bit)
			}
		}
	}
	for n := range len(data) {
		if _, ok := Unseal(data[:n], testMagic); ok {
			t.Fatalf("cut at %d of %d bytes: accepted", n, len(data))
		}
	}
	if _, ok := Unseal(append(bytes.Clone(data), 0), testMagic); ok {
		t.Fatal("a byte after the checksum: accepted")
	}
	if _, ok := Unseal(data, "learnwatch test cache 2\n"); ok {
		t.Fatal("another version's magic: accepted")
	}
}

// A body that does not hold what is read fails, sticks failed with zero
// values after, and never allocates for a count its bytes cannot hold.
func TestDecoderBounds(t *testing.T) {
	cases := []struct {
		name string
		body []byte
		read func(d *Decoder) any
	}{
		{"empty uvarint", nil, func(d *Decoder) any { return d.Uvarint() }},
		{"overlong uvarint", bytes.Repeat([]byte{0xff}, 11), func(d *Decoder) any { return d.Uvarint() }},
		{"bool of 2", []byte{2}, func(d *Decoder) any { return d.Bool() }},
		{"short float", []byte{1, 2, 3}, func(d *Decoder) any { return d.Float64() }},
		{"string past the end", []byte{5, 'a', 'b'}, func(d *Decoder) any { return d.String() }},
		{"bytes past the end", []byte{2, 'a'}, func(d *Decoder) any { return d.Bytes() }},
		{"fixed past the end", []byte{1}, func(d *Decoder) any { return d.Fixed(2) }},
		{"huge count", []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 1, 1}, func(d *Decoder) any { return d.Count(1) }},
		{"count of three two-byte items in four bytes", []byte{3, 1, 1, 1, 1}, func(d *Decoder) any { return d.Count(2) }},
		{"string list with a length past its bytes", []byte{2, 1, 3, 'a', 'b'}, func(d *Decoder) any { return d.Strings() }},
		{"string list whose lengths sum past its bytes", []byte{2, 2, 2, 'a', 'b'}, func(d *Decoder) any { return d.Strings() }},
		{"string list with a huge length", []byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f, 'a'}, func(d *Decoder) any { return d.Strings() }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewDecoder(c.body)
			c.read(d)
			if !d.Failed() || d.OK() {
				t.Fatalf("%q read without failing", c.body)
			}
			if d.Uvarint() != 0 || d.String() != "" || d.Strings() != nil || !d.Failed() {
				t.Fatal("reads after a failure return values")
			}
		})
	}
	d := NewDecoder([]byte{1, 2})
	if d.Uvarint() != 1 || d.OK() {
		t.Fatal("a byte left over reads as OK")
	}
}

// The parts of a string list share one string's memory.
func TestStringsShareOneAllocation(t *testing.T) {
	e := NewEncoder(testMagic, 0)
	ss := make([]string, 1000)
	for i := range ss {
		ss[i] = "some/path/file.go"
	}
	e.Strings(ss)
	body, _ := Unseal(e.Sealed(), testMagic)
	allocs := testing.AllocsPerRun(20, func() { NewDecoder(body).Strings() })
	if allocs > 4 {
		t.Fatalf("%v allocations for a list of 1,000 strings", allocs)
	}
}

// Whatever the bytes, reading them never panics, a failed read sticks,
// and what reads OK encodes to a body that reads back the same.
func FuzzDecoder(f *testing.F) {
	e := NewEncoder("", 0)
	writeValues(e, values{u: 3, i: -3, ok: true, f: 2.5, s: "a.go", b: []byte("x"), fixed: []byte{1, 2}, strs: []string{"p", "q"}, trailer: 4})
	f.Add(e.b)
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01})
	f.Fuzz(func(t *testing.T, body []byte) {
		d := NewDecoder(body)
		got := readValues(d, 2)
		if d.Failed() {
			if d.Uvarint() != 0 || d.Strings() != nil {
				t.Fatal("reads after a failure return values")
			}
			return
		}
		e := NewEncoder("", len(body))
		writeValues(e, got)
		d2 := NewDecoder(e.b)
		if again := readValues(d2, 2); !d2.OK() || !sameValues(again, got) {
			t.Fatalf("%+v re-encoded reads back as %+v", got, again)
		}
	})
}

// Uint32 reads back every uint32 and fails, stickily, on a uvarint past it.
func TestUint32(t *testing.T) {
	e := NewEncoder(testMagic, 0)
	for _, v := range []uint32{0, 1, 1 << 31, math.MaxUint32} {
		e.Uint32(v)
	}
	e.Uvarint(math.MaxUint32 + 1)
	e.Uint32(7)
	body, ok := Unseal(e.Sealed(), testMagic)
	if !ok {
		t.Fatal("refused")
	}
	d := NewDecoder(body)
	for _, want := range []uint32{0, 1, 1 << 31, math.MaxUint32} {
		if got := d.Uint32(); got != want || d.Failed() {
			t.Fatalf("read %d (failed %t), want %d", got, d.Failed(), want)
		}
	}
	if got := d.Uint32(); got != 0 || !d.Failed() {
		t.Fatalf("a uvarint past a uint32 read as %d (failed %t)", got, d.Failed())
	}
	if got := d.Uint32(); got != 0 || d.OK() {
		t.Fatalf("after the failure: %d, ok %t", got, d.OK())
	}
}
