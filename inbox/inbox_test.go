package inbox

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/citation"
	"github.com/learnwatch/learnwatch/manifest"
)

func obs(t *testing.T, js string) *manifest.Observation {
	t.Helper()
	var o manifest.Observation
	if err := json.Unmarshal([]byte(js), &o); err != nil {
		t.Fatal(err)
	}
	return &o
}

func readLog(t *testing.T, root string) *manifest.Log {
	t.Helper()
	l, err := manifest.ReadLog(manifest.PathsFor(root).Log)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func newRoot(t *testing.T) string {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// Items queued by several writers are merged in queue order, each once;
// the files and the drain's record in the log are gone afterwards.
func TestDrainMergesInOrderOnce(t *testing.T) {
	root := newRoot(t)
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	deploy := `{"id":"obs_deploy","type":"workflow","pattern":"deploy with make release","evidence":["%s"]}`
	for i, ev := range []string{"first", "second", "third"} {
		o := obs(t, strings.Replace(deploy, "%s", ev, 1))
		if _, err := Enqueue(root, t0.Add(time.Duration(i)*time.Hour), []*manifest.Observation{o}); err != nil {
			t.Fatal(err)
		}
	}
	pit := obs(t, `{"id":"obs_cache","type":"pitfall","pattern":"cache key ignores the locale","details":"area: cache; issue: locale"}`)
	if _, err := Enqueue(root, t0, []*manifest.Observation{pit}); err != nil {
		t.Fatal(err)
	}
	if d, _ := Stat(root); d.Items != 4 {
		t.Fatalf("depth %d, want 4", d.Items)
	}
	res, err := Drain(root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Drained != 4 || res.Observations != 4 || res.Completed != 0 {
		t.Fatalf("drain result %+v", res)
	}
	l := readLog(t, root)
	o := l.Find("obs_deploy")
	if o == nil || o.Observations != 3 || !slices.Equal(o.Evidence, []string{"first", "second", "third"}) {
		t.Fatalf("obs_deploy = %+v", o)
	}
	if o.FirstSeen != "2026-01-05T00:00:00Z" || o.LastSeen != "2026-01-05T02:00:00Z" {
		t.Errorf("seen %s..%s: the queued command's clock must be used", o.FirstSeen, o.LastSeen)
	}
	if l.Find("obs_cache") == nil {
		t.Error("obs_cache missing")
	}
	b, _ := os.ReadFile(manifest.PathsFor(root).Log)
	if strings.Contains(string(b), Field) {
		t.Errorf("the drain's record is left in the log:\n%s", b)
	}
	if es, _ := List(root); len(es) != 0 {
		t.Errorf("items left: %v", es)
	}
	// A second drain has nothing to do and writes nothing.
	fi, _ := os.Stat(manifest.PathsFor(root).Log)
	if res, err := Drain(root); err != nil || res.Drained != 0 {
		t.Fatalf("second drain: %+v %v", res, err)
	}
	if fi2, _ := os.Stat(manifest.PathsFor(root).Log); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("an empty drain rewrote the log")
	}
}

// The states a drain killed at each step leaves behind: the next drain
// completes it without losing or double-counting a sighting.
func TestDrainAfterCrash(t *testing.T) {
	const id = "item-20260104T000000Z-000000001-7-1"
	base := `{"id":"obs_a","type":"workflow","pattern":"p","confidence":0.66,"observations":2,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","status":"observing","evidence":["x"],"details":"","quality_ok":false`
	item := `{"v":1,"id":"` + id + `","kind":"observe","queued_at":"2026-01-04T00:00:00Z","now":"2026-01-04T00:00:00Z","observations":[{"id":"obs_a","type":"workflow","pattern":"p","evidence":["y"]}]}`
	cases := []struct {
		name      string
		log       string
		file      bool
		wantCount int
		completed int
	}{
		{"killed before the log write", base + "}", true, 3, 0},
		{"killed after the log write, before the removal", base + `,"` + Field + `":["` + id + `"]}`, true, 2, 1},
		{"killed after the removal, before the prune", base + `,"` + Field + `":["` + id + `"]}`, false, 2, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			p := manifest.PathsFor(root)
			if err := os.WriteFile(p.Log, []byte(c.log+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if c.file {
				if err := os.MkdirAll(Path(root), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(Path(root), id+".json"), []byte(item), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// The drain killed between its removal and its prune left
			// its marker: the next drain prunes with no item queued.
			if !c.file {
				if err := os.MkdirAll(Path(root), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(Path(root), pruneMarker), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res, err := Drain(root)
			if err != nil {
				t.Fatal(err)
			}
			if res.Completed != c.completed {
				t.Errorf("completed %d, want %d", res.Completed, c.completed)
			}
			l := readLog(t, root)
			if o := l.Find("obs_a"); o == nil || o.Observations != c.wantCount {
				t.Fatalf("obs_a = %+v, want %d sightings", o, c.wantCount)
			}
			b, _ := os.ReadFile(p.Log)
			if strings.Contains(string(b), Field) {
				t.Errorf("record left in the log:\n%s", b)
			}
			if es, _ := List(root); len(es) != 0 {
				t.Errorf("items left: %v", es)
			}
			if _, err := os.Stat(filepath.Join(Path(root), pruneMarker)); err == nil {
				t.Error("prune marker left")
			}
		})
	}
}

// An item that cannot be read is set aside, never deleted; the others are
// drained.
func TestDrainSetsAsideBadItems(t *testing.T) {
	root := newRoot(t)
	if err := os.MkdirAll(Path(root), 0o755); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(Path(root), "item-20260101T000000Z-000000001-1-1.json")
	if err := os.WriteFile(bad, []byte(`{"v":1,"id":"item-other","kind":"observe"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(root, time.Now(), []*manifest.Observation{obs(t, `{"id":"obs_b","type":"decision","pattern":"use sqlite"}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := Drain(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rejected) != 1 || res.Drained != 1 {
		t.Fatalf("result %+v", res)
	}
	if _, err := os.Stat(filepath.Join(Path(root), "rejected-item-20260101T000000Z-000000001-1-1.json")); err != nil {
		t.Errorf("bad item not kept: %v", err)
	}
	if d, _ := Stat(root); d.Items != 0 || d.Rejected != 1 {
		t.Errorf("depth %+v", d)
	}
}

// The inbox is never followed through a symlink, nor created under a
// .memory that is one.
func TestSymlinksRefused(t *testing.T) {
	for _, which := range []string{".memory/inbox", ".memory"} {
		t.Run(which, func(t *testing.T) {
			root := t.TempDir()
			outside := t.TempDir()
			if which == ".memory/inbox" {
				if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Symlink(outside, filepath.Join(root, which)); err != nil {
				t.Fatal(err)
			}
			_, err := Enqueue(root, time.Now(), []*manifest.Observation{obs(t, `{"id":"obs_b","type":"decision","pattern":"use sqlite"}`)})
			if !errors.Is(err, ErrNotDirectory) {
				t.Errorf("Enqueue: %v, want ErrNotDirectory", err)
			}
			if _, err := Drain(root); !errors.Is(err, ErrNotDirectory) {
				t.Errorf("Drain: %v, want ErrNotDirectory", err)
			}
			if des, _ := os.ReadDir(outside); len(des) != 0 {
				t.Errorf("wrote through the symlink: %v", des)
			}
		})
	}
}

// Names sort in queuing order, also within one nanosecond-less clock tick.
func TestNamesOrdered(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 23, 59, 59, 999_999_999, time.UTC)
	names := []string{name(t0.Add(-time.Second)), name(t0), name(t0.Add(time.Nanosecond)), name(t0.Add(time.Hour))}
	if !slices.IsSorted(names) {
		t.Errorf("not sorted: %v", names)
	}
	if a, b := name(t0), name(t0); a == b {
		t.Errorf("two names for one instant are equal: %s", a)
	}
}

func TestParse(t *testing.T) {
	const id = "item-20260101T000000Z-000000001-1-1"
	cases := []struct {
		in, err string
	}{
		{`{"v":1,"id":"` + id + `","kind":"observe","observations":[{"id":"o","type":"decision","pattern":"p"}]}`, ""},
		{`{"v":1,"id":"` + id + `","kind":"observe","observations":[null]}`, "observation 1 is null"},
		{`{"v":2,"id":"` + id + `","kind":"observe"}`, "version 2"},
		{`{"v":1,"id":"item-x","kind":"observe"}`, `id "item-x"`},
		{`{"v":1,"id":"` + id + `","kind":"cite"}`, `cite item without citations`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":2,"PF-010":1}}`, ""},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"stretch":{"session":"s1","transcript":"/t/s.jsonl","from":10,"to":90}}`, ""},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-1":1}}`, `not a knowledge id`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"../x":1}}`, `not a knowledge id`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":0}}`, `out of range`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":-3}}`, `out of range`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"stretch":{"session":"s1","transcript":"rel.jsonl","from":0,"to":9}}`, `absolute path`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"stretch":{"session":"s1","transcript":"/t","from":9,"to":9}}`, `range`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"stretch":{"transcript":"/t","from":0,"to":9}}`, `no session`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"events":[{"ts":"2026-01-05T00:00:00Z","target":"ADR-001","kind":"cited","value":1}]}`, ""},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"events":[{"ts":"2026-01-05T00:00:00Z","target":"ADR-002","kind":"cited","value":1}]}`, `not a citation of the item`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"events":[{"ts":"2026-01-05T00:00:00Z","target":"ADR-001","kind":"deleted","value":1}]}`, `not a citation of the item`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"outcome":{"run_id":"r"}}`, `with an outcome`},
		{`{"v":1,"id":"` + id + `","kind":"observe","cites":{"ADR-001":1}}`, `observe item with citations`},
		{`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"observations":[{"id":"o","type":"decision","pattern":"p"}]}`, `with observations`},
		{`[1,2]`, "not an inbox item"},
		{`{"v":1,"id":"` + id + `","kind":"observe","observations":[{"id":1}]}`, "not an inbox item"},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in), id)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("Parse(%s) = %v, want %q", c.in, err, c.err)
		}
	}
}

