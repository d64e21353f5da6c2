package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/learnwatch/learnwatch/safefs"
	"io"
	"os"
	"path/filepath"
)

// NotificationsFile is the name, under .memory, of the notifications file
// devflow's HUD reads: one object keyed by notification name.
const NotificationsFile = ".notifications.json"

// Notifications returns the path of the notifications file.
func (p Paths) Notifications() string { return filepath.Join(p.Memory, NotificationsFile) }

// ErrCorruptNotifications wraps a notifications file that exists but is not
// a JSON object.
var ErrCorruptNotifications = errors.New("notifications file is not a JSON object")

// Notification is one knowledge-capacity entry of the notifications file,
// with devflow's field names and order.
type Notification struct {
	Active               bool   `json:"active"`
	Threshold            int    `json:"threshold"`
	Count                int    `json:"count"`
	Ceiling              int    `json:"ceiling"`
	DismissedAtThreshold *int   `json:"dismissed_at_threshold"`
	Severity             string `json:"severity"`
	CreatedAt            string `json:"created_at"`
}

// Notifications is the notifications file: its keys in file order and each
// key's value as raw JSON, so keys other tools write survive a rewrite.
type Notifications struct {
	keys []string
	vals map[string]json.RawMessage
}

// ReadNotifications reads the notifications file; a missing file is an
// empty one. A file that is not a JSON object is an error wrapping
// ErrCorruptNotifications (the caller leaves such a file alone).
func ReadNotifications(path string) (*Notifications, error) {
	data, err := safefs.ReadFile(path, safefs.MaxState)
	if errors.Is(err, os.ErrNotExist) {
		return &Notifications{vals: map[string]json.RawMessage{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	n, err := ParseNotifications(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// ParseNotifications parses the content of a notifications file. A key
// given twice keeps its first place and its last value (as JSON.parse
// does).
func ParseNotifications(data []byte) (*Notifications, error) {
	n := &Notifications{vals: map[string]json.RawMessage{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("%w: it does not start with {", ErrCorruptNotifications)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptNotifications, err)
		}
		key, _ := tok.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, fmt.Errorf("%w: value of %q: %v", ErrCorruptNotifications, key, err)
		}
		if _, seen := n.vals[key]; !seen {
			n.keys = append(n.keys, key)
		}
		n.vals[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCorruptNotifications, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: text after the object", ErrCorruptNotifications)
	}
	return n, nil
}

// Keys returns the keys in file order.
func (n *Notifications) Keys() []string { return append([]string(nil), n.keys...) }

// Get returns the notification under key and whether the file has a
// non-null value there. Fields of the wrong type are left zero.
func (n *Notifications) Get(key string) (Notification, bool) {
	raw, ok := n.vals[key]
	if !ok || string(bytes.TrimSpace(raw)) == "null" {
		return Notification{}, false
	}
	var v Notification
	_ = json.Unmarshal(raw, &v) // lenient: what decodes is used
	return v, true
}

// Set replaces (or adds, at the end) the notification under key.
func (n *Notifications) Set(key string, v Notification) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode notification %s: %w", key, err)
	}
	if _, ok := n.vals[key]; !ok {
		n.keys = append(n.keys, key)
	}
	n.vals[key] = raw
	return nil
}

// Encode returns the file content: the object indented by two spaces with a
// final newline, as devflow writes it.
func (n *Notifications) Encode() ([]byte, error) {
	var compact bytes.Buffer
	compact.WriteByte('{')
	for i, k := range n.keys {
		if i > 0 {
			compact.WriteByte(',')
		}
		kb, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		compact.Write(kb)
		compact.WriteByte(':')
		compact.Write(n.vals[k])
	}
	compact.WriteByte('}')
	var out bytes.Buffer
	if err := json.Indent(&out, compact.Bytes(), "", "  "); err != nil {
		return nil, fmt.Errorf("encode notifications: %w", err)
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

// WriteNotifications replaces the notifications file atomically.
func WriteNotifications(path string, n *Notifications) error {
	data, err := n.Encode()
	if err != nil {
		return err
	}
	return WriteFile(path, data, 0o644)
}
