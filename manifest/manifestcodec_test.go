package manifest

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// checkDecode requires the fast decoder to agree with encoding/json on
// data: when it accepts data, encoding/json accepts it too and gives the
// same manifest (entries, unknown fields, nil or empty); whatever the
// decoder took, Encode gives what json.MarshalIndent gives for the
// reference manifest — first with the memo the decoder primed, then again
// from the memo that Encode left.
func checkDecode(t *testing.T, data []byte) {
	t.Helper()
	ref, refErr := decodeJSON(data)
	if fast, ok := decodeFast(data); ok {
		if refErr != nil {
			t.Fatalf("fast decoder accepted what encoding/json refuses (%v):\n%q", refErr, data)
		}
		if fast.SchemaVersion != ref.SchemaVersion || !reflect.DeepEqual(fast.Entries, ref.Entries) || !reflect.DeepEqual(fast.extra, ref.extra) {
			t.Fatalf("fast decoder disagrees on %q:\nfast %+v %+v\nref  %+v %+v", data, fast.Entries, fast.extra, ref.Entries, ref.extra)
		}
		if fast.memo != nil && len(fast.memo.recs) != len(fast.Entries) {
			t.Fatalf("memo has %d records for %d entries", len(fast.memo.recs), len(fast.Entries))
		}
	}
	m, err := decodeManifest(data)
	if (err != nil) != (refErr != nil) {
		t.Fatalf("decodeManifest error %v, encoding/json's %v", err, refErr)
	}
	if err != nil {
		return
	}
	if ref.SchemaVersion == 0 {
		ref.SchemaVersion = 1
	}
	want, wantErr := ref.encodeJSON()
	for range 2 {
		got, err := m.Encode()
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("Encode of the decoded %q:\n%s (%v)\nwant (json.MarshalIndent):\n%s (%v)", data, got, err, want, wantErr)
		}
	}
	checkEncode(t, ref) // cold: no memo
}

// checkEncode requires Encode to write json.MarshalIndent's bytes (or
// fail when it does), twice (the second from the memo).
func checkEncode(t *testing.T, m *Manifest) {
	t.Helper()
	want, wantErr := m.encodeJSON()
	for range 2 {
		got, err := m.Encode()
		if (err != nil) != (wantErr != nil) || !bytes.Equal(got, want) {
			t.Fatalf("Encode:\n%s (%v)\nwant (json.MarshalIndent):\n%s (%v)", got, err, want, wantErr)
		}
	}
}

// gen builds manifests from bytes (a fuzz input): strings and raw values
// from a palette of the characters encoders disagree on, or the input's
// own bytes.
type gen struct{ b []byte }

func (g *gen) byte() byte {
	if len(g.b) == 0 {
		return 0
	}
	c := g.b[0]
	g.b = g.b[1:]
	return c
}

var genStrings = []string{
	"", "obs_a", "workflow", ".claude/commands/self-learning/x.md", "sha256:00ff", "2026-01-02T03:04:05Z", "ADR-001",
	"<b>&amp;</b>", "é", "日本", "\u2028\u2029", "\x00\x1f\x7f", "\t\n\r", `"quoted"`, `back\slash`, "\xff\xfe", "\xe2\x80",
	"\",\n      \"anchorId\": \"ADR-001", "\"\n    }", "{\n      \"observationId\": \"", "\U0001F600",
}

func (g *gen) str() string {
	c := g.byte()
	if c < 0xc0 {
		return genStrings[int(c)%len(genStrings)]
	}
	n := int(c-0xc0) % 12
	s := make([]byte, 0, n)
	for range n {
		s = append(s, g.byte())
	}
	return string(s)
}

var genRaws = []string{
	`1`, `-0.5e+10`, `"s"`, `"<&>\u2028"`, "\"\u2028\"", `null`, `true`, `[]`, `{}`, `[ ]`, `{ }`,
	`{"a":1,"b":[1,2,{"c":null}]}`, "{\n\t\"a\" : [ 1 , \"x y\" ] ,\r\n \"b\":{} }", `[[[[]]],{"":""}]`,
	`{"dup":1,"dup":2}`, `"\ud800"`, `12345678901234567890`, `1.0`, `-0`,
	`{"a":`, `nul`, ``, `"unterminated`, `[1,]`, ` 1`,
}

