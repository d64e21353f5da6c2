package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
)

// Entry registers one rendered artifact.
type Entry struct {
	ObservationID string `json:"observationId"`
	Type          string `json:"type"`
	Path          string `json:"path"`
	ContentHash   string `json:"contentHash"`
	RenderedAt    string `json:"renderedAt"`
	AnchorID      string `json:"anchorId,omitempty"`

	extra map[string]json.RawMessage
}

var entryKeys = map[string]bool{"observationId": true, "type": true, "path": true, "contentHash": true, "renderedAt": true, "anchorId": true}

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

// IsKnowledge reports whether the entry is an ADR/PF anchor in a knowledge
// file rather than a whole-file artifact.
func (e Entry) IsKnowledge() bool { return e.AnchorID != "" }

// Manifest is the registry of rendered artifacts.
type Manifest struct {
	SchemaVersion int     `json:"schemaVersion"`
	Entries       []Entry `json:"entries"`

	extra map[string]json.RawMessage
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
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Manifest{SchemaVersion: 1}, false, nil
	}
	if err != nil {
		return &Manifest{SchemaVersion: 1}, false, fmt.Errorf("read %s: %w", path, err)
	}
	m = &Manifest{}
	if err := json.Unmarshal(data, m); err != nil {
		return &Manifest{SchemaVersion: 1}, true, fmt.Errorf("%s: %w: %v", path, ErrCorruptManifest, err)
	}
	if m.SchemaVersion == 0 {
		m.SchemaVersion = 1
	}
	return m, true, nil
}

// Encode renders the manifest as indented JSON with a trailing newline.
func (m *Manifest) Encode() ([]byte, error) {
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
