package manifest

import (
	"bytes"
	"encoding/json"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/learnwatch/learnwatch/jsonscan"
)

// This file holds the manifest's fast codec. The reference is the
// encoding/json path (decodeJSON, encodeJSON in manifest.go): the fast
// decoder accepts only what it can decode exactly as that path does and
// returns ok=false for anything else (the caller then takes the reference
// path for the whole file), and the fast encoder writes the bytes
// json.MarshalIndent(m, "", "  ") writes, or gives up the same way.
//
// Encoding is memoised per entry: a Manifest keeps, for each entry of its
// last encoding, the entry's bytes, and reuses them while the entry still
// encodes to them. An entry whose encoding has the plain layout (no
// deletion record, no unknown field, no string that needs escaping) is
// checked against its bytes directly (layoutIs), so the memo holds no copy
// of it; any other entry is compared with a copy kept beside its bytes.
// The decoder primes the memo with the bytes of every entry the file
// holds in that plain layout: a manifest read and written back unchanged
// costs a comparison per entry and a copy of the file.
//
// Memory: the decoder converts the file to one string and slices every
// plain string of the entries from it, and the memo's bytes of the
// entries it primed are slices of it too; one Encode's new bytes are one
// string. So a decoded manifest holds its file once (where encoding/json
// allocated each string apart), plus 24 bytes of memo per entry, plus a
// copy of each entry not in the plain layout once encoded.

// The plain layout of an entry as json.MarshalIndent writes it inside the
// manifest (at depth 2): the five strings every entry has, an anchor when
// it is not empty, nothing else; the strings need no escaping (plainByte).
const (
	entryOpen   = "{\n      \"observationId\": \""
	entrySep1   = "\",\n      \"type\": \""
	entrySep2   = "\",\n      \"path\": \""
	entrySep3   = "\",\n      \"contentHash\": \""
	entrySep4   = "\",\n      \"renderedAt\": \""
	entrySepA   = "\",\n      \"anchorId\": \""
	entryClose  = "\"\n    }"
	entryIndent = "\n      " // before each member of an entry
	entryNext   = ",\n    "  // between two entries
)

// plainByte is 1 for the bytes encoding/json writes as they are in a
// string: printable ASCII but for ", \ and the HTML-escaped <, >, &; 0
// for the others.
var plainByte = func() (t [256]uint8) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = 1
	}
	for _, c := range `"\<>&` {
		t[c] = 0
	}
	return t
}()

// plainEnd returns the index of the first byte at or after i that is not
// plainByte. Eight bytes at a time, with no branch per byte, then byte by
// byte: about twice as fast on the manifest's strings.
func plainEnd(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := b[i : i+8 : i+8]
		if plainByte[w[0]]&plainByte[w[1]]&plainByte[w[2]]&plainByte[w[3]]&
			plainByte[w[4]]&plainByte[w[5]]&plainByte[w[6]]&plainByte[w[7]] == 0 {
			break
		}
	}
	for i < len(b) && plainByte[b[i]] != 0 {
		i++
	}
	return i
}

// isPlain reports whether every byte of s is plainByte (as plainEnd).
func isPlain(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := s[i : i+8]
		if plainByte[w[0]]&plainByte[w[1]]&plainByte[w[2]]&plainByte[w[3]]&
			plainByte[w[4]]&plainByte[w[5]]&plainByte[w[6]]&plainByte[w[7]] == 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if plainByte[s[i]] == 0 {
			return false
		}
	}
	return true
}

// --- decoding ---

// decoder reads a manifest's bytes; text is the same bytes as a string,
// which every plain string of the file is a slice of.
type decoder struct {
	data []byte
	text string
}

// decodeFast decodes a manifest without reflection. ok is false when it
// cannot vouch that the result is exactly decodeJSON's: anything not
// valid JSON, a key that is escaped, non-ASCII, repeated or a case variant
// of a known one, a value of another type than the field's, nesting
// deeper than maxScanDepth. The result's memo holds the bytes of the
// entries written in the plain layout.
func decodeFast(data []byte) (*Manifest, bool) {
	d := decoder{data: data, text: string(data)}
	return d.manifest()
}