func (g *gen) raw() json.RawMessage {
	c := g.byte()
	if c < 0xe0 {
		return json.RawMessage(genRaws[int(c)%len(genRaws)])
	}
	n := int(c-0xe0) % 16
	s := make([]byte, 0, n)
	for range n {
		s = append(s, g.byte())
	}
	return s
}

var genFloats = []float64{0, math.Copysign(0, -1), 0.95, 0.3, 1, 1e-7, 1e21, 123456789.125, -2.5e-300, math.MaxFloat64, math.NaN(), math.Inf(1)}

func (g *gen) extra() map[string]json.RawMessage {
	switch c := g.byte(); c % 4 {
	case 0, 1:
		return nil
	case 2:
		return map[string]json.RawMessage{}
	default:
		x := map[string]json.RawMessage{}
		for range 1 + int(c>>2)%3 {
			x[g.str()] = g.raw()
		}
		return x
	}
}

func (g *gen) entry() Entry {
	e := Entry{ObservationID: g.str(), Type: g.str(), Path: g.str(), ContentHash: g.str(), RenderedAt: g.str(), AnchorID: g.str()}
	if c := g.byte(); c%3 == 0 {
		f := genFloats[int(c>>2)%len(genFloats)]
		if c&0x80 != 0 {
			f = math.Float64frombits(uint64(g.byte())<<56 | uint64(g.byte())<<8 | uint64(g.byte()))
		}
		e.Deleted = &Deletion{At: g.str(), Status: g.str(), Confidence: f, DeprecatedAt: g.str(), Head: g.str()}
	}
	e.extra = g.extra()
	return e
}

func (g *gen) manifest() *Manifest {
	m := &Manifest{SchemaVersion: int(int8(g.byte()))}
	switch n := int(g.byte()) % 8; n {
	case 0:
		// nil entries
	default:
		m.Entries = []Entry{}
		for range n - 1 {
			m.Entries = append(m.Entries, g.entry())
		}
	}
	m.extra = g.extra()
	return m
}

// checkEdit changes one entry of a manifest encoded before (the memo
// holds its entries) in a way chosen by g, and requires the next Encode
// to equal json.MarshalIndent's.
func checkEdit(t *testing.T, m *Manifest, g *gen) {
	t.Helper()
	if _, err := m.Encode(); err != nil {
		return
	}
	n := len(m.Entries)
	if n == 0 {
		m.Entries = append(m.Entries, g.entry())
		checkEncode(t, m)
		return
	}
	i := int(g.byte()) % n
	e := &m.Entries[i]
	switch g.byte() % 10 {
	case 0:
		e.RenderedAt = g.str()
	case 1:
		e.AnchorID = g.str()
	case 2:
		*e = g.entry()
	case 3:
		if e.Deleted != nil {
			e.Deleted.Confidence = -e.Deleted.Confidence // in place, through the pointer
		} else {
			e.Deleted = &Deletion{At: g.str(), Confidence: 0.5}
		}
	case 4:
		if e.extra != nil {
			e.extra[g.str()] = g.raw() // in place, through the map
		} else {
			e.extra = map[string]json.RawMessage{}
		}
	case 5:
		m.Entries = slices.Delete(slices.Clone(m.Entries), i, i+1)
	case 6:
		m.Entries = slices.Insert(slices.Clone(m.Entries), i, g.entry())
	case 7:
		slices.Reverse(m.Entries)
	case 8:
		m.Entries = append([]Entry(nil), m.Entries...) // heal's copies
	case 9:
		// The renderedAt of an entry without anchor spells out the anchor
		// member its bytes would have had.
		if e.AnchorID != "" && !strings.Contains(e.RenderedAt, `"`) {
			e.RenderedAt += entrySepA + e.AnchorID
			e.AnchorID = ""
		}
	}
	checkEncode(t, m)
}

