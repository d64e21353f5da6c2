package staleness

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// The cache file's body (what follows cacheHeader) is cacheFile in a
// compact binary encoding, written by appendCacheFile and read by
// decodeCacheFile. Sections come in the order of the struct:
//
//	strings  uvarint n, n × uvarint length, then the n strings' bytes
//	Local    str
//	Opts     str
//	Extract  uvarint entries, uvarint refs (of all entries), per entry:
//	         Key [32]byte, uvarint count, count × Ref:
//	           flags (1 Rooted, 2 Raw is Path), str Path, varint Line,
//	           str Raw (unless flag 2), str Dir
//	Trees    uvarint n, per section: varint Mode, str Tree,
//	         uvarint n × ignoreDep: str Name, flags (1 Present), Sum [32]byte
//	         uvarint n × outcome: str Path, str Dir, str Found, str How,
//	           str Skip, str Moved, varint Searched,
//	           flags (1 Rooted, 2 Missing, 4 Truncated)
//	         uvarint n × line check: str Path, str Dir, varint Line,
//	           flags (1 Rooted, 2 Past)
//	         flags (1 HasMD), uvarint n × str MD
//	History  flags: 0 for none, else 1 | 2 Complete | 4 Truncated, then
//	         str Head, varint Depth, uvarint n × step: from, to [20]byte,
//	         uvarint n × deletion: varint Step, str Path,
//	         uvarint n × renames: varint Step, uvarint n × (str, str)
//
// A str is a uvarint index into the string table, which holds each
// distinct string once (paths, directories and raw references repeat a
// lot); a varint is zigzag-encoded (binary.AppendVarint).
//
// The encoding is canonical: strings are numbered in the order of their
// first use and the table holds no other, varints are minimal, flags use
// only their defined bits (a Ref's Raw is written only when it is not its
// Path), and nothing follows History. The decoder accepts nothing else,
// except that it does not look for a string the table holds twice (which
// only a file not written here can do; it would cost a hash of every
// string): a value decoded from bytes encodes to exactly those bytes, or
// for such a file to bytes that decode to the same value. Empty and nil
// slices encode alike and decode as nil.

// errCacheCodec is the decoding error: the cache is then ignored.
type errCacheCodec struct {
	off  int
	what string
}

func (e *errCacheCodec) Error() string {
	return fmt.Sprintf("staleness cache: %s at byte %d", e.what, e.off)
}

// appendCacheFile appends the encoding of cf to b.
func appendCacheFile(b []byte, cf *cacheFile) []byte {
	extract := make([]*cachedRefs, len(cf.Extract))
	for i := range cf.Extract {
		extract[i] = &cf.Extract[i]
	}
	table, body := cacheParts(cf, extract)
	return append(append(b, table...), body...)
}

