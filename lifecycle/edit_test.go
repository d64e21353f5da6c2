package lifecycle

import (
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

func obsFrom(t *testing.T, line string) *manifest.Observation {
	t.Helper()
	o := manifest.ParseLog([]byte(line + "\n")).Observations()
	if len(o) != 1 {
		t.Fatalf("fixture %s does not parse", line)
	}
	return o[0]
}

func TestEdit(t *testing.T) {
	const line = `{"id":"obs_a","type":"pitfall","pattern":"Retries","confidence":0.5,"status":"ready","details":"area: q; issue: i","team":"kept"}`
	s := func(v string) *string { return &v }
	tests := []struct {
		name                  string
		c                     Change
		wantErr               string
		wantPattern, wantDets string
	}{
		{"details only", Change{Details: s("area: q; issue: twice")}, "", "Retries", "area: q; issue: twice"},
		{"pattern only", Change{Pattern: s("Retries must be idempotent")}, "", "Retries must be idempotent", "area: q; issue: i"},
		{"both", Change{Pattern: s("P"), Details: s("")}, "", "P", ""},
		{"nothing", Change{}, "nothing to change", "Retries", "area: q; issue: i"},
		{"blank pattern", Change{Pattern: s(" \n\t")}, "field pattern: missing", "Retries", "area: q; issue: i"},
		{"NUL", Change{Details: s("a\x00b")}, "field details: contains a NUL byte", "Retries", "area: q; issue: i"},
		{"too long", Change{Details: s(strings.Repeat("x", MaxEditBytes+1))}, "field details:", "Retries", "area: q; issue: i"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := obsFrom(t, line)
			err := Edit(o, tt.c)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err %v, want %q", err, tt.wantErr)
			}
			if o.Pattern != tt.wantPattern || o.Details != tt.wantDets {
				t.Errorf("pattern %q details %q", o.Pattern, o.Details)
			}
			if v, ok := o.Extra("team"); !ok || string(v) != `"kept"` {
				t.Errorf("unknown field lost: %s", v)
			}
		})
	}
}

func TestParseChange(t *testing.T) {
	for in, want := range map[string]string{
		`{"details":"d"}`:               "",
		`{"pattern":"p","details":"d"}`: "",
		`{"status":"ready"}`:            "field status: edit changes only details and pattern",
		`{"details":3}`:                 "field details: not a string",
		`details=d`:                     "not a JSON object",
		`[]`:                            "not a JSON object",
	} {
		_, err := ParseChange([]byte(in))
		if want == "" && err != nil || want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: err %v, want %q", in, err, want)
		}
	}
}

func TestResolve(t *testing.T) {
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	o := obsFrom(t, `{"id":"obs_a","type":"workflow","pattern":"p","status":"ready","needsReview":true,"mayBeStale":true,"staleReason":"code-ref-missing:a.go"}`)
	if _, err := Resolve(o, " ", "", now); err == nil {
		t.Fatal("resolve without a reason accepted")
	}
	if ok, err := Resolve(o, "fine", "", now); !ok || err != nil {
		t.Fatalf("resolve: %v %v", ok, err)
	}
	if o.NeedsReview || o.MayBeStale || o.StaleReason != "" || !Resolved(o, "code-ref-missing:a.go") {
		t.Fatalf("after resolve: %+v", o)
	}
	if ok, _ := Resolve(o, "again", "", now); ok {
		t.Fatal("nothing to resolve, yet changed")
	}
	// A reference named before anything marked it; the first one is kept.
	if ok, _ := Resolve(o, "also fine", "code-ref-missing:b.go", now); !ok {
		t.Fatal("resolve --ref did nothing")
	}
	if !Resolved(o, "code-ref-missing:a.go") || !Resolved(o, "code-ref-missing:b.go") || Resolved(o, "code-ref-missing:c.go") {
		t.Fatal("resolutions not accumulated")
	}
}

func FuzzParseChange(f *testing.F) {
	for _, s := range []string{`{"details":"d"}`, `{"pattern":"p","details":""}`, `{"x":1}`, `[]`, `"s"`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseChange(data)
		if err != nil {
			return
		}
		o := &manifest.Observation{ID: "obs_f", Type: manifest.Workflow, Pattern: "p"}
		if err := Edit(o, c); err == nil && strings.TrimSpace(o.Pattern) == "" {
			t.Fatalf("edit accepted a blank pattern from %q", data)
		}
	})
}