func codecSeeds() [][]byte {
	m := benchManifest(30)
	m.Entries[4].AnchorID = "<PF-1>"
	m.Entries[5].Path = "dir/é.md"
	m.Entries[6].extra = map[string]json.RawMessage{"z": json.RawMessage(`{"a": [1, {"b": "<\u2028>"}], "c": {}}`), "a": json.RawMessage(`[]`)}
	m.extra = map[string]json.RawMessage{"x_top": json.RawMessage("{\n \"k\": [ ]\n}")}
	canon, _ := m.encodeJSON()
	return [][]byte{
		canon,
		[]byte(`{"schemaVersion":1,"x_top":{"a":1},"entries":[{"observationId":"obs_a","type":"workflow","path":"/abs/legacy.md","contentHash":"1a2b","renderedAt":"2025-01-01T00:00:00.000Z","x_entry":[1,"two"]}]}`),
		[]byte(`{"entries":[{"observationId":"a","observationId":"b"}]}`),
		[]byte(`{"entries":[{"ObservationID":"a"}],"Entries":null}`),
		[]byte(`{"entries":[{"type":null,"deleted":{"at":"t","confidence":1e-7,"status":"x","extra":1}},{},null]}`),
		[]byte(`{"schemaVersion":1.0,"entries":[]}`),
		[]byte(`{"entries":[{"path":"a\u00e9\ud800<","anchorId":""}]}` + " \n"),
		[]byte(`{"entries":[{"path":"` + "\xff" + `"}]}`),
		[]byte(`{"entries":[{"x":1,"x":2}]}`),
		[]byte(`{"entries":[{"deleted":null,"deleted":{}}]}`),
		[]byte(`{"entries":[{"deleted":{"Confidence":1}},{"deleted":{"at":"a","at":"b"}}]}`),
		[]byte(`{"entries":[{"deleted":{"confidence":1e400}},{"deleted":{"confidence":"1"}},{"deleted":[]}]}`),
		[]byte(`{"entries":[{"deleted":{"confidence":null,"head":null,"x":[{"y":{}}],"status":"<"}},{"deleted":{}}]}`),
		[]byte(`{"entries":[{"deleted":{"confidence":-0,"deprecatedAt":"","at":"2026"}}]}`),
		[]byte(`{"schemaVersion":-0,"entries":null,"k\u0041":1}`),
		[]byte(`{"entries":[{"observationId":"a"}]} x`),
		[]byte(`[]`),
		[]byte(``),
		[]byte("\x01\x00\x05\x03\xc3abc\x02\x06\xe5{\"a\"\x00"),
	}
}

// FuzzManifestCodec: on arbitrary bytes, the fast decoder agrees with
// encoding/json (or refers the file to it) and the re-encoding equals
// json.MarshalIndent's; the same bytes read as a recipe make a manifest
// (unicode, HTML characters, control bytes, invalid UTF-8, unknown fields
// with nested values and whitespace or not valid at all, deletion records
// with every kind of float, empty entries, nil and empty maps) whose fast
// encoding must equal json.MarshalIndent's, before and after one entry
// changes.
func FuzzManifestCodec(f *testing.F) {
	for _, s := range codecSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
		g := &gen{b: data}
		m := g.manifest()
		checkEncode(t, m)
		if b, err := m.encodeJSON(); err == nil {
			checkDecode(t, b)
			if m2, err := decodeManifest(b); err == nil {
				checkEdit(t, m2, &gen{b: data})
			}
		}
		checkEdit(t, m, g)
		checkEdit(t, m, g)
	})
}

// TestManifestCodecRandom runs the fuzz target's checks on random
// recipes and on random corruptions of encoded manifests.
func TestManifestCodecRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for range n {
		data := make([]byte, rng.IntN(200))
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		g := &gen{b: data}
		m := g.manifest()
		checkEncode(t, m)
		b, err := m.encodeJSON()
		if err != nil {
			continue
		}
		checkDecode(t, b)
		m2, err := decodeManifest(b)
		if err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		for range 3 {
			checkEdit(t, m2, g)
		}
		for range 3 {
			c := bytes.Clone(b)
			for range 1 + rng.IntN(3) {
				if len(c) > 0 {
					c[rng.IntN(len(c))] = "\"\\{}[],: \n0aé<"[rng.IntN(15)]
				}
			}
			checkDecode(t, c)
		}
	}
}