// cacheParts returns the encoding of cf in two parts: the string table,
// then the body that refers to it. The extractions encoded are extract's,
// in its order (cf.Extract is not read): a save points at those the
// Checker holds instead of copying them into a slice of their own (at
// 100,000 observations that copy was 5 MB of a first pass's peak).
func cacheParts(cf *cacheFile, extract []*cachedRefs) (table, body []byte) {
	nrefs := 0
	for _, e := range extract {
		nrefs += len(e.Refs)
	}
	e := cacheEncoder{
		body:    make([]byte, 0, 64+len(extract)*40+nrefs*6),
		indexes: make(map[string]int, nrefs/4+64),
		empty:   -1,
	}
	e.str(cf.Local)
	e.str(cf.Opts)
	e.uvarint(uint64(len(extract)))
	e.uvarint(uint64(nrefs))
	for _, x := range extract {
		e.body = append(e.body, x.Key[:]...)
		e.uvarint(uint64(len(x.Refs)))
		dir, dirIndex := "", -1 // the references of a text share its directory
		for i := range x.Refs {
			r := &x.Refs[i]
			same := r.Raw == r.Path
			e.body = append(e.body, flag(r.Rooted, 1)|flag(same, 2))
			e.str(r.Path)
			e.int(r.Line)
			if !same {
				e.str(r.Raw)
			}
			if dirIndex < 0 || r.Dir != dir {
				dir, dirIndex = r.Dir, e.index(r.Dir)
			}
			e.uvarint(uint64(dirIndex))
		}
	}
	e.uvarint(uint64(len(cf.Trees)))
	for i := range cf.Trees {
		t := &cf.Trees[i]
		e.int(t.Mode)
		e.str(t.Tree)
		e.uvarint(uint64(len(t.Ignore)))
		for _, d := range t.Ignore {
			e.str(d.Name)
			e.body = append(e.body, flag(d.Present, 1))
			e.body = append(e.body, d.Sum[:]...)
		}
		e.uvarint(uint64(len(t.Outcomes)))
		for j := range t.Outcomes {
			o := &t.Outcomes[j]
			e.str(o.Path)
			e.str(o.Dir)
			e.str(o.Found)
			e.str(o.How)
			e.str(o.Skip)
			e.str(o.Moved)
			e.int(o.Searched)
			e.body = append(e.body, flag(o.Rooted, 1)|flag(o.Missing, 2)|flag(o.Truncated, 4))
		}
		e.uvarint(uint64(len(t.EOF)))
		for _, x := range t.EOF {
			e.str(x.Path)
			e.str(x.Dir)
			e.int(x.Line)
			e.body = append(e.body, flag(x.Rooted, 1)|flag(x.Past, 2))
		}
		e.body = append(e.body, flag(t.HasMD, 1))
		e.uvarint(uint64(len(t.MD)))
		for _, s := range t.MD {
			e.str(s)
		}
	}
	if h := cf.History; h == nil {
		e.body = append(e.body, 0)
	} else {
		e.body = append(e.body, 1|flag(h.Complete, 2)|flag(h.Truncated, 4))
		e.str(h.Head)
		e.int(h.Depth)
		e.uvarint(uint64(len(h.Steps)))
		for _, s := range h.Steps {
			e.body = append(e.body, s[0][:]...)
			e.body = append(e.body, s[1][:]...)
		}
		e.uvarint(uint64(len(h.Dels)))
		for _, d := range h.Dels {
			e.int(d.Step)
			e.str(d.Path)
		}
		e.uvarint(uint64(len(h.Renames)))
		for _, rs := range h.Renames {
			e.int(rs.Step)
			e.uvarint(uint64(len(rs.Pairs)))
			for _, p := range rs.Pairs {
				e.str(p[0])
				e.str(p[1])
			}
		}
	}
	// The string table, then the body that refers to it.
	b := binary.AppendUvarint(nil, uint64(len(e.strs)))
	for _, s := range e.strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	b = slices.Grow(b, e.size)
	for _, s := range e.strs {
		b = append(b, s...)
	}
	return b, e.body
}

func flag(v bool, bit byte) byte {
	if v {
		return bit
	}
	return 0
}

// cacheEncoder writes the body while it numbers the strings it meets.
type cacheEncoder struct {
	body    []byte
	strs    []string // the string table, in order of first use
	indexes map[string]int
	size    int // bytes of strs
	empty   int // the index of "" (-1 until met): no lookup for it
}

func (e *cacheEncoder) uvarint(v uint64) {
	if v < 0x80 {
		e.body = append(e.body, byte(v))
		return
	}
	e.body = binary.AppendUvarint(e.body, v)
}

func (e *cacheEncoder) int(v int) { e.body = binary.AppendVarint(e.body, int64(v)) }

func (e *cacheEncoder) str(s string) { e.uvarint(uint64(e.index(s))) }

// index returns the index of s in the string table, adding it when new.
func (e *cacheEncoder) index(s string) int {
	if s == "" && e.empty >= 0 {
		return e.empty
	}
	i, ok := e.indexes[s]
	if !ok {
		i = len(e.strs)
		e.indexes[s] = i
		e.strs = append(e.strs, s)
		e.size += len(s)
		if s == "" {
			e.empty = i
		}
	}
	return i
}

// Each element takes at least this many bytes of the encoding: a count
// larger than the bytes left could hold is rejected before anything is
// allocated for it.
const (
	minEntry   = 32 + 1            // Key, count
	minRef     = 4                 // flags, Path, Line, Dir
	minSection = 7                 // Mode, Tree, 3 counts, flags, count
	minIgnore  = 1 + 1 + 32        // Name, flags, Sum
	minOutcome = 8                 // 6 strings, Searched, flags
	minEOF     = 4                 // Path, Dir, Line, flags
	minStep    = 40                // from, to
	minDel     = 2                 // Step, Path
	minRenames = 2                 // Step, count
	minPair    = 2                 // from, to
	minHistory = 1 + 1 + 1 + 1 + 1 // Head, Depth, 3 counts (after the flags)
)

