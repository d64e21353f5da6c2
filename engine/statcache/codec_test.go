package statcache

import (
	"bytes"
	"fmt"
	"maps"
	"testing"

	"github.com/learnwatch/learnwatch/codec"
)

func sampleEntries(n int) map[string]Entry {
	m := map[string]Entry{}
	for i := range n {
		e := Entry{Stat: Stat{Size: int64(i * 977), Mtime: 1764115200123456789 + int64(i), Ctime: -int64(i), Ino: uint64(i) << 40},
			SHA: fmt.Sprintf("%064x", i)}
		if i%3 == 0 {
			e.DJB2 = fmt.Sprintf("%x", i*31)
		}
		m[fmt.Sprintf(".claude/commands/self-learning/c-%d.md", i)] = e
	}
	m["naïve/\x00odd path"] = Entry{}
	return m
}

// The codec round-trips every field, gives the same bytes for the same
// entries, and refuses every cut and every trailing byte.
func TestCodec(t *testing.T) {
	for _, n := range []int{0, 1, 50} {
		in := sampleEntries(n)
		b := encode(Minimal, in)
		if !bytes.Equal(b, encode(Minimal, maps.Clone(in))) {
			t.Fatal("encoding is not deterministic")
		}
		mode, out, err := decode(b)
		if err != nil || mode != Minimal || !maps.Equal(in, out) {
			t.Fatalf("%d entries: decode = %q %d entries %v", n, mode, len(out), err)
		}
		for i := range len(b) {
			if _, _, err := decode(b[:i]); err == nil {
				t.Fatalf("%d entries: a cut at %d of %d decodes", n, i, len(b))
			}
		}
		if _, _, err := decode(append(b[:len(b):len(b)], 0)); err == nil {
			t.Fatal("a trailing byte decodes")
		}
		// The file is written without an fsync: any changed byte — a
		// digit of a hash, a bit of an mtime — is refused, not taken as
		// another fact about a stat.
		for i := range len(b) {
			for _, flip := range []byte{0x01, 0x80, 0xff} {
				c := bytes.Clone(b)
				c[i] ^= flip
				if _, _, err := decode(c); err == nil {
					t.Fatalf("%d entries: byte %d of %d changed (^%#x) decodes", n, i, len(b), flip)
				}
			}
		}
		zeroed := bytes.Clone(b)
		clear(zeroed[len(magic):])
		if _, _, err := decode(zeroed); err == nil {
			t.Fatalf("%d entries: zeros after the magic decode", n)
		}
	}
	// An entry without a path is refused: none is recorded. (Its length
	// padded to two bytes, it passed the bound on the entries' count and
	// did not read back once re-encoded: found by FuzzCodec.)
	noPath := codec.Seal([]byte(magic + "\x07minimal\x01\x80\x00\x01\x01\x01\x01\x00\x00"))
	if _, _, err := decode(noPath); err == nil {
		t.Fatal("an entry without a path decodes")
	}
	for _, old := range []string{"learnwatch stat cache 1\n", "learnwatch stat cache 2\n\x07default\x00", "learnwatch stat cache 3\n\x07default\x00"} {
		if _, _, err := decode([]byte(old)); err == nil {
			t.Fatalf("another version decodes: %q", old)
		}
	}
}

// FuzzCodec: any bytes decode to an error or to entries that encode back
// to the same bytes; nothing panics.
func FuzzCodec(f *testing.F) {
	f.Add(encode(Default, sampleEntries(3)))
	f.Add(encode(Minimal, nil))
	f.Add([]byte(magic + "\x07default\xff\xff\xff\xff\x0f"))
	f.Add([]byte(magic + "\x07default\x01\x01a\x02\x02\x02\x02\x00\x00"))
	f.Add([]byte("{\"version\":1}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// As given (almost always refused by its checksum), and sealed
		// with a matching one, so that the fuzzer reaches the parser.
		for _, in := range [][]byte{b, codec.Seal(bytes.Clone(b))} {
			mode, entries, err := decode(in)
			if err != nil {
				continue
			}
			if again := encode(mode, entries); !bytes.Equal(again, in) {
				// Varints have one shortest form; a longer one decodes too.
				if m2, e2, err := decode(again); err != nil || m2 != mode || !maps.Equal(e2, entries) {
					t.Fatalf("re-encoding does not decode to the same entries")
				}
			}
		}
	})
}

func BenchmarkCodec(b *testing.B) {
	in := sampleEntries(10000)
	enc := encode(Default, in)
	b.Run("decode-10k", func(b *testing.B) {
		b.SetBytes(int64(len(enc)))
		for b.Loop() {
			if _, _, err := decode(enc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode-10k", func(b *testing.B) {
		for b.Loop() {
			encode(Default, in)
		}
	})
}
