package journal

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/learn"
)

func FuzzParseEvent(f *testing.F) {
	for _, s := range []string{
		`{"ts":"2026-03-01T12:00:00Z","target":"ADR-001","kind":"kept","value":1,"source":"reconcile","type":"decision"}`,
		`{"ts":"2026-03-01T12:00:00.123+02:00","target":"obs_x","kind":"outcome","value":0.38,"reason":"timeout"}`,
		`{"ts":"x"}`, `not json`, `{}`, `{"ts":"2026-03-01T12:00:00Z","target":"a","kind":"k","value":"1"}`,
	} {
		f.Add([]byte(s))
	}
	fo := learn.NewFolder()
	fo.Add([]learn.Event{{TS: t0, Target: "ADR-001", Kind: learn.KindDeleted, Value: 0.5, Type: "decision"}, {TS: t0.Add(time.Hour), Target: "PF-002", Kind: learn.KindCited}})
	base, err := marshalBase(t0.Add(2*time.Hour), fo, learn.Tally(nil, nil), map[string]time.Time{"decision": t0})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(base)
	f.Add([]byte(`{"ts":"2026-03-01T12:00:00Z","target":"learnwatch:base","kind":"compacted","base":"bHdmb2xkMQ=="}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		e, err := ParseEvent(line)
		if err != nil {
			return
		}
		if e.Base != nil {
			e.Base.Cut = e.TS // compared below with Equal
		}
		b, err := MarshalEvent(e)
		if err != nil {
			t.Fatalf("parsed %q but cannot write it back: %v", line, err)
		}
		e2, err := ParseEvent(b)
		if err != nil {
			t.Fatalf("written line %s does not parse: %v", b, err)
		}
		if !e.TS.Equal(e2.TS) {
			t.Fatalf("ts changed: %v → %v", e.TS, e2.TS)
		}
		e.TS = e2.TS
		if e.Base != nil && e2.Base != nil {
			now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
			// Compared as printed: the same instants, offsets and bits (two
			// fixed zones of the same odd offset are distinct pointers).
			if fmt.Sprintf("%#v", e.Base.Fold.Result(now, learn.Params{})) != fmt.Sprintf("%#v", e2.Base.Fold.Result(now, learn.Params{})) {
				t.Fatalf("round trip changed the base of %q", line)
			}
			e.Base.Fold, e2.Base.Fold, e.Base.Cut = nil, nil, e2.Base.Cut
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("round trip changed the event:\n%+v\n%+v", e, e2)
		}
	})
}

func FuzzParseOutcome(f *testing.F) {
	for _, s := range []string{
		`{"ts":"2026-03-01T12:00:00Z","run_id":"r1","success":true,"duration_ms":1200,"error_count":0,"retry_count":0,"cited":["ADR-001"],"score":1,"verdict":"helpful"}`,
		`{"ts":"2026-03-01T12:00:00Z","run_id":"r1","success":false,"duration_ms":1e3,"error_count":3,"retry_count":2,"quality":0.5,"failure_type":"timeout","strategy":"s"}`,
		`{"run_id":"r"}`, `[]`, `{"ts":"2026-03-01T12:00:00Z","run_id":"r","success":true,"duration_ms":-1,"retry_count":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		o, err := ParseOutcome(line)
		if err != nil {
			return
		}
		if o.DurationMS < 0 || o.RetryCount < 0 || o.ErrorCount < 0 || (o.QualitySet && (o.Quality < 0 || o.Quality > 1)) {
			t.Fatalf("accepted out-of-range outcome %+v from %q", o, line)
		}
		b, err := MarshalOutcome(o)
		if err != nil {
			t.Fatalf("parsed %q but cannot write it back: %v", line, err)
		}
		o2, err := ParseOutcome(b)
		if err != nil {
			t.Fatalf("written line %s does not parse: %v", b, err)
		}
		if !o.TS.Equal(o2.TS) {
			t.Fatalf("ts changed")
		}
		o.TS = o2.TS
		if len(o.Cited) == 0 {
			o.Cited, o2.Cited = nil, nil
		}
		o.ErrorCountSet = true // always written
		if !reflect.DeepEqual(o, o2) {
			t.Fatalf("round trip changed the outcome:\n%+v\n%+v", o, o2)
		}
	})
}

// The fast path must agree with encoding/json on every line it accepts.
func FuzzParseEventFastAgrees(f *testing.F) {
	for _, s := range []string{
		`{"ts":"2026-03-01T12:00:00Z","target":"ADR-001","kind":"kept","value":1,"source":"reconcile","type":"decision"}`,
		` { "ts" : "a" , "value" : -0.5e+3 } `, `{}`, `{"value":01}`, `{"value":1.}`, `{"ts":"\u00e9"}`,
		`{"target":"a","target":"b"}`, `{"Target":"x"}`, `{"value":1e400}`, "{\"ts\":\"\xff\"}",
		`{"ts":"2026-03-01T12:00:00Z","target":"ADR-001","kind":"outcome","value":0.86,"source":"outcome:r","type":"decision","retries":2}`,
		`{"retries":-1}`, `{"retries":1.5,"retries":2}`, `{"role":"sentinel","role":"x"}`,
		`{"ts":"2026-03-01T12:00:00Z","target":"ADR-001","kind":"cited","value":1,"source":"verdict:v","role":"sentinel"}`,
		`{"ts":"2026-03-02T12:00:00Z","target":"obs_a","kind":"deleted","value":1,"source":"reconcile","type":"workflow","reason":"deleted","pass":"p1","of":"3f2a9c0d1e2b4a5c"}`,
		`{"of":"a","of":"b"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		fast, ok := parseEventFast(line, interner{})
		if !ok {
			return
		}
		var ref eventLine
		if err := json.Unmarshal(line, &ref); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json rejects it: %v", line, err)
		}
		if !reflect.DeepEqual(fast, ref) {
			t.Fatalf("%q: fast %+v, encoding/json %+v", line, fast, ref)
		}
	})
}

// FuzzFeedbackSnapshot: whatever the snapshot file holds, the fold either
// resumes it (only a snapshot whose checks match the journal) or is the
// full fold; it never fails or panics.
func FuzzFeedbackSnapshot(f *testing.F) {
	seedRoot := f.TempDir()
	os.MkdirAll(Path(seedRoot, ""), 0o755)
	journal := []byte(`{"ts":"2026-03-01T12:00:00Z","target":"ADR-001","kind":"kept","value":1,"source":"reconcile","type":"decision"}` + "\n" +
		`{"ts":"2026-03-02T12:00:00Z","target":"ADR-001","kind":"deleted","value":1,"source":"reconcile","type":"decision","reason":"stale"}` + "\n" +
		`{"ts":"2026-03-03T12:00:00Z","target":"ADR-002","kind":"deleted","value":1,"source":"reconcile","type":"decision","of":"k"}` + "\n" +
		`{"ts":"2026-03-04T12:00:00Z","target":"ADR-002","kind":"deleted","value":1,"source":"reconcile","type":"decision","of":"k"}` + "\n")
	os.WriteFile(Path(seedRoot, FeedbackFile), journal, 0o644)
	if _, _, err := foldFeedbackLocked(seedRoot, nil, true); err != nil {
		f.Fatal(err)
	}
	good, err := os.ReadFile(cachedir.Path(seedRoot, SnapshotFile))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"version":1,"size":1,"head_len":1,"fold":{}}`))
	f.Add([]byte(`{"version":1,"size":99999999,"head_len":4096,"last_at":0,"fold":{"targets":[]}}`))
	f.Add([]byte("\x00\xff"))
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, snap []byte) {
		root := t.TempDir()
		os.MkdirAll(Path(root, ""), 0o755)
		os.WriteFile(Path(root, FeedbackFile), journal, 0o644)
		if _, err := cachedir.Ensure(root); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(cachedir.Path(root, SnapshotFile), snap, 0o644)
		got, err := FoldFeedback(root, now, learn.Params{})
		if err != nil {
			t.Fatal(err)
		}
		if got.FromSnapshot {
			return // its checks matched this journal's (another inode: only by a real collision)
		}
		evs, corrupt, _ := ReadFeedback(root)
		if got.Events != len(evs) || got.Corrupt != corrupt || !reflect.DeepEqual(got.Stats, learn.FoldWith(evs, now, learn.Params{})) {
			t.Fatalf("fold with snapshot %q differs from the full fold", snap)
		}
	})
}
