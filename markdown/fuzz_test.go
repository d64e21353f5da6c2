package markdown

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// knowledgeFile generates a decisions.md-like file with n entries, some deprecated,
// some with code blocks and human notes.
func knowledgeFile(n int) []byte {
	var file []byte
	for i := 1; i <= n; i++ {
		e := Entry{
			ObservationID: fmt.Sprintf("obs_%06d", i),
			Pattern:       fmt.Sprintf("Decision number %d about module m%d", i, i%17),
			Details:       fmt.Sprintf("context: package p%d grew; decision: split it at `internal/p%d/x.go`; rationale: smaller reviews", i, i),
			Date:          day,
		}
		sec := RenderDecision(FormatID(ADR, i), e)
		if i%10 == 0 {
			sec = bytes.Replace(sec, []byte("Accepted"), []byte("Deprecated"), 1)
		}
		if i%7 == 0 {
			sec = append(sec, "\n```md\n## ADR-999: example inside code\n```\n"...)
		}
		file = append(file, sec...)
		file = append(file, '\n')
		if i%25 == 0 {
			file = append(file, "## Notes\n\nSome human notes.\n\n"...)
		}
	}
	return append([]byte("<!-- TL;DR: x -->\n# Architectural Decisions\n\nWhy.\n\n"), file...)
}

func TestKnowledgeFileGenerator(t *testing.T) {
	secs := Sections(knowledgeFile(200))
	if len(secs) != 200 {
		t.Fatalf("got %d sections, want 200", len(secs))
	}
	if got := NextNumber(secs, ADR); got != 201 {
		t.Errorf("NextNumber = %d", got)
	}
}

func FuzzSections(f *testing.F) {
	seeds := []string{
		string(knowledgeFile(3)), // small: the fuzzer minimises every new input
		"## ADR-001: a\r\n\r\n- **Status**: Deprecated\r\n",
		"## PF-001: x\n```\n## PF-002: y\n",
		"~~~\n## ADR-1\n~~~\n    ## ADR-2\n## ADR-3\nSetext\n---\n",
		"## ADR-001: t ##\n##\n## \n#\n## ADR-002",
		"> ## ADR-001: q\n- ## ADR-002: l\n<div>\n## ADR-003\n</div>\n",
		"   ## ADR-007 — dash\n\t## ADR-008\n* **Area:** a\n+ **Source**: self-learning:",
		"\xEF\xBB\xBF## ADR-001: bom\n\x00## ADR-002\n",
		"## ADR-9999999999: big\n## ADR-0: zero\n",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		// src has room past its end, as a section's text has in its file:
		// nothing parsed may write there, nor change src (NewReader).
		buf := make([]byte, len(in)+8)
		copy(buf, in)
		src := buf[:len(in)]
		defer func() {
			if !bytes.Equal(src, in) || !bytes.Equal(buf[len(in):], make([]byte, 8)) {
				t.Fatalf("parsing wrote into its input: %q -> %q", in, buf)
			}
		}()
		secs := Sections(src)
		prevEnd := 0
		for i, s := range secs {
			if s.Start < prevEnd || s.Start < 0 || s.Start >= s.End || s.End > len(src) {
				t.Fatalf("section %d %s: Start %d End %d prevEnd %d len %d", i, s.ID, s.Start, s.End, prevEnd, len(src))
			}
			if !bytes.HasPrefix(src[s.Start:], []byte("##")) {
				t.Fatalf("section %d starts with %q", i, src[s.Start:min(s.Start+10, len(src))])
			}
			if s.LegacyEnd < s.Start || s.LegacyEnd > len(src) {
				t.Fatalf("section %d LegacyEnd %d outside [%d,%d]", i, s.LegacyEnd, s.Start, len(src))
			}
			if s.Kind != ADR && s.Kind != PF || !strings.HasPrefix(s.ID, s.Kind+"-") || s.Number < 0 {
				t.Fatalf("section %d bad id %q kind %q number %d", i, s.ID, s.Kind, s.Number)
			}
			if s.Line != 1+bytes.Count(src[:s.Start], []byte("\n")) {
				t.Fatalf("section %d line %d, want %d", i, s.Line, 1+bytes.Count(src[:s.Start], []byte("\n")))
			}
			text := SectionText(src, s)
			if !bytes.HasPrefix(text, []byte("##")) {
				t.Fatalf("section %d text %q", i, text)
			}
			if f := Fields(text); f["status"] != s.Status || f["area"] != s.Area {
				t.Fatalf("section %d: Fields %q disagree with Status %q Area %q", i, f, s.Status, s.Area)
			}
			prevEnd = s.End
		}
		_ = TLDR(src, ADR)
		// Appending a rendered entry keeps every earlier entry's text.
		out := Append(src, ADR, RenderDecision("ADR-100000", Entry{ObservationID: "obs_f", Pattern: "fuzz"}))
		if !bytes.Contains(out, []byte("## ADR-100000: fuzz")) {
			t.Fatalf("appended entry missing")
		}
	})
}

