package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A rewrite keeps the keys other tools wrote, in their order, and lays the
// file out as devflow's JSON.stringify(data, null, 2) + "\n" does.
func TestNotificationsRoundTrip(t *testing.T) {
	src := `{"update-available":{"version":"2.1.0","seen":[]},"knowledge-capacity-pitfalls":{"active":false,"threshold":60,"count":60,"ceiling":100,"dismissed_at_threshold":60,"severity":"dim","created_at":"2026-01-01T00:00:00.000Z"},"empty":{}}`
	n, err := ParseNotifications([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	pf, ok := n.Get("knowledge-capacity-pitfalls")
	if !ok || pf.Active || pf.Threshold != 60 || pf.DismissedAtThreshold == nil || *pf.DismissedAtThreshold != 60 {
		t.Fatalf("Get = %+v, %v", pf, ok)
	}
	if _, ok := n.Get("knowledge-capacity-decisions"); ok {
		t.Fatal("Get of a missing key reports one")
	}
	if err := n.Set("knowledge-capacity-decisions", Notification{Active: true, Threshold: 50, Count: 50, Ceiling: 100, Severity: "dim", CreatedAt: "2026-01-05T00:00:00.000Z"}); err != nil {
		t.Fatal(err)
	}
	got, err := n.Encode()
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "update-available": {
    "version": "2.1.0",
    "seen": []
  },
  "knowledge-capacity-pitfalls": {
    "active": false,
    "threshold": 60,
    "count": 60,
    "ceiling": 100,
    "dismissed_at_threshold": 60,
    "severity": "dim",
    "created_at": "2026-01-01T00:00:00.000Z"
  },
  "empty": {},
  "knowledge-capacity-decisions": {
    "active": true,
    "threshold": 50,
    "count": 50,
    "ceiling": 100,
    "dismissed_at_threshold": null,
    "severity": "dim",
    "created_at": "2026-01-05T00:00:00.000Z"
  }
}
`
	if string(got) != want {
		t.Errorf("Encode =\n%s\nwant\n%s", got, want)
	}
	// Written and read back through the file: the same.
	path := filepath.Join(t.TempDir(), NotificationsFile)
	if err := WriteNotifications(path, n); err != nil {
		t.Fatal(err)
	}
	back, err := ReadNotifications(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := back.Encode()
	if !bytes.Equal(again, got) {
		t.Errorf("reread differs:\n%s", again)
	}
}

func TestReadNotifications(t *testing.T) {
	dir := t.TempDir()
	n, err := ReadNotifications(filepath.Join(dir, "missing.json"))
	if err != nil || len(n.Keys()) != 0 {
		t.Fatalf("missing file: %v, %v", n, err)
	}
	for _, bad := range []string{"", "[]", "null", `{"a":1`, `{"a":1} {}`, `"x"`, `{"a" 1}`} {
		p := filepath.Join(dir, "bad.json")
		if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadNotifications(p); !errors.Is(err, ErrCorruptNotifications) {
			t.Errorf("%q: err = %v, want ErrCorruptNotifications", bad, err)
		}
	}
	// A repeated key keeps its first place and its last value, like JSON.parse.
	n, err = ParseNotifications([]byte(`{"a":1,"b":2,"a":3}`))
	if err != nil {
		t.Fatal(err)
	}
	out, _ := n.Encode()
	if string(out) != "{\n  \"a\": 3,\n  \"b\": 2\n}\n" {
		t.Errorf("duplicate key: %s", out)
	}
	// Fields of the wrong type decode as zero; the rest is used.
	n, _ = ParseNotifications([]byte(`{"k":{"active":"yes","threshold":70,"dismissed_at_threshold":null},"z":null}`))
	if v, ok := n.Get("k"); !ok || v.Active || v.Threshold != 70 || v.DismissedAtThreshold != nil {
		t.Errorf("lenient Get = %+v, %v", v, ok)
	}
	if _, ok := n.Get("z"); ok {
		t.Error("a null value counts as a notification")
	}
}

// FuzzParseNotifications: parsing never panics; what parses encodes to
// valid JSON that parses again to the same keys and values.
func FuzzParseNotifications(f *testing.F) {
	f.Add([]byte(`{"knowledge-capacity-decisions":{"active":true,"threshold":50,"count":50,"ceiling":100,"dismissed_at_threshold":null,"severity":"dim","created_at":"x"}}`))
	f.Add([]byte(`{"a":[1,{"b":"\u2028"}],"a":{}}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := ParseNotifications(data)
		if err != nil {
			return
		}
		for _, k := range n.Keys() {
			n.Get(k)
		}
		out, err := n.Encode()
		if err != nil {
			t.Fatalf("Encode of parsed %q: %v", data, err)
		}
		if !json.Valid(out) {
			t.Fatalf("Encode gave invalid JSON %q", out)
		}
		back, err := ParseNotifications(out)
		if err != nil {
			t.Fatalf("reparse %q: %v", out, err)
		}
		again, _ := back.Encode()
		if !bytes.Equal(again, out) {
			t.Fatalf("not stable:\n%s\n%s", out, again)
		}
	})
}
