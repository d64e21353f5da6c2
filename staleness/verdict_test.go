package staleness

import (
	"reflect"
	"testing"

	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
)

func TestJudge(t *testing.T) {
	log := manifest.ParseLog([]byte(`{"id":"obs_de","type":"decision","pattern":"Use SQLite","status":"created"}
{"id":"obs_pf","type":"pitfall","pattern":"p","status":"ready"}
{"id":"obs_wf","type":"workflow","pattern":"w","status":"created"}
{"id":"obs_new","type":"workflow","pattern":"n","status":"observing"}
{"id":"obs_ok","type":"workflow","pattern":"r","status":"ready","resolved":{"at":"2026-01-01T00:00:00Z","reason":"fine","staleReasons":["code-ref-missing:src/a.go"]}}
`))
	f := func(id, ref string) Finding { return Finding{ID: id, Ref: ref, Reason: "missing"} }
	tests := []struct {
		name           string
		in             []Finding
		block, warn    map[string][]string // ref → ids
		findingsKeptIn int
	}{
		{"rendered decision judged through its ADR only",
			[]Finding{f("ADR-001", "src/db.go"), f("obs_de", "src/db.go")},
			map[string][]string{"src/db.go": {"ADR-001"}}, nil, 1},
		{"fixed ADR: the observation behind it is not reported",
			[]Finding{f("obs_de", "src/db.go")}, nil, nil, 0},
		{"observing warns, never blocks",
			[]Finding{f("obs_new", "src/u.go")}, nil, map[string][]string{"src/u.go": {"obs_new"}}, 1},
		{"one reference, several entries: reported once",
			[]Finding{f("PF-002", "src/c.go"), f("obs_pf", "src/c.go"), f("obs_wf", "src/c.go"), f("obs_new", "src/c.go")},
			map[string][]string{"src/c.go": {"PF-002", "obs_pf", "obs_wf", "obs_new"}}, nil, 4},
		{"a resolved reference is not reported again, another one is",
			[]Finding{f("obs_ok", "src/a.go"), f("obs_ok", "src/b.go")},
			map[string][]string{"src/b.go": {"obs_ok"}}, nil, 1},
		{"unknown id blocks (a hand-written id is someone's text)",
			[]Finding{f("obs_gone", "x.go")}, map[string][]string{"x.go": {"obs_gone"}}, nil, 1},
	}
	// A reference in a Markdown source is fixed in that file: the
	// observation commands (edit, resolve) do not know it.
	src := Finding{ID: "site/content/docgen/_index.md", File: "site/content/docgen/_index.md", Heading: "Documentation generation",
		Ref: "man.md", Reason: "missing", RenamedTo: "site/content/docgen/manpages.md"}
	if v := Judge([]Finding{src}, log); len(v.Blocking) != 1 || len(v.Blocking[0].Fix) != 1 ||
		v.Blocking[0].Fix[0] != "update the reference in site/content/docgen/_index.md (now site/content/docgen/manpages.md)" {
		t.Errorf("a source's fix: %+v", v.Blocking)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := Judge(tt.in, log)
			got := func(is []Issue) map[string][]string {
				if len(is) == 0 {
					return nil
				}
				m := map[string][]string{}
				for _, i := range is {
					if _, dup := m[i.Ref]; dup {
						t.Errorf("%s reported twice", i.Ref)
					}
					if len(i.Fix) != len(i.IDs) {
						t.Errorf("%s: %d fixes for %d ids", i.Ref, len(i.Fix), len(i.IDs))
					}
					m[i.Ref] = i.IDs
				}
				return m
			}
			if b := got(v.Blocking); !reflect.DeepEqual(b, tt.block) {
				t.Errorf("blocking %v, want %v", b, tt.block)
			}
			if w := got(v.Warnings); !reflect.DeepEqual(w, tt.warn) {
				t.Errorf("warnings %v, want %v", w, tt.warn)
			}
			if len(v.Findings) != tt.findingsKeptIn {
				t.Errorf("kept %d findings, want %d", len(v.Findings), tt.findingsKeptIn)
			}
		})
	}
	if !lifecycle.Resolved(log.Find("obs_ok"), ReasonPrefix+"src/a.go") {
		t.Fatal("fixture: obs_ok's resolution not read")
	}
}
