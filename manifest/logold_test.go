package manifest

// The learning log as it was before lines were read lazily: every line fully
// decoded, changes detected with reflect.DeepEqual, changed lines
// re-encoded through reflection. Kept verbatim (names prefixed "old") as
// the oracle of the differential tests and the "before" of the benchmarks.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// oldObservation is one line of the learning log. Fields other tools add are
// kept in extra and written back unchanged.
type oldObservation struct {
	ID              string   `json:"id"`
	Type            string   `json:"type"`
	Pattern         string   `json:"pattern"`
	Confidence      float64  `json:"confidence"`
	Observations    int      `json:"observations"`
	FirstSeen       string   `json:"first_seen"`
	LastSeen        string   `json:"last_seen"`
	Status          string   `json:"status"`
	Evidence        []string `json:"evidence"`
	Details         string   `json:"details"`
	QualityOK       bool     `json:"quality_ok"`
	ArtifactPath    string   `json:"artifact_path,omitempty"`
	DeprecatedAt    string   `json:"deprecated_at,omitempty"`
	NeedsReview     bool     `json:"needsReview,omitempty"`
	MayBeStale      bool     `json:"mayBeStale,omitempty"`
	StaleReason     string   `json:"staleReason,omitempty"`
	SoftCapExceeded bool     `json:"softCapExceeded,omitempty"`

	// raw is the JSON object as read (immutable): the source of the key
	// order and of the fields learnwatch does not know. set holds unknown
	// fields set since, in setOrder.
	raw      []byte
	set      map[string]json.RawMessage
	setOrder []string
	// invalid, when set, is what Validate reports (input that did not fit
	// the format, see InvalidObservation).
	invalid error
}

// Extra returns the raw value of a field learnwatch does not know.
func (o *oldObservation) Extra(key string) (json.RawMessage, bool) {
	if v, ok := o.set[key]; ok {
		return v, true
	}
	if knownKeySet[key] || o.raw == nil {
		return nil, false
	}
	_, vals, err := oldObjectKeys(o.raw)
	if err != nil {
		return nil, false
	}
	v, ok := vals[key]
	return v, ok
}

// SetExtra sets a field learnwatch does not model (kept in key order).
func (o *oldObservation) SetExtra(key string, v json.RawMessage) {
	if knownKeySet[key] {
		return
	}
	if o.set == nil {
		o.set = map[string]json.RawMessage{}
	}
	if _, ok := o.set[key]; !ok {
		o.setOrder = append(o.setOrder, key)
	}
	o.set[key] = append(json.RawMessage(nil), v...)
}

// Clone returns a deep copy.
func (o *oldObservation) Clone() *oldObservation {
	c := *o
	// Keep nil and empty apart ("evidence":null vs []): the clone taken at
	// parse time must DeepEqual the observation, or an untouched line
	// counts as changed and is re-encoded on every write.
	c.Evidence = nil
	if o.Evidence != nil {
		c.Evidence = append(make([]string, 0, len(o.Evidence)), o.Evidence...)
	}
	c.setOrder = append([]string(nil), o.setOrder...)
	if o.set != nil {
		c.set = make(map[string]json.RawMessage, len(o.set))
		for k, v := range o.set {
			c.set[k] = v
		}
	}
	return &c
}

// Validate reports what makes an observation unusable (DESIGN.md §1), naming
// the field. A nil error means valid.
func (o *oldObservation) Validate() error {
	// The wording is shared: this oracle checks the lazy log's machinery.
	return validate(o.invalid, o.ID, o.Type, strings.TrimSpace(o.Pattern) == "")
}

type oldPlainObservation oldObservation

// decode fills o from data, which it keeps (the caller must not modify it).
func (o *oldObservation) decode(data []byte) error {
	var p oldPlainObservation
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*o = oldObservation(p)
	o.raw = data
	return nil
}

// UnmarshalJSON decodes the typed fields and keeps the object for the
// fields learnwatch does not know.
func (o *oldObservation) UnmarshalJSON(data []byte) error {
	return o.decode(append([]byte(nil), data...))
}

