package lifecycle

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

var day0 = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func TestConfidence(t *testing.T) {
	// min(floor(count*100/required), 95)/100; required 3/4/2/2.
	want := map[string][]float64{
		manifest.Workflow:   {0, 0.33, 0.66, 0.95, 0.95, 0.95},
		manifest.Procedural: {0, 0.25, 0.5, 0.75, 0.95, 0.95},
		manifest.Decision:   {0, 0.5, 0.95, 0.95, 0.95, 0.95},
		manifest.Pitfall:    {0, 0.5, 0.95, 0.95, 0.95, 0.95},
	}
	for typ, ws := range want {
		for n, w := range ws {
			if got := Confidence(typ, n); got != w {
				t.Errorf("Confidence(%s, %d) = %v, want %v", typ, n, got, w)
			}
		}
	}
}

func TestNormalize(t *testing.T) {
	for in, want := range map[string]string{
		"Use SQLite, for caching!":   "use sqlite for caching",
		"  use sqlite; FOR caching ": "use sqlite for caching",
		"Tab\tand\nnewline":          "tab and newline",
		"Café — ünïcode":             "caf  ncode",
		"":                           "",
		"!!!":                        "",
	} {
		if got := Normalize(in); got != want {
			t.Errorf("Normalize(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPenalize(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0.66, 0.2}, {0.33, 0.1}, {0.8, 0.24}, {0.5, 0.15}, {0.1, 0.03}} {
		o := &manifest.Observation{Confidence: tc.in, Status: manifest.Created}
		Penalize(o, day0)
		if o.Confidence != tc.want || o.Status != manifest.Deprecated || o.DeprecatedAt != "2026-01-05T00:00:00Z" {
			t.Errorf("Penalize(%v) = %v %s %s, want %v deprecated 2026-01-05T00:00:00Z", tc.in, o.Confidence, o.Status, o.DeprecatedAt, tc.want)
		}
	}
}

func obs(id, typ, pattern string, quality bool, evidence ...string) *manifest.Observation {
	return &manifest.Observation{ID: id, Type: typ, Pattern: pattern, QualityOK: quality, Evidence: evidence}
}

func TestObserveFirstSighting(t *testing.T) {
	log := manifest.ParseLog(nil)
	in := obs("obs_a", manifest.Decision, "Use SQLite", true, "e1")
	in.Confidence, in.Observations, in.Status, in.FirstSeen = 0.9, 7, manifest.Ready, "2020-01-01T00:00:00Z"
	res := Observe(log, []*manifest.Observation{in}, day0, nil)
	if res.Created != 1 || res.Merged != 0 || strings.Join(res.IDs, ",") != "obs_a" {
		t.Fatalf("result %+v", res)
	}
	o := log.Find("obs_a")
	if o.Confidence != 0.33 || o.Observations != 1 || o.Status != manifest.Observing ||
		o.FirstSeen != "2026-01-05T00:00:00Z" || o.LastSeen != o.FirstSeen {
		t.Errorf("first sighting: %+v", o)
	}
	if in.Confidence != 0.9 {
		t.Error("Observe modified its input")
	}
}

func TestObserveFurtherSightings(t *testing.T) {
	log := manifest.ParseLog(nil)
	ev := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, fmt.Sprintf("e%d", i))
		}
		return out
	}
	Observe(log, []*manifest.Observation{obs("obs_a", manifest.Workflow, "Lint first", true, ev(1, 6)...)}, day0, nil)
	Observe(log, []*manifest.Observation{obs("obs_a", manifest.Workflow, "Lint first", false, append(ev(4, 5), "e7", "e7", "e8")...)}, day0.Add(24*time.Hour), nil)
	o := log.Find("obs_a")
	if o.Observations != 2 || o.Confidence != 0.66 || !o.QualityOK || o.LastSeen != "2026-01-06T00:00:00Z" || o.FirstSeen != "2026-01-05T00:00:00Z" {
		t.Errorf("second sighting: %+v", o)
	}
	if got := strings.Join(o.Evidence, ","); got != "e1,e2,e3,e4,e5,e6,e7,e8" {
		t.Errorf("evidence %s", got)
	}
	Observe(log, []*manifest.Observation{obs("obs_a", manifest.Workflow, "Lint first", false, "e9", "e10", "e3", "e11", "e12")}, day0.Add(48*time.Hour), nil)
	if got := strings.Join(o.Evidence, ","); got != "e3,e4,e5,e6,e7,e8,e9,e10,e11,e12" {
		t.Errorf("evidence after the cap: %s", got)
	}
	if o.Confidence != 0.95 || !o.QualityOK {
		t.Errorf("third sighting: %+v", o)
	}
}