func FuzzRenderRoundTrip(f *testing.F) {
	for _, p := range hostile {
		f.Add(p, "context: c; decision: d", "ev")
	}
	f.Fuzz(func(t *testing.T, pattern, details, evidence string) {
		e := Entry{ObservationID: "obs_x", Pattern: pattern, Details: details, Evidence: []string{evidence}, Date: day}
		for _, render := range []func() ([]byte, error){
			func() ([]byte, error) { return RenderCommand(e) },
			func() ([]byte, error) { return RenderSkill(e, Slug(pattern)) },
		} {
			out, err := render()
			if err != nil {
				t.Fatalf("render %q: %v", pattern, err)
			}
			fm, _, err := Frontmatter(out)
			if err != nil {
				t.Fatalf("Frontmatter for %q: %v\n%s", pattern, err, out)
			}
			if got, _ := fm["description"].(string); got != pattern {
				t.Fatalf("description %q, want %q\n%s", got, pattern, out)
			}
			if !HasMarker(out) || HasMarker(WithoutMarker(out)) {
				t.Fatalf("marker of %q not found or not removed\n%s", pattern, out)
			}
		}
		// A rendered knowledge entry is exactly one section with the right ID and marker.
		for _, sec := range [][]byte{RenderDecision("ADR-042", e), RenderPitfall("PF-042", e)} {
			secs := Sections(sec)
			if len(secs) != 1 || secs[0].Number != 42 || !secs[0].HasMarker || secs[0].Source != "obs_x" || !secs[0].Active() {
				t.Fatalf("rendered entry for %q/%q parses as %+v\n%s", pattern, details, secs, sec)
			}
			if want := oneLine(pattern); secs[0].Title != want && !strings.HasSuffix(want, "#") {
				t.Fatalf("title %q, want %q", secs[0].Title, want)
			}
		}
	})
}

func FuzzFrontmatter(f *testing.F) {
	for _, s := range []string{"---\na: 1\n---\nbody", "---\r\n---\r\n", "---\n- x\n---\n", "---\na: [\n...\n", "# x", "---", "---\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		fm, body, err := Frontmatter(src)
		if err != nil {
			if fm != nil || body != nil || !strings.Contains(err.Error(), "line ") {
				t.Fatalf("error %v with fm %v body %q", err, fm, body)
			}
			return
		}
		if fm == nil && !bytes.Equal(body, src) {
			t.Fatalf("no frontmatter but body %q != src", body)
		}
		if fm != nil && !bytes.HasSuffix(src, body) {
			t.Fatalf("body %q is not a suffix of src", body)
		}
	})
}

func FuzzParseDetails(f *testing.F) {
	for _, s := range []string{"context: a; decision: b; rationale: c", "area: x; issue: y: z; impact: ;resolution: r;", "free text", ";;; :", "Issue:"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d := ParseDetails(s)
		for k, v := range d {
			if k != strings.ToLower(k) || strings.TrimSpace(k) != k {
				t.Fatalf("key %q not normalised", k)
			}
			if !strings.Contains(s, v) {
				t.Fatalf("value %q not from input %q", v, s)
			}
		}
	})
}

func BenchmarkSections(b *testing.B) {
	for _, n := range []int{200, 10000} {
		src := knowledgeFile(n)
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if got := len(Sections(src)); got != n {
					b.Fatalf("got %d sections", got)
				}
			}
		})
	}
}

// FuzzMarker: the marker scan never panics, removes at most one line and
// changes nothing in a document without a marker.
func FuzzMarker(f *testing.F) {
	f.Add([]byte("---\ndescription: x\n# devflow-learning: auto-generated (2024-01-01, confidence: 1, obs: 1)\n---\n"))
	f.Add([]byte("---\r\n# devflow-learning: auto-generated\r\n---"))
	f.Add([]byte("---\n---\n# devflow-learning: auto-generated\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		out := WithoutMarker(doc)
		if !HasMarker(doc) {
			if !bytes.Equal(out, doc) {
				t.Fatalf("no marker, but WithoutMarker changed %q to %q", doc, out)
			}
			return
		}
		if len(out) >= len(doc) || bytes.Count(doc, []byte("\n"))-bytes.Count(out, []byte("\n")) > 1 {
			t.Fatalf("WithoutMarker(%q) = %q", doc, out)
		}
	})
}