func (d *decoder) manifest() (*Manifest, bool) {
	b := d.data
	i := jsonscan.SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, false
	}
	m := &Manifest{}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return m, jsonscan.SkipSpace(b, i+1) == len(b)
	}
	var haveVersion, haveEntries bool
	for {
		key, j, ok := d.key(i)
		if !ok {
			return nil, false
		}
		i = j
		switch string(key) {
		case "schemaVersion":
			if haveVersion {
				return nil, false
			}
			haveVersion = true
			if i = d.int(i, &m.SchemaVersion); i < 0 {
				return nil, false
			}
		case "entries":
			if haveEntries {
				return nil, false
			}
			haveEntries = true
			switch {
			case i < len(b) && b[i] == '[':
				if i = d.entries(i, m); i < 0 {
					return nil, false
				}
			default:
				if i = literal(b, i, "null"); i < 0 {
					return nil, false
				}
			}
		default:
			if strings.EqualFold(string(key), "schemaVersion") || strings.EqualFold(string(key), "entries") {
				return nil, false // encoding/json fills the field from it too
			}
			if m.extra, i = d.unknown(i, key, m.extra); i < 0 {
				return nil, false
			}
		}
		var closed bool
		if i, closed = d.next(i, '}'); i < 0 {
			return nil, false
		}
		if closed {
			return m, jsonscan.SkipSpace(b, i) == len(b)
		}
	}
}

// key reads the member key at b[i] and the colon after it: the key's bytes
// and the index of its value. ok is false for a key that is not plain
// (escaped, non-ASCII, a control byte, an HTML character).
func (d *decoder) key(i int) (key []byte, next int, ok bool) {
	b := d.data
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	end := plainEnd(b, i+1)
	if end >= len(b) || b[end] != '"' {
		return nil, 0, false
	}
	j := jsonscan.SkipSpace(b, end+1)
	if j >= len(b) || b[j] != ':' {
		return nil, 0, false
	}
	return b[i+1 : end], jsonscan.SkipSpace(b, j+1), true
}

// next reads what follows a member's value: a comma (and the space after
// it) or the closing byte (closed). It returns the index after them, or
// -1.
func (d *decoder) next(i int, closing byte) (_ int, closed bool) {
	b := d.data
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) {
		return -1, false
	}
	switch b[i] {
	case ',':
		return jsonscan.SkipSpace(b, i+1), false
	case closing:
		return i + 1, true
	}
	return -1, false
}

// int decodes the integer (or null) at b[i] into v as encoding/json
// decodes it into an int; it returns the index after it, or -1.
func (d *decoder) int(i int, v *int) int {
	b := d.data
	if i < len(b) && b[i] == 'n' {
		return literal(b, i, "null")
	}
	end := jsonscan.NumberEnd(b, i)
	if end < 0 {
		return -1
	}
	n, err := strconv.ParseInt(string(b[i:end]), 10, strconv.IntSize)
	if err != nil {
		return -1
	}
	*v = int(n)
	return end
}

// unknown keeps the raw value at b[i] (valid JSON) under key in extra,
// which it creates when nil; a repeated key fails (-1).
func (d *decoder) unknown(i int, key []byte, extra map[string]json.RawMessage) (map[string]json.RawMessage, int) {
	end := validValue(d.data, i, 0)
	if end < 0 {
		return extra, -1
	}
	if extra == nil {
		extra = map[string]json.RawMessage{}
	} else if _, dup := extra[string(key)]; dup {
		return extra, -1
	}
	extra[string(key)] = bytes.Clone(d.data[i:end])
	return extra, end
}

// entries decodes the array at b[i] into m.Entries and primes m's memo;
// it returns the index after the array, or -1.
func (d *decoder) entries(i int, m *Manifest) int {
	b := d.data
	// Room for as many entries as the array has opening braces (a bound:
	// an entry's deletion record and unknown fields may hold objects too;
	// counting one byte is cheap).
	n := bytes.Count(b[i:], []byte{'{'})
	es := make([]Entry, 0, n)
	recs := make([]memoRec, 0, n)
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == ']' {
		m.Entries = es
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '{' {
			return -1
		}
		es = append(es, Entry{})
		e := &es[len(es)-1]
		end := d.plainEntry(i, e)
		plain := end >= 0
		if !plain {
			*e = Entry{}
			if end = d.entry(i, e); end < 0 {
				return -1
			}
		}
		var r memoRec
		if plain {
			r.enc = d.text[i:end]
		}
		recs = append(recs, r)
		var closed bool
		if i, closed = d.next(end, ']'); i < 0 {
			return -1
		}
		if closed {
			m.Entries = es
			m.memo = &memo{recs: recs}
			return i
		}
	}
}

