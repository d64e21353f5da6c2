package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// object is a JSON object with its key order.
type object struct {
	keys []string
	vals map[string]json.RawMessage
}

func (o object) has(k string) bool { _, ok := o.vals[k]; return ok }

// objectKeyOrder returns the keys of the JSON object data in order.
func objectKeyOrder(data []byte) ([]string, error) {
	o, err := parseObject(data)
	return o.keys, err
}

// parseObject reads a JSON object keeping its key order; a later duplicate
// key wins, as in encoding/json.
func parseObject(data []byte) (object, error) {
	o := object{vals: map[string]json.RawMessage{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return o, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return o, errors.New("not a JSON object")
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return o, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return o, err
		}
		if !o.has(k) {
			o.keys = append(o.keys, k)
		}
		o.vals[k] = v
	}
	if _, err := dec.Token(); err != nil {
		return o, err
	}
	if dec.More() {
		return o, errors.New("data after the JSON object")
	}
	return o, nil
}

func (o object) encode() []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		b.Write(o.vals[k])
	}
	b.WriteByte('}')
	return b.Bytes()
}

// compact returns v without insignificant whitespace (v itself when it is
// not valid JSON), so that two encodings of one value compare equal.
func compact(v []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return v
	}
	return b.Bytes()
}

func same(x, y json.RawMessage) bool { return bytes.Equal(compact(x), compact(y)) }

// resolver decides a key both sides changed differently; o is nil when the
// base lacks the key.
type resolver func(key string, o, a, b json.RawMessage) json.RawMessage

// mergeObjects merges three versions of a JSON object key by key: a key one
// side changed takes that side's value, a key one side removed (and the
// other left as in base) is removed, a key both changed differently is
// decided by resolve. Keys come in ours' order, then theirs' new keys.
func mergeObjects(o, a, b object, resolve resolver) object {
	out := object{vals: map[string]json.RawMessage{}}
	put := func(k string, v json.RawMessage) {
		if !out.has(k) {
			out.keys = append(out.keys, k)
		}
		out.vals[k] = v
	}
	for _, k := range a.keys {
		va, vb, vo := a.vals[k], b.vals[k], o.vals[k]
		switch {
		case !b.has(k):
			if o.has(k) && same(va, vo) {
				continue // theirs removed it
			}
			put(k, va)
		case same(va, vb):
			put(k, va)
		case o.has(k) && same(va, vo):
			put(k, vb)
		case o.has(k) && same(vb, vo):
			put(k, va)
		default:
			var base json.RawMessage
			if o.has(k) {
				base = vo
			}
			put(k, resolve(k, base, va, vb))
		}
	}
	for _, k := range b.keys {
		if a.has(k) {
			continue
		}
		if o.has(k) && same(b.vals[k], o.vals[k]) {
			continue // ours removed it
		}
		put(k, b.vals[k])
	}
	return out
}

// oursWins is the default resolver: ours' value.
func oursWins(_ string, _, a, _ json.RawMessage) json.RawMessage { return a }

// entryResolver merges one manifest or usage entry: numbers counted on both
// sides (cites) add up three-way, times take the latest (renderedAt,
// last_cited) or the earliest (created), objects merge key by key, anything
// else keeps ours.
func entryResolver(key string, o, a, b json.RawMessage) json.RawMessage {
	switch key {
	case "cites":
		var no, na, nb int64
		_ = json.Unmarshal(o, &no)
		if json.Unmarshal(a, &na) == nil && json.Unmarshal(b, &nb) == nil {
			return json.RawMessage(strconv.FormatInt(max(na+nb-no, 0), 10))
		}
	case "renderedAt", "last_cited", "created":
		var sa, sb string
		if json.Unmarshal(a, &sa) == nil && json.Unmarshal(b, &sb) == nil {
			if pickTime(sa, sb, key != "created") == sb {
				return b
			}
			return a
		}
		if string(compact(a)) == "null" {
			return b
		}
	}
	oa, errA := parseObject(a)
	ob, errB := parseObject(b)
	if errA == nil && errB == nil {
		oo, _ := parseObject(o)
		return mergeObjects(oo, oa, ob, entryResolver).encode()
	}
	return a
}

// Manifest merges three versions of .learning-manifest.json: the entries
// are a union by observationId with the three-way rule per entry and per
// field (renderedAt the latest, ours winning other fields both changed);
// top-level fields merge the same way. A side that does not parse makes the
// result both sides' lines and a conflict (never conflict markers).
func Manifest(base, ours, theirs []byte) ([]byte, Report) {
	return mergeJSON(base, ours, theirs, "entries", manifestEntries)
}

// Usage merges three versions of .knowledge-usage.json: entries by
// knowledge id, cites added up three-way (ours + theirs − base),
// last_cited the latest, created the earliest.
func Usage(base, ours, theirs []byte) ([]byte, Report) {
	return mergeJSON(base, ours, theirs, "entries", func(o, a, b json.RawMessage) (json.RawMessage, error) {
		oo, _ := parseObject(o)
		oa, err := parseObject(a)
		if err != nil {
			return nil, fmt.Errorf("ours: field entries: %v", err)
		}
		ob, err := parseObject(b)
		if err != nil {
			return nil, fmt.Errorf("theirs: field entries: %v", err)
		}
		return mergeObjects(oo, oa, ob, entryResolver).encode(), nil
	})
}

