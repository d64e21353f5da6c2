package manifest

import (
	"encoding/json"
	"maps"
)

// Clones of the parsed files, for a pass that works on a copy and may be
// dropped (the watcher's prepared pass: heal.Prepare). A clone shares
// what no pass changes in place — a line's bytes as read (Raw, which a
// write replaces, never edits), its observation as decoded (orig), its
// marks (replaced whole by SetMarks), an entry's unknown fields, the
// encoded values of the usage file — and copies everything a pass edits.

// Clone returns a copy of l whose lines a pass may change without
// changing l's, and the function that maps an observation of l (a
// decoded line's) to the clone's.
func (l *Log) Clone() (*Log, func(*Observation) *Observation) {
	if l == nil {
		return nil, func(o *Observation) *Observation { return o }
	}
	c := *l
	slab := make([]Line, len(l.Lines))
	c.Lines = make([]*Line, len(l.Lines))
	var obs map[*Observation]*Observation
	for i, ln := range l.Lines {
		slab[i] = *ln
		if ln.obs != nil {
			slab[i].obs = ln.obs.Clone()
			if obs == nil {
				obs = map[*Observation]*Observation{}
			}
			obs[ln.obs] = slab[i].obs
		}
		c.Lines[i] = &slab[i]
	}
	// The index by id holds line numbers and is never changed in place:
	// shared as it is (it may predate a line's change of validity).
	return &c, func(o *Observation) *Observation {
		if n, ok := obs[o]; ok {
			return n
		}
		return o // not one of l's lines' (nil stays nil)
	}
}

// Clone returns a copy of m whose entries a pass may change. The encoding
// memo is shared: it checks every entry it reuses against the entry.
func (m *Manifest) Clone() *Manifest {
	if m == nil {
		return nil
	}
	c := *m
	c.Entries = make([]Entry, len(m.Entries))
	for i := range m.Entries {
		if m.Entries[i].Deleted == nil && m.Entries[i].extra == nil {
			c.Entries[i] = m.Entries[i]
		} else {
			c.Entries[i] = *cloneEntry(&m.Entries[i])
		}
	}
	c.extra = maps.Clone(m.extra)
	return &c
}

// Clone returns a copy of u whose entries a pass may change.
func (u *Usage) Clone() *Usage {
	if u == nil {
		return nil
	}
	c := *u
	if u.Entries != nil {
		c.Entries = make(map[string]map[string]json.RawMessage, len(u.Entries))
		for id, e := range u.Entries {
			c.Entries[id] = maps.Clone(e)
		}
	}
	c.extra = maps.Clone(u.extra)
	return &c
}