// decodeCacheFile decodes a cache file's body (what follows the header).
// Anything but a canonical encoding — truncated, a count the bytes left
// cannot hold, a string index out of range or out of order, an unused
// string, a bad flag byte, a varint longer than needed or an int out of
// range, trailing bytes — is an error; nothing it allocates is larger than
// a small multiple of the input.
func decodeCacheFile(data []byte) (cacheFile, error) {
	d := cacheDecoder{b: data}
	var cf cacheFile
	d.strings()
	cf.Local = d.str()
	cf.Opts = d.str()

	if n := d.count(minEntry); n > 0 {
		total := d.count(minRef)
		refs := make([]Ref, total)
		cf.Extract = make([]cachedRefs, n)
		used := 0
		for i := range cf.Extract {
			x := &cf.Extract[i]
			d.array(x.Key[:])
			k := d.uvarint()
			if k > uint64(total-used) {
				d.fail("more references than counted")
				break
			}
			rs := refs[used : used+int(k) : used+int(k)]
			used += int(k)
			for j := range rs {
				r := &rs[j]
				fl := d.flags(3)
				r.Rooted = fl&1 != 0
				r.Path = d.str()
				r.Line = d.int()
				if fl&2 != 0 {
					r.Raw = r.Path
				} else if r.Raw = d.str(); r.Raw == r.Path {
					d.fail("raw reference written as its path")
				}
				r.Dir = d.str()
			}
			if k > 0 {
				x.Refs = rs
			}
			if d.err != nil {
				break
			}
		}
		if used != total {
			d.fail("fewer references than counted")
		}
	} else {
		d.zero() // the total of references: none
	}

	if n := d.count(minSection); n > 0 {
		cf.Trees = make([]treeSection, n)
		for i := range cf.Trees {
			d.section(&cf.Trees[i])
			if d.err != nil {
				break
			}
		}
	}

	switch fl := d.flags(7); {
	case fl == 0:
	case fl&1 == 0:
		d.fail("bad history flags")
	default:
		h := &cachedHistory{Complete: fl&2 != 0, Truncated: fl&4 != 0}
		d.history(h)
		cf.History = h
	}

	if d.err == nil && d.next != len(d.strs) {
		d.fail("unused string")
	}
	if d.err == nil && d.p != len(d.b) {
		d.fail("trailing bytes")
	}
	if d.err != nil {
		return cacheFile{}, d.err
	}
	return cf, nil
}

// cacheDecoder reads the encoding; the first error sticks, and every read
// after it returns a zero value (the position is put at the end, so every
// count after it is zero).
type cacheDecoder struct {
	b    []byte
	p    int
	strs []string
	next int // strings met so far: they are numbered in that order
	err  error
}

func (d *cacheDecoder) fail(what string) {
	if d.err == nil {
		d.err = &errCacheCodec{off: d.p, what: what}
	}
	d.p = len(d.b)
}

func (d *cacheDecoder) uvarint() uint64 {
	if d.p < len(d.b) {
		if v := d.b[d.p]; v < 0x80 {
			d.p++
			return uint64(v)
		}
	}
	return d.uvarintLong()
}

// uvarintLong reads a uvarint of more than one byte (or fails).
func (d *cacheDecoder) uvarintLong() uint64 {
	if d.p+1 < len(d.b) {
		// Two bytes: string indexes up to 16383.
		if v := d.b[d.p+1]; v-1 < 0x7f {
			d.p += 2
			return uint64(d.b[d.p-2]&0x7f) | uint64(v)<<7
		}
	}
	return d.uvarintAny()
}

func (d *cacheDecoder) uvarintAny() uint64 {
	v, n := binary.Uvarint(d.b[d.p:])
	if n <= 0 {
		d.fail("truncated or overlong varint")
		return 0
	}
	if d.b[d.p+n-1] == 0 {
		// More bytes than the value needs (n > 1 here).
		d.fail("varint not minimal")
		return 0
	}
	d.p += n
	return v
}

func (d *cacheDecoder) int() int {
	u := d.uvarint()
	v := int64(u >> 1) // zigzag, as binary.Varint
	if u&1 != 0 {
		v = ^v
	}
	if int64(int(v)) != v {
		d.fail("int out of range")
		return 0
	}
	return int(v)
}

// count reads a count of elements of at least size bytes each.
func (d *cacheDecoder) count(size int) int {
	n := d.uvarint()
	if n > uint64((len(d.b)-d.p)/size) {
		d.fail("count larger than the bytes left")
		return 0
	}
	return int(n)
}

// zero reads a uvarint that must be 0.
func (d *cacheDecoder) zero() {
	if d.uvarint() != 0 {
		d.fail("references without entries")
	}
}