func FuzzParse(f *testing.F) {
	const id = "item-20260101T000000Z-000000001-1-1"
	f.Add([]byte(`{"v":1,"id":"` + id + `","kind":"observe","observations":[{"id":"o","type":"decision","pattern":"p","x":{"a":[1]}}]}`))
	f.Add([]byte(`{"v":1,"id":"` + id + `","kind":"observe","observations":[null]}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":2,"PF-010":1}}`))
	f.Add([]byte(`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":1},"stretch":{"session":"s1","transcript":"/t/s.jsonl","from":10,"to":90}}`))
	f.Add([]byte(`{"v":1,"id":"` + id + `","kind":"cite","cites":{"ADR-001":0,"x":1},"stretch":{"session":"","transcript":"t","from":-1,"to":-2}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		it, err := Parse(b, id)
		if err != nil {
			return
		}
		// What parses can be merged without a panic, and re-encodes to an
		// item that parses to the same observations.
		b2, err := json.Marshal(it)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		it2, err := Parse(b2, id)
		if err != nil || len(it2.Observations) != len(it.Observations) {
			t.Fatalf("round trip: %v (%d vs %d)", err, len(it2.Observations), len(it.Observations))
		}
		for _, o := range it.Observations {
			_ = o.Validate()
		}
		// A cite item that parses can be applied: knowledge ids only,
		// positive bounded counts, a stretch with a non-empty range.
		if !maps.Equal(it2.Cites, it.Cites) {
			t.Fatalf("cites round trip: %v vs %v", it2.Cites, it.Cites)
		}
		for id, n := range it.Cites {
			if !citation.ValidID(id) || n < 1 || n > citation.MaxCount {
				t.Fatalf("accepted cites %q: %d", id, n)
			}
		}
		if s := it.Stretch; s != nil && (s.To <= s.From || s.From < 0 || !filepath.IsAbs(s.Transcript)) {
			t.Fatalf("accepted stretch %+v", *s)
		}
		if it.Kind == KindCite && len(it.Cites) == 0 {
			t.Fatal("accepted a cite item without citations")
		}
		u := manifest.NewUsage()
		citation.AddCites(u, it.Cites, time.Unix(0, 0))
		if _, err := u.Encode(); err != nil {
			t.Fatalf("usage with the item's counts: %v", err)
		}
	})
}

// An outcome item drained by a drain killed after the outcome append, or
// after the feedback append, is completed without a second line; a run
// recorded directly (with its feedback) before the item is not doubled.
func TestDrainOutcomeOnce(t *testing.T) {
	const line = `{"run_id":"r1","success":true,"duration_ms":1000,"retry_count":0,"error_count":0,"quality":1,"cited":["ADR-001"],"ts":"2026-01-05T00:00:00Z"}`
	const ev = `{"ts":"2026-01-05T00:00:00Z","target":"ADR-001","kind":"outcome","value":1,"source":"outcome:r1","type":"decision"}`
	cases := []struct {
		name             string
		outcomes, fb     string // before the drain; fb may name the item
		wantOut, wantEvs int
	}{
		{"fresh", "", "", 1, 1},
		{"killed after the outcome append", line + "\n", "", 1, 1},
		{"killed after the feedback append", line + "\n", strings.Replace(ev, `}`, `,"pass":"ITEM"}`, 1) + "\n", 1, 1},
		{"run recorded directly before", line + "\n", ev + "\n", 1, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			it, err := EnqueueOutcome(root, time.Now(), json.RawMessage(line), []json.RawMessage{json.RawMessage(ev)})
			if err != nil {
				t.Fatal(err)
			}
			mem := filepath.Join(root, ".memory")
			if c.outcomes != "" {
				os.WriteFile(filepath.Join(mem, "outcomes.jsonl"), []byte(c.outcomes), 0o644)
			}
			if c.fb != "" {
				os.WriteFile(filepath.Join(mem, "feedback.jsonl"), []byte(strings.ReplaceAll(c.fb, "ITEM", it.ID)), 0o644)
			}
			if _, err := Drain(root); err != nil {
				t.Fatal(err)
			}
			outs, _ := os.ReadFile(filepath.Join(mem, "outcomes.jsonl"))
			fb, _ := os.ReadFile(filepath.Join(mem, "feedback.jsonl"))
			if n := strings.Count(string(outs), `"run_id":"r1"`); n != c.wantOut {
				t.Errorf("%d outcome lines, want %d", n, c.wantOut)
			}
			if n := strings.Count(string(fb), `"source":"outcome:r1"`); n != c.wantEvs {
				t.Errorf("%d feedback lines, want %d:\n%s", n, c.wantEvs, fb)
			}
			if es, _ := List(root); len(es) != 0 {
				t.Errorf("items left: %v", es)
			}
		})
	}
}

const usageDevflow = `{
  "version": 1,
  "generator": {"name": "devflow"},
  "entries": {
    "ADR-001": {"cites": 2, "last_cited": null, "created": "2024-01-01T00:00:00Z"}
  }
}
`

func usageCites(t *testing.T, root string) (map[string]int, *manifest.Usage) {
	t.Helper()
	u, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for id := range u.Entries {
		m[id], _ = u.Cites(id)
	}
	return m, u
}

// A cite item is added to the usage file exactly once, whatever step a
// drain was killed at: the item id recorded in the usage file in the same
// write as the counts says it was applied. The session's offset moves to
// the stretch's end; other tools' keys are kept; the record is pruned.
func TestDrainCitesOnce(t *testing.T) {
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	stretch := &citation.Stretch{Session: "s1", Transcript: "/home/u/.claude/s1.jsonl", From: 0, To: 420}
	cases := []struct {
		name string
		// crash prepares the state a drain killed at some step left.
		crash func(t *testing.T, root string, it Item)
	}{
		{"fresh", func(*testing.T, string, Item) {}},
		{"killed after the usage write", func(t *testing.T, root string, it Item) {
			u, _ := manifest.ReadUsage(manifest.PathsFor(root).Usage)
			citation.AddCites(u, it.Cites, t0)
			setUsageIDs(u, []string{it.ID})
			if err := manifest.WriteUsage(manifest.PathsFor(root).Usage, u); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(Path(root), pruneMarker), nil, 0o644)
		}},
		{"killed after the offsets write", func(t *testing.T, root string, it Item) {
			u, _ := manifest.ReadUsage(manifest.PathsFor(root).Usage)
			citation.AddCites(u, it.Cites, t0)
			setUsageIDs(u, []string{it.ID})
			manifest.WriteUsage(manifest.PathsFor(root).Usage, u)
			os.WriteFile(filepath.Join(Path(root), pruneMarker), nil, 0o644)
			if err := citation.Advance(root, []citation.Stretch{*it.Stretch}, t0); err != nil {
				t.Fatal(err)
			}
		}},
		{"killed after the feedback append", func(t *testing.T, root string, it Item) {
			u, _ := manifest.ReadUsage(manifest.PathsFor(root).Usage)
			citation.AddCites(u, it.Cites, t0)
			setUsageIDs(u, []string{it.ID})
			manifest.WriteUsage(manifest.PathsFor(root).Usage, u)
			os.WriteFile(filepath.Join(Path(root), pruneMarker), nil, 0o644)
			citation.Advance(root, []citation.Stretch{*it.Stretch}, t0)
			if _, err := citation.AppendEvents(root, it.ID, it.Offset, it.Events); err != nil {
				t.Fatal(err)
			}
		}},
		{"killed after removing the item", func(t *testing.T, root string, it Item) {
			u, _ := manifest.ReadUsage(manifest.PathsFor(root).Usage)
			citation.AddCites(u, it.Cites, t0)
			setUsageIDs(u, []string{it.ID})
			manifest.WriteUsage(manifest.PathsFor(root).Usage, u)
			os.WriteFile(filepath.Join(Path(root), pruneMarker), nil, 0o644)
			citation.Advance(root, []citation.Stretch{*it.Stretch}, t0)
			citation.AppendEvents(root, it.ID, it.Offset, it.Events)
			os.Remove(filepath.Join(Path(root), it.ID+suffix))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			os.WriteFile(manifest.PathsFor(root).Usage, []byte(usageDevflow), 0o644)
			it, err := EnqueueCite(root, t0, map[string]int{"ADR-001": 3, "PF-004": 1}, stretch)
			if err != nil {
				t.Fatal(err)
			}
			c.crash(t, root, it)
			if _, err := Drain(root); err != nil {
				t.Fatal(err)
			}
			got, u := usageCites(t, root)
			if want := map[string]int{"ADR-001": 5, "PF-004": 1}; !maps.Equal(got, want) {
				t.Errorf("cites %v, want %v", got, want)
			}
			if _, ok := u.Extra(Field); ok {
				t.Errorf("the drain's record %s is left in the usage file", Field)
			}
			if g, ok := u.Extra("generator"); !ok || !strings.Contains(string(g), "devflow") {
				t.Errorf("another tool's top-level key lost: %s", g)
			}
			offs, _ := citation.ReadOffsets(root)
			if o := offs.Start("s1", stretch.Transcript); o != 420 {
				t.Errorf("session offset %d, want 420", o)
			}
			// One helpful "cited" event per entry, carrying the item id.
			fb, _ := os.ReadFile(filepath.Join(root, ".memory", "feedback.jsonl"))
			for _, target := range []string{"ADR-001", "PF-004"} {
				if n := strings.Count(string(fb), `"target":"`+target+`","kind":"cited"`); n != 1 {
					t.Errorf("%d cited events for %s, want 1:\n%s", n, target, fb)
				}
			}
			if n := strings.Count(string(fb), `"pass":"`+it.ID+`"`); n != 2 {
				t.Errorf("%d events carry the item id, want 2", n)
			}
			if es, _ := List(root); len(es) != 0 {
				t.Errorf("items left: %v", es)
			}
			if _, err := os.Lstat(filepath.Join(Path(root), pruneMarker)); err == nil {
				t.Error("prune marker left")
			}
			// Draining again changes nothing.
			before, _ := os.ReadFile(manifest.PathsFor(root).Usage)
			if _, err := Drain(root); err != nil {
				t.Fatal(err)
			}
			if after, _ := os.ReadFile(manifest.PathsFor(root).Usage); string(after) != string(before) {
				t.Errorf("a second drain changed the usage file")
			}
		})
	}
}

// Cite items wait while the usage file does not parse (reconcile rebuilds
// it): they are neither lost nor set aside, and the other items drain.
func TestDrainCitesDeferredOnCorruptUsage(t *testing.T) {
	root := newRoot(t)
	usage := manifest.PathsFor(root).Usage
	os.WriteFile(usage, []byte(`{"version":1,"entries":`), 0o644)
	if _, err := EnqueueCite(root, time.Now(), map[string]int{"ADR-002": 1}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(root, time.Now(), []*manifest.Observation{obs(t, `{"id":"obs_a","type":"decision","pattern":"use sqlite"}`)}); err != nil {
		t.Fatal(err)
	}
	res, err := Drain(root)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Deferred, "1 cite item(s) left queued") || res.Drained != 1 {
		t.Errorf("res %+v", res)
	}
	if es, _ := List(root); len(es) != 1 {
		t.Fatalf("items %v, want the cite item only", es)
	}
	if b, _ := os.ReadFile(usage); string(b) != `{"version":1,"entries":` {
		t.Errorf("corrupt usage file changed: %s", b)
	}
	os.WriteFile(usage, []byte(usageDevflow), 0o644)
	if res, err := Drain(root); err != nil || res.Citations != 1 || res.Deferred != "" {
		t.Errorf("after repair: %+v %v", res, err)
	}
	if got, _ := usageCites(t, root); got["ADR-002"] != 1 {
		t.Errorf("cites %v", got)
	}
}

// Stretches of one session drained together: the offset ends at the last.
func TestDrainCitesStretchesInOrder(t *testing.T) {
	root := newRoot(t)
	tr := "/t/s1.jsonl"
	for i, r := range [][2]int64{{0, 100}, {100, 250}, {250, 260}} {
		s := &citation.Stretch{Session: "s1", Transcript: tr, From: r[0], To: r[1]}
		if _, err := EnqueueCite(root, time.Now(), map[string]int{"ADR-001": i + 1}, s); err != nil {
			t.Fatal(err)
		}
	}
	if end := QueuedEnd(root, "s1", tr); end != 260 {
		t.Errorf("QueuedEnd %d, want 260", end)
	}
	if end := QueuedEnd(root, "s2", tr); end != 0 {
		t.Errorf("QueuedEnd of another session %d, want 0", end)
	}
	if _, err := Drain(root); err != nil {
		t.Fatal(err)
	}
	if got, _ := usageCites(t, root); got["ADR-001"] != 6 {
		t.Errorf("cites %v, want 6", got)
	}
	offs, _ := citation.ReadOffsets(root)
	if o := offs.Start("s1", tr); o != 260 {
		t.Errorf("offset %d, want 260", o)
	}
}

// An item larger than the bound is refused when queued, not written for
// Drain to set aside: the writer hears it while it still holds the input.
// One of exactly the bound is written, and reads back.
func TestEnqueueBounded(t *testing.T) {
	it := Item{Version: 1, ID: "20261129T010000.000000000Z-1", Kind: KindObserve,
		Observations: []*manifest.Observation{obs(t, `{"id":"obs_a","type":"workflow","pattern":"Deploy with make release","quality_ok":true,"evidence":["e"]}`)}}
	b, err := encodeItem(it, MaxItemBytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := encodeItem(it, len(b)-1); err == nil || !strings.Contains(err.Error(), "not queued") {
		t.Fatalf("an item of %d bytes under a bound of %d: %v", len(b), len(b)-1, err)
	}
	exact, err := encodeItem(it, len(b))
	if err != nil || string(exact) != string(b) {
		t.Fatalf("an item of exactly the bound: %q, %v", exact, err)
	}
	if back, err := Parse(exact, it.ID); err != nil || len(back.Observations) != 1 {
		t.Fatalf("read back %+v, %v", back, err)
	}
}