// plainEntry decodes the entry at b[i] when it is written exactly in the
// plain layout, strings sliced from the text; it returns the index after
// it, or -1 (e then holds garbage).
func (d *decoder) plainEntry(i int, e *Entry) int {
	j := i
	if j = d.plainField(j, entryOpen, &e.ObservationID); j < 0 {
		return -1
	}
	if j = d.plainField(j, entrySep1, &e.Type); j < 0 {
		return -1
	}
	if j = d.plainField(j, entrySep2, &e.Path); j < 0 {
		return -1
	}
	if j = d.plainField(j, entrySep3, &e.ContentHash); j < 0 {
		return -1
	}
	if j = d.plainField(j, entrySep4, &e.RenderedAt); j < 0 {
		return -1
	}
	if strings.HasPrefix(d.text[j:], entrySepA) {
		if j = d.plainField(j, entrySepA, &e.AnchorID); j < 0 || e.AnchorID == "" {
			return -1 // an empty anchor is omitted when written
		}
	}
	if !strings.HasPrefix(d.text[j:], entryClose) {
		return -1
	}
	return j + len(entryClose)
}

// plainField reads pre then a run of plain bytes into *s; it returns the
// index after the run (where the next separator's quote must be), or -1.
func (d *decoder) plainField(j int, pre string, s *string) int {
	if !strings.HasPrefix(d.text[j:], pre) {
		return -1
	}
	j += len(pre)
	end := plainEnd(d.data, j)
	*s = d.text[j:end]
	return end
}

// Bits of the known entry keys, to find repeats.
const (
	eObservationID = 1 << iota
	eType
	ePath
	eContentHash
	eRenderedAt
	eAnchorID
	eDeleted
)

var entryKeyNames = []string{"observationId", "type", "path", "contentHash", "renderedAt", "anchorId", "deleted"}

// entry decodes the entry object at b[i] in any layout; it returns the
// index after it, or -1 for anything decodeJSON might read otherwise.
func (d *decoder) entry(i int, e *Entry) int {
	return d.object(i, func(key []byte, j int) (int, int) {
		switch string(key) {
		case "observationId":
			return d.string(j, &e.ObservationID), eObservationID
		case "type":
			return d.string(j, &e.Type), eType
		case "path":
			return d.string(j, &e.Path), ePath
		case "contentHash":
			return d.string(j, &e.ContentHash), eContentHash
		case "renderedAt":
			return d.string(j, &e.RenderedAt), eRenderedAt
		case "anchorId":
			return d.string(j, &e.AnchorID), eAnchorID
		case "deleted":
			return d.deletion(j, &e.Deleted), eDeleted
		}
		if foldsToAny(key, entryKeyNames) {
			return -1, 0 // encoding/json fills the field from it too
		}
		e.extra, j = d.unknown(j, key, e.extra)
		return j, 0
	})
}

// object walks the object whose '{' is at b[i] member by member: member
// decodes the value of key at b[j] and returns the index after it (-1
// refuses the object) and the key's bit among the fields it knows (0 for
// any other key). A known key seen twice refuses the object as well —
// whatever member wrote is then dropped with the rest: decodeJSON reads
// the file. It returns the index after the object, or -1.
func (d *decoder) object(i int, member func(key []byte, j int) (int, int)) int {
	b := d.data
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	var have int
	for {
		key, j, ok := d.key(i)
		if !ok {
			return -1
		}
		var bit int
		if i, bit = member(key, j); i < 0 || have&bit != 0 {
			return -1
		}
		have |= bit
		var closed bool
		if i, closed = d.next(i, '}'); i < 0 {
			return -1
		}
		if closed {
			return i
		}
	}
}

