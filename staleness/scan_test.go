package staleness

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

const decisions = `<!-- TL;DR: 2 decisions. Key: ADR-001, ADR-003 -->
# Architectural Decisions

Decisions of this repo.

## ADR-001: Auth lives in one place

- **Status**: Accepted
- **Context**: handlers in ` + "`src/auth/login.go`" + ` and src/auth/old.go:3
- **Decision**: see [the doc](../../docs/auth.md)

` + "```go\n// src/in_fence.go\n```" + `

## ADR-002: Superseded one

- **Status**: Superseded by ADR-003
- **Context**: src/superseded_missing.go

## ADR-003: Fine

- **Status**: Accepted
- **Context**: src/auth/login.go:2
`

const pitfalls = `# Known Pitfalls

## PF-001: Renamed helper

- **Area**: src/util.go
- **Issue**: breaks
- **Status**: Active

## PF-002: Gone

- **Area**: x
- **Issue**: src/gone.go
- **Status**: Deprecated
`

func obsLine(id, status, details string, evidence ...string) string {
	o := map[string]any{
		"id": id, "type": "pitfall", "pattern": "p " + id, "confidence": 0.5, "observations": 1,
		"first_seen": "2024-01-01T00:00:00Z", "last_seen": "2024-01-01T00:00:00Z", "status": status,
		"evidence": evidence, "details": details, "quality_ok": true,
	}
	b, _ := json.Marshal(o)
	return string(b)
}

func scanRepo(t *testing.T) (*gitRepo, *manifest.Log) {
	r := newRepo(t)
	r.write("src/auth/login.go", "a\nb\nc\n")
	r.write("src/auth/old.go", "a\nb\nc\n")
	r.write("src/util.go", "package util\n")
	r.write("docs/auth.md", "# auth\n")
	r.write(".memory/knowledge/decisions.md", decisions)
	r.write(".memory/knowledge/pitfalls.md", pitfalls)
	r.commit("init")
	r.git("rm", "-q", "src/auth/old.go")
	r.mv("src/util.go", "lib/util.go")
	r.commit("move")
	log := manifest.ParseLog([]byte(strings.Join([]string{
		obsLine("obs_fine", "created", "see src/auth/login.go:3"),
		obsLine("obs_stale", "observing", "context: x; decision: use src/util.go", "src/missing.ts:1", "src/auth/login.go:9"),
		obsLine("obs_dep", "deprecated", "src/gone.go"),
		`{not json`,
	}, "\n") + "\n"))
	return r, log
}

