package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
)

// Observation types and statuses (DESIGN.md §1).
const (
	Workflow   = "workflow"
	Procedural = "procedural"
	Decision   = "decision"
	Pitfall    = "pitfall"

	Observing  = "observing"
	Ready      = "ready"
	Created    = "created"
	Deprecated = "deprecated"
)

// Types lists the observation types in display order.
var Types = []string{Workflow, Procedural, Decision, Pitfall}

// Observation is one line of the learning log. Fields other tools add are
// kept in extra and written back unchanged.
type Observation struct {
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

	// keys is the key order of the line as read; extra the unknown fields.
	keys  []string
	extra map[string]json.RawMessage
}

// knownKeys are the JSON names of Observation's typed fields, in the order
// learnwatch writes them for a new observation.
var knownKeys = []string{"id", "type", "pattern", "confidence", "observations", "first_seen", "last_seen",
	"status", "evidence", "details", "quality_ok", "artifact_path", "deprecated_at", "needsReview",
	"mayBeStale", "staleReason", "softCapExceeded"}

var knownKeySet = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range knownKeys {
		m[k] = true
	}
	return m
}()

// Extra returns the raw value of a field learnwatch does not know.
func (o *Observation) Extra(key string) (json.RawMessage, bool) {
	v, ok := o.extra[key]
	return v, ok
}

// SetExtra sets a field learnwatch does not model (kept in key order).
func (o *Observation) SetExtra(key string, v json.RawMessage) {
	if knownKeySet[key] {
		return
	}
	if o.extra == nil {
		o.extra = map[string]json.RawMessage{}
	}
	if _, ok := o.extra[key]; !ok {
		o.keys = append(o.keys, key)
	}
	o.extra[key] = v
}

// Clone returns a deep copy.
func (o *Observation) Clone() *Observation {
	c := *o
	c.Evidence = append([]string(nil), o.Evidence...)
	c.keys = append([]string(nil), o.keys...)
	if o.extra != nil {
		c.extra = make(map[string]json.RawMessage, len(o.extra))
		for k, v := range o.extra {
			c.extra[k] = append(json.RawMessage(nil), v...)
		}
	}
	return &c
}

// Validate reports what makes an observation unusable (DESIGN.md §1), naming
// the field. A nil error means valid.
func (o *Observation) Validate() error {
	switch {
	case o.ID == "":
		return errors.New("field id: missing")
	case !strings.HasPrefix(o.ID, "obs_"):
		return fmt.Errorf("field id: %q does not start with obs_", o.ID)
	case o.Type == "":
		return errors.New("field type: missing")
	case !validType(o.Type):
		return fmt.Errorf("field type: unknown type %q (want workflow, procedural, decision or pitfall)", o.Type)
	case strings.TrimSpace(o.Pattern) == "":
		return errors.New("field pattern: missing")
	}
	return nil
}

func validType(t string) bool {
	for _, v := range Types {
		if t == v {
			return true
		}
	}
	return false
}

// UnmarshalJSON decodes the typed fields and keeps every other field raw.
func (o *Observation) UnmarshalJSON(data []byte) error {
	type plain Observation
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	keys, raw, err := objectKeys(data)
	if err != nil {
		return err
	}
	*o = Observation(p)
	o.keys = keys
	o.extra = nil
	for k, v := range raw {
		if !knownKeySet[k] {
			if o.extra == nil {
				o.extra = map[string]json.RawMessage{}
			}
			o.extra[k] = v
		}
	}
	return nil
}

