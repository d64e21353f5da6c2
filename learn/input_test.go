package learn

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeOutcome(t *testing.T) {
	good := `{"run_id":"r1","success":true,"duration_ms":1200,"retry_count":0,"error_count":1,"quality":0.8,
		"cited":["ADR-001","PF-12","obs_abc"],"failure_type":"timeout","strategy":"tdd","ts":"2026-03-01T12:00:00Z","extra":1}`
	o, err := DecodeOutcome([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if o.RunID != "r1" || !o.Success || o.DurationMS != 1200 || o.ErrorCount != 1 || !o.ErrorCountSet || o.Quality != 0.8 ||
		!o.QualitySet || len(o.Cited) != 3 || o.FailureType != "timeout" || o.Strategy != "tdd" || !o.TS.Equal(t0) {
		t.Fatalf("decoded %+v", o)
	}
	min := `{"run_id":"r1","success":false,"duration_ms":0,"retry_count":2}`
	if o, err := DecodeOutcome([]byte(min)); err != nil || o.ErrorCountSet || o.QualitySet || o.Cited != nil && len(o.Cited) != 0 {
		t.Fatalf("minimal: %+v %v", o, err)
	}
	if o, err := DecodeOutcome([]byte(`{"run_id":"r","success":true,"duration_ms":1e3,"retry_count":0,"quality":null,"error_count":null}`)); err != nil || o.DurationMS != 1000 || o.QualitySet || o.ErrorCountSet {
		t.Fatalf("1e3 / nulls: %+v %v", o, err)
	}
	for _, empty := range []string{"", " \n\t"} { // a script's </dev/null
		if _, err := DecodeOutcome([]byte(empty)); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("empty input %q: %v, want it called empty", empty, err)
		}
		if _, err := DecodeVerdict([]byte(empty)); err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("empty verdict %q: %v, want it called empty", empty, err)
		}
	}
	base := map[string]string{"run_id": `"r1"`, "success": `true`, "duration_ms": `10`, "retry_count": `0`}
	build := func(override map[string]string, drop string) string {
		var parts []string
		for _, k := range []string{"run_id", "success", "duration_ms", "retry_count", "error_count", "quality", "cited", "failure_type", "strategy", "ts"} {
			v, ok := base[k]
			if o, ok2 := override[k]; ok2 {
				v, ok = o, true
			}
			if !ok || k == drop {
				continue
			}
			parts = append(parts, `"`+k+`":`+v)
		}
		return "{" + strings.Join(parts, ",") + "}"
	}
	cases := []struct {
		name     string
		override map[string]string
		drop     string
		field    string
	}{
		{"missing run_id", nil, "run_id", "run_id"},
		{"empty run_id", map[string]string{"run_id": `"  "`}, "", "run_id"},
		{"run_id number", map[string]string{"run_id": `7`}, "", "run_id"},
		{"missing success", nil, "success", "success"},
		{"success string", map[string]string{"success": `"yes"`}, "", "success"},
		{"success null", map[string]string{"success": `null`}, "", "success"},
		{"missing duration", nil, "duration_ms", "duration_ms"},
		{"negative duration", map[string]string{"duration_ms": `-5`}, "", "duration_ms"},
		{"fractional duration", map[string]string{"duration_ms": `1.5`}, "", "duration_ms"},
		{"duration string", map[string]string{"duration_ms": `"10"`}, "", "duration_ms"},
		{"missing retry_count", nil, "retry_count", "retry_count"},
		{"negative retry_count", map[string]string{"retry_count": `-1`}, "", "retry_count"},
		{"retry_count bool", map[string]string{"retry_count": `true`}, "", "retry_count"},
		{"negative error_count", map[string]string{"error_count": `-1`}, "", "error_count"},
		{"error_count string", map[string]string{"error_count": `"2"`}, "", "error_count"},
		{"quality above 1", map[string]string{"quality": `1.2`}, "", "quality"},
		{"quality below 0", map[string]string{"quality": `-0.1`}, "", "quality"},
		{"quality string", map[string]string{"quality": `"high"`}, "", "quality"},
		{"cited not array", map[string]string{"cited": `"ADR-001"`}, "", "cited"},
		{"cited bad id", map[string]string{"cited": `["ADR-001","nonsense"]`}, "", "cited[1]"},
		{"cited number", map[string]string{"cited": `[1]`}, "", "cited[0]"},
		{"failure_type not a word", map[string]string{"failure_type": `"Time Out"`}, "", "failure_type"},
		{"failure_type number", map[string]string{"failure_type": `3`}, "", "failure_type"},
		{"strategy object", map[string]string{"strategy": `{}`}, "", "strategy"},
		{"ts not a time", map[string]string{"ts": `"yesterday"`}, "", "ts"},
	}
	for _, c := range cases {
		in := build(c.override, c.drop)
		_, err := DecodeOutcome([]byte(in))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: %s → %v, want a FieldError on %q", c.name, in, err, c.field)
		} else if !strings.Contains(err.Error(), `"`+c.field+`"`) {
			t.Errorf("%s: message %q does not name the field", c.name, err)
		}
	}
	for _, in := range []string{``, `[]`, `null`, `{"run_id":"r1"} {}`, `{`, `"x"`} {
		if _, err := DecodeOutcome([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

func TestDecodeVerdict(t *testing.T) {
	v, err := DecodeVerdict([]byte(`{"run_id":"r","verdict":"pass","role":"qa","evidence_level":2,"false_positives":["x"],"cited":["PF-1"]}`))
	if err != nil || !v.Pass || v.EvidenceLevel != 2 || v.Role != "qa" || len(v.FalsePositives) != 1 || v.Cited[0] != "PF-1" {
		t.Fatalf("%+v %v", v, err)
	}
	for in, field := range map[string]string{
		`{"verdict":"PASS","evidence_level":1}`:                                     "run_id",
		`{"run_id":"r","evidence_level":1}`:                                         "verdict",
		`{"run_id":"r","verdict":"MAYBE","evidence_level":1}`:                       "verdict",
		`{"run_id":"r","verdict":"FAIL"}`:                                           "evidence_level",
		`{"run_id":"r","verdict":"FAIL","evidence_level":0}`:                        "evidence_level",
		`{"run_id":"r","verdict":"FAIL","evidence_level":4}`:                        "evidence_level",
		`{"run_id":"r","verdict":"FAIL","evidence_level":1,"false_positives":"x"}`:  "false_positives",
		`{"run_id":"r","verdict":"FAIL","evidence_level":1,"false_positives":[""]}`: "false_positives[0]",
		`{"run_id":"r","verdict":"FAIL","evidence_level":1,"cited":["bad id"]}`:     "cited[0]",
		`{"run_id":"r","verdict":"FAIL","evidence_level":1,"role":false}`:           "role",
	} {
		_, err := DecodeVerdict([]byte(in))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s → %v, want field %q", in, err, field)
		}
	}
}
