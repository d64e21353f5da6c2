package hooks

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseSessionStart(t *testing.T) {
	in := `{"session_id":"abc","transcript_path":"/t/abc.jsonl","cwd":"/repo","hook_event_name":"SessionStart","source":"resume","extra":{"x":1}}`
	got, err := ParseSessionStart(strings.NewReader("\n" + in + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := SessionStart{SessionID: "abc", TranscriptPath: "/t/abc.jsonl", Cwd: "/repo", HookEventName: "SessionStart", Source: "resume"}
	if got != want {
		t.Errorf("got %+v", got)
	}
	for name, bad := range map[string]string{
		"empty":      "",
		"blank":      " \n\t",
		"garbage":    "hello",
		"array":      `[{"cwd":"/x"}]`,
		"truncated":  `{"cwd":"/x"`,
		"wrong type": `{"cwd":1,"session_id":"s"}`,
		"two":        `{"cwd":"/x"}{"cwd":"/y"}`,
		"null":       `null`,
	} {
		got, err := ParseSessionStart(strings.NewReader(bad))
		if err == nil || got != (SessionStart{}) {
			t.Errorf("%s: got %+v, %v; want zero value and an error", name, got, err)
		}
	}
	if _, err := ParseSessionStart(nil); err == nil {
		t.Error("nil reader: no error")
	}
}

func TestParseStop(t *testing.T) {
	got, err := ParseStop(strings.NewReader(`{"session_id":"s","transcript_path":"/t.jsonl","cwd":"/r","hook_event_name":"Stop","stop_hook_active":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if got != (Stop{SessionID: "s", TranscriptPath: "/t.jsonl", Cwd: "/r", HookEventName: "Stop", StopHookActive: true}) {
		t.Errorf("got %+v", got)
	}
	if got, err := ParseStop(strings.NewReader("{")); err == nil || got != (Stop{}) {
		t.Errorf("garbage: %+v %v", got, err)
	}
}

func FuzzParseSessionStart(f *testing.F) {
	f.Add(`{"session_id":"abc","transcript_path":"/t","cwd":"/repo","hook_event_name":"SessionStart","source":"startup"}`)
	f.Add(``)
	f.Add(`{"cwd":1}`)
	f.Add(`{"cwd":"\u0000"} x`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := ParseSessionStart(strings.NewReader(in))
		if err != nil {
			if got != (SessionStart{}) {
				t.Fatalf("error %v with non-zero value %+v", err, got)
			}
			return
		}
		// What parsed round-trips.
		b, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseSessionStart(strings.NewReader(string(b)))
		if err != nil || again != got {
			t.Fatalf("round trip: %+v %v, want %+v", again, err, got)
		}
	})
}