// MarshalJSON writes the fields in the order they were read (new fields
// after them), unknown fields with their original raw values.
func (o Observation) MarshalJSON() ([]byte, error) {
	type plain Observation
	typed, err := json.Marshal(plain(o))
	if err != nil {
		return nil, err
	}
	_, tv, err := objectKeys(typed)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := map[string]bool{}
	n := 0
	write := func(k string, v json.RawMessage) {
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(v)
	}
	for _, k := range o.keys {
		if seen[k] {
			continue
		}
		seen[k] = true
		if v, ok := tv[k]; ok {
			write(k, v)
		} else if v, ok := o.extra[k]; ok {
			write(k, v)
		}
	}
	for _, k := range knownKeys {
		if !seen[k] {
			if v, ok := tv[k]; ok {
				seen[k] = true
				write(k, v)
			}
		}
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// objectKeys returns the keys of a JSON object in order and their raw values.
func objectKeys(data []byte) ([]string, map[string]json.RawMessage, error) {
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

// Line is one line of the log file.
type Line struct {
	Raw []byte       // the line as read, without its newline
	Obs *Observation // nil when the line is blank or does not parse
	Err error        // why the line does not parse (corrupt), or nil
	// Invalid is set when the line parses but fails Validate.
	Invalid error

	orig *Observation // the observation as read, to detect changes
}

// Log is the learning log: every line in file order.
type Log struct {
	Lines  []*Line
	Exists bool // the file was there when read
	// noFinalNewline records a last line without "\n" (kept as found).
	noFinalNewline bool
}

// MaxLineBytes is the longest log line accepted; longer lines are kept
// verbatim and counted as corrupt.
const MaxLineBytes = 16 << 20

// ParseLog splits data into lines and parses each one. It never fails: a line
// that does not parse is kept with Err set.
func ParseLog(data []byte) *Log {
	l := &Log{Exists: true}
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
		l.Lines = append(l.Lines, parseLine(raw))
	}
	return l
}

func parseLine(raw []byte) *Line {
	ln := &Line{Raw: raw}
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
	var o Observation
	if err := json.Unmarshal(body, &o); err != nil {
		ln.Err = err
		return ln
	}
	ln.Obs = &o
	ln.orig = o.Clone()
	ln.Invalid = o.Validate()
	return ln
}

// ReadLog reads the log at path. A missing file is an empty log with Exists
// false.
func ReadLog(path string) (*Log, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return ParseLog(data), nil
}

// Observations returns the valid observations in file order. The pointers
// are live: changes are written by Bytes.
func (l *Log) Observations() []*Observation {
	var out []*Observation
	for _, ln := range l.Lines {
		if ln.Obs != nil && ln.Invalid == nil {
			out = append(out, ln.Obs)
		}
	}
	return out
}

// Find returns the valid observation with id, or nil.
func (l *Log) Find(id string) *Observation {
	for _, ln := range l.Lines {
		if ln.Obs != nil && ln.Invalid == nil && ln.Obs.ID == id {
			return ln.Obs
		}
	}
	return nil
}

// Append adds a new observation at the end.
func (l *Log) Append(o *Observation) {
	l.Lines = append(l.Lines, &Line{Obs: o})
}

// Corrupt counts lines that do not parse.
func (l *Log) Corrupt() int {
	n := 0
	for _, ln := range l.Lines {
		if ln.Err != nil {
			n++
		}
	}
	return n
}

// InvalidCount counts lines that parse but fail validation.
func (l *Log) InvalidCount() int {
	n := 0
	for _, ln := range l.Lines {
		if ln.Obs != nil && ln.Invalid != nil {
			n++
		}
	}
	return n
}

// Changed reports whether Bytes would differ from what was read.
func (l *Log) Changed() bool {
	for _, ln := range l.Lines {
		if ln.Obs != nil && (ln.orig == nil || !sameObservation(ln.Obs, ln.orig)) {
			return true
		}
	}
	return false
}

func sameObservation(a, b *Observation) bool {
	return reflect.DeepEqual(a, b)
}

// Bytes renders the log: unchanged lines byte for byte, changed and new
// observations re-encoded with their unknown fields.
func (l *Log) Bytes() ([]byte, error) {
	var buf bytes.Buffer
	for i, ln := range l.Lines {
		if ln.Obs != nil && (ln.orig == nil || !sameObservation(ln.Obs, ln.orig)) {
			b, err := json.Marshal(ln.Obs)
			if err != nil {
				return nil, fmt.Errorf("encode observation %s: %w", ln.Obs.ID, err)
			}
			buf.Write(b)
		} else {
			buf.Write(ln.Raw)
		}
		if i < len(l.Lines)-1 || !l.noFinalNewline || ln.orig == nil && ln.Obs != nil {
			buf.WriteByte('\n')
		}
	}
	return buf.Bytes(), nil
}

// WriteLog atomically replaces path with the log's bytes. Afterwards the
// log counts as unchanged again.
func WriteLog(path string, l *Log) error {
	b, err := l.Bytes()
	if err != nil {
		return err
	}
	if err := WriteFile(path, b, 0o644); err != nil {
		return err
	}
	fresh := ParseLog(b)
	l.Lines, l.noFinalNewline, l.Exists = fresh.Lines, fresh.noFinalNewline, true
	return nil
}