func TestPromotion(t *testing.T) {
	for _, tc := range []struct {
		typ     string
		days    []float64 // day of each sighting
		quality bool
		want    string
	}{
		{manifest.Decision, []float64{0, 0}, true, manifest.Ready},
		{manifest.Decision, []float64{0, 0}, false, manifest.Observing},
		{manifest.Decision, []float64{0}, true, manifest.Observing},
		{manifest.Pitfall, []float64{0, 0}, true, manifest.Ready},
		{manifest.Workflow, []float64{0, 0, 0, 0}, true, manifest.Observing}, // 0.95 but no spread
		{manifest.Workflow, []float64{0, 1, 2.99}, true, manifest.Observing}, // 2.99 days
		{manifest.Workflow, []float64{0, 3}, true, manifest.Ready},           // 0.66 ≥ 0.60, 3 days
		{manifest.Workflow, []float64{0, 3}, false, manifest.Observing},
		{manifest.Procedural, []float64{0, 5}, true, manifest.Observing},          // 0.50 < 0.70
		{manifest.Procedural, []float64{0, 1, 4}, true, manifest.Observing},       // 0.75, 4 days
		{manifest.Procedural, []float64{0, 1, 5}, true, manifest.Ready},           // 0.75, 5 days
		{manifest.Procedural, []float64{0, 0, 0, 0, 0}, true, manifest.Observing}, // 0.95, 0 days
	} {
		log := manifest.ParseLog(nil)
		for _, d := range tc.days {
			Observe(log, []*manifest.Observation{obs("obs_p", tc.typ, "the rule", tc.quality)}, day0.Add(time.Duration(d*24*float64(time.Hour))), nil)
		}
		if got := log.Find("obs_p").Status; got != tc.want {
			t.Errorf("%s sighted on days %v quality %v: %s, want %s", tc.typ, tc.days, tc.quality, got, tc.want)
		}
	}
	// A policy multiplier raises the bar (capped at 0.95).
	log := manifest.ParseLog(nil)
	for i := 0; i < 2; i++ {
		Observe(log, []*manifest.Observation{obs("obs_m", manifest.Workflow, "m", true)}, day0.Add(time.Duration(i)*96*time.Hour), func(string) float64 { return 1.4 })
	}
	if log.Find("obs_m").Status != manifest.Observing {
		t.Error("0.66 promoted although the multiplier asks 0.84")
	}
}