// flags reads a flag byte with only the bits of mask.
func (d *cacheDecoder) flags(mask byte) byte {
	if d.p < len(d.b) {
		if f := d.b[d.p]; f&^mask == 0 {
			d.p++
			return f
		}
	}
	d.fail("truncated or bad flag byte")
	return 0
}

// array fills a with the next len(a) bytes.
func (d *cacheDecoder) array(a []byte) {
	if len(d.b)-d.p < len(a) {
		d.fail("truncated")
		return
	}
	d.p += copy(a, d.b[d.p:])
}

// strings reads the string table: the strings are substrings of one
// copy of their bytes.
func (d *cacheDecoder) strings() {
	n := d.count(1)
	start := d.p
	total := 0
	for range n {
		l := d.uvarint()
		if rem := len(d.b) - d.p - total; d.err != nil || rem < 0 || l > uint64(rem) {
			d.fail("strings longer than the bytes left")
			return
		}
		total += int(l)
	}
	if total > len(d.b)-d.p {
		d.fail("strings longer than the bytes left")
		return
	}
	blob := string(d.b[d.p : d.p+total])
	d.strs = make([]string, n)
	lens, off := d.b[start:d.p], 0
	for i := range d.strs {
		l, k := binary.Uvarint(lens)
		lens = lens[k:]
		d.strs[i] = blob[off : off+int(l)]
		off += int(l)
	}
	d.p += total
}

// str reads a string: an index into the table no larger than the number
// of strings met so far.
func (d *cacheDecoder) str() string {
	if i := d.uvarint(); i < uint64(d.next) {
		return d.strs[i]
	} else {
		return d.newStr(i)
	}
}

// newStr is str for an index not met before: the next one.
func (d *cacheDecoder) newStr(i uint64) string {
	if i != uint64(d.next) || d.next == len(d.strs) {
		d.fail("string index out of range or out of order")
		return ""
	}
	d.next++
	return d.strs[i]
}

func (d *cacheDecoder) section(t *treeSection) {
	t.Mode = d.int()
	t.Tree = d.str()
	if n := d.count(minIgnore); n > 0 {
		t.Ignore = make([]ignoreDep, n)
		for i := range t.Ignore {
			g := &t.Ignore[i]
			g.Name = d.str()
			g.Present = d.flags(1) != 0
			d.array(g.Sum[:])
		}
	}
	if n := d.count(minOutcome); n > 0 {
		t.Outcomes = make([]cachedOutcome, n)
		for i := range t.Outcomes {
			o := &t.Outcomes[i]
			o.Path = d.str()
			o.Dir = d.str()
			o.Found = d.str()
			o.How = d.str()
			o.Skip = d.str()
			o.Moved = d.str()
			o.Searched = d.int()
			fl := d.flags(7)
			o.Rooted, o.Missing, o.Truncated = fl&1 != 0, fl&2 != 0, fl&4 != 0
		}
	}
	if n := d.count(minEOF); n > 0 {
		t.EOF = make([]cachedEOF, n)
		for i := range t.EOF {
			x := &t.EOF[i]
			x.Path = d.str()
			x.Dir = d.str()
			x.Line = d.int()
			fl := d.flags(3)
			x.Rooted, x.Past = fl&1 != 0, fl&2 != 0
		}
	}
	t.HasMD = d.flags(1) != 0
	if n := d.count(1); n > 0 {
		t.MD = make([]string, n)
		for i := range t.MD {
			t.MD[i] = d.str()
		}
	}
}

func (d *cacheDecoder) history(h *cachedHistory) {
	if len(d.b)-d.p < minHistory {
		d.fail("truncated")
		return
	}
	h.Head = d.str()
	h.Depth = d.int()
	if n := d.count(minStep); n > 0 {
		h.Steps = make([][2][20]byte, n)
		for i := range h.Steps {
			d.array(h.Steps[i][0][:])
			d.array(h.Steps[i][1][:])
		}
	}
	if n := d.count(minDel); n > 0 {
		h.Dels = make([]cachedDeletion, n)
		for i := range h.Dels {
			h.Dels[i].Step = d.int()
			h.Dels[i].Path = d.str()
		}
	}
	if n := d.count(minRenames); n > 0 {
		h.Renames = make([]cachedRenames, n)
		for i := range h.Renames {
			rs := &h.Renames[i]
			rs.Step = d.int()
			if k := d.count(minPair); k > 0 {
				rs.Pairs = make([][2]string, k)
				for j := range rs.Pairs {
					rs.Pairs[j] = [2]string{d.str(), d.str()}
				}
			}
			if d.err != nil {
				return
			}
		}
	}
}
