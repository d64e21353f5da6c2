package merge

import (
	"encoding/json"
	"strings"
	"testing"
)

func entry(id, hash, at string) string {
	return `{"observationId":"` + id + `","type":"decision","path":".memory/knowledge/decisions.md","contentHash":"` + hash + `","renderedAt":"` + at + `","anchorId":"ADR-001"}`
}

func manifestOf(extra string, entries ...string) []byte {
	return []byte(`{"schemaVersion":1,` + extra + `"entries":[` + strings.Join(entries, ",") + `]}`)
}

func decodeManifest(t *testing.T, b []byte) (map[string]any, []map[string]any) {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("result does not parse: %v\n%s", err, b)
	}
	var out []map[string]any
	for _, e := range m["entries"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return m, out
}

func TestManifest(t *testing.T) {
	base := manifestOf(`"tool":"devflow",`, entry("obs_a", "sha256:1", "2026-01-01T00:00:00Z"), entry("obs_gone", "sha256:9", "2026-01-01T00:00:00Z"))
	ours := manifestOf(`"tool":"devflow",`, entry("obs_a", "sha256:2", "2026-01-03T00:00:00Z"), entry("obs_alice", "sha256:3", "2026-01-02T00:00:00Z"))
	theirs := manifestOf(`"tool":"devflow","x-theirs":true,`, entry("obs_a", "sha256:4", "2026-01-04T00:00:00Z"), entry("obs_gone", "sha256:9", "2026-01-01T00:00:00Z"), entry("obs_bob", "sha256:5", "2026-01-02T00:00:00Z"))
	out, rep := Manifest(base, ours, theirs)
	if rep.Conflict {
		t.Fatalf("conflict: %v", rep.Notes)
	}
	top, es := decodeManifest(t, out)
	var got []string
	for _, e := range es {
		got = append(got, e["observationId"].(string)+"@"+e["contentHash"].(string)+"@"+e["renderedAt"].(string))
	}
	want := "obs_a@sha256:2@2026-01-04T00:00:00Z obs_alice@sha256:3@2026-01-02T00:00:00Z obs_bob@sha256:5@2026-01-02T00:00:00Z"
	if strings.Join(got, " ") != want {
		t.Fatalf("entries %v\nwant %s", got, want)
	}
	if top["x-theirs"] != true || top["tool"] != "devflow" {
		t.Fatalf("top-level fields lost: %s", out)
	}
	if !strings.HasSuffix(string(out), "}\n") || !strings.Contains(string(out), "\n  \"entries\": [") {
		t.Fatalf("not written like the manifest is:\n%s", out)
	}
}

func TestManifestSideDoesNotParse(t *testing.T) {
	ours := manifestOf("", entry("obs_a", "sha256:1", "2026-01-01T00:00:00Z"))
	theirs := []byte("{\"schemaVersion\":1,\n\"entries\":[" + entry("obs_b", "sha256:2", "2026-01-01T00:00:00Z") + "\n")
	out, rep := Manifest(nil, ours, theirs)
	if !rep.Conflict || !strings.Contains(strings.Join(rep.Notes, "; "), "theirs does not parse") {
		t.Fatalf("want a reported conflict, got %+v", rep)
	}
	if !strings.Contains(string(out), "obs_a") || !strings.Contains(string(out), "obs_b") {
		t.Fatalf("a side was lost:\n%s", out)
	}
	if strings.Contains(string(out), "<<<<<<<") || strings.Contains(string(out), ">>>>>>>") {
		t.Fatalf("conflict markers in JSON:\n%s", out)
	}
}

func TestUsage(t *testing.T) {
	base := []byte(`{"version":1,"entries":{"ADR-001":{"cites":2,"last_cited":"2026-01-01T00:00:00Z","created":"2025-12-01T00:00:00Z"}}}`)
	ours := []byte(`{"version":1,"entries":{"ADR-001":{"cites":5,"last_cited":"2026-01-04T00:00:00Z","created":"2025-12-01T00:00:00Z"},"ADR-002":{"cites":0,"last_cited":null,"created":"2026-01-03T00:00:00Z"}}}`)
	theirs := []byte(`{"version":1,"entries":{"ADR-001":{"cites":3,"last_cited":"2026-01-02T00:00:00Z","created":"2025-11-30T00:00:00Z","x":1},"PF-001":{"cites":1,"last_cited":null,"created":"2026-01-02T00:00:00Z"}}}`)
	out, rep := Usage(base, ours, theirs)
	if rep.Conflict {
		t.Fatalf("conflict: %v", rep.Notes)
	}
	var u struct {
		Version int
		Entries map[string]map[string]any
	}
	if err := json.Unmarshal(out, &u); err != nil {
		t.Fatal(err)
	}
	a := u.Entries["ADR-001"]
	if a["cites"] != 6.0 || a["last_cited"] != "2026-01-04T00:00:00Z" || a["created"] != "2025-11-30T00:00:00Z" || a["x"] != 1.0 {
		t.Fatalf("ADR-001 = %v (want cites 5+3-2, latest citation, earliest creation, theirs' field)", a)
	}
	if u.Entries["ADR-002"] == nil || u.Entries["PF-001"] == nil || u.Version != 1 {
		t.Fatalf("entries lost: %s", out)
	}
}

func FuzzManifest(f *testing.F) {
	f.Add("", string(manifestOf("", entry("obs_a", "h", "t"))), string(manifestOf("", entry("obs_b", "h", "t"))))
	f.Add(`{"entries":null}`, `{"entries":[1,2,{"observationId":"x"}]}`, `{"entries":{}}`)
	f.Fuzz(func(t *testing.T, base, ours, theirs string) {
		for _, merge := range []func(o, a, b []byte) ([]byte, Report){Manifest, Usage} {
			out, rep := merge([]byte(base), []byte(ours), []byte(theirs))
			if strings.Contains(string(out), "<<<<<<< ") {
				if !strings.Contains(ours+theirs, "<<<<<<< ") {
					t.Fatalf("conflict markers added: %q", out)
				}
			}
			if !rep.Conflict && !json.Valid(out) {
				t.Fatalf("a merge without conflict is not JSON: %q", out)
			}
		}
	})
}