// foldsToAny reports whether key equals one of names under Unicode case
// folding (encoding/json matches keys that way).
func foldsToAny(key []byte, names []string) bool {
	for _, k := range names {
		if strings.EqualFold(string(key), k) {
			return true
		}
	}
	return false
}

// string decodes the string (or null) at b[i] into *s as encoding/json
// does; it returns the index after it, or -1.
func (d *decoder) string(i int, s *string) int {
	b := d.data
	if i < len(b) && b[i] == 'n' {
		return literal(b, i, "null")
	}
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	end, plain := skipString(b, i)
	if end < 0 {
		return -1
	}
	if plain { // printable ASCII, no escape
		if !validString(b[i:end]) {
			return -1
		}
		*s = d.text[i+1 : end-1]
		return end
	}
	if !validString(b[i:end]) {
		return -1
	}
	*s = jsonString(b[i:end])
	return end
}

// deletion decodes the deletion record (or null) at b[i] as encoding/json
// decodes it into a *Deletion: a new record, its fields from their keys
// (strings or null, the confidence a number or null), other keys skipped.
// It returns the index after it, or -1 (a repeated key, a key that is a
// case variant of a field's, a value of another type, a number out of
// range).
func (d *decoder) deletion(i int, del **Deletion) int {
	b := d.data
	if i < len(b) && b[i] == 'n' {
		return literal(b, i, "null")
	}
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	r := &Deletion{}
	*del = r
	return d.object(i, func(key []byte, j int) (int, int) {
		switch string(key) {
		case "at":
			return d.string(j, &r.At), 1
		case "status":
			return d.string(j, &r.Status), 2
		case "confidence":
			return d.float(j, &r.Confidence), 4
		case "deprecatedAt":
			return d.string(j, &r.DeprecatedAt), 8
		case "head":
			return d.string(j, &r.Head), 16
		}
		if foldsToAny(key, deletionKeyNames) {
			return -1, 0
		}
		return validValue(b, j, 0), 0 // encoding/json skips it
	})
}

var deletionKeyNames = []string{"at", "status", "confidence", "deprecatedAt", "head"}

// float decodes the number (or null) at b[i] into v as encoding/json
// decodes it into a float64; it returns the index after it, or -1.
func (d *decoder) float(i int, v *float64) int {
	b := d.data
	if i < len(b) && b[i] == 'n' {
		return literal(b, i, "null")
	}
	end := jsonscan.NumberEnd(b, i)
	if end < 0 {
		return -1
	}
	f, err := strconv.ParseFloat(string(b[i:end]), 64)
	if err != nil {
		return -1
	}
	*v = f
	return end
}

// --- encoding ---

// memo is what a Manifest remembers of its last encoding: per entry, in
// the order they were encoded, the entry's bytes. Copies of a Manifest
// share it (hence the lock); each use checks the entries against it, so a
// shared memo is never wrong, only less useful.
type memo struct {
	mu   sync.Mutex
	recs []memoRec
}

// memoRec is one entry's encoding: enc the bytes from { to } ("" when not
// known), cp a copy of the entry encoded when enc is not in the plain
// layout (nil when it is: the entry is then checked against enc itself).
type memoRec struct {
	enc string
	cp  *Entry
}

// encodes reports whether e encodes to r.enc.
func (r *memoRec) encodes(e *Entry) bool {
	if r.enc == "" {
		return false
	}
	if r.cp != nil {
		return sameEncoding(e, r.cp)
	}
	return layoutIs(e, r.enc)
}

// id returns the observation id of the entry r holds, "" when unknown.
func (r *memoRec) id() string {
	if r.cp != nil {
		return r.cp.ObservationID
	}
	if s, ok := strings.CutPrefix(r.enc, entryOpen); ok {
		if end := strings.IndexByte(s, '"'); end >= 0 {
			return s[:end]
		}
	}
	return ""
}