func TestMatching(t *testing.T) {
	log := manifest.ParseLog([]byte(
		`{"id":"obs_dep","type":"decision","pattern":"Old rule","status":"deprecated","observations":3,"confidence":0.28,"evidence":[]}` + "\n" +
			`{"id":"obs_a","type":"decision","pattern":"Use SQLite for caching","status":"observing","observations":1,"confidence":0.33,"evidence":[]}` + "\n" +
			`{"id":"obs_pf","type":"pitfall","pattern":"Clock","status":"observing","observations":1,"confidence":0.33,"evidence":[],"details":"area: internal scheduler and cron timing code paths in the service; issue: tests depend on the wall clock and fail around midnight in CI"}` + "\n"))
	for _, tc := range []struct {
		in      *manifest.Observation
		wantID  string
		created bool
	}{
		{obs("obs_b", manifest.Decision, "  use sqlite; FOR caching! ", false), "obs_a", false},
		{obs("obs_c", manifest.Workflow, "Use SQLite for caching", false), "obs_c", true},
		{obs("obs_dep", manifest.Decision, "Old rule", false), "obs_dep_b", true}, // deprecated never matches, not by id either
		{obs("obs_d", manifest.Decision, "old rule", false), "obs_dep_b", false},  // nor by pattern: the live one does
		{obs("obs_a", manifest.Workflow, "Run the linter", false), "obs_a_b", true},
		{obs("obs_a", manifest.Pitfall, "Another", false), "obs_a_c", true},
		{&manifest.Observation{ID: "obs_p2", Type: manifest.Pitfall, Pattern: "Midnight", Details: "area: Internal Scheduler and Cron timing, CODE paths (the old ones); issue: Tests depend on the wall clock, and FAIL around midnight in nightly jobs"}, "obs_pf", false},
		{&manifest.Observation{ID: "obs_p3", Type: manifest.Pitfall, Pattern: "DST", Details: "area: internal scheduler and cron timing code paths in the service; issue: tests depend on the DST rules of the host"}, "obs_p3", true},
		{&manifest.Observation{ID: "obs_p4", Type: manifest.Decision, Pattern: "Other", Details: "area: internal scheduler and cron timing code paths in the service; issue: tests depend on the wall clock and fail around midnight in CI"}, "obs_p4", true},
	} {
		res := Observe(log, []*manifest.Observation{tc.in}, day0, nil)
		if len(res.IDs) != 1 || res.IDs[0] != tc.wantID || (res.Created == 1) != tc.created {
			t.Errorf("observe %s %q: %+v, want id %s created %v", tc.in.ID, tc.in.Pattern, res, tc.wantID, tc.created)
		}
	}
	if o := log.Find("obs_dep"); o.Observations != 3 || o.Status != manifest.Deprecated {
		t.Errorf("deprecated observation touched: %+v", o)
	}
}

func TestObserveInvalid(t *testing.T) {
	log := manifest.ParseLog(nil)
	res := Observe(log, []*manifest.Observation{
		{Type: manifest.Decision, Pattern: "p"},
		{ID: "obs_t", Pattern: "p"},
		{ID: "obs_u", Type: "lesson", Pattern: "p"},
		{ID: "obs_p", Type: manifest.Decision, Pattern: " \t"},
		{ID: "task_1", Type: manifest.Decision, Pattern: "p"},
		{ID: "obs_ok", Type: manifest.Decision, Pattern: "p"},
		{ID: "obs_$(touch /tmp/x)\x1b[2J", Type: manifest.Decision, Pattern: "p"},
		{ID: "obs_a/../../b", Type: manifest.Decision, Pattern: "p"},
	}, day0, nil)
	if res.Skipped != 7 || res.Created != 1 || len(log.Lines) != 1 {
		t.Fatalf("%+v", res)
	}
	want := []string{"#1: field id", "obs_t: field type", "obs_u: field type", "obs_p: field pattern", `"task_1": field id`,
		`observation "obs_$(touch /tmp/x)[2J": field id: "obs_$(touch /tmp/x)[2J" is not a safe id`, `"obs_a/../../b": field id`}
	for i, w := range want {
		if !strings.Contains(res.Messages[i], w) {
			t.Errorf("message %q does not name %q", res.Messages[i], w)
		}
	}
}

var inputSeeds = []string{
	`{"id":"obs_a","type":"decision","pattern":"p"}`,
	"[{\"id\":\"obs_a\",\"type\":\"decision\",\"pattern\":\"p\"},{\"id\":\"obs_b\",\"type\":\"workflow\",\"pattern\":\"q\",\"x\":{\"y\":1}}]",
	"{\"id\":\"obs_a\",\"type\":\"decision\",\"pattern\":\"p\"}\n{\"id\":\"obs_b\",\"type\":\"pitfall\",\"pattern\":\"q\",\"details\":\"area: a; issue: i\"}\n",
	"{\n  \"id\": \"obs_a\",\n  \"type\": \"decision\",\n  \"pattern\": \"pretty\"\n}\n{\"id\":\"obs_b\"}",
	"\r\n{\"id\":\"obs_a\",\"type\":\"decision\",\"pattern\":\"crlf\"}\r\n",
	"not json at all",
	"{\"id\":\"obs_a\"}\n{\"id\": oops}",
	"[{\"id\":\"obs_a\"}",
	"[1, 2]",
	"null",
	"{\"id\":\"obs_a\",\"evidence\":\"not a list\"}",
	"",
	"[]",
}