func TestScan(t *testing.T) {
	r, log := scanRepo(t)
	rep, err := Scan(r.dir, open(t, r.dir, Auto), log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Stale {
		got = append(got, fmt.Sprintf("%s %s %s %s", f.ID, f.Ref, f.Reason, f.RenamedTo))
	}
	want := []string{
		"ADR-001 src/auth/old.go:3 missing ",
		"PF-001 src/util.go missing lib/util.go",
		"obs_stale src/util.go missing lib/util.go",
		// src/missing.ts never existed: not reported.
		"obs_stale src/auth/login.go:9 line-past-eof ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stale:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// ADR-001: login.go, old.go:3, docs/auth.md; ADR-003: login.go:2;
	// PF-001: util.go; obs_fine: 1; obs_stale: 3.
	if rep.Checked != 9 {
		t.Errorf("checked = %d, want 9", rep.Checked)
	}
}

func TestScanNoMemory(t *testing.T) {
	dir := t.TempDir()
	rep, err := Scan(dir, open(t, dir, Auto), nil, Options{})
	if err != nil || rep.Checked != 0 || len(rep.Stale) != 0 || rep.Stale == nil {
		t.Fatalf("rep = %+v, err = %v", rep, err)
	}
}

func TestMark(t *testing.T) {
	r, log := scanRepo(t)
	rep, err := Scan(r.dir, open(t, r.dir, Auto), log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A previously stale observation whose refs are fine again, and one
	// marked stale by another tool for another reason.
	fine := log.Find("obs_fine")
	fine.MayBeStale, fine.StaleReason, fine.NeedsReview = true, "code-ref-missing:src/x.go", true
	dep := log.Find("obs_dep")
	dep.MayBeStale, dep.StaleReason = true, "code-ref-missing:src/gone.go"

	marked := Mark(log, rep.Stale)
	if len(marked) != 2 {
		t.Errorf("Mark changed %d, want 2", len(marked))
	}
	for _, m := range marked {
		if m.Line.Observation() == fine && (!m.MayBeStale || !m.NeedsReview || m.StaleReason != "code-ref-missing:src/x.go") {
			t.Errorf("obs_fine's marks before = %+v", m)
		}
	}
	s := log.Find("obs_stale")
	if !s.MayBeStale || !s.NeedsReview || s.StaleReason != "code-ref-missing:src/util.go" {
		t.Errorf("obs_stale = %+v", s)
	}
	// The reason no longer holds: the review flag the mark set goes too.
	if fine.MayBeStale || fine.StaleReason != "" || fine.NeedsReview {
		t.Errorf("obs_fine not cleared: %+v", fine)
	}
	if !dep.MayBeStale || dep.StaleReason == "" {
		t.Errorf("deprecated observation touched: %+v", dep)
	}
	if m := Mark(log, rep.Stale); len(m) != 0 {
		t.Errorf("second Mark changed %d", len(m))
	}
	if !log.Changed() {
		t.Fatal("log not changed")
	}
	// Written back: the corrupt line stays, the fields are there.
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := manifest.WriteLog(path, log); err != nil {
		t.Fatal(err)
	}
	back, err := manifest.ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Corrupt() != 1 || !back.Find("obs_stale").MayBeStale {
		t.Errorf("round trip lost data")
	}

	// Another tool's reason is not ours to clear.
	other := log.Find("obs_fine")
	other.MayBeStale, other.StaleReason = true, "schema-changed"
	if m := Mark(log, nil); len(m) != 1 || !other.MayBeStale {
		t.Errorf("Mark(nil) = %d, other = %+v", len(m), other)
	}
}

// Mark decodes only the lines with a finding or a mayBeStale mark, and
// clears a mark it set on a line read from disk.
func TestMarkDecodesOnlyResolvedLines(t *testing.T) {
	// Lines as devflow writes them: every field, compact, as encoding/json
	// writes its values.
	full := func(id, rest string) string {
		return `{"id":"` + id + `","type":"workflow","pattern":"p \u003c q","confidence":0.5,"observations":2,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","status":"ready","evidence":["a \"quoted\" note","src/x.go"],"details":"Steps:\n1. see src/a.go","quality_ok":true` + rest + `}`
	}
	log := manifest.ParseLog([]byte(strings.Join([]string{
		full("obs_a", ``),
		full("obs_b", `,"mayBeStale":true,"staleReason":"code-ref-missing:src/b.go","needsReview":true`),
		full("obs_c", `,"mayBeStale":true,"staleReason":"schema-changed"`),
		full("obs_d", ``),
		full("obs_e", `,"mayBeStale":true,"staleReason":"code-ref-missing:src/e.go","needsReview":true`),
		full("obs_f", `,"resolved":{"staleReasons":["code-ref-missing:src/f.go"]}`),
		full("obs_g", `,"resolved":{"staleReasons":["code-ref-missing:src/old.go"]}`),
	}, "\n") + "\n"))
	marked := Mark(log, []Finding{{ID: "obs_d", Ref: "src/d.go"}, {ID: "obs_e", Ref: "src/e.go"}, {ID: "obs_f", Ref: "src/f.go"}, {ID: "obs_g", Ref: "src/g.go"}})
	if len(marked) != 3 || marked[0].Line.ID() != "obs_b" || marked[0].StaleReason != "code-ref-missing:src/b.go" ||
		marked[1].Line.ID() != "obs_d" || marked[1].MayBeStale || marked[2].Line.ID() != "obs_g" {
		t.Fatalf("Mark = %+v", marked)
	}
	// Only the lines holding a person's resolution of a mark they would
	// get are decoded; the others' marks wait for the write.
	for i, want := range []bool{false, false, false, false, false, true, true} {
		if got := log.Lines[i].Decoded(); got != want {
			t.Errorf("line %d decoded %v, want %v", i, got, want)
		}
	}
	if b := log.Lines[1].Marks(); b != (manifest.Marks{}) {
		t.Errorf("obs_b not cleared: %+v", b)
	}
	if c := log.Lines[2].Marks(); !c.MayBeStale || c.StaleReason != "schema-changed" {
		t.Errorf("obs_c (another tool's reason) touched: %+v", c)
	}
	if d := log.Lines[3].Marks(); !d.MayBeStale || d.StaleReason != ReasonPrefix+"src/d.go" || !d.NeedsReview {
		t.Errorf("obs_d not marked: %+v", d)
	}
	if f := log.Lines[5].Marks(); f.MayBeStale {
		t.Errorf("obs_f marked though resolved: %+v", f)
	}
	// The write patches the marked lines' members in place (obs_g, decoded,
	// is encoded as before: the same bytes).
	out, err := log.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Join([]string{
		full("obs_a", ``),
		full("obs_b", ``),
		full("obs_c", `,"mayBeStale":true,"staleReason":"schema-changed"`),
		full("obs_d", `,"needsReview":true,"mayBeStale":true,"staleReason":"code-ref-missing:src/d.go"`),
		full("obs_e", `,"mayBeStale":true,"staleReason":"code-ref-missing:src/e.go","needsReview":true`),
		full("obs_f", `,"resolved":{"staleReasons":["code-ref-missing:src/f.go"]}`),
	}, "\n")
	if got := string(out); !strings.HasPrefix(got, want+"\n") {
		t.Errorf("written:\n%s\nwant the first lines:\n%s", got, want)
	}
}

func TestScanStaged(t *testing.T) {
	r, log := scanRepo(t)
	r.mv("src/auth/login.go", "src/auth/signin.go")
	rep, err := Scan(r.dir, open(t, r.dir, Staged), log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Stale {
		if f.Ref == "src/auth/login.go" || strings.HasPrefix(f.Ref, "src/auth/login.go:") {
			got = append(got, f.ID+" "+f.Ref+" "+f.RenamedTo)
		}
	}
	want := "ADR-001 src/auth/login.go src/auth/signin.go|ADR-003 src/auth/login.go:2 src/auth/signin.go:2|obs_fine src/auth/login.go:3 src/auth/signin.go:3|obs_stale src/auth/login.go:9 src/auth/signin.go:9"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}

// Scan looks a line up by its bytes only while it is not decoded: a
// second run over the same bytes decodes no line (the cache answers), and
// an observation changed in memory is checked as it is now, not as its
// bytes were when the cache learnt them.
func TestScanRawTextsAndChangedObservations(t *testing.T) {
	r, log := scanRepo(t)
	raw, err := log.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	c := open(t, r.dir, Auto)
	first, err := Scan(r.dir, c, log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SaveCache(); err != nil {
		t.Fatal(err)
	}
	render := func(rep Report) string {
		var b strings.Builder
		for _, f := range rep.Stale {
			fmt.Fprintf(&b, "%s %s %s %s\n", f.ID, f.Ref, f.Reason, f.RenamedTo)
		}
		return b.String()
	}

	again := manifest.ParseLog(raw)
	rep, err := Scan(r.dir, open(t, r.dir, Auto), again, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if render(rep) != render(first) || rep.Checked != first.Checked {
		t.Errorf("from the cache:\n%s\nwant:\n%s", render(rep), render(first))
	}
	for i, ln := range again.Lines {
		if ln.Decoded() {
			t.Errorf("line %d %q decoded by a Scan the cache answered", i, ln.Raw())
		}
	}

	changed := manifest.ParseLog(raw)
	changed.Find("obs_fine").Details = "now uses src/util.go"
	rep, err = Scan(r.dir, open(t, r.dir, Auto), changed, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(render(rep), "obs_fine src/util.go missing lib/util.go\n") {
		t.Errorf("the changed observation is checked as read:\n%s", render(rep))
	}
}

// TestExtractTextsParallel runs the extraction of enough pending texts to
// take every core and compares each result with the serial extraction of
// the decoded texts; values that do not decode are reported, not guessed.
func TestExtractTextsParallel(t *testing.T) {
	opts := Options{}
	var pending []pendingText
	for i := range 3000 {
		details := fmt.Sprintf("Step %d edits src/pkg%d/file%d.go:%d and `cmd/tool/main.go`, see docs/n%d.md", i, i%7, i, i%40, i%13)
		evidence := []string{fmt.Sprintf("internal/x%d.py", i%11), "plain words only", fmt.Sprintf("«web/app%d.ts»", i%5)}
		d, _ := json.Marshal(details)
		e, _ := json.Marshal(evidence)
		if i%500 == 7 {
			e = []byte(`["unterminated`) // never from a scanned line: reported as not decoded
		}
		if i%3 == 0 {
			e = nil // no evidence member
		}
		pending = append(pending, pendingText{details: d, evidence: e})
	}
	extractTexts(pending, opts)
	for i, p := range pending {
		details, evidence, err := manifest.DecodeTexts(p.details, p.evidence)
		if err != nil {
			if p.ok {
				t.Fatalf("text %d: extracted though its values do not decode (%v)", i, err)
			}
			continue
		}
		if !p.ok {
			t.Fatalf("text %d: not extracted", i)
		}
		if want := textRefs(details, evidence, opts); !slices.Equal(p.refs, want) {
			t.Fatalf("text %d: parallel %+v, serial %+v", i, p.refs, want)
		}
		if len(p.refs) != cap(p.refs) {
			t.Fatalf("text %d: %d references with room for %d: an append would write over the next text's", i, len(p.refs), cap(p.refs))
		}
		if len(p.refs) == 0 {
			t.Fatalf("text %d: no references in %q", i, details)
		}
	}
}

// TestExtractTextsLetTextsGo: the references extracted from a batch of
// texts do not keep the decoded texts alive. The scan and the cache hold
// every line's references to the end of a pass; when a reference's
// strings were slices of its decoded text, a first pass at 100,000
// observations held 5 MB of evidence for them.
func TestExtractTextsLetTextsGo(t *testing.T) {
	const n, size = 400, 16 << 10
	pending := make([]pendingText, n)
	for i := range pending {
		filler := strings.Repeat("word ", size/5)
		d, _ := json.Marshal(fmt.Sprintf("%s see src/pkg%d/file.go:%d %s", filler, i, i+1, filler))
		e, _ := json.Marshal([]string{fmt.Sprintf("%s ./web/app%d.ts", filler, i), `src\win\x.go`})
		pending[i] = pendingText{details: d, evidence: e}
	}
	extractTexts(pending, Options{})
	refs := make([][]Ref, n)
	for i := range pending {
		if !pending[i].ok || len(pending[i].refs) != 3 {
			t.Fatalf("text %d: %+v", i, pending[i].refs)
		}
		refs[i] = pending[i].refs
	}
	pending = nil
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	// Each decoded text is over 32 KB: n of them held would be 13 MB.
	if m.HeapAlloc > 5<<20 {
		t.Errorf("%d MB live after extracting and keeping only the references: the decoded texts are held", m.HeapAlloc>>20)
	}
	for i, rs := range refs {
		if rs[0].Path != fmt.Sprintf("src/pkg%d/file.go", i) || rs[0].Line != i+1 || rs[0].Raw != fmt.Sprintf("src/pkg%d/file.go:%d", i, i+1) {
			t.Fatalf("text %d: %+v", i, rs[0])
		}
		if rs[1].Path != fmt.Sprintf("web/app%d.ts", i) || !rs[1].Rooted || rs[1].Raw != fmt.Sprintf("./web/app%d.ts", i) {
			t.Fatalf("text %d: %+v", i, rs[1])
		}
		if rs[2].Path != "src/win/x.go" || rs[2].Raw != `src\win\x.go` {
			t.Fatalf("text %d: %+v", i, rs[2])
		}
	}
	runtime.KeepAlive(refs)
}

// TestScanUseParsed: sections handed over for a knowledge file are taken
// when the file holds the bytes they were split from, and ignored when it
// does not (the file changed since the caller read it).
func TestScanUseParsed(t *testing.T) {
	r, log := scanRepo(t)
	file := manifest.PathsFor(r.dir).Decisions
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// Sections of other text over the same bytes: only the ADR-003
	// section, renamed, so a Scan that took them says so.
	secs := markdown.Sections(src)
	var only []markdown.Section
	for _, s := range secs {
		if s.ID == "ADR-001" {
			s.ID = "ADR-901"
			only = append(only, s)
		}
	}
	if len(only) != 1 {
		t.Fatalf("the fixture has no ADR-001 section: %+v", secs)
	}
	ids := func(handed []byte) []string {
		c := open(t, r.dir, Auto)
		c.UseParsed(map[string]Parsed{file: {Src: handed, Sections: only}})
		rep, err := Scan(r.dir, c, log, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range rep.Stale {
			if strings.HasPrefix(f.ID, "ADR") {
				out = append(out, f.ID)
			}
		}
		return out
	}
	if got := ids(src); strings.Join(got, " ") != "ADR-901" {
		t.Errorf("same bytes: findings of %v, want the handed sections' ADR-901", got)
	}
	if got := ids(append([]byte("<!-- other -->\n"), src...)); strings.Join(got, " ") != "ADR-001" {
		t.Errorf("other bytes: findings of %v, want the file's own ADR-001", got)
	}
}

// Observations with the same texts are extracted once and each gets the
// references, through the serial path and the one on every core alike.
func TestScanSameTextsExtractedOnce(t *testing.T) {
	r, _ := scanRepo(t)
	base, err := Scan(r.dir, open(t, r.dir, Auto), nil, Options{}) // the knowledge files' references
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{3, 3 * extractShare * runtime.GOMAXPROCS(0)} {
		var lines []string
		for i := range n {
			details := "uses src/util.go"
			if i%2 == 1 {
				details = fmt.Sprintf("text %d names src/gone%d.go", i, i)
			}
			lines = append(lines, obsLine(fmt.Sprintf("obs_%d", i), "created", details))
		}
		log := manifest.ParseLog([]byte(strings.Join(lines, "\n") + "\n"))
		rep, err := Scan(r.dir, open(t, r.dir, Auto), log, Options{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int{}
		for _, f := range rep.Stale {
			if f.Ref == "src/util.go" && f.RenamedTo == "lib/util.go" {
				got[f.ID]++
			}
		}
		for i := 0; i < n; i += 2 {
			if got[fmt.Sprintf("obs_%d", i)] != 1 {
				t.Fatalf("%d observations: obs_%d has %d findings for src/util.go, want 1", n, i, got[fmt.Sprintf("obs_%d", i)])
			}
		}
		if rep.Checked != base.Checked+n {
			t.Errorf("%d observations: %d references checked, want %d", n, rep.Checked, base.Checked+n)
		}
	}
}

// A log longer than a batch of keys (keyBatch) is scanned line for line:
// every line's findings its own whatever its batch, cold and from the
// cache alike, with lines the scan skips (deprecated, invalid) and a text
// repeated across batches.
func TestScanAcrossKeyBatches(t *testing.T) {
	r, _ := scanRepo(t)
	cfg := config.Default().Staleness
	n := 2*keyBatch + 37
	var lines []string
	for i := range n {
		status, details := "created", fmt.Sprintf("text %d names src/gone%d.go", i, i)
		switch {
		case i%5 == 0:
			details = "uses src/util.go" // the same text in every batch
		case i%7 == 0:
			status = "deprecated"
		case i%11 == 0:
			lines = append(lines, `{"id":"obs_bad`+fmt.Sprint(i)+`","type":`) // invalid
			continue
		case i%3 == 0:
			details = fmt.Sprintf("step %d moved out of src/util.go", i) // a text of its own, stale
		}
		lines = append(lines, obsLine(fmt.Sprintf("obs_%d", i), status, details))
	}
	data := []byte(strings.Join(lines, "\n") + "\n")
	// A line of the second batch a pass decoded and changed (its bytes
	// no longer say its texts), where the first batch's line in its place
	// is keyed from its bytes.
	changed := keyBatch + 1
	for changed%5 == 0 || changed%7 == 0 || changed%11 == 0 || changed%3 == 0 || (changed-keyBatch)%7 == 0 || (changed-keyBatch)%11 == 0 {
		changed++
	}
	parse := func() *manifest.Log {
		log := manifest.ParseLog(data)
		log.Lines[changed].Observation().Details = "now moved out of src/util.go"
		return log
	}
	cold, _ := cacheRun(t, r.dir, Auto, cfg, parse(), true)
	warm, c := cacheRun(t, r.dir, Auto, cfg, parse(), false)
	if c.cache.extNew {
		t.Error("the warm scan extracted texts the cache held")
	}
	if warm != cold {
		t.Error("the scan from the cache reports otherwise than the cold one")
	}
	// The same log read in chunks (as a large one is): its lines' bytes
	// read back a chunk at a time.
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	chunked, err := manifest.ReadLogChunks(path, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	chunked.Lines[changed].Observation().Details = "now moved out of src/util.go"
	if got, _ := cacheRun(t, r.dir, Auto, cfg, chunked, true); got != cold {
		t.Error("the scan of the log read in chunks reports otherwise")
	}
	if err := chunked.Err(); err != nil {
		t.Fatal(err)
	}
	var rep Report
	if err := json.Unmarshal([]byte(cold), &rep); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range rep.Stale {
		got[f.ID] = f.Ref
	}
	for i := range n {
		// A path no commit ever had (src/goneN.go) is no finding.
		id, want := fmt.Sprintf("obs_%d", i), ""
		switch {
		case i%5 == 0:
			want = "src/util.go"
		case i%7 == 0, i%11 == 0:
		case i%3 == 0, i == changed:
			want = "src/util.go"
		}
		if got[id] != want {
			t.Fatalf("%s: finding for %q, want %q", id, got[id], want)
		}
	}
}

// The raw-text key is the SHA-256 of "obs-raw", the details value and the
// evidence value, each after its length as 8 little-endian bytes: keys in
// cache files written before stay valid.
func TestRawTextKeyLayout(t *testing.T) {
	for _, c := range []struct{ d, e []byte }{
		{nil, nil},
		{[]byte(`"See src/cache.go."`), []byte(`["a","b"]`)},
		{[]byte(`""`), nil},
		{nil, []byte(`[]`)},
		{[]byte(`"` + strings.Repeat("x", 500) + `"`), []byte(`null`)},
	} {
		var layout []byte
		for _, b := range [][]byte{[]byte("obs-raw"), c.d, c.e} {
			layout = binary.LittleEndian.AppendUint64(layout, uint64(len(b)))
			layout = append(layout, b...)
		}
		if rawTextKey(c.d, c.e) != sha256.Sum256(layout) {
			t.Fatalf("key of %q %q differs from the layout", c.d, c.e)
		}
	}
}