// mergeJSON merges a JSON object file whose field collection is merged by
// mergeColl; other top-level fields three-way, ours winning.
func mergeJSON(base, ours, theirs []byte, collection string, mergeColl func(o, a, b json.RawMessage) (json.RawMessage, error)) ([]byte, Report) {
	var rep Report
	a, errA := parseFile(ours)
	b, errB := parseFile(theirs)
	if errA != nil || errB != nil {
		return fallback(ours, theirs, errA, errB, &rep), rep
	}
	o, err := parseFile(base)
	if err != nil {
		o = object{vals: map[string]json.RawMessage{}} // an unparsable base: merge as if both added
		rep.note("the common ancestor does not parse (%v); merged as if both sides added everything", err)
	}
	out := mergeObjects(o, a, b, oursWins)
	if a.has(collection) && b.has(collection) {
		coll, err := mergeColl(o.vals[collection], a.vals[collection], b.vals[collection])
		if err != nil {
			return fallback(ours, theirs, err, nil, &rep), rep
		}
		out.vals[collection] = coll
	}
	if v, ok := out.vals["schemaVersion"]; ok && b.has("schemaVersion") {
		var na, nb int
		if json.Unmarshal(a.vals["schemaVersion"], &na) == nil && json.Unmarshal(b.vals["schemaVersion"], &nb) == nil && nb > na {
			v = b.vals["schemaVersion"]
		}
		out.vals["schemaVersion"] = v
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, out.encode(), "", "  "); err != nil {
		return fallback(ours, theirs, err, nil, &rep), rep
	}
	buf.WriteByte('\n')
	return buf.Bytes(), rep
}

// parseFile parses a whole JSON file; an empty (or missing) file is an
// empty object.
func parseFile(data []byte) (object, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return object{vals: map[string]json.RawMessage{}}, nil
	}
	return parseObject(data)
}

// fallback keeps ours' lines, then theirs' lines ours lacks, and reports a
// conflict: a person (or `learnwatch reconcile`, which sets a corrupt file
// aside and rebuilds it) decides.
func fallback(ours, theirs []byte, errA, errB error, rep *Report) []byte {
	rep.Conflict = true
	if errA != nil {
		rep.note("ours does not parse (%v)", errA)
	}
	if errB != nil {
		rep.note("theirs does not parse (%v)", errB)
	}
	rep.note("kept both sides' lines (no conflict markers)")
	var out bytes.Buffer
	out.Write(ours)
	if len(ours) > 0 && ours[len(ours)-1] != '\n' {
		out.WriteByte('\n')
	}
	have := map[string]bool{}
	for _, l := range bytes.Split(ours, []byte("\n")) {
		have[string(l)] = true
	}
	for _, l := range bytes.Split(theirs, []byte("\n")) {
		if len(bytes.TrimSpace(l)) == 0 || have[string(l)] {
			continue
		}
		have[string(l)] = true
		out.Write(l)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// manifestEntries merges the entries arrays by observationId.
func manifestEntries(o, a, b json.RawMessage) (json.RawMessage, error) {
	ko, _ := keyedEntries(o)
	ka, err := keyedEntries(a)
	if err != nil {
		return nil, fmt.Errorf("ours: field entries: %v", err)
	}
	kb, err := keyedEntries(b)
	if err != nil {
		return nil, fmt.Errorf("theirs: field entries: %v", err)
	}
	m := mergeObjects(ko, ka, kb, entryResolver)
	var buf bytes.Buffer
	buf.WriteByte('[')
	for i, k := range m.keys {
		if i > 0 {
			buf.WriteByte(',')
		}
		buf.Write(m.vals[k])
	}
	buf.WriteByte(']')
	return buf.Bytes(), nil
}

// keyedEntries turns a manifest entries array into an object keyed by
// observationId (an element without one is keyed by its content, so it is
// kept unless a side removed it).
func keyedEntries(data json.RawMessage) (object, error) {
	out := object{vals: map[string]json.RawMessage{}}
	if len(bytes.TrimSpace(data)) == 0 || string(compact(data)) == "null" {
		return out, nil
	}
	var arr []json.RawMessage
	if err := json.Unmarshal(data, &arr); err != nil {
		return out, err
	}
	for _, e := range arr {
		key := "raw:" + string(compact(e))
		var id struct {
			ObservationID string `json:"observationId"`
		}
		if json.Unmarshal(e, &id) == nil && id.ObservationID != "" {
			key = "id:" + id.ObservationID
		}
		if out.has(key) {
			key = fmt.Sprintf("%s#%d", key, len(out.keys))
		}
		out.keys = append(out.keys, key)
		out.vals[key] = e
	}
	return out, nil
}
