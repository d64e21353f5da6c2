package merge

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

func obsLine(fields map[string]any) string {
	base := map[string]any{"id": "obs_a", "type": "workflow", "pattern": "Run the linters before pushing",
		"confidence": 0.33, "observations": 1, "first_seen": "2026-01-02T00:00:00Z", "last_seen": "2026-01-02T00:00:00Z",
		"status": "observing", "evidence": []string{"session 1"}, "details": "make lint", "quality_ok": false}
	for k, v := range fields {
		if v == nil {
			delete(base, k)
			continue
		}
		base[k] = v
	}
	b, _ := json.Marshal(base)
	return string(b)
}

func parsed(t *testing.T, out []byte) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if l == "" {
			continue
		}
		var v map[string]any
		if err := json.Unmarshal([]byte(l), &v); err != nil {
			m["raw:"+l] = nil
			continue
		}
		id, _ := v["id"].(string)
		if _, dup := m[id]; dup {
			t.Fatalf("observation %s twice in\n%s", id, out)
		}
		m[id] = v
	}
	return m
}

func TestLogObservationFields(t *testing.T) {
	tests := []struct {
		name               string
		base, ours, theirs map[string]any // nil base: both sides added the id
		want               map[string]any
	}{
		{
			name:   "sightings add up three-way, times widen, evidence unites",
			base:   map[string]any{"observations": 2, "evidence": []string{"s1", "s2"}},
			ours:   map[string]any{"observations": 3, "last_seen": "2026-01-05T00:00:00Z", "evidence": []string{"s1", "s2", "alice"}},
			theirs: map[string]any{"observations": 4, "first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-04T00:00:00Z", "evidence": []string{"s1", "s2", "bob1", "bob2"}},
			want: map[string]any{"observations": 5.0, "confidence": 0.95, "first_seen": "2026-01-01T00:00:00Z",
				"last_seen": "2026-01-05T00:00:00Z", "evidence": []any{"s1", "s2", "alice", "bob1", "bob2"}},
		},
		{
			name:   "both added the same id: sightings summed, confidence from the formula",
			ours:   map[string]any{"type": "procedural", "observations": 1},
			theirs: map[string]any{"type": "procedural", "observations": 2},
			want:   map[string]any{"observations": 3.0, "confidence": 0.75},
		},
		{
			name:   "evidence keeps the newest ten",
			base:   map[string]any{"evidence": []string{}},
			ours:   map[string]any{"observations": 2, "evidence": []string{"a1", "a2", "a3", "a4", "a5", "a6"}},
			theirs: map[string]any{"observations": 2, "evidence": []string{"b1", "b2", "b3", "b4", "b5", "b6"}},
			want:   map[string]any{"evidence": []any{"a3", "a4", "a5", "a6", "b1", "b2", "b3", "b4", "b5", "b6"}},
		},
		{
			name:   "deprecated wins, with the penalty on the merged confidence and the earliest deprecated_at",
			base:   map[string]any{"status": "created", "observations": 3},
			ours:   map[string]any{"status": "created", "observations": 4},
			theirs: map[string]any{"status": "deprecated", "observations": 3, "confidence": 0.28, "deprecated_at": "2026-01-06T00:00:00Z"},
			want:   map[string]any{"status": "deprecated", "confidence": 0.28, "deprecated_at": "2026-01-06T00:00:00Z", "observations": 4.0},
		},
		{
			name:   "ready beats observing; quality_ok sticky",
			base:   map[string]any{},
			ours:   map[string]any{"status": "ready", "quality_ok": true, "observations": 3},
			theirs: map[string]any{"observations": 2, "evidence": []string{"session 1", "bob"}},
			want:   map[string]any{"status": "ready", "quality_ok": true, "observations": 4.0},
		},
		{
			name:   "a flag one side cleared stays cleared; set on both sides differently it is OR-ed",
			base:   map[string]any{"mayBeStale": true, "staleReason": "code-ref-missing:a.go", "needsReview": true},
			ours:   map[string]any{"mayBeStale": nil, "staleReason": nil, "needsReview": true, "observations": 2},
			theirs: map[string]any{"mayBeStale": true, "staleReason": "code-ref-missing:a.go", "needsReview": true, "softCapExceeded": true},
			want:   map[string]any{"mayBeStale": nil, "staleReason": nil, "needsReview": true, "softCapExceeded": true},
		},
		{
			name:   "unknown fields: ours first, theirs' new ones kept, theirs' change where ours left base",
			base:   map[string]any{"x-team": "core", "x-keep": 1},
			ours:   map[string]any{"x-team": "core", "x-keep": 2, "x-ours": true, "observations": 2},
			theirs: map[string]any{"x-team": "platform", "x-keep": 3, "x-theirs": []int{1}},
			want:   map[string]any{"x-team": "platform", "x-keep": 2.0, "x-ours": true, "x-theirs": []any{1.0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var base string
			if tt.base != nil {
				base = obsLine(tt.base) + "\n"
			}
			out, rep := Log([]byte(base), []byte(obsLine(tt.ours)+"\n"), []byte(obsLine(tt.theirs)+"\n"))
			if rep.Conflict {
				t.Fatalf("conflict: %v", rep.Notes)
			}
			got := parsed(t, out)["obs_a"]
			if got == nil {
				t.Fatalf("obs_a missing from\n%s", out)
			}
			for k, want := range tt.want {
				g, ok := got[k]
				if want == nil {
					if ok {
						t.Errorf("%s = %v, want absent", k, g)
					}
					continue
				}
				if !reflect.DeepEqual(g, want) {
					t.Errorf("%s = %#v, want %#v", k, g, want)
				}
			}
		})
	}
}

func TestLogUnknownFieldOrder(t *testing.T) {
	base := `{"id":"obs_a","type":"workflow","pattern":"p","observations":1,"x-z":1}` + "\n"
	ours := `{"x-first":0,"id":"obs_a","type":"workflow","pattern":"p","observations":2,"x-z":1}` + "\n"
	theirs := `{"id":"obs_a","type":"workflow","pattern":"p","observations":2,"x-z":1,"x-new":"t"}` + "\n"
	out, _ := Log([]byte(base), []byte(ours), []byte(theirs))
	s := string(out)
	if !strings.HasPrefix(s, `{"x-first":0,"id":"obs_a"`) || !strings.Contains(s, `"x-new":"t"`) || strings.Index(s, `"x-z"`) > strings.Index(s, `"x-new"`) {
		t.Fatalf("unknown fields not kept ours first:\n%s", s)
	}
	if !strings.Contains(s, `"observations":3`) {
		t.Fatalf("sightings not summed:\n%s", s)
	}
}

func TestLogLines(t *testing.T) {
	a := obsLine(map[string]any{"id": "obs_a"})
	b := obsLine(map[string]any{"id": "obs_b", "pattern": "Review migrations"})
	c := obsLine(map[string]any{"id": "obs_c", "pattern": "Tag releases"})
	bEdited := obsLine(map[string]any{"id": "obs_b", "pattern": "Review migrations", "details": "edited"})
	cut := `{"id":"obs_cut","type":"pit`
	tests := []struct {
		name               string
		base, ours, theirs []string
		want               []string
	}{
		{"one side adds", []string{a}, []string{a}, []string{a, b}, []string{a, b}},
		{"both add: ours then theirs", []string{a}, []string{a, c}, []string{a, b}, []string{a, c, b}},
		{"theirs removes an unchanged line", []string{a, b}, []string{a, b}, []string{a}, []string{a}},
		{"ours removes an unchanged line", []string{a, b}, []string{a}, []string{a, b}, []string{a}},
		{"removed on one side, changed on the other: kept", []string{a, b}, []string{a}, []string{a, bEdited}, []string{a, bEdited}},
		{"ours changed, theirs untouched: ours' bytes", []string{a, b}, []string{a, bEdited}, []string{a, b}, []string{a, bEdited}},
		{"corrupt line on theirs kept", []string{a}, []string{a}, []string{a, cut}, []string{a, cut}},
		{"corrupt line on ours kept", []string{a}, []string{cut, a}, []string{a, b}, []string{cut, a, b}},
		{"a corrupt line one side removed", []string{a, cut}, []string{a}, []string{a, cut}, []string{a}},
		{"no base, blank lines dropped", nil, []string{a, "", " "}, []string{"", b}, []string{a, b}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			join := func(ls []string) []byte {
				if ls == nil {
					return nil
				}
				return []byte(strings.Join(ls, "\n") + "\n")
			}
			out, rep := Log(join(tt.base), join(tt.ours), join(tt.theirs))
			if string(out) != string(join(tt.want)) {
				t.Fatalf("got\n%s\nwant\n%s", out, join(tt.want))
			}
			if rep.Conflict {
				t.Fatalf("a log merge is never a conflict: %v", rep.Notes)
			}
			if strings.HasPrefix(tt.name, "corrupt line on") && len(rep.Notes) == 0 {
				t.Fatal("a kept corrupt line is not reported")
			}
		})
	}
}

