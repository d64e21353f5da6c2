package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/learnwatch/learnwatch/safefs"
)

// Entry registers one rendered artifact.
type Entry struct {
	ObservationID string `json:"observationId"`
	Type          string `json:"type"`
	Path          string `json:"path"`
	ContentHash   string `json:"contentHash"`
	RenderedAt    string `json:"renderedAt"`
	AnchorID      string `json:"anchorId,omitempty"`
	// Deleted, when set, records a penalty reconcile applied because the
	// artifact was deleted: the entry is kept (path and hash of what was
	// rendered) so that the artifact reappearing with that content reverses
	// the penalty exactly.
	Deleted *Deletion `json:"deleted,omitempty"`

	extra map[string]json.RawMessage
}

// Deletion is what a deletion penalty changed, so it can be undone.
type Deletion struct {
	At string `json:"at"` // when the penalty was applied (RFC 3339)
	// Status, Confidence and DeprecatedAt are the observation's values
	// before the penalty.
	Status       string  `json:"status"`
	Confidence   float64 `json:"confidence"`
	DeprecatedAt string  `json:"deprecatedAt,omitempty"`
	// Head is the commit checked out when the penalty was applied (empty
	// outside git or before the first commit).
	Head string `json:"head,omitempty"`
}

var entryKeys = map[string]bool{"observationId": true, "type": true, "path": true, "contentHash": true, "renderedAt": true, "anchorId": true, "deleted": true}

// UnmarshalJSON keeps unknown fields.
func (e *Entry) UnmarshalJSON(data []byte) error {
	type plain Entry
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	extra, err := unknownFields(data, entryKeys)
	if err != nil {
		return err
	}
	*e = Entry(p)
	e.extra = extra
	return nil
}

// unknownFields returns the members of the JSON object data whose keys are
// not in known, nil when there are none.
func unknownFields(data []byte, known map[string]bool) (map[string]json.RawMessage, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return nil, err
	}
	var extra map[string]json.RawMessage
	for k, v := range all {
		if !known[k] {
			if extra == nil {
				extra = map[string]json.RawMessage{}
			}
			extra[k] = v
		}
	}
	return extra, nil
}

// MarshalJSON writes the known fields, then unknown ones sorted by key.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return mergeExtra(plain(e), e.extra)
}

// mergeExtra encodes v (a struct) and appends extra fields to the object.
func mergeExtra(v any, extra map[string]json.RawMessage) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || len(extra) == 0 {
		return b, err
	}
	var buf bytes.Buffer
	buf.Write(b[:len(b)-1])
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if len(b) > 2 || buf.Len() > 1 {
			buf.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(extra[k])
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// Penalised counts the entries kept with a deletion record.
func (m *Manifest) Penalised() int {
	n := 0
	for _, e := range m.Entries {
		if e.Deleted != nil {
			n++
		}
	}
	return n
}

// IsKnowledge reports whether the entry is an ADR/PF anchor in a knowledge
// file rather than a whole-file artifact.
func (e Entry) IsKnowledge() bool { return e.AnchorID != "" }

// Manifest is the registry of rendered artifacts.
type Manifest struct {
	SchemaVersion int     `json:"schemaVersion"`
	Entries       []Entry `json:"entries"`

	extra map[string]json.RawMessage
	memo  *memo // the last encoding's bytes per entry (manifestcodec.go)
}

// UnmarshalJSON keeps unknown top-level fields.
func (m *Manifest) UnmarshalJSON(data []byte) error {
	type plain Manifest
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	extra, err := unknownFields(data, manifestKeys)
	if err != nil {
		return err
	}
	*m = Manifest(p)
	m.extra = extra
	return nil
}

var manifestKeys = map[string]bool{"schemaVersion": true, "entries": true}

// MarshalJSON writes schemaVersion, entries, then unknown fields.
func (m Manifest) MarshalJSON() ([]byte, error) {
	type plain Manifest
	if m.Entries == nil {
		m.Entries = []Entry{}
	}
	return mergeExtra(plain(m), m.extra)
}

// ErrCorruptManifest wraps a manifest that exists but does not parse.
var ErrCorruptManifest = errors.New("manifest is not valid JSON")

// ReadManifest reads the manifest. A missing file gives an empty manifest
// (exists false); a file that does not parse gives an empty manifest and an
// error wrapping ErrCorruptManifest, so callers can heal and say so.
func ReadManifest(path string) (m *Manifest, exists bool, err error) {
	data, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return &Manifest{SchemaVersion: 1}, false, nil
	}
	if err != nil {
		return &Manifest{SchemaVersion: 1}, false, fmt.Errorf("read %s: %w", path, err)
	}
	m, err = decodeManifest(data)
	if err != nil {
		return &Manifest{SchemaVersion: 1}, true, fmt.Errorf("%s: %w: %v", path, ErrCorruptManifest, err)
	}
	return m, true, nil
}

// decodeManifest decodes a manifest file's bytes: the fast decoder, or
// encoding/json for whatever it does not vouch for (the same result
// either way). A schemaVersion of 0 or none reads as 1.
func decodeManifest(data []byte) (*Manifest, error) {
	m, ok := decodeFast(data)
	if !ok {
		var err error
		if m, err = decodeJSON(data); err != nil {
			return nil, err
		}
	}
	if m.SchemaVersion == 0 {
		m.SchemaVersion = 1
	}
	return m, nil
}

// decodeJSON is the reference decoder: encoding/json through the
// UnmarshalJSON methods. The fast decoder must agree with it.
func decodeJSON(data []byte) (*Manifest, error) {
	m := &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Encode renders the manifest as indented JSON with a trailing newline:
// the bytes of json.MarshalIndent(m, "", "  "), written by the fast
// encoder, which reuses the bytes of every entry unchanged since the last
// Encode (or since ReadManifest). Encode records that encoding in m: calls
// on one Manifest must not run concurrently.
func (m *Manifest) Encode() ([]byte, error) {
	if b, ok := m.encodeFast(); ok {
		return b, nil
	}
	return m.encodeJSON()
}

// encodeJSON is the reference encoder (and the path for what the fast one
// gives up on, so that errors are encoding/json's).
func (m *Manifest) encodeJSON() ([]byte, error) {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// WriteManifest atomically replaces path with m.
func WriteManifest(path string, m *Manifest) error {
	b, err := m.Encode()
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return WriteFile(path, b, 0o644)
}

// Find returns the index of the entry for observation id, or -1.
func (m *Manifest) Find(obsID string) int {
	for i, e := range m.Entries {
		if e.ObservationID == obsID {
			return i
		}
	}
	return -1
}
