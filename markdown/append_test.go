package markdown

import (
	"bytes"
	"strings"
	"testing"
)

func decision(id, obs string) []byte {
	return RenderDecision(id, Entry{ObservationID: obs, Pattern: "pattern " + id, Details: "decision: d", Date: day})
}

func TestAppendEmpty(t *testing.T) {
	for _, file := range [][]byte{nil, []byte(""), []byte(" \n\t\n"), []byte("<!-- TL;DR: 0 decisions. Key: none -->\n\n")} {
		got := string(Append(file, ADR, decision("ADR-001", "obs_1")))
		want := "<!-- TL;DR: 1 decisions. Key: ADR-001 -->\n# Architectural Decisions\n\n" +
			"Architectural decisions learned from this repository's sessions, one ADR per section.\n\n" +
			string(decision("ADR-001", "obs_1"))
		if got != want {
			t.Errorf("Append(%q) =\n%s\nwant\n%s", file, got, want)
		}
	}
	got := string(Append(nil, PF, RenderPitfall("PF-001", Entry{ObservationID: "o", Pattern: "p"})))
	if !strings.HasPrefix(got, "<!-- TL;DR: 1 pitfalls. Key: PF-001 -->\n# Known Pitfalls\n\nPitfalls learned") {
		t.Errorf("pitfall file starts:\n%s", got)
	}
}

func TestAppendHumanFile(t *testing.T) {
	human := "# Decisions\n\nWritten by hand.\n\n## ADR-001: Hand made\n\n- **Status**: Accepted\n" +
		"\n```\n## ADR-050: in code\n```\n"
	got := Append([]byte(human), ADR, decision("ADR-002", "obs_2"))
	want := "<!-- TL;DR: 2 decisions. Key: ADR-001, ADR-002 -->\n" + human + "\n" + string(decision("ADR-002", "obs_2"))
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// No trailing newline: one blank line is added, existing bytes stay.
	got = Append([]byte("# D\n\n## ADR-001: x"), ADR, decision("ADR-002", "o"))
	if want := "<!-- TL;DR: 2 decisions. Key: ADR-001, ADR-002 -->\n# D\n\n## ADR-001: x\n\n" + string(decision("ADR-002", "o")); string(got) != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// Trailing blank lines already separate: nothing is removed, nothing added.
	got = Append([]byte("# D\n\n\n\n"), ADR, decision("ADR-001", "o"))
	if want := "<!-- TL;DR: 1 decisions. Key: ADR-001 -->\n# D\n\n\n\n" + string(decision("ADR-001", "o")); string(got) != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestAppendUpdatesTLDR(t *testing.T) {
	var file []byte
	for i := 1; i <= 7; i++ {
		file = Append(file, ADR, decision(FormatID(ADR, i), "o"))
	}
	// Deprecate ADR-006 and supersede ADR-003 by hand.
	file = bytes.Replace(file, []byte("## ADR-006: pattern ADR-006\n\n- **Date**: 2024-03-05\n- **Status**: Accepted"),
		[]byte("## ADR-006: pattern ADR-006\n\n- **Date**: 2024-03-05\n- **Status**: Deprecated"), 1)
	file = bytes.Replace(file, []byte("## ADR-003: pattern ADR-003\n\n- **Date**: 2024-03-05\n- **Status**: Accepted"),
		[]byte("## ADR-003: pattern ADR-003\n\n- **Date**: 2024-03-05\n- **Status**: Superseded by ADR-007"), 1)
	before := file
	got := Append(before, ADR, decision("ADR-008", "o"))
	first, rest, _ := bytes.Cut(got, []byte("\n"))
	if want := "<!-- TL;DR: 6 decisions. Key: ADR-002, ADR-004, ADR-005, ADR-007, ADR-008 -->"; string(first) != want {
		t.Errorf("TL;DR = %s, want %s", first, want)
	}
	_, beforeRest, _ := bytes.Cut(before, []byte("\n"))
	if !bytes.HasPrefix(rest, beforeRest) {
		t.Errorf("bytes after the TL;DR line changed")
	}
	if string(rest[len(beforeRest):]) != "\n"+string(decision("ADR-008", "o")) {
		t.Errorf("appended tail = %q", rest[len(beforeRest):])
	}
	if got := TLDR(got, ADR); got != string(first) {
		t.Errorf("TLDR() = %s, first line %s", got, first)
	}
}

func TestAppendCRLFAndBOM(t *testing.T) {
	human := "\xEF\xBB\xBF<!-- TL;DR: 0 decisions. Key: none -->\r\n# D\r\n\r\n## ADR-001: x\r\n"
	got := string(Append([]byte(human), ADR, []byte("## ADR-002: y\n\n- **Status**: Accepted\n")))
	want := "\xEF\xBB\xBF<!-- TL;DR: 2 decisions. Key: ADR-001, ADR-002 -->\r\n# D\r\n\r\n## ADR-001: x\r\n\r\n" +
		"## ADR-002: y\r\n\r\n- **Status**: Accepted\r\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestTLDR(t *testing.T) {
	if got := TLDR(nil, PF); got != "<!-- TL;DR: 0 pitfalls. Key: none -->" {
		t.Errorf("TLDR(nil) = %s", got)
	}
	src := "## PF-001: a\n\n- **Status**: Active\n\n## ADR-001: other kind\n\n## PF-002: b\n\n- **Status**: deprecated\n"
	if got := TLDR([]byte(src), PF); got != "<!-- TL;DR: 1 pitfalls. Key: PF-001 -->" {
		t.Errorf("TLDR = %s", got)
	}
}