// observationsOf returns id → the merge-relevant facts of each parsable line.
func observationsOf(data []byte) map[string]string {
	out := map[string]string{}
	for _, ln := range manifest.ParseLog(data).Lines {
		if ln.Observation() == nil || ln.Observation().ID == "" {
			continue
		}
		o := ln.Observation()
		out[o.ID] += strings.Join([]string{o.Status, o.FirstSeen, o.LastSeen, jsonStr(o.Observations), jsonStr(o.QualityOK), jsonStr(o.NeedsReview), jsonStr(o.MayBeStale)}, "|") + ";"
	}
	return out
}

func jsonStr(v any) string { b, _ := json.Marshal(v); return string(b) }

func nonBlankLines(data []byte) string {
	var b strings.Builder
	for _, l := range strings.Split(string(data), "\n") {
		if strings.TrimSpace(l) != "" {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

func FuzzLog(f *testing.F) {
	a := obsLine(map[string]any{"id": "obs_a"})
	b := obsLine(map[string]any{"id": "obs_b", "observations": 3, "status": "ready"})
	b2 := obsLine(map[string]any{"id": "obs_b", "observations": 4, "status": "deprecated", "last_seen": "2026-02-01T00:00:00Z"})
	f.Add(a+"\n", a+"\n"+b+"\n", a+"\n"+b2+"\n")
	f.Add("", b+"\n", b2+"\n{broken\n")
	f.Add(a+"\n"+b+"\n", "not json\n", b+"\n")
	f.Add(`{"id":"obs_x","x":1}`+"\n", `{"id":"obs_x","x":2,"observations":2}`+"\n", `{"id":"obs_x","y":3}`+"\n"+`{"id":"obs_x"}`)
	f.Fuzz(func(t *testing.T, base, ours, theirs string) {
		ab, rep := Log([]byte(base), []byte(ours), []byte(theirs))
		// Split by the scan's ids, the merge is the one that decodes
		// every line gives.
		if dec, drep := logWith(splitLogDecoding, []byte(base), []byte(ours), []byte(theirs)); !bytes.Equal(ab, dec) || !reflect.DeepEqual(rep, drep) {
			t.Fatalf("split by the scan:\n%q %+v\ndecoding every line:\n%q %+v", ab, rep, dec, drep)
		}
		ba, _ := Log([]byte(base), []byte(theirs), []byte(ours))
		if x, y := observationsOf(ab), observationsOf(ba); !reflect.DeepEqual(x, y) {
			t.Fatalf("merge(a,b) and merge(b,a) differ:\n%v\n%v", x, y)
		}
		// Merging a side with itself changes nothing (but blank lines).
		self, _ := Log([]byte(base), []byte(ours), []byte(ours))
		if string(self) != nonBlankLines([]byte(ours)) {
			t.Fatalf("merge(a,a) changed a:\n%q\n%q", self, nonBlankLines([]byte(ours)))
		}
		// The merge writes no conflict marker of its own: a marker line in
		// the result is a line one side holds (a line that is not JSON is
		// kept verbatim, never dropped).
		given := map[string]bool{}
		for _, side := range []string{base, ours, theirs} {
			for _, l := range strings.Split(side, "\n") {
				given[l] = true
			}
		}
		for _, l := range strings.Split(string(ab), "\n") {
			if (strings.HasPrefix(l, "<<<<<<<") || strings.HasPrefix(l, ">>>>>>>")) && !given[l] {
				t.Fatalf("conflict marker in a JSONL merge: %q", ab)
			}
		}
	})
}

// splitLogDecoding is splitLog as it was: every line decoded for its id.
func splitLogDecoding(data []byte) logSide {
	s := logSide{byID: map[string]*manifest.Line{}, raw: map[string]bool{}}
	for _, ln := range manifest.ParseLog(data).Lines {
		if len(bytes.TrimSpace(ln.Raw())) == 0 {
			continue
		}
		if o := ln.Observation(); o != nil && o.ID != "" {
			if _, dup := s.byID[o.ID]; !dup {
				s.byID[o.ID] = ln
				s.order = append(s.order, logItem{id: o.ID, raw: ln.Raw()})
				continue
			}
		}
		s.raw[string(ln.Raw())] = true
		s.order = append(s.order, logItem{raw: ln.Raw()})
	}
	return s
}

// BenchmarkLog merges two sides of a 50,000-line log that each changed
// and added a line (the size where a merge took a second: most lines are
// the same on every side, and are not decoded).
func BenchmarkLog(b *testing.B) {
	var base strings.Builder
	for i := range 50000 {
		base.WriteString(obsLine(map[string]any{"id": fmt.Sprintf("obs_%d", i), "details": "see src/server.go"}) + "\n")
	}
	ours := strings.Replace(base.String(), `"id":"obs_100",`, `"id":"obs_100","x_ours":1,`, 1) + obsLine(map[string]any{"id": "obs_ours"}) + "\n"
	theirs := strings.Replace(base.String(), `"id":"obs_200",`, `"id":"obs_200","x_theirs":1,`, 1) + obsLine(map[string]any{"id": "obs_theirs"}) + "\n"
	for b.Loop() {
		Log([]byte(base.String()), []byte(ours), []byte(theirs))
	}
}
