package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/safefs"
)

// Usage is .knowledge-usage.json: citation counts per ADR/PF id. Entries and
// top-level keys this package does not know are kept raw.
type Usage struct {
	Version int
	Entries map[string]map[string]json.RawMessage
	extra   map[string]json.RawMessage
}

// ErrCorruptUsage wraps a usage file that exists but does not parse.
var ErrCorruptUsage = errors.New("usage file is not valid")

// NewUsage returns an empty usage file.
func NewUsage() *Usage {
	return &Usage{Version: 1, Entries: map[string]map[string]json.RawMessage{}}
}

// ReadUsage reads the usage file; a missing file is an empty usage.
func ReadUsage(path string) (*Usage, error) {
	u := &Usage{Version: 1, Entries: map[string]map[string]json.RawMessage{}}
	data, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return u, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: %w: %v", path, ErrCorruptUsage, err)
	}
	for k, v := range top {
		switch k {
		case "version":
			if err := json.Unmarshal(v, &u.Version); err != nil {
				return nil, fmt.Errorf("%s: %w: field version: %v", path, ErrCorruptUsage, err)
			}
		case "entries":
			if err := json.Unmarshal(v, &u.Entries); err != nil {
				return nil, fmt.Errorf("%s: %w: field entries: %v", path, ErrCorruptUsage, err)
			}
			if u.Entries == nil {
				u.Entries = map[string]map[string]json.RawMessage{}
			}
		default:
			if u.extra == nil {
				u.extra = map[string]json.RawMessage{}
			}
			u.extra[k] = v
		}
	}
	return u, nil
}

// Register adds an entry for id (cites 0, last_cited null, created now)
// unless one exists ("id": null in the file counts as none). It reports
// whether it added one.
func (u *Usage) Register(id string, now time.Time) bool {
	if e, ok := u.Entries[id]; ok && e != nil {
		return false
	}
	created, _ := json.Marshal(now.UTC().Format(time.RFC3339))
	// A copy of id: it is often a slice of the manifest's text
	// (ReadManifest), which the usage file, kept to the end of a pass,
	// would otherwise keep whole.
	u.Entries[strings.Clone(id)] = map[string]json.RawMessage{
		"cites":      json.RawMessage("0"),
		"last_cited": json.RawMessage("null"),
		"created":    created,
	}
	return true
}

// Cite adds n citations to id at now, registering it first if needed.
func (u *Usage) Cite(id string, n int, now time.Time) {
	u.Register(id, now)
	e := u.Entries[id]
	var cites int
	_ = json.Unmarshal(e["cites"], &cites)
	e["cites"], _ = json.Marshal(cites + n)
	e["last_cited"], _ = json.Marshal(now.UTC().Format(time.RFC3339))
}

// Cites returns the citation count and last citation time of id.
func (u *Usage) Cites(id string) (int, time.Time) {
	e, ok := u.Entries[id]
	if !ok {
		return 0, time.Time{}
	}
	var n int
	var last string
	_ = json.Unmarshal(e["cites"], &n)
	_ = json.Unmarshal(e["last_cited"], &last)
	t, _ := time.Parse(time.RFC3339, last)
	return n, t
}

// Encode renders the usage file: version, entries (sorted by id), then
// unknown top-level keys.
func (u *Usage) Encode() ([]byte, error) {
	type plain struct {
		Version int                                   `json:"version"`
		Entries map[string]map[string]json.RawMessage `json:"entries"`
	}
	b, err := mergeExtra(plain{u.Version, u.Entries}, u.extra)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// WriteUsage atomically replaces path with u.
func WriteUsage(path string, u *Usage) error {
	b, err := u.Encode()
	if err != nil {
		return fmt.Errorf("encode usage: %w", err)
	}
	return WriteFile(path, b, 0o644)
}

// Extra returns the raw value of a top-level key this package does not
// know (another tool's, or a learnwatch-only record such as the inbox's).
func (u *Usage) Extra(key string) (json.RawMessage, bool) {
	v, ok := u.extra[key]
	return v, ok
}

// SetExtra sets a top-level key this package does not know; DeleteExtra
// removes one.
func (u *Usage) SetExtra(key string, v json.RawMessage) {
	if u.extra == nil {
		u.extra = map[string]json.RawMessage{}
	}
	u.extra[key] = v
}

// DeleteExtra: see SetExtra.
func (u *Usage) DeleteExtra(key string) { delete(u.extra, key) }