// TestManifestMemo: a manifest read from its file and encoded again, then
// changed one entry at a time as passes change it (in place, through a
// deletion record's pointer or the unknown fields' map, entries removed,
// inserted, reordered, copied into a new slice), encodes each time to
// what a fresh manifest holding the same entries encodes to.
func TestManifestMemo(t *testing.T) {
	src := benchManifest(300)
	src.extra = map[string]json.RawMessage{"x_top": json.RawMessage(`{"a":[1,2]}`)}
	data, err := src.encodeJSON()
	if err != nil {
		t.Fatal(err)
	}
	m, err := decodeManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	primed := 0
	for _, r := range m.memo.recs {
		if r.enc != "" {
			primed++
		}
	}
	if want := 300 - 6 - 1; primed != want { // deletion records and unknown fields are not primed
		t.Errorf("memo primed with %d entries, want %d", primed, want)
	}
	fresh := func() []byte {
		t.Helper()
		c := &Manifest{SchemaVersion: m.SchemaVersion, Entries: slices.Clone(m.Entries), extra: m.extra}
		b, err := c.encodeJSON()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	step := func(what string, change func()) {
		t.Helper()
		change()
		got, err := m.Encode()
		if err != nil || !bytes.Equal(got, fresh()) {
			t.Fatalf("%s: Encode differs from a fresh encoding (%v):\n%s", what, err, got)
		}
	}
	step("unchanged", func() {})
	step("renderedAt", func() { m.Entries[10].RenderedAt = "2026-12-01T00:00:00Z" })
	step("deletion record", func() {
		m.Entries[11].Deleted = &Deletion{At: "2026-12-01T00:00:00Z", Status: Created, Confidence: 0.95}
	})
	step("deletion record in place", func() { m.Entries[11].Deleted.Confidence = 0.5 })
	step("-0", func() { m.Entries[11].Deleted.Confidence = math.Copysign(0, -1) })
	step("0", func() { m.Entries[11].Deleted.Confidence = 0 })
	step("undo", func() { m.Entries[11].Deleted = nil })
	step("unknown field in place", func() { m.Entries[3].extra["x_origin"] = json.RawMessage(`"<b>"`) })
	step("unknown fields emptied", func() { m.Entries[3].extra = map[string]json.RawMessage{} })
	step("anchor dropped", func() { m.Entries[2].AnchorID = "" })
	step("anchor spelt in renderedAt", func() {
		e := &m.Entries[6]
		e.RenderedAt += entrySepA + e.AnchorID
		e.AnchorID = ""
	})
	step("HTML in a path", func() { m.Entries[20].Path = "a<b>&c\u2028.md" })
	step("removed", func() { m.Entries = slices.Delete(m.Entries, 30, 31) })
	step("many removed", func() { m.Entries = slices.Delete(m.Entries, 40, 80) })
	step("inserted", func() {
		m.Entries = slices.Insert(m.Entries, 50, Entry{ObservationID: "obs_new", Type: Workflow, Path: "n.md"})
	})
	step("appended", func() { m.Entries = append(m.Entries, Entry{ObservationID: "obs_end"}) })
	step("heal's copies", func() {
		kept := m.Entries[:0:0]
		for _, e := range m.Entries {
			if e.ObservationID != "obs_000100" {
				kept = append(kept, e)
			}
		}
		m.Entries = kept
	})
	step("reversed", func() { slices.Reverse(m.Entries) })
	step("emptied", func() { m.Entries = m.Entries[:0] })
	step("nil", func() { m.Entries = nil })

	// A copy of the Manifest shares the memo: both stay right.
	m2, _ := decodeManifest(data)
	c := *m2
	c.Entries = slices.Clone(c.Entries)
	c.Entries[0].Type = Procedural
	for _, x := range []*Manifest{m2, &c, m2} {
		checkEncode(t, x)
	}
}

// TestManifestEncodeOneChanged: the encoding of a memoised manifest after
// one entry changed is that of a fresh manifest.
func TestManifestEncodeOneChanged(t *testing.T) {
	m := benchManifest(1000)
	if _, err := m.Encode(); err != nil {
		t.Fatal(err)
	}
	m.Entries[500].Deleted = &Deletion{At: "2026-12-01T00:00:00Z", Status: Created, Confidence: 0.95}
	got, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want, err := (&Manifest{SchemaVersion: 1, Entries: slices.Clone(m.Entries)}).Encode()
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("memoised encoding differs from a fresh one (%v)", err)
	}
	if ref, _ := m.encodeJSON(); !bytes.Equal(got, ref) {
		t.Fatal("differs from json.MarshalIndent")
	}
}