// MarshalJSON writes the fields in the order they were read (new fields
// after them), unknown fields with their original raw values.
func (o oldObservation) MarshalJSON() ([]byte, error) {
	typed, err := json.Marshal(oldPlainObservation(o))
	if err != nil {
		return nil, err
	}
	_, tv, err := oldObjectKeys(typed)
	if err != nil {
		return nil, err
	}
	var keys []string
	var rawVals map[string]json.RawMessage
	if o.raw != nil {
		if keys, rawVals, err = oldObjectKeys(o.raw); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := map[string]bool{}
	write := func(k string, v json.RawMessage) {
		if len(seen) > 0 {
			buf.WriteByte(',')
		}
		seen[k] = true
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(v)
	}
	for _, k := range keys {
		if seen[k] {
			continue
		}
		if v, ok := tv[k]; ok {
			write(k, v)
		} else if v, ok := o.set[k]; ok {
			write(k, v)
		} else if !knownKeySet[k] {
			write(k, rawVals[k])
		}
	}
	for _, k := range knownKeys {
		if v, ok := tv[k]; ok && !seen[k] {
			write(k, v)
		}
	}
	for _, k := range o.setOrder {
		if !seen[k] {
			write(k, o.set[k])
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// oldObjectKeys returns the keys of a JSON object in order and their raw values.
func oldObjectKeys(data []byte) ([]string, map[string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	t, err := dec.Token()
	if err != nil {
		return nil, nil, err
	}
	if d, ok := t.(json.Delim); !ok || d != '{' {
		return nil, nil, errors.New("not a JSON object")
	}
	var keys []string
	vals := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, nil, err
		}
		k, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, nil, err
		}
		if _, dup := vals[k]; !dup {
			keys = append(keys, k)
		}
		vals[k] = v
	}
	return keys, vals, nil
}

// oldLine is one line of the log file.
type oldLine struct {
	Raw []byte          // the line as read, without its newline
	Obs *oldObservation // nil when the line is blank or does not parse
	Err error           // why the line does not parse (corrupt), or nil
	// Invalid is set when the line parses but fails Validate.
	Invalid error

	orig *oldObservation // the observation as read, to detect changes
}

// oldLog is the learning log: every line in file order.
type oldLog struct {
	Lines  []*oldLine
	Exists bool // the file was there when read
	// noFinalNewline records a last line without "\n" (kept as found).
	noFinalNewline bool
	// byID indexes Find over the first indexed lines.
	byID    map[string]*oldObservation
	indexed int
}

// oldParseLog splits data into lines and parses each one. It never fails: a line
// that does not parse is kept with Err set.
func oldParseLog(data []byte) *oldLog {
	l := &oldLog{Exists: true}
	if len(data) == 0 {
		return l
	}
	if data[len(data)-1] != '\n' {
		l.noFinalNewline = true
	}
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		var raw []byte
		if i < 0 {
			raw, data = data, nil
		} else {
			raw, data = data[:i], data[i+1:]
		}
		l.Lines = append(l.Lines, oldParseLineFn(raw))
	}
	return l
}

func oldParseLineFn(raw []byte) *oldLine {
	ln := &oldLine{Raw: raw}
	body := bytes.TrimSpace(raw)
	if len(body) == 0 {
		return ln
	}
	if len(body) > MaxLineBytes {
		ln.Err = fmt.Errorf("line longer than %d bytes", MaxLineBytes)
		return ln
	}
	if body[0] != '{' {
		ln.Err = errors.New("not a JSON object")
		return ln
	}
	var o oldObservation
	if err := o.decode(body); err != nil {
		ln.Err = err
		return ln
	}
	ln.Obs = &o
	ln.orig = o.Clone()
	ln.Invalid = o.Validate()
	return ln
}

// Observations returns the valid observations in file order. The pointers
// are live: changes are written by Bytes.
func (l *oldLog) Observations() []*oldObservation {
	var out []*oldObservation
	for _, ln := range l.Lines {
		if ln.Obs != nil && ln.Invalid == nil {
			out = append(out, ln.Obs)
		}
	}
	return out
}

// Find returns the first valid observation with id, or nil.
func (l *oldLog) Find(id string) *oldObservation {
	if l.byID == nil || l.indexed != len(l.Lines) {
		l.byID = make(map[string]*oldObservation, len(l.Lines))
		for _, ln := range l.Lines {
			if ln.Obs != nil && ln.Invalid == nil {
				if _, dup := l.byID[ln.Obs.ID]; !dup {
					l.byID[ln.Obs.ID] = ln.Obs
				}
			}
		}
		l.indexed = len(l.Lines)
	}
	return l.byID[id]
}

// Append adds a new observation at the end.
func (l *oldLog) Append(o *oldObservation) {
	l.Lines = append(l.Lines, &oldLine{Obs: o})
}

// Corrupt counts lines that do not parse.
func (l *oldLog) Corrupt() int {
	n := 0
	for _, ln := range l.Lines {
		if ln.Err != nil {
			n++
		}
	}
	return n
}

// InvalidCount counts lines that parse but fail validation.
func (l *oldLog) InvalidCount() int {
	n := 0
	for _, ln := range l.Lines {
		if ln.Obs != nil && ln.Invalid != nil {
			n++
		}
	}
	return n
}

// Changed reports whether Bytes would differ from what was read.
func (l *oldLog) Changed() bool {
	for _, ln := range l.Lines {
		if ln.Obs != nil && (ln.orig == nil || !oldSameObservation(ln.Obs, ln.orig)) {
			return true
		}
	}
	return false
}

func oldSameObservation(a, b *oldObservation) bool {
	return reflect.DeepEqual(a, b)
}

// Bytes renders the log: unchanged lines byte for byte, changed and new
// observations re-encoded with their unknown fields.
func (l *oldLog) Bytes() ([]byte, error) {
	b, _, err := l.encode()
	return b, err
}

// encode renders the log and returns, per line, the bytes of its
// re-encoded observation (nil for lines written verbatim).
func (l *oldLog) encode() ([]byte, [][]byte, error) {
	var buf bytes.Buffer
	fresh := make([][]byte, len(l.Lines))
	for i, ln := range l.Lines {
		if ln.Obs != nil && (ln.orig == nil || !oldSameObservation(ln.Obs, ln.orig)) {
			b, err := json.Marshal(ln.Obs)
			if err != nil {
				return nil, nil, fmt.Errorf("encode observation %s: %w", ln.Obs.ID, err)
			}
			fresh[i] = b
			buf.Write(b)
		} else {
			buf.Write(ln.Raw)
		}
		if i < len(l.Lines)-1 || !l.noFinalNewline || ln.orig == nil && ln.Obs != nil {
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes(), fresh, nil
}
