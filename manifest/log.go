package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"

	"github.com/learnwatch/learnwatch/parallel"
	"github.com/learnwatch/learnwatch/textsafe"
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

// Statuses lists the observation statuses in lifecycle order.
var Statuses = []string{Observing, Ready, Created, Deprecated}

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

// InvalidObservation is a placeholder for an input object that did not fit
// the format (a field of the wrong type): Validate reports err.
func InvalidObservation(id string, err error) *Observation {
	return &Observation{ID: id, invalid: err}
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
	if v, ok := o.set[key]; ok {
		return v, len(v) > 0
	}
	if knownKeySet[key] || o.raw == nil {
		return nil, false
	}
	var buf [24]member
	if ms, ok := members(buf[:0], o.raw); ok {
		var v json.RawMessage
		found := false
		for _, m := range ms {
			if string(m.key) == key {
				v, found = m.val, true // the last of repeated keys, as encoding/json
			}
		}
		return v, found
	}
	_, vals, err := objectKeys(o.raw)
	if err != nil {
		return nil, false
	}
	v, ok := vals[key]
	return v, ok
}

// SetExtra sets a field learnwatch does not model (kept in key order).
func (o *Observation) SetExtra(key string, v json.RawMessage) {
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

// DeleteExtra removes a field learnwatch does not model (recorded as an
// empty value in set, which MarshalJSON leaves out).
func (o *Observation) DeleteExtra(key string) {
	if knownKeySet[key] {
		return
	}
	if _, ok := o.Extra(key); !ok {
		return
	}
	o.SetExtra(key, nil)
	o.set[key] = json.RawMessage{}
}

// Clone returns a deep copy.
func (o *Observation) Clone() *Observation {
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
func (o *Observation) Validate() error {
	return validate(o.invalid, o.ID, o.Type, strings.TrimSpace(o.Pattern) == "")
}

// validate names every problem of an observation, not only the first, so
// a person fixes the input in one go: "field id: missing; field pattern:
// missing". Fields of the wrong JSON type (invalid) are listed by the
// decoder already.
func validate(invalid error, id, typ string, blankPattern bool) error {
	if invalid != nil {
		return invalid
	}
	var probs []string
	switch {
	case id == "":
		probs = append(probs, "field id: missing")
	case !strings.HasPrefix(id, IDPrefix):
		probs = append(probs, fmt.Sprintf("field id: %s does not start with obs_", textsafe.Quote(id, 80)))
	case !ValidID(id):
		probs = append(probs, fmt.Sprintf("field id: %s is not a safe id (obs_ then up to %d letters, digits, '_', '.' or '-')", textsafe.Quote(id, 80), MaxIDLen-len(IDPrefix)))
	}
	switch {
	case typ == "":
		probs = append(probs, "field type: missing")
	case !validType(typ):
		probs = append(probs, fmt.Sprintf("field type: unknown type %s (want workflow, procedural, decision or pitfall)", textsafe.Quote(typ, 40)))
	}
	if blankPattern {
		probs = append(probs, "field pattern: missing")
	}
	if len(probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(probs, "; "))
}

func validType(t string) bool {
	for _, v := range Types {
		if t == v {
			return true
		}
	}
	return false
}

type plainObservation Observation

// decode fills o from data, which it keeps (the caller must not modify it).
func (o *Observation) decode(data []byte) error {
	var p plainObservation
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	*o = Observation(p)
	o.raw = data
	return nil
}

// UnmarshalJSON decodes the typed fields and keeps the object for the
// fields learnwatch does not know.
func (o *Observation) UnmarshalJSON(data []byte) error {
	return o.decode(append([]byte(nil), data...))
}

// MarshalJSON writes the fields in the order they were read (new fields
// after them), unknown fields with their original raw values.
func (o Observation) MarshalJSON() ([]byte, error) {
	if b, ok := o.appendJSON(nil); ok {
		return b, nil
	}
	return o.marshalSlow()
}

// marshalSlow is MarshalJSON through encoding/json's reflection, for what
// appendJSON does not vouch for (it reports the same errors).
func (o Observation) marshalSlow() ([]byte, error) {
	typed, err := json.Marshal(plainObservation(o))
	if err != nil {
		return nil, err
	}
	_, tv, err := objectKeys(typed)
	if err != nil {
		return nil, err
	}
	var keys []string
	var rawVals map[string]json.RawMessage
	if o.raw != nil {
		if keys, rawVals, err = objectKeys(o.raw); err != nil {
			return nil, err
		}
	}
	var buf bytes.Buffer
	buf.WriteByte('{')
	seen := map[string]bool{}
	write := func(k string, v json.RawMessage) {
		if buf.Len() > 1 {
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
			if len(v) == 0 {
				seen[k] = true // deleted (DeleteExtra)
				continue
			}
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
		if !seen[k] && len(o.set[k]) > 0 {
			write(k, o.set[k])
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

// Line is one line of the log file. Reading a log scans each line for the
// fields passes select by (id, type, status, artifact path) and decides,
// exactly, whether it parses (Err) and is valid (Invalid); the observation
// itself is decoded only when asked for (Observation, Find, Observations).
type Line struct {
	// The line as read (or as last written), without its newline, is
	// bytes at to at+n of ck (Raw): the whole log's one chunk, a chunk of
	// a chunked log, or the line's own bytes; ck is nil for an appended
	// line. A line is kept small: a 100,000 observations' log has as
	// many (it was 216 bytes a line with the bytes, errors and type and
	// status held in it, 21 MB at 100k).
	ck    *logChunk
	at, n int32
	// fault is why the line does not parse (Err) or is not valid
	// (Invalid); nil for most lines.
	fault *lineFault

	obs *Observation // decoded (or appended); nil until asked for
	// orig is obs as decoded, to detect changes; nil for an appended
	// observation and for one decodeScanned read from Raw (scanned), which
	// is compared with Raw itself instead of a copy held per line.
	orig *Observation
	idx  indexFields // from the scan, while obs is nil
	// marks are staleness marks set while obs is nil (SetMarks), which
	// the write patches into Raw; nil when none differ from Raw's.
	marks *Marks
	// written are the marks the file holds for this line when a write
	// patched them into Raw's bytes and kept Raw (nil: the file holds
	// Raw): a first pass marks every line, and keeping each patched line
	// as well as the log as read was a third of a 100,000 observations'
	// peak heap. The bytes are patched again at each write; a decode, or
	// Settle, makes them Raw (materialize).
	written *Marks
	parsed  bool // the line holds an object that parses
	scanned bool
}

// lineFault is what is wrong with a line: the rare part of a Line.
type lineFault struct {
	err     error // why the line does not parse (corrupt)
	invalid error // why it parses but fails Validate
}

// Err returns why the line does not parse (it is corrupt), or nil.
func (ln *Line) Err() error {
	if ln.fault == nil {
		return nil
	}
	return ln.fault.err
}

// Invalid returns why the line parses but fails Validate, or nil.
func (ln *Line) Invalid() error {
	if ln.fault == nil {
		return nil
	}
	return ln.fault.invalid
}

// setFault sets what Err and Invalid return.
func (ln *Line) setFault(err, invalid error) {
	if err == nil && invalid == nil {
		ln.fault = nil
		return
	}
	ln.fault = &lineFault{err: err, invalid: invalid}
}

// setErr sets Err, leaving Invalid as it is.
func (ln *Line) setErr(err error) { ln.setFault(err, ln.Invalid()) }

// setInvalid sets Invalid, leaving Err as it is.
func (ln *Line) setInvalid(invalid error) { ln.setFault(ln.Err(), invalid) }

// Raw returns the line as read (or as last written), without its
// newline. The bytes must not be changed.
func (ln *Line) Raw() []byte {
	if ln.ck == nil {
		return nil
	}
	b := ln.ck.bytes()
	return b[ln.at : ln.at+ln.n : ln.at+ln.n]
}

// rawLen is len(ln.Raw()) without reading a chunked line back.
func (ln *Line) rawLen() int { return int(ln.n) }

// setRaw makes b the line's bytes, its own.
func (ln *Line) setRaw(b []byte) {
	if b == nil {
		ln.ck, ln.at, ln.n = nil, 0, 0
		return
	}
	ln.ck, ln.at, ln.n = heldChunk(b), 0, int32(len(b))
}

// chunked reports whether the line's bytes are read back from a chunked
// log's file (ReadLogChunked) rather than held.
func (ln *Line) chunked() bool { return ln.ck != nil && ln.ck.src != nil }

// own gives a line of a chunked log bytes of its own, before something
// that keeps them (a decoded observation) takes them: it must not hold
// the chunk.
func (ln *Line) own() {
	if ln.chunked() {
		ln.setRaw(bytes.Clone(ln.Raw()))
	}
}

// Observation returns the line's observation, decoding it on first use
// (the pointer is live: changes are written by Bytes), or nil when the line
// is blank or corrupt. Invalid lines have one too.
func (ln *Line) Observation() *Observation {
	if ln.obs == nil && ln.parsed {
		ln.materialize()
		ln.own()
		var o Observation
		body := bytes.TrimSpace(ln.Raw())
		if o.decodeScanned(body) {
			ln.obs, ln.scanned = &o, true
			ln.takeMarks(ln.obs)
			return ln.obs
		}
		if err := o.decode(body); err != nil {
			// The scan vouched for this line; keep it as read.
			ln.parsed, ln.marks = false, nil
			ln.setErr(err)
			return nil
		}
		ln.obs = &o
		ln.orig = o.Clone()
		ln.takeMarks(ln.obs)
	}
	return ln.obs
}

// DecodeLines decodes the observations of lines (Observation), on every
// core when there are many. The lines must be distinct, and nothing else
// may use them meanwhile.
func DecodeLines(lines []*Line) {
	parallel.Ranges(len(lines), parallel.Workers(len(lines), encodeShare), func(lo, hi int) {
		for _, ln := range lines[lo:hi] {
			ln.Observation()
		}
	})
}

// Parsed reports whether the line holds an observation (valid or not).
func (ln *Line) Parsed() bool { return ln.parsed }

// Decoded reports whether the line's observation has been decoded (or was
// appended).
func (ln *Line) Decoded() bool { return ln.obs != nil }

// ID returns the line's observation id ("" for a blank or corrupt line)
// without decoding it.
func (ln *Line) ID() string {
	if ln.obs != nil {
		return ln.obs.ID
	}
	return ln.idx.id
}

// Type returns the line's observation type without decoding it.
func (ln *Line) Type() string {
	if ln.obs != nil {
		return ln.obs.Type
	}
	return ln.idx.kindString(0)
}

// Status returns the line's observation status without decoding it.
func (ln *Line) Status() string {
	if ln.obs != nil {
		return ln.obs.Status
	}
	return ln.idx.kindString(1)
}

// MayBeStale returns the line's mayBeStale mark without decoding it.
func (ln *Line) MayBeStale() bool {
	if ln.obs != nil {
		return ln.obs.MayBeStale
	}
	if ln.marks != nil {
		return ln.marks.MayBeStale
	}
	return ln.idx.mayBeStale
}

// NeedsReview returns the line's needsReview mark without decoding it.
func (ln *Line) NeedsReview() bool {
	if ln.obs != nil {
		return ln.obs.NeedsReview
	}
	if ln.marks != nil {
		return ln.marks.NeedsReview
	}
	return ln.idx.needsReview
}

// StaleReason returns the line's staleReason without decoding it.
func (ln *Line) StaleReason() string {
	if ln.obs != nil {
		return ln.obs.StaleReason
	}
	if ln.marks != nil {
		return ln.marks.StaleReason
	}
	return ln.idx.staleReason
}

// RawTexts returns the JSON values of the line's details and evidence as
// written (nil for an absent member), so that a reader that only hashes
// the texts need not decode the line: the values decide the texts
// (DecodeTexts). ok is false when the line does not parse, was not read
// by the scan (appended, decoded by the full decoder, or rewritten), or
// its observation's texts changed in memory since.
func (ln *Line) RawTexts() (details, evidence []byte, ok bool) {
	if !ln.parsed || ln.obs != nil && !ln.scanned {
		return nil, nil, false
	}
	body := bytes.TrimSpace(ln.Raw())
	details, evidence = ln.idx.details.of(body), ln.idx.evidence.of(body)
	if ln.obs != nil {
		d, e, err := DecodeTexts(details, evidence)
		if err != nil || d != ln.obs.Details || len(e) != len(ln.obs.Evidence) {
			return nil, nil, false
		}
		for i := range e {
			if e[i] != ln.obs.Evidence[i] {
				return nil, nil, false
			}
		}
	}
	return details, evidence, true
}

// DecodeTexts decodes the values RawTexts returns into the details and
// evidence decoding the line gives.
func DecodeTexts(details, evidence []byte) (string, []string, error) {
	var d string
	if len(details) > 0 && details[0] == '"' {
		d = jsonString(details)
	}
	var e []string
	switch {
	case evidence == nil:
	case stringArray(evidence):
		// What the scan vouched for: an array of strings, decoded without
		// reflection (a cold staleness pass decodes every line's).
		var ok bool
		if e, ok = stringList(evidence); !ok {
			return "", nil, errors.New("evidence: not an array of strings")
		}
	default:
		if err := json.Unmarshal(evidence, &e); err != nil {
			return "", nil, err
		}
	}
	return d, e, nil
}

// ArtifactPath returns the line's artifact path without decoding it.
func (ln *Line) ArtifactPath() string {
	if ln.obs != nil {
		return ln.obs.ArtifactPath
	}
	return ln.idx.artifact
}

func (ln *Line) valid() bool { return ln.parsed && ln.Invalid() == nil }

// Log is the learning log: every line in file order. Lines are decoded on
// first use, so even reading methods (Find, Observations) modify the Log:
// it is not safe for concurrent use.
type Log struct {
	Lines  []*Line
	Exists bool // the file was there when read
	// src is the file a chunked log's lines are read back from
	// (ReadLogChunked), nil when the log is held whole.
	src *logSource
	// noFinalNewline records a last line without "\n" (kept as found).
	noFinalNewline bool
	// byID indexes Find over the first indexed lines: the index of each
	// id's first valid line. Built anew, never changed in place, so that a
	// clone shares it.
	byID    *idIndex
	indexed int
}

// MaxLineBytes is the longest log line accepted; longer lines are kept
// verbatim and counted as corrupt.
const MaxLineBytes = 16 << 20

// ParseLog splits data into lines and scans each one. It never fails: a
// line that does not parse is kept with Err set. data must not be modified
// afterwards (lines keep slices of it).
func ParseLog(data []byte) *Log {
	l := &Log{Exists: true}
	if len(data) == 0 {
		return l
	}
	if data[len(data)-1] != '\n' {
		l.noFinalNewline = true
	}
	size := len(data)
	l.Lines = make([]*Line, 0, bytes.Count(data, []byte{'\n'})+1)
	// The lines are stretches of held chunks of data: one, unless data
	// is longer than a line's 32-bit offset reaches.
	for rest := data; len(rest) > 0; {
		held := rest
		if len(held) > math.MaxInt32 {
			if i := bytes.LastIndexByte(held[:math.MaxInt32], '\n'); i >= 0 {
				held = held[:i+1]
			}
		}
		l.addLines(heldChunk(held), held)
		rest = rest[len(held):]
	}
	parseLines(l.Lines, parallel.Workers(size, parseShare))
	return l
}

// addLines appends the lines of b, the bytes of chunk c, whole lines but
// for a last one without its newline: each line a stretch of c, all in
// one allocation.
func (l *Log) addLines(c *logChunk, b []byte) {
	n := bytes.Count(b, []byte{'\n'})
	if b[len(b)-1] != '\n' {
		n++
	}
	slab := make([]Line, n)
	at := 0
	for i := range slab {
		end := len(b)
		if j := bytes.IndexByte(b[at:], '\n'); j >= 0 {
			end = at + j
		}
		slab[i] = Line{ck: c, at: int32(at), n: int32(end - at)}
		l.Lines = append(l.Lines, &slab[i])
		at = end + 1
	}
}

// parseShare is how many bytes of log make another goroutine worth
// starting to scan them: lines are independent, and at 10,000
// observations the scan was a sixth of a first reconcile.
const parseShare = 256 << 10

// parseLines scans every line (parseLine of its Raw), in contiguous runs
// on up to workers goroutines. What each line gets does not depend on
// the others or on the order.
func parseLines(lines []*Line, workers int) {
	parallel.Ranges(len(lines), workers, func(lo, hi int) {
		var sc scanScratch
		for _, ln := range lines[lo:hi] {
			parseLine(ln, ln.Raw(), &sc)
		}
	})
}

// parseLine scans raw, the line's bytes (Raw), into ln. sc may be nil.
func parseLine(ln *Line, raw []byte, sc *scanScratch) {
	body := bytes.TrimSpace(raw)
	if len(body) == 0 {
		return
	}
	if len(body) > MaxLineBytes {
		ln.setErr(fmt.Errorf("line longer than %d bytes", MaxLineBytes))
		return
	}
	if body[0] != '{' {
		ln.setErr(errors.New("not a JSON object"))
		return
	}
	f, ok := scanFields(body, sc)
	if ok {
		ln.parsed, ln.idx = true, f
		ln.setInvalid(validate(nil, f.id, f.kindString(0), f.blankPattern))
		return
	}
	// What the scan cannot vouch for goes through the full decoder, which
	// says exactly why a line does not parse. The observation keeps its
	// bytes: a chunk's line gets its own first.
	if ln.chunked() {
		ln.own()
		body = bytes.TrimSpace(ln.Raw())
	}
	var o Observation
	if err := o.decode(body); err != nil {
		ln.setErr(err)
		return
	}
	ln.parsed, ln.obs = true, &o
	ln.orig = o.Clone()
	ln.setInvalid(o.Validate())
}

// ReadLog reads the log at path. A missing file is an empty log with Exists
// false.
func ReadLog(path string) (*Log, error) {
	return readLogChunked(path, math.MaxInt64, 0, 0) // whole, whatever its size
}

// Observations returns the valid observations in file order, decoding
// every one of them. The pointers are live: changes are written by Bytes.
// A pass that needs only some lines uses Find, Select, ByStatus,
// ByArtifact or Counts instead.
func (l *Log) Observations() []*Observation {
	return l.Select(nil)
}

// LogEntry is what the scan knows of a valid line without decoding it.
type LogEntry struct {
	Line         int // index in Lines
	ID           string
	Type         string
	Status       string
	ArtifactPath string
}

// LogEntries returns the valid lines' index fields in file order without
// decoding any observation.
func (l *Log) LogEntries() []LogEntry {
	out := make([]LogEntry, 0, len(l.Lines))
	for i, ln := range l.Lines {
		if ln.valid() {
			out = append(out, LogEntry{Line: i, ID: ln.ID(), Type: ln.Type(), Status: ln.Status(), ArtifactPath: ln.ArtifactPath()})
		}
	}
	return out
}

// Select returns, in file order, the valid observations whose entry keep
// accepts (every one when keep is nil), decoding only those.
func (l *Log) Select(keep func(LogEntry) bool) []*Observation {
	var out []*Observation
	for i, ln := range l.Lines {
		if !ln.valid() {
			continue
		}
		if keep != nil && !keep(LogEntry{Line: i, ID: ln.ID(), Type: ln.Type(), Status: ln.Status(), ArtifactPath: ln.ArtifactPath()}) {
			continue
		}
		if o := ln.Observation(); o != nil {
			out = append(out, o)
		}
	}
	return out
}

// ByStatus returns the valid observations with status, decoding only those.
func (l *Log) ByStatus(status string) []*Observation {
	var out []*Observation
	for _, ln := range l.Lines {
		if ln.valid() && ln.Status() == status {
			if o := ln.Observation(); o != nil {
				out = append(out, o)
			}
		}
	}
	return out
}

// ByArtifact returns the first valid observation whose artifact_path is
// path, or nil, decoding only that one.
func (l *Log) ByArtifact(path string) *Observation {
	if path == "" {
		return nil
	}
	for _, ln := range l.Lines {
		if ln.valid() && ln.ArtifactPath() == path {
			return ln.Observation()
		}
	}
	return nil
}

// Counts tallies the valid observations by type and by status without
// decoding them.
func (l *Log) Counts() (byType, byStatus map[string]int) {
	byType, byStatus = map[string]int{}, map[string]int{}
	for _, ln := range l.Lines {
		if ln.valid() {
			byType[ln.Type()]++
			byStatus[ln.Status()]++
		}
	}
	return byType, byStatus
}

// Has reports whether a valid observation has id, without decoding it.
func (l *Log) Has(id string) bool {
	return l.findLine(id) != nil
}

// Find returns the first valid observation with id, or nil. Only that
// line is decoded.
func (l *Log) Find(id string) *Observation {
	if ln := l.findLine(id); ln != nil {
		return ln.Observation()
	}
	return nil
}

// Confidences returns the confidence of each id's observation, as Find
// answers it (the first valid line with the id; an id whose line does not
// decode has none), read from each line's bytes: nothing is decoded or
// kept. The log facts take it of every line: decoding them all held every
// observation of a 100,000 observations' log (211 MiB resident).
func (l *Log) Confidences() map[string]float64 {
	out := make(map[string]float64, len(l.Lines))
	var none map[string]bool // ids whose first valid line does not decode
	for _, ln := range l.Lines {
		if !ln.valid() {
			continue
		}
		id := ln.ID()
		if _, dup := out[id]; dup || none[id] {
			continue
		}
		if c, ok := ln.confidence(); ok {
			out[id] = c
		} else {
			if none == nil {
				none = map[string]bool{}
			}
			none[id] = true
		}
	}
	return out
}

// confidence is Observation().Confidence without decoding the line or
// keeping what it reads; ok is false when the line holds no observation
// (Observation returns nil).
func (ln *Line) confidence() (float64, bool) {
	if ln.obs != nil {
		return ln.obs.Confidence, true
	}
	if !ln.parsed {
		return 0, false // no observation (Observation returns nil)
	}
	body := bytes.TrimSpace(ln.Raw())
	// A line not decoded yet is one the scan vouched for (scanFields: its
	// keys exact and once each, its confidence a number): the member
	// decodeScanned reads.
	var buf [24]member
	if ms, ok := members(buf[:0], body); ok {
		c := 0.0
		for _, m := range ms {
			if knownIndex(m.key) != kConfidence || m.val[0] == 'n' {
				continue
			}
			f, err := strconv.ParseFloat(string(m.val), 64)
			if err != nil {
				return ln.decodedConfidence(body)
			}
			c = f
		}
		return c, true
	}
	return ln.decodedConfidence(body)
}

// decodedConfidence decodes body as Observation does, into a copy.
func (ln *Line) decodedConfidence(body []byte) (float64, bool) {
	var o Observation
	if o.decodeScanned(body) || o.decode(body) == nil {
		return o.Confidence, true
	}
	return 0, false
}

// FindLine returns the first valid line with id, or nil, without decoding
// it: a pass that needs the observation's id and type only (ID, Type) or
// decides later whether to change it (Observation) decodes nothing else.
func (l *Log) FindLine(id string) *Line { return l.findLine(id) }

func (l *Log) findLine(id string) *Line {
	if l.byID == nil || l.indexed != len(l.Lines) {
		l.byID, l.indexed = newIDIndex(l.Lines), len(l.Lines)
	}
	if i := l.byID.find(l.Lines, id); i >= 0 {
		return l.Lines[i]
	}
	return nil
}

// Append adds a new observation at the end.
func (l *Log) Append(o *Observation) {
	l.Lines = append(l.Lines, &Line{parsed: true, obs: o})
}

// Corrupt counts lines that do not parse.
func (l *Log) Corrupt() int {
	n := 0
	for _, ln := range l.Lines {
		if ln.Err() != nil {
			n++
		}
	}
	return n
}

// InvalidCount counts lines that parse but fail validation.
func (l *Log) InvalidCount() int {
	n := 0
	for _, ln := range l.Lines {
		if ln.parsed && ln.Invalid() != nil {
			n++
		}
	}
	return n
}

// changed reports whether the line's bytes must be re-encoded: an appended
// observation, or a decoded one that differs from what was read. A line
// never decoded is unchanged.
func (ln *Line) changed() bool {
	switch {
	case ln.obs == nil:
		return !sameMarks(ln.marks, ln.written)
	case ln.scanned:
		return !ln.obs.unchangedFrom(bytes.TrimSpace(ln.Raw()))
	case ln.orig == nil:
		return true
	}
	return !sameObservation(ln.obs, ln.orig)
}

// appended reports a line Append added and no write has settled.
func (ln *Line) appended() bool { return ln.obs != nil && ln.orig == nil && !ln.scanned }

// Changed reports whether Bytes would differ from what was read.
func (l *Log) Changed() bool {
	for _, ln := range l.Lines {
		if ln.changed() {
			return true
		}
	}
	return false
}

// sameObservation compares every field, keeping nil and empty apart the
// way reflect.DeepEqual does, without reflection.
func sameObservation(a, b *Observation) bool {
	if a.ID != b.ID || a.Type != b.Type || a.Pattern != b.Pattern || a.Confidence != b.Confidence ||
		a.Observations != b.Observations || a.FirstSeen != b.FirstSeen || a.LastSeen != b.LastSeen ||
		a.Status != b.Status || a.Details != b.Details || a.QualityOK != b.QualityOK ||
		a.ArtifactPath != b.ArtifactPath || a.DeprecatedAt != b.DeprecatedAt || a.NeedsReview != b.NeedsReview ||
		a.MayBeStale != b.MayBeStale || a.StaleReason != b.StaleReason || a.SoftCapExceeded != b.SoftCapExceeded ||
		a.invalid != b.invalid || !bytes.Equal(a.raw, b.raw) || (a.raw == nil) != (b.raw == nil) {
		return false
	}
	if (a.Evidence == nil) != (b.Evidence == nil) || len(a.Evidence) != len(b.Evidence) {
		return false
	}
	for i := range a.Evidence {
		if a.Evidence[i] != b.Evidence[i] {
			return false
		}
	}
	if (a.set == nil) != (b.set == nil) || len(a.set) != len(b.set) || len(a.setOrder) != len(b.setOrder) ||
		(a.setOrder == nil) != (b.setOrder == nil) {
		return false
	}
	for i := range a.setOrder {
		if a.setOrder[i] != b.setOrder[i] {
			return false
		}
	}
	for k, v := range a.set {
		w, ok := b.set[k]
		if !ok || !bytes.Equal(v, w) || (v == nil) != (w == nil) {
			return false
		}
	}
	return true
}

// Bytes renders the log: unchanged lines byte for byte, changed and new
// observations re-encoded with their unknown fields.
func (l *Log) Bytes() ([]byte, error) {
	fresh, err := l.encodeChanged()
	if err != nil {
		return nil, err
	}
	size := len(l.Lines)
	for i, ln := range l.Lines {
		if fresh != nil && fresh[i] != nil {
			size += len(fresh[i])
		} else {
			size += ln.rawLen()
		}
	}
	var buf bytes.Buffer
	buf.Grow(size)
	if _, err := l.writeLines(&buf, fresh, nil); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeChanged re-encodes the changed and new observations: per line the
// new bytes, nil for a line written as read or patched with its marks as
// it is written (writeLines); fresh is nil when no decoded line changed.
func (l *Log) encodeChanged() (fresh [][]byte, err error) {
	decoded := 0
	for _, ln := range l.Lines {
		if ln.obs != nil {
			decoded++
		}
	}
	if decoded == 0 {
		return nil, nil // no line was decoded or appended: none re-encoded
	}
	fresh = make([][]byte, len(l.Lines))
	// A pass can decode many lines: they are independent, so they are
	// checked and encoded on every core.
	if err := encodeRuns(l.Lines, fresh, parallel.Workers(decoded, encodeShare)); err != nil {
		return nil, err
	}
	for _, b := range fresh {
		if b != nil {
			return fresh, nil
		}
	}
	return nil, nil
}

// encodeShare is how many decoded lines make another goroutine worth
// starting to check and encode them.
const encodeShare = 2000

// encodeRuns fills fresh[i] with the new bytes of each changed decoded
// line of lines, in contiguous runs on up to workers goroutines, and
// returns the error of the first line in the log's order that cannot be
// encoded.
func encodeRuns(lines []*Line, fresh [][]byte, workers int) error {
	var first firstError
	parallel.Ranges(len(lines), workers, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			ln := lines[i]
			if ln.obs == nil || !ln.changed() {
				continue
			}
			b, err := encodeLine(ln.obs, ln.rawLen())
			if err != nil {
				first.note(i, err)
				return
			}
			fresh[i] = b
		}
	})
	return first.err
}

// firstError keeps, of the errors goroutines working on runs of lines
// note, the one of the first line in order. The zero value holds none.
type firstError struct {
	mu  sync.Mutex
	at  int
	err error
}

// note records err, of line i, if it comes before the one held.
func (f *firstError) note(i int, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil || i < f.at {
		f.at, f.err = i, err
	}
}

// encodeLine encodes o, a line of about size bytes.
func encodeLine(o *Observation, size int) ([]byte, error) {
	// Room for the line as read and a few members more (marks): one
	// allocation where growing from nil made several.
	b, ok := o.appendJSON(make([]byte, 0, size+128))
	if !ok {
		var err error
		if b, err = json.Marshal(o); err != nil {
			return nil, fmt.Errorf("encode observation %s: %w", o.ID, err)
		}
	}
	return b, nil
}

// patchBlock is how many lines writeLines patches (on every core) before
// it writes them: the patched bytes of a block are all it holds.
const patchBlock = 2048

// patchShare is how many bytes of lines to patch make another goroutine
// worth starting.
const patchShare = 256 << 10

// writeLines writes every line, fresh bytes for re-encoded ones and a
// line whose marks were set aside patched (markedBytes), and reports
// whether the output ends with a newline. Patched lines are made a block
// at a time, on every core, and let go once written. A line whose patch
// declined is decoded and encoded instead; declined, when not nil, gets
// those bytes (a commit makes them the line).
func (l *Log) writeLines(w io.Writer, fresh [][]byte, declined map[int][]byte) (newline bool, err error) {
	nl := []byte{'\n'}
	var block []patchedLine
	for lo := 0; lo < len(l.Lines); lo += patchBlock {
		hi := min(lo+patchBlock, len(l.Lines))
		lines := l.Lines[lo:hi]
		size := 0
		for i, ln := range lines {
			if ln.obs == nil && ln.marks != nil && (fresh == nil || fresh[lo+i] == nil) {
				size += ln.rawLen()
			}
		}
		if size > 0 {
			if block == nil {
				block = make([]patchedLine, patchBlock)
			}
			if err := patchRuns(lines, fresh, lo, block, parallel.Workers(size, patchShare)); err != nil {
				return false, err
			}
		}
		for i, ln := range lines {
			at := lo + i
			out := ln.Raw()
			switch {
			case fresh != nil && fresh[at] != nil:
				out = fresh[at]
			case size > 0 && block[i].b != nil:
				out = block[i].b
				if block[i].declined && declined != nil {
					declined[at] = out
				}
				block[i] = patchedLine{}
			}
			if _, err := w.Write(out); err != nil {
				return false, err
			}
			newline = at < len(l.Lines)-1 || !l.noFinalNewline || ln.appended()
			if newline {
				if _, err := w.Write(nl); err != nil {
					return false, err
				}
			}
		}
	}
	// A chunk that could not be read back was written as placeholder
	// bytes: what was written is not the log.
	if err := l.Err(); err != nil {
		return false, err
	}
	return newline, nil
}

// patchedLine is a line of a block writeLines writes: its bytes, and
// whether its patch declined (they were encoded from its observation, or
// are Raw when that did not decode).
type patchedLine struct {
	b        []byte
	declined bool
}

// patchRuns fills block[i] for lines[i] (line lo+i of the log) when its
// marks were set aside and fresh has no bytes for it: its bytes patched,
// or its observation decoded (not kept), marked and encoded when the
// patch declines. The error is that of the first line in order that
// cannot be encoded.
func patchRuns(lines []*Line, fresh [][]byte, lo int, block []patchedLine, workers int) error {
	var first firstError
	parallel.Ranges(len(lines), workers, func(a, b int) {
		for i := a; i < b; i++ {
			ln := lines[i]
			if ln.obs != nil || ln.marks == nil || fresh != nil && fresh[lo+i] != nil {
				continue
			}
			out, o, ok := ln.markedBytes(*ln.marks)
			switch {
			case ok:
			case o != nil:
				var err error
				if out, err = encodeLine(o, ln.rawLen()); err != nil {
					first.note(i, err)
					return
				}
			default:
				out = ln.Raw() // the decoder refused what the scan vouched for: as read
			}
			block[i] = patchedLine{b: out, declined: !ok}
		}
	})
	return first.err
}

// Settle makes every decoded, unchanged line compare with a copy of its
// observation, as a write leaves the lines it wrote: a later change check
// is then a comparison of fields instead of a scan of the line. A
// long-running caller settles a log it keeps across passes (off the path
// of its events); it costs a copy per decoded line.
func (l *Log) Settle() {
	for _, ln := range l.Lines {
		ln.materialize()
		if ln.obs != nil && ln.scanned && !ln.changed() {
			ln.orig, ln.scanned = ln.obs.Clone(), false
		}
	}
}

// WriteTo writes the log's bytes (Bytes) to w without holding them.
func (l *Log) WriteTo(w io.Writer) (int64, error) {
	fresh, err := l.encodeChanged()
	if err != nil {
		return 0, err
	}
	cw := &countingWriter{w: w}
	_, err = l.writeLines(cw, fresh, nil)
	return cw.n, err
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// WriteLog atomically replaces path with the log's bytes, streamed to the
// file: only re-encoded lines are held besides what was read. Afterwards
// the log counts as unchanged again; observation pointers stay valid.
func WriteLog(path string, l *Log) error { return WriteLogCopy(path, l, nil) }

// WriteLogCopy is WriteLog, every byte written to the file also written
// to also when it is not nil (StageLog).
func WriteLogCopy(path string, l *Log, also io.Writer) error {
	s, err := StageLog(path, l, also)
	if err != nil {
		return err
	}
	defer s.Release()
	return s.Commit()
}

// LogStage is a log written to a temporary file, waiting to replace the
// log file (Commit) or to be dropped (Abort): see Staged. The Log must not
// change in between.
type LogStage struct {
	file     *Staged
	l        *Log
	fresh    [][]byte
	declined map[int][]byte // lines written from their decoded observation
	newline  bool
}

// StageLog writes l as WriteLog does, to a temporary file next to path,
// every byte written to the file also written to also when it is not nil
// (a hash of what the file holds, taken as it is written). It reads l
// only: it may run while the caller does other work that does not touch l.
func StageLog(path string, l *Log, also io.Writer) (*LogStage, error) {
	fresh, err := l.encodeChanged()
	if err != nil {
		return nil, err
	}
	s := &LogStage{l: l, fresh: fresh, declined: map[int][]byte{}}
	s.file, err = stageFrom(path, 0o644, func(w io.Writer) error {
		if also != nil {
			w = io.MultiWriter(w, also)
		}
		var err error
		s.newline, err = l.writeLines(w, fresh, s.declined)
		return err
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Abort drops the staged log (nil: nothing staged).
func (s *LogStage) Abort() {
	if s != nil {
		s.file.Abort()
	}
}

// Release lets the replaced log file go (Staged.Release).
func (s *LogStage) Release() {
	if s != nil {
		s.file.Release()
	}
}

// Commit replaces the log file with the staged one (keeping the replaced
// one until Release, as Staged.Commit does); the Log then holds the lines
// as written.
func (s *LogStage) Commit() error {
	if err := s.l.Err(); err != nil {
		// Read back wrong since it was staged: the pass read a file that
		// changed under it, and writes nothing.
		s.file.Abort()
		return err
	}
	if err := s.file.Commit(); err != nil {
		return err
	}
	l := s.l
	for i, ln := range l.Lines {
		if b, ok := s.declined[i]; ok {
			*ln = Line{}
			ln.setRaw(b)
			parseLine(ln, b, nil) // the line as written, read again
			continue
		}
		if ln.obs == nil {
			ln.written = ln.marks // patched into Raw's bytes in the file
			continue
		}
		if s.fresh == nil || s.fresh[i] == nil {
			continue
		}
		ln.setRaw(s.fresh[i])
		ln.obs.raw = s.fresh[i]
		ln.obs.set, ln.obs.setOrder = nil, nil
		ln.orig, ln.scanned = ln.obs.Clone(), false
		ln.setInvalid(ln.obs.Validate())
	}
	if s.newline {
		l.noFinalNewline = false
	}
	l.Exists = true
	return nil
}
