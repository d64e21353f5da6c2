package manifest

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// cpuTime returns the CPU time the process has used (user + system, Linux:
// /proc/self/stat in ticks of 10 ms), 0 elsewhere.
func cpuTime() float64 {
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:]) // fields from the 3rd
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return (u + k) * 10 // ms
}

// cpuPerOp reports, beside the wall time (which a machine shared with
// other work inflates), the CPU time the process spent per op (GC
// included) as cpu-ms/op: call it before the loop, the result after.
func cpuPerOp(b *testing.B) func() {
	t0 := cpuTime()
	return func() {
		if t1 := cpuTime(); t1 > 0 && b.N > 0 {
			b.ReportMetric((t1-t0)/float64(b.N), "cpu-ms/op")
		}
	}
}

// benchManifest returns a manifest of n entries the shape a repository's
// has: command and skill files, one entry in four an ADR/PF anchor in a
// knowledge file, one in fifty penalised (a deletion record), one in five
// hundred with a field learnwatch does not know.
func benchManifest(n int) *Manifest {
	m := &Manifest{SchemaVersion: 1, Entries: make([]Entry, 0, n)}
	for i := range n {
		e := Entry{
			ObservationID: fmt.Sprintf("obs_%06d", i),
			Type:          Workflow,
			Path:          fmt.Sprintf(".claude/commands/self-learning/run-the-checks-before-commit-%d.md", i),
			ContentHash:   fmt.Sprintf("sha256:%064x", uint64(i)*0x9e3779b97f4a7c15),
			RenderedAt:    fmt.Sprintf("2026-%02d-%02dT10:%02d:00Z", 1+i%12, 1+i%28, i%60),
		}
		switch {
		case i%4 == 1:
			e.Type, e.Path = Procedural, fmt.Sprintf(".claude/skills/review-step-%d/SKILL.md", i)
		case i%4 == 2:
			e.Type, e.Path, e.AnchorID = Decision, ".memory/knowledge/decisions.md", fmt.Sprintf("ADR-%03d", i)
		}
		if i%50 == 7 {
			e.Deleted = &Deletion{At: "2026-11-20T09:00:00Z", Status: Created, Confidence: 0.95, Head: "0123456789abcdef0123456789abcdef01234567"}
		}
		if i%500 == 3 {
			e.extra = map[string]json.RawMessage{"x_origin": json.RawMessage(`{"tool":"devflow","v":2}`)}
		}
		m.Entries = append(m.Entries, e)
	}
	return m
}

// BenchmarkManifest measures the manifest's codec at 10k and 50k entries,
// the fast codec (new) and the encoding/json path kept as its reference
// (old) side by side:
//
//   - decode: the file's bytes to a Manifest (ReadManifest without the read);
//
//   - encode-cold: the first Encode of a manifest that has no memo (built
//     in memory, or read through encoding/json);
//
//   - encode-one: Encode after one entry changed, on a manifest encoded
//     before (a pass recording a deletion, the watcher's memory);
//
//   - pass: decode, change one entry, encode — what a pass that records a
//     deletion does to the manifest today;
//
//   - same: SameEntries against reflect.DeepEqual (heal's "did the entries
//     change"), on two copies of the entries.
//
//     go test -run '^$' -bench BenchmarkManifest -benchtime 20x ./manifest/
func BenchmarkManifest(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		data, err := benchManifest(n).encodeJSON()
		if err != nil {
			b.Fatal(err)
		}
		k := fmt.Sprintf("%dk", n/1000)
		for _, variant := range []string{"new", "old"} {
			decode := decodeManifest
			if variant == "old" {
				decode = decodeJSON
			}
			b.Run("decode/"+variant+"/"+k, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				defer cpuPerOp(b)()
				for b.Loop() {
					if m, err := decode(data); err != nil || len(m.Entries) != n {
						b.Fatal(err)
					}
				}
				// live-MiB: the heap a decoded manifest holds, then the
				// same manifest once encoded (the memo's new bytes).
				base := liveMiB(nil)
				m, _ := decode(data)
				b.ReportMetric(liveMiB(m)-base, "live-MiB")
				if _, err := m.Encode(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(liveMiB(m)-base, "live-encoded-MiB")
			})
		}
		b.Run("encode-cold/new/"+k, func(b *testing.B) {
			m, _ := decodeJSON(data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				m.memo = nil
				if out, err := m.Encode(); err != nil || len(out) != len(data) {
					b.Fatal(err)
				}
			}
		})
		b.Run("encode-cold/old/"+k, func(b *testing.B) {
			m, _ := decodeJSON(data)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			defer cpuPerOp(b)()
			for b.Loop() {
				if _, err := m.encodeJSON(); err != nil {
					b.Fatal(err)
				}
			}
		})
		for _, variant := range []string{"new", "old"} {
			encode := (*Manifest).Encode
			if variant == "old" {
				encode = (*Manifest).encodeJSON
			}
			b.Run("encode-one/"+variant+"/"+k, func(b *testing.B) {
				m, _ := decodeManifest(data)
				if _, err := encode(m); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				defer cpuPerOp(b)()
				i := 0
				for b.Loop() {
					e := &m.Entries[(i*7919)%n]
					i++
					e.RenderedAt = fmt.Sprintf("2026-12-01T00:00:%02dZ", i%60)
					if _, err := encode(m); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("pass/"+variant+"/"+k, func(b *testing.B) {
				decode := decodeManifest
				if variant == "old" {
					decode = decodeJSON
				}
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				defer cpuPerOp(b)()
				i := 0
				for b.Loop() {
					m, err := decode(data)
					if err != nil {
						b.Fatal(err)
					}
					e := &m.Entries[(i*7919)%n]
					i++
					e.Deleted = &Deletion{At: "2026-12-01T00:00:00Z", Status: Created, Confidence: 0.95}
					if _, err := encode(m); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run("same/new/"+k, func(b *testing.B) {
			m, _ := decodeManifest(data)
			before := append([]Entry(nil), m.Entries...)
			defer cpuPerOp(b)()
			for b.Loop() {
				if !SameEntries(before, m.Entries) {
					b.Fatal("differ")
				}
			}
		})
		b.Run("same/old/"+k, func(b *testing.B) {
			m, _ := decodeManifest(data)
			before := append([]Entry(nil), m.Entries...)
			defer cpuPerOp(b)()
			for b.Loop() {
				if !reflect.DeepEqual(before, m.Entries) {
					b.Fatal("differ")
				}
			}
		})
	}
}