// layoutIs reports whether e encodes to s, bytes in the plain layout: e
// has no deletion record and no unknown field, and s is the layout's
// separators with e's strings between them (an anchor's only when e has
// one). Then e's strings are the ones s holds, so they are plain and e
// encodes to s: s's strings hold no quote, so each separator, which holds
// the next member's key between quotes, occurs in s once, right after the
// string before it; every string of e therefore starts and ends where the
// one s holds does — except that, s ending in an anchor and e having
// none, e's renderedAt could run to the anchor's end, spelling out the
// anchor member with its quotes: a renderedAt holding a quote is refused
// for that.
func layoutIs(e *Entry, s string) bool {
	if e.Deleted != nil || len(e.extra) != 0 {
		return false
	}
	p := 0
	if p = layoutField(s, p, entryOpen, e.ObservationID); p < 0 {
		return false
	}
	if p = layoutField(s, p, entrySep1, e.Type); p < 0 {
		return false
	}
	if p = layoutField(s, p, entrySep2, e.Path); p < 0 {
		return false
	}
	if p = layoutField(s, p, entrySep3, e.ContentHash); p < 0 {
		return false
	}
	if p = layoutField(s, p, entrySep4, e.RenderedAt); p < 0 {
		return false
	}
	if e.AnchorID != "" {
		if p = layoutField(s, p, entrySepA, e.AnchorID); p < 0 {
			return false
		}
	} else if strings.IndexByte(e.RenderedAt, '"') >= 0 {
		return false
	}
	return s[p:] == entryClose
}

// layoutField matches pre then v at s[p:]; it returns the index after
// them, or -1.
func layoutField(s string, p int, pre, v string) int {
	if len(s)-p < len(pre)+len(v) || s[p:p+len(pre)] != pre {
		return -1
	}
	p += len(pre)
	if s[p:p+len(v)] != v {
		return -1
	}
	return p + len(v)
}

