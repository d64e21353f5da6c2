package reliability

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/watch"
)

// Fuzz targets for the parsers the other packages do not fuzz themselves:
// the manifest, the usage file, the config, the policy file, the outcome
// and verdict inputs, the watcher's state. (The log, the knowledge
// sections, frontmatter, details, observe's input, the journal lines, the
// hook inputs, transcripts and the staleness extractor have theirs next to
// their code.) .ci/run runs every Fuzz* target of the repository briefly;
// `make fuzz FUZZTIME=60s` runs them longer.

// FuzzManifest: any bytes either fail to parse or round-trip: encoding a
// parsed manifest and parsing it again gives the same manifest, unknown
// fields included, and encoding is stable.
func FuzzManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":1,"entries":[{"observationId":"obs_a","type":"workflow","path":".claude/commands/self-learning/a.md","contentHash":"sha256:00","renderedAt":"2026-01-01T00:00:00Z","x":[1]}],"tool":{"v":2}}`))
	f.Add([]byte(`{"entries":[{"observationId":"obs_k","type":"decision","path":"/abs/.memory/knowledge/decisions.md","anchorId":"ADR-001","contentHash":"1a2b3c"}]}`))
	f.Add([]byte(`{"schemaVersion":1,"entries":null}`))
	f.Add([]byte(`[]`))
	f.Add([]byte(`{"schemaVersion":1,"entries":[{"observationId":"obs_`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var m manifest.Manifest
		if err := json.Unmarshal(data, &m); err != nil {
			return
		}
		b1, err := m.Encode()
		if err != nil {
			// Only values that cannot be encoded again (none today) may fail.
			t.Fatalf("a parsed manifest does not encode: %v", err)
		}
		var m2 manifest.Manifest
		if err := json.Unmarshal(b1, &m2); err != nil {
			t.Fatalf("an encoded manifest does not parse: %v\n%s", err, b1)
		}
		b2, err := m2.Encode()
		if err != nil || !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
		for i := range m.Entries {
			if m.Find(m.Entries[i].ObservationID) < 0 {
				t.Fatalf("Find misses entry %d", i)
			}
		}
	})
}

