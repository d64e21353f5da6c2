package hooks

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/citation"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/manifest"
)

func assistant(id, text string) string {
	return `{"type":"assistant","message":{"id":"` + id + `","role":"assistant","content":[{"type":"text","text":` + quote(text) + `}]}}` + "\n"
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestCitations(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want map[string]int
	}{
		{"assistant text", assistant("m1", "Per ADR-001 and PF-012, do X."), map[string]int{"ADR-001": 1, "PF-012": 1}},
		{"once per message", assistant("m1", "ADR-001, ADR-001 and again ADR-001"), map[string]int{"ADR-001": 1}},
		{"split message counts once", assistant("m1", "ADR-001") + assistant("m1", "still ADR-001"), map[string]int{"ADR-001": 1}},
		{"two messages", assistant("m1", "ADR-001") + assistant("m2", "ADR-001"), map[string]int{"ADR-001": 2}},
		{"user prompt ignored", `{"type":"user","message":{"role":"user","content":"what does ADR-001 say?"}}` + "\n", map[string]int{}},
		{"injected context ignored", `{"type":"system","content":"Knowledge: ADR-001 ADR-002"}` + "\n", map[string]int{}},
		{"tool use and result ignored", `{"type":"assistant","message":{"role":"assistant","content":[{"type":"tool_use","input":{"pattern":"ADR-003"}},{"type":"thinking","thinking":"ADR-004"}]}}` + "\n" +
			`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","content":"## ADR-005: x"}]}}` + "\n", map[string]int{}},
		{"string content", `{"role":"assistant","content":"see PF-007"}` + "\n", map[string]int{"PF-007": 1}},
		{"plain text", "We followed ADR-010.\nPF-002 and ADR-010 apply\nlast line ADR-010", map[string]int{"ADR-010": 3, "PF-002": 1}},
		{"not ids", "XADR-001 ADR-01 ADR-001x adr-001 PF-1234 ADR_001 ADR-001.", map[string]int{"PF-1234": 1, "ADR-001": 1}},
		{"json without a message", `{"text":"ADR-001"}` + "\n", map[string]int{}},
		{"crlf", "ADR-001\r\n", map[string]int{"ADR-001": 1}},
		{"broken json is text", `{"role":"assistant","content":"ADR-001"` + "\n", map[string]int{"ADR-001": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Citations(strings.NewReader(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCitationsLongLine(t *testing.T) {
	long := assistant("m", strings.Repeat("x", 1<<20)+" ADR-099")
	got, err := Citations(strings.NewReader(long))
	if err != nil || got["ADR-099"] != 1 {
		t.Errorf("got %v %v", got, err)
	}
}

func FuzzCitations(f *testing.F) {
	f.Add(assistant("m1", "ADR-001 PF-002"))
	f.Add("plain ADR-001\nPF-999 x")
	f.Add(`{"type":"assistant","message":{"content":"ADR-001"}}`)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := Citations(strings.NewReader(in))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Count(in, "\n") + 1
		for id, n := range got {
			if !citeRE.MatchString(id) || citeRE.FindString(id) != id {
				t.Fatalf("counted %q, not an ID", id)
			}
			if n < 1 || n > lines {
				t.Fatalf("%s counted %d times in %d lines", id, n, lines)
			}
			if !strings.Contains(in, id) {
				t.Fatalf("%s is not in the input", id)
			}
		}
	})
}

const usageWithExtras = `{
  "version": 1,
  "generator": {"name": "devflow"},
  "entries": {
    "ADR-001": {"cites": 2, "last_cited": null, "created": "2024-01-01T00:00:00Z", "note": "keep me"}
  }
}
`

func TestRecordCitations(t *testing.T) {
	root := t.TempDir()
	usage := filepath.Join(root, ".memory", ".knowledge-usage.json")
	writeFile(t, usage, usageWithExtras, 0o644)
	now := time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC)
	if _, err := RecordCitations(context.Background(), root, map[string]int{"ADR-001": 3, "PF-004": 1}, now, time.Second); err != nil {
		t.Fatal(err)
	}
	got := readJSON(t, usage).(map[string]any)
	want := map[string]any{
		"version":   1.0,
		"generator": map[string]any{"name": "devflow"},
		"entries": map[string]any{
			"ADR-001": map[string]any{"cites": 5.0, "last_cited": "2025-03-04T05:06:07Z", "created": "2024-01-01T00:00:00Z", "note": "keep me"},
			"PF-004":  map[string]any{"cites": 1.0, "last_cited": "2025-03-04T05:06:07Z", "created": "2025-03-04T05:06:07Z"},
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %s\nwant %s", mustMarshal(t, got), mustMarshal(t, want))
	}
	if _, err := os.Stat(filepath.Join(root, ".memory", manifest.LearningLock)); !os.IsNotExist(err) {
		t.Errorf("lock left behind: %v", err)
	}
}

func TestRecordCitationsBadUsageFile(t *testing.T) {
	root := t.TempDir()
	usage := filepath.Join(root, ".memory", ".knowledge-usage.json")
	writeFile(t, usage, `{"version":1,"entries":`, 0o644)
	_, err := RecordCitations(context.Background(), root, map[string]int{"ADR-001": 1}, time.Now(), time.Second)
	var fe *FileError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), usage) {
		t.Errorf("err = %v", err)
	}
	if got, _ := os.ReadFile(usage); string(got) != `{"version":1,"entries":` {
		t.Errorf("usage file written: %s", got)
	}
}

// A busy lock: the counts are queued in the inbox, nothing is written to
// the usage file; the next pass that takes the lock adds them, once.
func TestRecordCitationsQueuesWhenLockBusy(t *testing.T) {
	root := t.TempDir()
	lock := filepath.Join(root, ".memory", manifest.LearningLock)
	if err := os.MkdirAll(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	rec, err := RecordCitations(context.Background(), root, map[string]int{"ADR-001": 2, "PF-003": 1}, time.Now(), 50*time.Millisecond)
	if err != nil || !strings.HasPrefix(rec.Queued, "item-") {
		t.Fatalf("rec = %+v, err = %v", rec, err)
	}
	if _, err := os.Stat(filepath.Join(root, ".memory", ".knowledge-usage.json")); !os.IsNotExist(err) {
		t.Error("usage written without the lock")
	}
	if es, _ := inbox.List(root); len(es) != 1 || es[0].ID != rec.Queued {
		t.Fatalf("inbox %v, want the item %s", es, rec.Queued)
	}
	os.Remove(lock)
	// The next writer drains the item first, then adds its own.
	if _, err := RecordCitations(context.Background(), root, map[string]int{"ADR-001": 1}, time.Now(), time.Second); err != nil {
		t.Fatal(err)
	}
	if got := cites(t, root); !maps.Equal(got, map[string]int{"ADR-001": 3, "PF-003": 1}) {
		t.Errorf("usage %v", got)
	}
	if es, _ := inbox.List(root); len(es) != 0 {
		t.Errorf("items left: %v", es)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".memory", ".knowledge-usage.json")); strings.Contains(string(b), inbox.Field) {
		t.Errorf("drain record left in the usage file:\n%s", b)
	}
}

// The Stop hook under a busy lock: each scan queues the stretch it read;
// a later scan of the same session starts after the last queued stretch,
// and once the lock is free the drain adds every stretch once and moves
// the session's offset to the end.
func TestRecordTranscriptQueuesStretches(t *testing.T) {
	root := t.TempDir()
	tr := filepath.Join(t.TempDir(), "session.jsonl")
	lock := filepath.Join(root, ".memory", manifest.LearningLock)
	if err := os.MkdirAll(lock, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, now := context.Background(), time.Now()
	appendFile(t, tr, assistant("m1", "ADR-001 and PF-002"))
	first := int64(len(assistant("m1", "ADR-001 and PF-002")))
	r1, err := RecordTranscript(ctx, root, "s1", tr, now, 30*time.Millisecond, false)
	if err != nil || r1.Queued == "" || !maps.Equal(r1.Counts, map[string]int{"ADR-001": 1, "PF-002": 1}) {
		t.Fatalf("first scan %+v %v", r1, err)
	}
	// Nothing new: nothing queued, nothing counted.
	if r, err := RecordTranscript(ctx, root, "s1", tr, now, 30*time.Millisecond, false); err != nil || r.Queued != "" || len(r.Counts) != 0 {
		t.Fatalf("rescan of a queued stretch: %+v %v", r, err)
	}
	appendFile(t, tr, assistant("m2", "ADR-001"))
	r2, err := RecordTranscript(ctx, root, "s1", tr, now, 30*time.Millisecond, false)
	if err != nil || r2.Queued == "" || !maps.Equal(r2.Counts, map[string]int{"ADR-001": 1}) {
		t.Fatalf("second scan %+v %v", r2, err)
	}
	if end := inbox.QueuedEnd(root, "s1", tr); end <= first {
		t.Errorf("queued end %d, want past %d", end, first)
	}
	if offs, _ := citation.ReadOffsets(root); offs.Start("s1", tr) != 0 {
		t.Errorf("offset moved before the drain: %v", offs.Sessions)
	}
	os.Remove(lock)
	appendFile(t, tr, assistant("m3", "PF-002"))
	r3, err := RecordTranscript(ctx, root, "s1", tr, now, time.Second, false)
	if err != nil || r3.Queued != "" || !maps.Equal(r3.Counts, map[string]int{"PF-002": 1}) {
		t.Fatalf("scan with the lock %+v %v", r3, err)
	}
	if got := cites(t, root); !maps.Equal(got, map[string]int{"ADR-001": 2, "PF-002": 2}) {
		t.Errorf("usage %v", got)
	}
	fi, _ := os.Stat(tr)
	if offs, _ := citation.ReadOffsets(root); offs.Start("s1", tr) != fi.Size() {
		t.Errorf("offset %d, want the transcript's size %d", offs.Start("s1", tr), fi.Size())
	}
	if r, err := RecordTranscript(ctx, root, "s1", tr, now, time.Second, false); err != nil || len(r.Counts) != 0 {
		t.Errorf("rescan after the drain %+v %v", r, err)
	}
}

func appendFile(t *testing.T, path, s string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func cites(t *testing.T, root string) map[string]int {
	t.Helper()
	u, err := manifest.ReadUsage(filepath.Join(root, ".memory", ".knowledge-usage.json"))
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for id := range u.Entries {
		m[id], _ = u.Cites(id)
	}
	return m
}

func TestRecordTranscriptCountsOnce(t *testing.T) {
	root := t.TempDir()
	tr := filepath.Join(t.TempDir(), "session.jsonl")
	ctx, now := context.Background(), time.Now()
	record := func() map[string]int {
		t.Helper()
		got, err := RecordTranscript(ctx, root, "sess-1", tr, now, time.Second, false)
		if err != nil {
			t.Fatal(err)
		}
		return got.Counts
	}
	appendTo := func(s string) {
		f, err := os.OpenFile(tr, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(s)
		f.Close()
	}

	appendTo(assistant("m1", "ADR-001") + assistant("m2", "ADR-001 and PF-002"))
	if got := record(); !maps.Equal(got, map[string]int{"ADR-001": 2, "PF-002": 1}) {
		t.Errorf("first scan %v", got)
	}
	if got := record(); len(got) != 0 {
		t.Errorf("rescan counted %v", got)
	}
	if got := cites(t, root); !maps.Equal(got, map[string]int{"ADR-001": 2, "PF-002": 1}) {
		t.Errorf("usage %v", got)
	}

	// A line still being written is left for the next scan.
	line := assistant("m3", "PF-002")
	appendTo(line[:20])
	if got := record(); len(got) != 0 {
		t.Errorf("partial line counted: %v", got)
	}
	appendTo(line[20:])
	if got := record(); !maps.Equal(got, map[string]int{"PF-002": 1}) {
		t.Errorf("completed line: %v", got)
	}

	// Another session is tracked on its own.
	if got, err := RecordTranscript(ctx, root, "sess-2", tr, now, time.Second, false); err != nil || got.Counts["ADR-001"] != 2 {
		t.Errorf("other session: %v %v", got, err)
	}

	// A transcript replaced by a shorter one is scanned from the start.
	os.WriteFile(tr, []byte(assistant("n1", "ADR-009")), 0o644)
	if got := record(); !maps.Equal(got, map[string]int{"ADR-009": 1}) {
		t.Errorf("replaced transcript: %v", got)
	}
	if got := cites(t, root); !maps.Equal(got, map[string]int{"ADR-001": 4, "PF-002": 4, "ADR-009": 1}) {
		t.Errorf("usage %v", got)
	}
}

func TestRecordTranscriptPrunesOldSessions(t *testing.T) {
	root := t.TempDir()
	tr := filepath.Join(t.TempDir(), "s.jsonl")
	os.WriteFile(tr, []byte("ADR-001\n"), 0o644)
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := RecordTranscript(context.Background(), root, "old", tr, old, time.Second, false); err != nil {
		t.Fatal(err)
	}
	if _, err := RecordTranscript(context.Background(), root, "new", tr, old.Add(31*24*time.Hour), time.Second, false); err != nil {
		t.Fatal(err)
	}
	offs, err := citation.ReadOffsets(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := offs.Sessions["old"]; ok || len(offs.Sessions) != 1 {
		t.Errorf("sessions %v", offs.Sessions)
	}
}

// A session id no drain would accept is not queued: the lock error stands
// and the stretch stays for a later scan (nothing lost, nothing rejected).
func TestRecordTranscriptHugeSessionNotQueued(t *testing.T) {
	root := t.TempDir()
	tr := filepath.Join(t.TempDir(), "s.jsonl")
	appendFile(t, tr, assistant("m1", "ADR-001"))
	if err := os.MkdirAll(filepath.Join(root, ".memory", manifest.LearningLock), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := RecordTranscript(context.Background(), root, strings.Repeat("s", 70<<10), tr, time.Now(), 20*time.Millisecond, false)
	if !errors.Is(err, manifest.ErrLockTimeout) {
		t.Errorf("err = %v, want the lock timeout", err)
	}
	if es, _ := inbox.List(root); len(es) != 0 {
		t.Errorf("queued %v", es)
	}
}

// A transcript citing an id no drain accepts (over 32 characters) records
// the same ids whether the lock is free or busy: the queue always left it
// out, and the usage file took it when written at once.
func TestRecordTranscriptSameIDsQueuedOrNot(t *testing.T) {
	long := "ADR-" + strings.Repeat("0", 36) + "1"
	for _, busy := range []bool{false, true} {
		root := t.TempDir()
		tr := filepath.Join(t.TempDir(), "session.jsonl")
		if err := os.WriteFile(tr, []byte(assistant("m1", "per ADR-001 and "+long)), 0o644); err != nil {
			t.Fatal(err)
		}
		lock := filepath.Join(root, ".memory", manifest.LearningLock)
		if busy {
			if err := os.MkdirAll(lock, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		rec, err := RecordTranscript(context.Background(), root, "s1", tr, time.Now(), 50*time.Millisecond, false)
		if err != nil || busy != (rec.Queued != "") {
			t.Fatalf("busy %v: rec %+v, err %v", busy, rec, err)
		}
		if want := map[string]int{"ADR-001": 1}; !maps.Equal(rec.Counts, want) {
			t.Errorf("busy %v: counted %v, want %v", busy, rec.Counts, want)
		}
		os.Remove(lock)
		if busy { // the next writer drains the item
			if _, err := RecordCitations(context.Background(), root, map[string]int{"PF-002": 1}, time.Now(), time.Second); err != nil {
				t.Fatal(err)
			}
		}
		got := cites(t, root)
		delete(got, "PF-002")
		if want := map[string]int{"ADR-001": 1}; !maps.Equal(got, want) {
			t.Errorf("busy %v: usage %v, want %v", busy, got, want)
		}
	}
}