// sameEncoding reports whether a and b encode to the same bytes: equal
// strings, deletion records equal field by field (confidence bit for bit:
// 0 and -0 are written differently), the same unknown fields (nil and
// empty alike).
func sameEncoding(a, b *Entry) bool {
	if a.ObservationID != b.ObservationID || a.Type != b.Type || a.Path != b.Path ||
		a.ContentHash != b.ContentHash || a.RenderedAt != b.RenderedAt || a.AnchorID != b.AnchorID {
		return false
	}
	if (a.Deleted == nil) != (b.Deleted == nil) {
		return false
	}
	if a.Deleted != nil {
		x, y := a.Deleted, b.Deleted
		if x.At != y.At || x.Status != y.Status || x.DeprecatedAt != y.DeprecatedAt || x.Head != y.Head ||
			math.Float64bits(x.Confidence) != math.Float64bits(y.Confidence) {
			return false
		}
	}
	if len(a.extra) != len(b.extra) {
		return false
	}
	for k, v := range a.extra {
		w, ok := b.extra[k]
		if !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// cloneEntry copies e deeply enough that changing e (through its deletion
// record or its unknown fields) leaves the copy as it was.
func cloneEntry(e *Entry) *Entry {
	c := *e
	if e.Deleted != nil {
		d := *e.Deleted
		c.Deleted = &d
	}
	if e.extra != nil {
		c.extra = make(map[string]json.RawMessage, len(e.extra))
		for k, v := range e.extra {
			c.extra[k] = bytes.Clone(v)
		}
	}
	return &c
}

// encodeFast writes what encodeJSON writes, reusing the memo's bytes for
// the entries that still encode to them, and records the encoding in the
// memo. ok is false when it cannot write exactly those bytes (a
// confidence that is not finite, an unknown field that is not valid
// JSON): the caller then takes encodeJSON, which fails the same way.
func (m *Manifest) encodeFast() ([]byte, bool) {
	if m.memo == nil {
		m.memo = &memo{}
	}
	c := m.memo
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.recs
	size := 64
	for i := range m.Entries {
		size += entrySize(&m.Entries[i])
	}
	for _, v := range m.extra {
		size += 16 + 2*len(v)
	}
	// A buffer of that size that is not zeroed first (make would).
	var buf bytes.Buffer
	buf.Grow(size)
	out := buf.AvailableBuffer()
	out = append(out, "{\n  \"schemaVersion\": "...)
	out = strconv.AppendInt(out, int64(m.SchemaVersion), 10)
	out = append(out, ",\n  \"entries\": ["...)
	recs := make([]memoRec, len(m.Entries))
	type span struct{ entry, start, end int }
	var fresh []span
	var freshLen int
	cur := cursor{old: old}
	for i := range m.Entries {
		e := &m.Entries[i]
		if i == 0 {
			out = append(out, "\n    "...)
		} else {
			out = append(out, entryNext...)
		}
		if k := cur.find(e); k >= 0 {
			out = append(out, old[k].enc...)
			recs[i] = old[k]
			continue
		}
		start := len(out)
		var layout, ok bool
		if out, layout, ok = appendEntry(out, e); !ok {
			return nil, false
		}
		fresh = append(fresh, span{i, start, len(out)})
		freshLen += len(out) - start
		if !layout {
			recs[i].cp = cloneEntry(e)
		}
	}
	if len(m.Entries) > 0 {
		out = append(out, "\n  ]"...)
	} else {
		out = append(out, ']')
	}
	for _, k := range slices.Sorted(maps.Keys(m.extra)) {
		out = append(out, ",\n  "...)
		out = appendString(out, k)
		out = append(out, ": "...)
		var ok bool
		if out, ok = appendIndented(out, m.extra[k], "  "); !ok {
			return nil, false
		}
	}
	out = append(out, "\n}\n"...)
	// The new entries' bytes, copied once into one string the memo's
	// records slice.
	var sb strings.Builder
	sb.Grow(freshLen)
	for _, f := range fresh {
		sb.Write(out[f.start:f.end])
	}
	all, off := sb.String(), 0
	for _, f := range fresh {
		n := f.end - f.start
		recs[f.entry].enc = all[off : off+n]
		off += n
	}
	c.recs = recs
	return out, true
}

// entrySize is about the size of e's encoding (with the separator before
// it): exact for the plain layout, more for a deletion record, less for
// strings that need escaping.
func entrySize(e *Entry) int {
	n := len(entryNext) + len(entryOpen) + len(entrySep1) + len(entrySep2) + len(entrySep3) + len(entrySep4) + len(entryClose) +
		len(e.ObservationID) + len(e.Type) + len(e.Path) + len(e.ContentHash) + len(e.RenderedAt)
	if e.AnchorID != "" {
		n += len(entrySepA) + len(e.AnchorID)
	}
	if d := e.Deleted; d != nil {
		n += 160 + len(d.At) + len(d.Status) + len(d.DeprecatedAt) + len(d.Head)
	}
	for k, v := range e.extra {
		n += 16 + len(k) + 2*len(v)
	}
	return n
}

// cursor walks the memo's records of the last encoding alongside the
// entries being encoded: entries are mostly where they were, some
// changed in place, removed or added (heal drops and appends, never
// reorders), so the record to try is the one after the last used.
type cursor struct {
	old  []memoRec
	j    int            // the record expected next
	byID map[string]int // observation id → record, built when needed
}

// lookahead is how many records past the expected one find tries before
// it looks the entry's id up.
const lookahead = 8

// find returns the index of a record that e encodes to, or -1.
func (c *cursor) find(e *Entry) int {
	old, j := c.old, c.j
	if j >= len(old) {
		return -1 // appended
	}
	if old[j].encodes(e) {
		c.j = j + 1
		return j
	}
	id := old[j].id()
	if id == e.ObservationID {
		c.j = j + 1 // changed in place
		return -1
	}
	for k := j + 1; k < min(len(old), j+1+lookahead); k++ {
		if old[k].encodes(e) {
			c.j = k + 1 // the records before k were removed
			return k
		}
	}
	if id == "" {
		c.j = j + 1 // most likely e, decoded from a layout the memo does not hold
		return -1
	}
	if c.byID == nil {
		c.byID = make(map[string]int, len(old))
		for k := len(old) - 1; k >= 0; k-- {
			if id := old[k].id(); id != "" {
				c.byID[id] = k
			}
		}
	}
	k, ok := c.byID[e.ObservationID]
	if !ok || k < j {
		return -1 // inserted
	}
	c.j = k + 1
	if old[k].encodes(e) {
		return k
	}
	return -1
}

// appendEntry appends e's encoding as json.MarshalIndent writes an entry
// of the manifest: the known fields (anchorId and deleted only when set),
// then unknown fields sorted by key, re-indented. layout reports the plain
// layout (see layoutIs); ok is false when it cannot write what
// encoding/json writes.
func appendEntry(b []byte, e *Entry) (_ []byte, layout, ok bool) {
	layout = e.Deleted == nil && len(e.extra) == 0
	str := func(b []byte, s string) []byte {
		if isPlain(s) {
			return append(b, s...)
		}
		layout = false
		return appendStringBody(b, s)
	}
	b = append(b, entryOpen...)
	b = str(b, e.ObservationID)
	b = append(b, entrySep1...)
	b = str(b, e.Type)
	b = append(b, entrySep2...)
	b = str(b, e.Path)
	b = append(b, entrySep3...)
	b = str(b, e.ContentHash)
	b = append(b, entrySep4...)
	b = str(b, e.RenderedAt)
	if e.AnchorID != "" {
		b = append(b, entrySepA...)
		b = str(b, e.AnchorID)
	}
	b = append(b, '"')
	if d := e.Deleted; d != nil {
		if math.IsNaN(d.Confidence) || math.IsInf(d.Confidence, 0) {
			return b, false, false
		}
		const ind = "\n        "
		b = append(b, ","+entryIndent+`"deleted": {`+ind+`"at": `...)
		b = appendString(b, d.At)
		b = append(b, ","+ind+`"status": `...)
		b = appendString(b, d.Status)
		b = append(b, ","+ind+`"confidence": `...)
		b = appendFloat(b, d.Confidence)
		if d.DeprecatedAt != "" {
			b = append(b, ","+ind+`"deprecatedAt": `...)
			b = appendString(b, d.DeprecatedAt)
		}
		if d.Head != "" {
			b = append(b, ","+ind+`"head": `...)
			b = appendString(b, d.Head)
		}
		b = append(b, entryIndent+"}"...)
	}
	if len(e.extra) > 0 {
		for _, k := range slices.Sorted(maps.Keys(e.extra)) {
			b = append(b, ","+entryIndent...)
			b = appendString(b, k)
			b = append(b, ": "...)
			if b, ok = appendIndented(b, e.extra[k], "      "); !ok {
				return b, false, false
			}
		}
	}
	return append(b, "\n    }"...), layout, true
}

// appendIndented appends the raw value v as json.MarshalIndent writes a
// json.RawMessage whose first line is indented by prefix: compacted,
// HTML-escaped (appendRaw), then indented. ok is false when v is not
// valid JSON.
func appendIndented(b, v []byte, prefix string) ([]byte, bool) {
	c, ok := appendRaw(nil, v)
	if !ok {
		return b, false
	}
	if c[0] != '{' && c[0] != '[' {
		return append(b, c...), true
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, c, prefix, "  "); err != nil {
		return b, false
	}
	return append(b, buf.Bytes()...), true
}

// --- comparison ---

// SameEntries reports whether a and b are deeply equal, exactly as
// reflect.DeepEqual(a, b) does for []Entry, without reflection: nil and
// empty slices differ, as do nil and empty maps of unknown fields;
// deletion records are equal when they are the same pointer or their
// fields are == (so 0 equals -0 and NaN equals nothing but itself through
// the same pointer).
func SameEntries(a, b []Entry) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	for i := range a {
		if !deepEqualEntry(&a[i], &b[i]) {
			return false
		}
	}
	return true
}

// deepEqualEntry is reflect.DeepEqual for two entries.
func deepEqualEntry(a, b *Entry) bool {
	if a.ObservationID != b.ObservationID || a.Type != b.Type || a.Path != b.Path ||
		a.ContentHash != b.ContentHash || a.RenderedAt != b.RenderedAt || a.AnchorID != b.AnchorID {
		return false
	}
	if a.Deleted != b.Deleted && (a.Deleted == nil || b.Deleted == nil || *a.Deleted != *b.Deleted) {
		return false
	}
	if (a.extra == nil) != (b.extra == nil) || len(a.extra) != len(b.extra) {
		return false
	}
	for k, v := range a.extra {
		w, ok := b.extra[k]
		if !ok || (v == nil) != (w == nil) || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}