func TestParseInput(t *testing.T) {
	for _, tc := range []struct {
		in      string
		n       int
		errLine string // "" = no error; else a substring of the error
	}{
		{inputSeeds[0], 1, ""},
		{inputSeeds[1], 2, ""},
		{inputSeeds[2], 2, ""},
		{inputSeeds[3], 2, ""},
		{inputSeeds[4], 1, ""},
		{inputSeeds[5], 0, "line 1"},
		{inputSeeds[6], 0, "line 2"},
		{"{\"id\":\"obs_a\"}\n{\"id\":\"obs_b\"}\n\n{\"id\": oops}", 0, "line 4"},
		{"\n\n  \n{\"id\":\"obs_a\"}\n{\"id\": oops}", 0, "line 5"},
		{"\n\n{\"id\":\"obs_a\"}\n42\n", 0, "line 4"},
		{inputSeeds[7], 0, "not"},
		{inputSeeds[8], 0, "object"},
		{inputSeeds[9], 0, "object"},
		{inputSeeds[11], 0, "no observations"},
		{inputSeeds[12], 0, ""},
	} {
		got, err := ParseInput([]byte(tc.in))
		if tc.errLine != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errLine) || got != nil {
				t.Errorf("ParseInput(%q) = %d, %v; want an error with %q and nothing", tc.in, len(got), err, tc.errLine)
			}
			continue
		}
		if err != nil || len(got) != tc.n {
			t.Errorf("ParseInput(%q) = %d, %v; want %d observations", tc.in, len(got), err, tc.n)
		}
	}
	got, _ := ParseInput([]byte(inputSeeds[1]))
	if raw, ok := got[1].Extra("x"); !ok || string(raw) != `{"y":1}` {
		t.Errorf("unknown field of an input observation lost: %s %v", raw, ok)
	}
}

// FuzzParseInput: never panics; an error returns nothing (so observe writes
// nothing); success returns non-nil observations that survive a JSON round
// trip.
func FuzzParseInput(f *testing.F) {
	for _, s := range inputSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParseInput(data)
		if err != nil {
			if got != nil {
				t.Fatalf("error %v but %d observations returned", err, len(got))
			}
			return
		}
		for i, o := range got {
			if o == nil {
				t.Fatalf("observation %d is nil", i)
			}
			b, err := json.Marshal(o)
			if err != nil {
				t.Fatalf("observation %d does not encode: %v", i, err)
			}
			var back manifest.Observation
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatalf("observation %d re-encoded as %s does not decode: %v", i, b, err)
			}
			if back.ID != o.ID || back.Type != o.Type || back.Pattern != o.Pattern {
				t.Fatalf("round trip changed the observation: %+v → %+v", o, back)
			}
		}
		// Observing them never panics either.
		Observe(manifest.ParseLog(nil), got, day0, nil)
	})
}

// A suffixed id derived from a longest valid id is still a valid id.
func TestFreeIDStaysValid(t *testing.T) {
	long := "obs_" + strings.Repeat("a", manifest.MaxIDLen-4)
	log := manifest.ParseLog([]byte(`{"id":"` + long + `","type":"decision","pattern":"p","status":"observing","observations":1,"confidence":0.3,"evidence":[]}` + "\n"))
	res := Observe(log, []*manifest.Observation{{ID: long, Type: manifest.Workflow, Pattern: "other"}}, day0, nil)
	if res.Created != 1 || len(res.IDs) != 1 || !manifest.ValidID(res.IDs[0]) || res.IDs[0] == long {
		t.Fatalf("%+v", res)
	}
}

// Normalize's byte-by-byte path for ASCII is the Unicode one on any text:
// the same result for every input (the fuzzer mixes ASCII, the Kelvin sign,
// a dotted capital I, whitespace of every kind and invalid UTF-8).
func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"Use SQLite, for caching!", "  \t Tab\r\nand\vform\ffeed  ", "\u212a8s cluster", "İstanbul", "\xff\xfe bad", "", "   ", "A-Z_a-z 0-9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Normalize(s), normalizeUnicode(s); got != want {
			t.Fatalf("Normalize(%q) = %q, the Unicode path %q", s, got, want)
		}
	})
}

func BenchmarkNormalize(b *testing.B) {
	for b.Loop() {
		Normalize("Run make lint before every push, then update the CHANGELOG (v2)")
	}
}