// FuzzUsage: ReadUsage never panics; a usage file it accepts encodes to one
// it reads back to the same encoding, and registering and citing entries
// keeps it valid.
func FuzzUsage(f *testing.F) {
	f.Add([]byte(`{"version":1,"entries":{"ADR-001":{"cites":2,"last_cited":"2026-01-01T00:00:00Z","created":"2025-12-01T00:00:00Z","x":true}},"tool":1}`))
	f.Add([]byte(`{"entries":{}}`))
	f.Add([]byte(`{"version":"one"}`))
	f.Add([]byte(`{"entries":{"PF-001":null}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), ".knowledge-usage.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		u, err := manifest.ReadUsage(path)
		if err != nil {
			return
		}
		u.Register("ADR-999", baseNow)
		u.Cite("PF-001", 1, baseNow)
		b1, err := u.Encode()
		if err != nil {
			t.Fatalf("a parsed usage file does not encode: %v", err)
		}
		if err := os.WriteFile(path, b1, 0o644); err != nil { // WriteUsage's bytes, without its fsync
			t.Fatal(err)
		}
		u2, err := manifest.ReadUsage(path)
		if err != nil {
			t.Fatalf("learnwatch cannot read the usage file it wrote: %v\n%s", err, b1)
		}
		if b2, _ := u2.Encode(); !bytes.Equal(b1, b2) {
			t.Fatalf("encoding is not stable:\n%s\n%s", b1, b2)
		}
		if n, _ := u2.Cites("PF-001"); n < 1 {
			t.Fatalf("the citation was lost:\n%s", b1)
		}
	})
}

// FuzzConfig: config.Load never panics and, when it accepts a file, the
// settings are usable (positive durations and budget, extensions set).
func FuzzConfig(f *testing.F) {
	f.Add([]byte("lock:\n  timeout: 5s\nwatch:\n  debounce: 50ms\n  render: true\nindex:\n  budget: 400\n"))
	f.Add([]byte("staleness:\n  extensions: [go, ts]\n"))
	f.Add([]byte("lock: [\n"))
	f.Add([]byte("watch:\n  debounce: -5s\n"))
	f.Add([]byte("index: {budget: -1}\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, config.FileName), data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := config.Load(root)
		if err != nil {
			return
		}
		if c.Lock.Timeout.Duration <= 0 || c.Watch.Debounce.Duration <= 0 || c.Index.Budget <= 0 || len(c.Staleness.Extensions) == 0 {
			t.Fatalf("accepted config is not usable: %+v", c)
		}
	})
}

// FuzzPolicy: LoadPolicy never panics; a policy it accepts is saved and
// loaded back unchanged.
func FuzzPolicy(f *testing.F) {
	f.Add([]byte(`{"version":1,"overlays":{"workflow":{"threshold_multiplier":1.4,"requires_approval":true,"x":1}},"approvals":["obs_a"],"resets":{"workflow":"2026-01-01T00:00:00Z"},"tool":2}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(``))
	f.Add([]byte(`{"resets":{"x":"yesterday"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		root := t.TempDir()
		path := journal.Path(root, journal.PolicyFile)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		p, err := journal.LoadPolicy(root)
		if err != nil {
			return
		}
		if err := journal.SavePolicy(root, p); err != nil {
			return // e.g. a top level that is valid JSON but not an object
		}
		p2, err := journal.LoadPolicy(root)
		if err != nil {
			t.Fatalf("learnwatch cannot read the policy it wrote: %v", err)
		}
		if !samePolicy(p, p2) {
			t.Fatalf("policy changed on a save and load:\n%+v\n%+v", p, p2)
		}
	})
}

func samePolicy(a, b learn.Policy) bool {
	norm := func(p learn.Policy) learn.Policy {
		if len(p.Overlays) == 0 {
			p.Overlays = nil
		}
		if len(p.Approvals) == 0 {
			p.Approvals = nil
		}
		if len(p.Resets) == 0 {
			p.Resets = nil
		}
		for k, v := range p.Resets {
			p.Resets[k] = v.UTC()
		}
		return p
	}
	a, b = norm(a), norm(b)
	if len(a.Resets) != len(b.Resets) {
		return false
	}
	for k, v := range a.Resets {
		if !v.Equal(b.Resets[k]) {
			return false
		}
	}
	a.Resets, b.Resets = nil, nil
	return reflect.DeepEqual(a, b)
}

// FuzzDecodeOutcome: `outcome record` input either fails with an error or
// yields an outcome with its required fields.
func FuzzDecodeOutcome(f *testing.F) {
	f.Add([]byte(`{"run_id":"r1","success":true,"duration_ms":120000,"retry_count":0,"error_count":1,"quality":0.8,"cited":["ADR-001","obs_a"],"failure_type":"timeout","ts":"2026-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"run_id":"","success":true}`))
	f.Add([]byte(`{"run_id":"r","success":"yes","duration_ms":-1,"retry_count":1e400}`))
	f.Add([]byte(`[1,2]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := learn.DecodeOutcome(data)
		if err != nil {
			return
		}
		if o.RunID == "" || o.DurationMS < 0 || o.RetryCount < 0 {
			t.Fatalf("accepted an outcome without its required fields: %+v", o)
		}
		score, verdict := learn.ImplicitScore(o)
		if score < 0 || score > 1 || verdict == "" {
			t.Fatalf("score %v verdict %q for %+v", score, verdict, o)
		}
	})
}

// FuzzDecodeVerdict: `verdict record` input either fails or yields a
// verdict with a run id and an evidence level of 1..3.
func FuzzDecodeVerdict(f *testing.F) {
	f.Add([]byte(`{"run_id":"r1","verdict":"FAIL","role":"reviewer","evidence_level":2,"false_positives":["Use SQLite"],"cited":["ADR-001"]}`))
	f.Add([]byte(`{"run_id":"r1","verdict":"PASS","evidence_level":4}`))
	f.Add([]byte(`{"verdict":"MAYBE"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := learn.DecodeVerdict(data)
		if err != nil {
			return
		}
		if v.RunID == "" || v.EvidenceLevel < 1 || v.EvidenceLevel > 3 {
			t.Fatalf("accepted a verdict without its required fields: %+v", v)
		}
	})
}

// FuzzWatchState: `learnwatch status` reads the watcher's state file with
// watch.ReadState, which never panics on what it finds there.
func FuzzWatchState(f *testing.F) {
	f.Add([]byte(`{"pid":4242,"root":"/r","started_at":"2026-01-05T09:00:00Z","watches":14,"counters":{"reconciles":37}}`), []byte("4242\n"))
	f.Add([]byte(`{"pid":"x"}`), []byte("-1"))
	f.Add([]byte(`{`), []byte("99999999999999999999"))
	f.Fuzz(func(t *testing.T, state, pid []byte) {
		root := t.TempDir()
		mem := filepath.Join(root, ".memory")
		if err := os.MkdirAll(mem, 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(mem, ".watch-state.json"), state, 0o644)
		os.WriteFile(filepath.Join(mem, ".watch.pid"), pid, 0o644)
		st, _, err := watch.ReadState(root)
		if err == nil && !json.Valid(state) {
			t.Fatalf("accepted a state file that is not JSON: %+v", st)
		}
	})
}