func TestSameEntries(t *testing.T) {
	base := Entry{ObservationID: "obs_a", Type: Workflow, Path: "a.md", ContentHash: "sha256:00", RenderedAt: "t", AnchorID: "x"}
	nan := &Deletion{Confidence: math.NaN()}
	shared := []Entry{base, base}
	with := func(f func(*Entry)) []Entry {
		e := base
		f(&e)
		return []Entry{e}
	}
	raw := func(s string) map[string]json.RawMessage { return map[string]json.RawMessage{"k": json.RawMessage(s)} }
	tests := []struct {
		name string
		a, b []Entry
		want bool
	}{
		{"nil, nil", nil, nil, true},
		{"nil, empty", nil, []Entry{}, false},
		{"empty, empty", []Entry{}, []Entry{}, true},
		{"same slice", shared, shared, true},
		{"prefix of the same array", shared[:1], shared, false},
		{"copies", []Entry{base}, []Entry{base}, true},
		{"id", []Entry{base}, with(func(e *Entry) { e.ObservationID = "obs_b" }), false},
		{"type", []Entry{base}, with(func(e *Entry) { e.Type = Procedural }), false},
		{"path", []Entry{base}, with(func(e *Entry) { e.Path = "b.md" }), false},
		{"hash", []Entry{base}, with(func(e *Entry) { e.ContentHash = "" }), false},
		{"renderedAt", []Entry{base}, with(func(e *Entry) { e.RenderedAt = "u" }), false},
		{"anchor", []Entry{base}, with(func(e *Entry) { e.AnchorID = "" }), false},
		{"deletion, none", with(func(e *Entry) { e.Deleted = &Deletion{} }), []Entry{base}, false},
		{"equal deletions", with(func(e *Entry) { e.Deleted = &Deletion{At: "t", Confidence: 0.5} }), with(func(e *Entry) { e.Deleted = &Deletion{At: "t", Confidence: 0.5} }), true},
		{"deletions differ", with(func(e *Entry) { e.Deleted = &Deletion{Head: "a"} }), with(func(e *Entry) { e.Deleted = &Deletion{Head: "b"} }), false},
		{"0 and -0", with(func(e *Entry) { e.Deleted = &Deletion{} }), with(func(e *Entry) { e.Deleted = &Deletion{Confidence: math.Copysign(0, -1)} }), true},
		{"NaN, same pointer", with(func(e *Entry) { e.Deleted = nan }), with(func(e *Entry) { e.Deleted = nan }), true},
		{"NaN, two records", with(func(e *Entry) { e.Deleted = nan }), with(func(e *Entry) { e.Deleted = &Deletion{Confidence: math.NaN()} }), false},
		{"extra nil, empty", []Entry{base}, with(func(e *Entry) { e.extra = map[string]json.RawMessage{} }), false},
		{"extra empty, empty", with(func(e *Entry) { e.extra = map[string]json.RawMessage{} }), with(func(e *Entry) { e.extra = map[string]json.RawMessage{} }), true},
		{"extra equal", with(func(e *Entry) { e.extra = raw("1") }), with(func(e *Entry) { e.extra = raw("1") }), true},
		{"extra differ", with(func(e *Entry) { e.extra = raw("1") }), with(func(e *Entry) { e.extra = raw("2") }), false},
		{"extra other key", with(func(e *Entry) { e.extra = raw("1") }), with(func(e *Entry) { e.extra = map[string]json.RawMessage{"j": json.RawMessage("1")} }), false},
		{"extra value nil, empty", with(func(e *Entry) { e.extra = raw("") }), with(func(e *Entry) { e.extra = map[string]json.RawMessage{"k": nil} }), false},
		{"extra value nil, nil", with(func(e *Entry) { e.extra = map[string]json.RawMessage{"k": nil} }), with(func(e *Entry) { e.extra = map[string]json.RawMessage{"k": nil} }), true},
		{"lengths", []Entry{base}, []Entry{base, base}, false},
	}
	for _, tt := range tests {
		if deep := reflect.DeepEqual(tt.a, tt.b); deep != tt.want {
			t.Fatalf("%s: the table says %v, reflect.DeepEqual %v", tt.name, tt.want, deep)
		}
		if got := SameEntries(tt.a, tt.b); got != tt.want {
			t.Errorf("%s: SameEntries = %v, want %v (reflect.DeepEqual)", tt.name, got, tt.want)
		}
		if got := SameEntries(tt.b, tt.a); got != tt.want {
			t.Errorf("%s (swapped): SameEntries = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// FuzzSameEntries: SameEntries is reflect.DeepEqual on two entry slices,
// the second made from the first by a change the input picks (none, a
// field, a deletion record shared or copied, a map nil or empty or
// changed, a slice nil, empty or shared).
func FuzzSameEntries(f *testing.F) {
	f.Add([]byte{3, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte("\x05\x02\x9c\x00\x01\x02\x03\x04\x05\x06\x07"))
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{b: data}
		var a []Entry
		switch n := int(g.byte()) % 6; n {
		case 0:
		case 1:
			a = []Entry{}
		default:
			for range n - 1 {
				a = append(a, g.entry())
			}
		}
		b := slices.Clone(a)
		for range 1 + int(g.byte())%3 {
			switch g.byte() % 12 {
			case 0:
				b = a // the same slice
			case 1:
				b = nil
			case 2:
				b = []Entry{}
			case 3:
				b = append(b, g.entry())
			}
			if len(b) == 0 || len(a) == 0 {
				continue
			}
			i := int(g.byte()) % len(b)
			e := &b[i]
			switch g.byte() % 9 {
			case 0:
				e.Path = g.str()
			case 1:
				e.AnchorID = g.str()
			case 2:
				if e.Deleted != nil {
					d := *e.Deleted
					e.Deleted = &d // same values, another pointer
				}
			case 3:
				if e.Deleted != nil {
					d := *e.Deleted
					d.Confidence = genFloats[int(g.byte())%len(genFloats)]
					e.Deleted = &d
				}
			case 4:
				e.Deleted = nil
			case 5:
				if e.extra != nil {
					x := map[string]json.RawMessage{}
					for k, v := range e.extra {
						x[k] = slices.Clone(v)
					}
					e.extra = x
				}
			case 6:
				if e.extra == nil {
					e.extra = map[string]json.RawMessage{}
				} else if len(e.extra) == 0 {
					e.extra = nil
				}
			case 7:
				x := map[string]json.RawMessage{}
				for k, v := range e.extra {
					x[k] = v
				}
				x[g.str()] = g.raw()
				e.extra = x
			case 8:
				*e = g.entry()
			}
		}
		if got, want := SameEntries(a, b), reflect.DeepEqual(a, b); got != want {
			t.Fatalf("SameEntries = %v, reflect.DeepEqual %v\na %+v\nb %+v", got, want, a, b)
		}
		if got, want := SameEntries(b, a), reflect.DeepEqual(b, a); got != want {
			t.Fatalf("swapped: SameEntries = %v, reflect.DeepEqual %v", got, want)
		}
	})
}

// TestPlainEnd: the scans eight bytes at a time stop where the byte table
// says, whatever byte stops them at whatever place in a word.
func TestPlainEnd(t *testing.T) {
	naive := func(b []byte, i int) int {
		for i < len(b) && plainByte[b[i]] != 0 {
			i++
		}
		return i
	}
	check := func(b []byte, start int) {
		t.Helper()
		if got, want := plainEnd(b, start), naive(b, start); got != want {
			t.Fatalf("plainEnd(%q, %d) = %d, want %d", b, start, got, want)
		}
		if got, want := isPlain(string(b[start:])), naive(b, start) == len(b); got != want {
			t.Fatalf("isPlain(%q) = %v, want %v", b[start:], got, want)
		}
	}
	for c := range 256 {
		for pos := range 20 {
			b := bytes.Repeat([]byte("a"), 20)
			b[pos] = byte(c)
			for start := range 3 {
				check(b, start)
			}
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 10000 {
		b := make([]byte, rng.IntN(40))
		for i := range b {
			b[i] = byte(0x20 + rng.IntN(0x60))
			if rng.IntN(30) == 0 {
				b[i] = byte(rng.Uint32())
			}
		}
		check(b, 0)
	}
}
