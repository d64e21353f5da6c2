package citation

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
)

var t0 = time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)

func newRoot(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func cites(t *testing.T, root string) map[string]int {
	t.Helper()
	u, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for id := range u.Entries {
		m[id], _ = u.Cites(id)
	}
	return m
}

func offset(t *testing.T, root string, s Stretch) int64 {
	t.Helper()
	o, err := ReadOffsets(root)
	if err != nil {
		t.Fatal(err)
	}
	return o.Start(s.Session, s.Transcript)
}

// writeRecord leaves the state of a Record killed after its record write:
// the record names the usage file the pass was about to write (counts
// added to the current one).
func writeRecord(t *testing.T, root string, counts map[string]int, s Stretch) []byte {
	t.Helper()
	u, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err != nil {
		t.Fatal(err)
	}
	AddCites(u, counts, t0)
	b, _ := u.Encode()
	evs, err := Events(counts, t0)
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := json.Marshal(pass{Version: 1, ID: testPass, Usage: sum(b), Stretch: &s, At: t0.Format(time.RFC3339),
		Offset: journal.FeedbackSize(root), Events: evs})
	if err := os.WriteFile(filepath.Join(root, PassFile), rec, 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

const testPass = "cite-20260105T100000Z-000000000000"

// cited counts the "cited" feedback events per target.
func cited(t *testing.T, root string) map[string]int {
	t.Helper()
	evs, _, err := journal.ReadFeedback(root)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, e := range evs {
		if e.Kind == learn.KindCited {
			m[e.Target]++
		}
	}
	return m
}

func TestRecordWritesUsageAndOffset(t *testing.T) {
	root := newRoot(t)
	s := Stretch{Session: "s1", Transcript: "/t/s1.jsonl", From: 0, To: 300}
	if err := Record(root, map[string]int{"ADR-001": 2, "PF-003": 1}, t0, &s); err != nil {
		t.Fatal(err)
	}
	if got := cites(t, root); !maps.Equal(got, map[string]int{"ADR-001": 2, "PF-003": 1}) {
		t.Errorf("cites %v", got)
	}
	if o := offset(t, root, s); o != 300 {
		t.Errorf("offset %d, want 300", o)
	}
	if _, err := os.Stat(filepath.Join(root, PassFile)); !os.IsNotExist(err) {
		t.Errorf("record left: %v", err)
	}
	if got := cited(t, root); !maps.Equal(got, map[string]int{"ADR-001": 1, "PF-003": 1}) {
		t.Errorf("cited events %v, want one per entry", got)
	}
	// Citations read from stdin: no stretch, the same record.
	if err := Record(root, map[string]int{"ADR-001": 1}, t0, nil); err != nil {
		t.Fatal(err)
	}
	if got := cites(t, root); got["ADR-001"] != 3 {
		t.Errorf("cites %v", got)
	}
	if got := cited(t, root); got["ADR-001"] != 2 {
		t.Errorf("cited events %v", got)
	}
	if _, err := os.Stat(filepath.Join(root, PassFile)); !os.IsNotExist(err) {
		t.Errorf("record left: %v", err)
	}
	// Nothing cited: the offset moves alone.
	s2 := Stretch{Session: "s1", Transcript: s.Transcript, From: 300, To: 350}
	if err := Record(root, map[string]int{}, t0, &s2); err != nil {
		t.Fatal(err)
	}
	if o := offset(t, root, s2); o != 350 {
		t.Errorf("offset %d, want 350", o)
	}
}

// A Stop hook killed at each step of its write, then run again over the
// same transcript (what the next Stop hook does): every stretch counted
// exactly once. The next locked pass judges the record by the usage file.
func TestCompletePendingExactlyOnce(t *testing.T) {
	s := Stretch{Session: "s1", Transcript: "/t/s1.jsonl", From: 0, To: 120}
	counts := map[string]int{"ADR-001": 1, "PF-002": 2}
	cases := []struct {
		name string
		// crash leaves the files as a Record killed at one step would.
		crash func(t *testing.T, root string)
	}{
		{"killed before the record", func(*testing.T, string) {}},
		{"killed after the record", func(t *testing.T, root string) { writeRecord(t, root, counts, s) }},
		{"killed after the usage write", func(t *testing.T, root string) {
			b := writeRecord(t, root, counts, s)
			os.WriteFile(manifest.PathsFor(root).Usage, b, 0o644)
		}},
		{"killed after the offsets write", func(t *testing.T, root string) {
			b := writeRecord(t, root, counts, s)
			os.WriteFile(manifest.PathsFor(root).Usage, b, 0o644)
			if err := Advance(root, []Stretch{s}, t0); err != nil {
				t.Fatal(err)
			}
		}},
		{"killed after the feedback append", func(t *testing.T, root string) {
			b := writeRecord(t, root, counts, s)
			os.WriteFile(manifest.PathsFor(root).Usage, b, 0o644)
			Advance(root, []Stretch{s}, t0)
			evs, _ := Events(counts, t0)
			if _, err := AppendEvents(root, testPass, 0, evs); err != nil {
				t.Fatal(err)
			}
		}},
		{"not killed", func(t *testing.T, root string) {
			if err := Record(root, counts, t0, &s); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := newRoot(t)
			os.WriteFile(manifest.PathsFor(root).Usage, []byte(`{"version":1,"entries":{"ADR-001":{"cites":4,"last_cited":null,"created":"2024-01-01T00:00:00Z"}},"x_other":true}`), 0o644)
			c.crash(t, root)
			if _, err := CompletePending(root); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(root, PassFile)); !os.IsNotExist(err) {
				t.Errorf("record left after completion: %v", err)
			}
			// The next scan starts at the offset: it counts the stretch
			// only when the offset did not move past it.
			if offset(t, root, s) < s.To {
				if err := Record(root, counts, t0, &s); err != nil {
					t.Fatal(err)
				}
			}
			if got := cites(t, root); !maps.Equal(got, map[string]int{"ADR-001": 5, "PF-002": 2}) {
				t.Errorf("cites %v, want ADR-001 5, PF-002 2", got)
			}
			if o := offset(t, root, s); o != s.To {
				t.Errorf("offset %d, want %d", o, s.To)
			}
			// One helpful event per cited entry, once.
			if got := cited(t, root); !maps.Equal(got, map[string]int{"ADR-001": 1, "PF-002": 1}) {
				t.Errorf("cited events %v, want one each", got)
			}
			if b, _ := os.ReadFile(manifest.PathsFor(root).Usage); !strings.Contains(string(b), `"x_other": true`) {
				t.Errorf("another tool's key lost:\n%s", b)
			}
		})
	}
}

func TestCompletePendingBadFiles(t *testing.T) {
	s := Stretch{Session: "s1", Transcript: "/t/s1.jsonl", From: 0, To: 120}
	t.Run("record does not parse", func(t *testing.T) {
		root := newRoot(t)
		os.WriteFile(filepath.Join(root, PassFile), []byte(`{"v":1,"usage":`), 0o644)
		if done, err := CompletePending(root); err != nil || done {
			t.Fatalf("done %v err %v", done, err)
		}
		aside, _ := filepath.Glob(filepath.Join(root, PassFile+".corrupt-*"))
		if len(aside) != 1 {
			t.Errorf("the record was not kept aside: %v", aside)
		}
	})
	t.Run("offsets do not parse", func(t *testing.T) {
		root := newRoot(t)
		b := writeRecord(t, root, map[string]int{"ADR-001": 1}, s)
		os.WriteFile(manifest.PathsFor(root).Usage, b, 0o644)
		os.WriteFile(filepath.Join(root, OffsetsFile), []byte(`{"sessions":`), 0o644)
		if _, err := CompletePending(root); !errors.Is(err, ErrCorruptOffsets) {
			t.Fatalf("err %v, want ErrCorruptOffsets", err)
		}
		if _, err := os.Stat(filepath.Join(root, PassFile)); err != nil {
			t.Fatalf("the record must wait for the offsets file to be fixed: %v", err)
		}
		os.Remove(filepath.Join(root, OffsetsFile))
		if done, err := CompletePending(root); err != nil || !done {
			t.Fatalf("done %v err %v", done, err)
		}
		if o := offset(t, root, s); o != s.To {
			t.Errorf("offset %d, want %d", o, s.To)
		}
	})
}

func TestValidate(t *testing.T) {
	for _, c := range []struct {
		counts map[string]int
		ok     bool
	}{
		{map[string]int{"ADR-001": 1, "PF-1234": MaxCount}, true},
		{map[string]int{"ADR-01": 1}, false},
		{map[string]int{"adr-001": 1}, false},
		{map[string]int{"ADR-001\n": 1}, false},
		{map[string]int{"ADR-" + strings.Repeat("1", 40): 1}, false},
		{map[string]int{"ADR-001": 0}, false},
		{map[string]int{"ADR-001": MaxCount + 1}, false},
	} {
		if err := ValidateCounts(c.counts); (err == nil) != c.ok {
			t.Errorf("ValidateCounts(%v) = %v, want ok %v", c.counts, err, c.ok)
		}
	}
}

// FuzzParsePass: a citation record that parses can be completed: its
// stretch validates, its events parse, and it re-encodes to a record that
// parses the same.
func FuzzParsePass(f *testing.F) {
	evs, _ := Events(map[string]int{"ADR-001": 2, "PF-003": 1}, t0)
	good, _ := json.Marshal(pass{Version: 1, ID: testPass, Usage: "ab12", At: t0.Format(time.RFC3339), Offset: 10, Events: evs,
		Stretch: &Stretch{Session: "s1", Transcript: "/t/s1.jsonl", From: 0, To: 99}})
	f.Add(good)
	f.Add([]byte(`{"v":1,"id":"cite-x","usage":"00","events":[]}`))
	f.Add([]byte(`{"v":1,"id":"cite-x","usage":"00","stretch":{"session":"","transcript":"rel","from":5,"to":1}}`))
	f.Add([]byte(`{"v":1,"id":"cite-x","usage":"00","events":[{"kind":"cited"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := parsePass(b)
		if err != nil {
			return
		}
		if p.Stretch != nil && (p.Stretch.Validate() != nil || p.Stretch.To <= p.Stretch.From) {
			t.Fatalf("accepted stretch %+v", *p.Stretch)
		}
		b2, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		p2, err := parsePass(b2)
		if err != nil || p2.ID != p.ID || p2.Usage != p.Usage || len(p2.Events) != len(p.Events) {
			t.Fatalf("round trip: %v %+v vs %+v", err, p2, p)
		}
	})
}

// A scan that cannot take the lock starts after the stretch of a pass that
// wrote its usage but not its offset (a full disk): CommittedEnd. Not
// after one whose usage write did not happen, nor another session's or
// transcript's, nor once the pass is completed (the offset has it then).
// Without it such a scan queued the stretch again and the drain counted
// its citations twice (the reliability harness's seed 869794).
func TestCommittedEnd(t *testing.T) {
	s := Stretch{Session: "s1", Transcript: "/t/s1.jsonl", From: 0, To: 120}
	root := newRoot(t)
	if got := CommittedEnd(root, "s1", s.Transcript); got != 0 {
		t.Errorf("no record: %d", got)
	}
	b := writeRecord(t, root, map[string]int{"ADR-001": 1}, s)
	if got := CommittedEnd(root, "s1", s.Transcript); got != 0 {
		t.Errorf("the usage not written yet: %d", got)
	}
	if err := os.WriteFile(manifest.PathsFor(root).Usage, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		session, transcript string
		want                int64
	}{{"s1", s.Transcript, 120}, {"s2", s.Transcript, 0}, {"s1", "/t/other.jsonl", 0}} {
		if got := CommittedEnd(root, c.session, c.transcript); got != c.want {
			t.Errorf("%s %s: %d, want %d", c.session, c.transcript, got, c.want)
		}
	}
	if _, err := CompletePending(root); err != nil {
		t.Fatal(err)
	}
	if got := CommittedEnd(root, "s1", s.Transcript); got != 0 || offset(t, root, s) != 120 {
		t.Errorf("after completion: committed end %d, offset %d", got, offset(t, root, s))
	}
}
