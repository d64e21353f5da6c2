package manifest

import "hash/maphash"

// idIndex finds the first valid line of an id among a log's lines: an
// open-addressing table of line numbers (one plus the line's place, 0 for
// an empty slot), probed linearly from the id's hash, the ids compared on
// the lines themselves. At 100,000 observations it is 1 MB where a
// map[string]int of the same lines was 3–4.6 MB (the map holds its own
// copy of every key's header and its groups' control words), and it is
// built without hashing into a growing map.
//
// An index is built anew over the lines as they are, never changed in
// place: a clone of the log shares it. A line whose validity changes
// after the index was built is found as it was indexed, as with the map
// before it; ids do not change (an observation's id is what it is known
// by), and a line whose id did would be found by neither.
type idIndex struct {
	seed  maphash.Seed
	slots []int32
	mask  uint64
}

// newIDIndex indexes the first valid line of each id in lines.
func newIDIndex(lines []*Line) *idIndex {
	size := 16
	for size < len(lines)*3/2 {
		size *= 2
	}
	x := &idIndex{seed: maphash.MakeSeed(), slots: make([]int32, size), mask: uint64(size - 1)}
	for i, ln := range lines {
		if !ln.valid() {
			continue
		}
		id := ln.ID()
		for h := maphash.String(x.seed, id) & x.mask; ; h = (h + 1) & x.mask {
			s := x.slots[h]
			if s == 0 {
				x.slots[h] = int32(i + 1)
				break
			}
			if lines[s-1].ID() == id {
				break // first valid id wins
			}
		}
	}
	return x
}

// find returns the place in lines of id's first valid line, or -1. lines
// are the lines the index was built over, in the same places.
func (x *idIndex) find(lines []*Line, id string) int {
	for h := maphash.String(x.seed, id) & x.mask; ; h = (h + 1) & x.mask {
		s := x.slots[h]
		if s == 0 {
			return -1
		}
		if lines[s-1].ID() == id {
			return int(s - 1)
		}
	}
}
