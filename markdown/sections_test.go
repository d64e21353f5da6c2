package markdown

import (
	"strings"
	"testing"
)

// brief is a short summary of a section for table comparisons.
type brief struct {
	ID, Title, Status, Area, Source string
	Marker                          bool
	Line                            int
}

func briefs(secs []Section) []brief {
	var out []brief
	for _, s := range secs {
		out = append(out, brief{s.ID, s.Title, s.Status, s.Area, s.Source, s.HasMarker, s.Line})
	}
	return out
}

func TestSections(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []brief
	}{
		{
			name: "adr and pf with bullets",
			src: "<!-- TL;DR: 2 decisions. Key: ADR-001, ADR-002 -->\n# Architectural Decisions\n\nIntro.\n\n" +
				"## ADR-001: Use Postgres\n\n- **Date**: 2024-01-01\n- **Status**: Accepted\n- **Source**: self-learning:obs_abc\n\n" +
				"## PF-002: Flaky tests\n\n- **Area**: ci/tests\n- **Status**: Active\n",
			want: []brief{
				{"ADR-001", "Use Postgres", "Accepted", "", "obs_abc", true, 6},
				{"PF-002", "Flaky tests", "Active", "ci/tests", "", false, 12},
			},
		},
		{
			name: "fenced backticks, fenced tildes and indented code are not headings",
			src: "## ADR-001: Real\n\n```md\n## ADR-002: in backticks\n- **Status**: Deprecated\n```\n\n" +
				"~~~\n## ADR-003: in tildes\n~~~\n\n    ## ADR-004: indented code\n\n- **Status**: Accepted\n",
			want: []brief{{"ADR-001", "Real", "Accepted", "", "", false, 1}},
		},
		{
			name: "heading in block quote or list item is not an entry",
			src:  "> ## ADR-001: quoted\n\n- ## ADR-002: in a list\n\n## ADR-003: top\n",
			want: []brief{{"ADR-003", "top", "", "", "", false, 5}},
		},
		{
			name: "duplicates are both returned",
			src:  "## ADR-001: One\n\n## ADR-001: One again\n",
			want: []brief{{"ADR-001", "One", "", "", "", false, 1}, {"ADR-001", "One again", "", "", "", false, 3}},
		},
		{
			name: "crlf line endings",
			src:  "# T\r\n\r\n## ADR-001: Crlf title\r\n\r\n- **Status**: Deprecated\r\n- **Area**: api\r\n\r\n## ADR-002: Next\r\n",
			want: []brief{
				{"ADR-001", "Crlf title", "Deprecated", "api", "", false, 3},
				{"ADR-002", "Next", "", "", "", false, 8},
			},
		},
		{
			name: "no trailing newline",
			src:  "## PF-001: Last\n\n- **Status**: Active",
			want: []brief{{"PF-001", "Last", "Active", "", "", false, 1}},
		},
		{
			name: "bullet variants",
			src: "## ADR-001: Stars\n\n*   **Status**:   Superseded by ADR-2  \n* **Area:** web  ui\n" +
				"+ **Source**:   self-learning:obs_x trailing\n",
			want: []brief{{"ADR-001", "Stars", "Superseded by ADR-2", "web  ui", "obs_x", true, 1}},
		},
		{
			name: "marker with empty id, first bullet wins, ordered lists ignored",
			src: "## PF-001: M\n\n1. **Status**: Deprecated\n\n- **Status**: Active\n- **Status**: Deprecated\n" +
				"- **Source**: self-learning:\n",
			want: []brief{{"PF-001", "M", "Active", "", "", true, 1}},
		},
		{
			name: "a field inside a code block of a list item does not count",
			src:  "## PF-001: C\n\n- ```\n  **Status**: Deprecated\n  ```\n- **Status**: Active\n",
			want: []brief{{"PF-001", "C", "Active", "", "", false, 1}},
		},
		{
			name: "source that is not self-learning",
			src:  "## ADR-001: Human\n\n- **Source**: meeting 2024-03\n",
			want: []brief{{"ADR-001", "Human", "", "", "", false, 1}},
		},
		{
			name: "a following non-entry heading ends the bullets",
			src:  "## ADR-001: A\n\nText.\n\n## Notes\n\n- **Status**: Deprecated\n",
			want: []brief{{"ADR-001", "A", "", "", "", false, 1}},
		},
		{
			name: "looser forms",
			src: "## ADR-7 — Em dash\n## ADR-8 - Hyphen\n## PF-9\n## ADR-010 No separator\n## ADR-011. Dot\n" +
				"## ADR-012: closing hashes ##\n   ## ADR-013: indented three\n",
			want: []brief{
				{"ADR-7", "Em dash", "", "", "", false, 1},
				{"ADR-8", "Hyphen", "", "", "", false, 2},
				{"PF-9", "", "", "", "", false, 3},
				{"ADR-010", "No separator", "", "", "", false, 4},
				{"ADR-011", "Dot", "", "", "", false, 5},
				{"ADR-012", "closing hashes", "", "", "", false, 6},
				{"ADR-013", "indented three", "", "", "", false, 7},
			},
		},
		{
			name: "not entries",
			src: "# ADR-001: level one\n### ADR-002: level three\n## ADR-003a: suffix\n## adr-004: lower\n" +
				"## ADR-: no digits\n## ADR-1234567890: too long\n## The ADR-005: prefix\n##ADR-006: no space\n" +
				"ADR-007: setext\n---\n<div>\n## ADR-008: html block\n</div>\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := briefs(Sections([]byte(tt.src)))
			if len(got) != len(tt.want) {
				t.Fatalf("got %d sections %+v, want %d %+v", len(got), got, len(tt.want), tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("section %d:\n got %+v\nwant %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestSectionEnds(t *testing.T) {
	src := "## ADR-001: A\n\nbody a\n\n## Notes\n\nnotes\n\n## ADR-002: B\n\nbody b\n\nSetext\n------\n\nafter\n\n## ADR-003: C\n\n# Appendix\n\nx\n"
	secs := Sections([]byte(src))
	if len(secs) != 3 {
		t.Fatalf("got %d sections", len(secs))
	}
	wantText := []string{"## ADR-001: A\n\nbody a", "## ADR-002: B\n\nbody b", "## ADR-003: C"}
	for i, s := range secs {
		if got := string(SectionText([]byte(src), s)); got != wantText[i] {
			t.Errorf("%s text = %q, want %q", s.ID, got, wantText[i])
		}
	}
	if e := strings.Index(src, "## Notes"); secs[0].End != e {
		t.Errorf("ADR-001 End = %d, want %d (the ## Notes heading)", secs[0].End, e)
	}
	if e := strings.Index(src, "Setext"); secs[1].End != e {
		t.Errorf("ADR-002 End = %d, want %d (the setext heading)", secs[1].End, e)
	}
	if e := strings.Index(src, "# Appendix"); secs[2].End != e {
		t.Errorf("ADR-003 End = %d, want %d (the level-1 heading)", secs[2].End, e)
	}
}

// TestByteRanges pins Start, End, LegacyEnd and SectionText on a 3-entry file.
func TestByteRanges(t *testing.T) {
	head := "<!-- TL;DR: 3 decisions. Key: ADR-001, ADR-002, ADR-003 -->\n# Architectural Decisions\n\nWhy.\n\n"
	a := "## ADR-001: First\n\n- **Status**: Accepted\n"
	b := "## ADR-002: Second\n\n- **Status**: Accepted\n\n## Notes\n\nhuman notes\n"
	c := "## ADR-003: Third\n\n- **Status**: Accepted\n"
	tail := "\n\n  \n"
	src := head + a + "\n" + b + "\n\n" + c + tail
	secs := Sections([]byte(src))
	if len(secs) != 3 {
		t.Fatalf("got %d sections", len(secs))
	}
	aStart := len(head)
	bStart := aStart + len(a) + 1
	notes := bStart + strings.Index(b, "## Notes")
	cStart := bStart + len(b) + 2
	want := []struct{ start, end, legacy int }{
		{aStart, bStart, bStart - 1},
		{bStart, notes, cStart - 1},
		{cStart, len(src), cStart + len(c) - 1},
	}
	for i, s := range secs {
		if s.Start != want[i].start || s.End != want[i].end || s.LegacyEnd != want[i].legacy {
			t.Errorf("%s: Start,End,LegacyEnd = %d,%d,%d want %d,%d,%d", s.ID,
				s.Start, s.End, s.LegacyEnd, want[i].start, want[i].end, want[i].legacy)
		}
	}
	legacy := []string{a, b + "\n", strings.TrimSuffix(c, "\n")}
	text := []string{strings.TrimSuffix(a, "\n"), strings.TrimSuffix(b[:strings.Index(b, "## Notes")], "\n\n"), strings.TrimSuffix(c, "\n")}
	for i, s := range secs {
		if got := src[s.Start:s.LegacyEnd]; got != legacy[i] {
			t.Errorf("%s legacy text = %q, want %q", s.ID, got, legacy[i])
		}
		if got := string(SectionText([]byte(src), s)); got != text[i] {
			t.Errorf("%s SectionText = %q, want %q", s.ID, got, text[i])
		}
	}
	// Appending an entry never changes an earlier entry's text.
	more := src + "## ADR-004: Fourth\n"
	secs2 := Sections([]byte(more))
	for i := range secs {
		if string(SectionText([]byte(more), secs2[i])) != text[i] {
			t.Errorf("%s text changed after append", secs[i].ID)
		}
	}
}

func TestActive(t *testing.T) {
	tests := []struct {
		status string
		want   bool
	}{
		{"Accepted", true},
		{"Active", true},
		{"", true},
		{"Proposed", true},
		{"Deprecated", false},
		{"deprecated", false},
		{"DEPRECATED (2024-05-01)", false},
		{"**Deprecated**", false},
		{"Superseded", false},
		{"Superseded by ADR-2", false},
		{"superseded by [ADR-9](#adr-9)", false},
		{"Not deprecated", true},
	}
	for _, tt := range tests {
		if got := (Section{Status: tt.status}).Active(); got != tt.want {
			t.Errorf("Active(%q) = %v, want %v", tt.status, got, tt.want)
		}
	}
}

func TestNextNumberAndFormatID(t *testing.T) {
	secs := Sections([]byte("## ADR-001: a\n## ADR-003: c\n## PF-010: p\n"))
	if got := NextNumber(secs, ADR); got != 4 {
		t.Errorf("NextNumber(ADR) = %d, want 4", got)
	}
	if got := NextNumber(secs, PF); got != 11 {
		t.Errorf("NextNumber(PF) = %d, want 11", got)
	}
	if got := NextNumber(nil, ADR); got != 1 {
		t.Errorf("NextNumber(nil) = %d, want 1", got)
	}
	for n, want := range map[int]string{1: "ADR-001", 12: "ADR-012", 999: "ADR-999", 1000: "ADR-1000"} {
		if got := FormatID(ADR, n); got != want {
			t.Errorf("FormatID(ADR, %d) = %q, want %q", n, got, want)
		}
	}
	if got := FormatID(PF, 12); got != "PF-012" {
		t.Errorf("FormatID(PF, 12) = %q", got)
	}
}

func TestFields(t *testing.T) {
	pf := RenderPitfall("PF-001", Entry{ObservationID: "obs_1", Pattern: "p",
		Details: "area: db; issue: tests collide\non schema; impact: flaky; resolution: isolate"})
	got := Fields(pf)
	want := map[string]string{"area": "db", "issue": "tests collide on schema", "impact": "flaky",
		"resolution": "isolate", "status": "Active", "source": "self-learning:obs_1"}
	if len(got) != len(want) {
		t.Fatalf("Fields = %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("Fields[%q] = %q, want %q", k, got[k], v)
		}
	}
	src := "## PF-001: x\n\n* **Issue:** wrapped\n  line\n- ```\n  **Area**: code\n  ```\n\n## Notes\n\n- **Area**: notes\n"
	if got := Fields([]byte(src)); got["issue"] != "wrapped line" || got["area"] != "" {
		t.Errorf("Fields = %q", got)
	}
}
