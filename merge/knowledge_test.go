package merge

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/learnwatch/learnwatch/markdown"
)

const kHead = "<!-- TL;DR: 1 decisions. Key: ADR-001 -->\n# Architectural Decisions\n\nDecisions learned from this repository's sessions.\n\n"

func adr(n, title, obs string) string {
	s := "## " + markdown.FormatID(markdown.ADR, mustAtoi(n)) + ": " + title + "\n\n- **Status**: Accepted\n- **Decision**: " + title + "\n"
	if obs != "" {
		s += "- **Source**: self-learning:" + obs + "\n"
	}
	return s
}

func mustAtoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

func file(secs ...string) []byte { return []byte(kHead + strings.Join(secs, "\n")) }

func ids(t *testing.T, src []byte) []string {
	t.Helper()
	var out []string
	for _, s := range markdown.Sections(src) {
		out = append(out, s.ID+"="+s.Source)
	}
	return out
}

func TestKnowledgeRenumbersTheIncomingEntry(t *testing.T) {
	base := file(adr("1", "Use SQLite", "obs_base"))
	ours := file(adr("1", "Use SQLite", "obs_base"), adr("2", "Keep handlers thin", "obs_alice"))
	theirs := file(adr("1", "Use SQLite", "obs_base"), adr("2", "Wrap errors", "obs_bob"), adr("3", "Retry only idempotent calls", "obs_bob2"))
	out, rep := Knowledge(base, ours, theirs, markdown.ADR, Labels{})
	if rep.Conflict {
		t.Fatalf("conflict: %v\n%s", rep.Notes, out)
	}
	got := strings.Join(ids(t, out), " ")
	want := "ADR-001=obs_base ADR-002=obs_alice ADR-004=obs_bob ADR-003=obs_bob2"
	if got != want {
		t.Fatalf("entries %s, want %s\n%s", got, want, out)
	}
	if len(rep.Renumbered) != 1 || rep.Renumbered[0] != (Renumber{From: "ADR-002", To: "ADR-004", Source: "obs_bob", Title: "Wrap errors"}) {
		t.Fatalf("renumbered %+v", rep.Renumbered)
	}
	if !bytes.HasPrefix(out, []byte("<!-- TL;DR: 4 decisions. Key: ADR-001, ADR-002, ADR-004, ADR-003 -->\n# Architectural Decisions\n")) {
		t.Fatalf("TL;DR not rebuilt:\n%s", out)
	}
	if !bytes.Contains(out, []byte("## ADR-004: Wrap errors\n\n- **Status**: Accepted\n- **Decision**: Wrap errors\n- **Source**: self-learning:obs_bob\n")) {
		t.Fatalf("renumbered entry's body changed:\n%s", out)
	}
}

func TestKnowledgeCases(t *testing.T) {
	one := adr("1", "Use SQLite", "")
	oneA := strings.Replace(one, "- **Status**", "- **Context**: alice\n- **Status**", 1)
	oneB := strings.Replace(one, "- **Status**", "- **Context**: bob\n- **Status**", 1)
	two := adr("2", "Keep handlers thin", "")
	fence := "## ADR-003: Document the API\n\n```md\n## ADR-009: not a heading\n```\n- **Status**: Accepted\n"
	tests := []struct {
		name               string
		base, ours, theirs []byte
		wantIDs            string // the entries, as markdown.Sections sees them
		conflict           bool
		markers            int // "<<<<<<<" lines
	}{
		{"one side edits", file(one, two), file(oneA, two), file(one, two), "ADR-001= ADR-002=", false, 0},
		{"theirs edits, ours adds", file(one), file(one, two), file(oneB), "ADR-001= ADR-002=", false, 0},
		{"both edit one line of an entry: conflict on that line only", file(one, two), file(oneA, two), file(oneB, two, fence), "ADR-001= ADR-002= ADR-003=", true, 1},
		{"both edit different lines of an entry: merged", file(one, two), file(oneA, two), file(strings.Replace(one, "- **Decision**: Use SQLite", "- **Decision**: Use SQLite in WAL mode", 1), two), "ADR-001= ADR-002=", false, 0},
		{"removed unchanged", file(one, two), file(one), file(one, two), "ADR-001=", false, 0},
		{"removed on one side, edited on the other", file(one, two), file(two), file(oneB, two), "ADR-002= ADR-001=", true, 1},
		{"same entry added on both sides", file(one), file(one, two), file(one, two), "ADR-001= ADR-002=", false, 0},
		{"a heading in a code block is not an entry", file(one), file(one, fence), file(one, two), "ADR-001= ADR-003= ADR-002=", false, 0},
		{"same observation, different text on both sides", file(one), file(one, adr("2", "A", "obs_x")), file(one, adr("2", "B", "obs_x")), "ADR-002=obs_x ADR-002=obs_x ADR-001=", true, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, rep := Knowledge(tt.base, tt.ours, tt.theirs, markdown.ADR, Labels{Ours: "HEAD", Theirs: "bob"})
			if rep.Conflict != tt.conflict {
				t.Fatalf("conflict %v, want %v (%v)\n%s", rep.Conflict, tt.conflict, rep.Notes, out)
			}
			if n := bytes.Count(out, []byte("\n<<<<<<< HEAD\n")); n != tt.markers {
				t.Fatalf("%d conflict blocks, want %d\n%s", n, tt.markers, out)
			}
			got := ids(t, out)
			if strings.Join(sortedCopy(got), " ") != strings.Join(sortedCopy(strings.Fields(tt.wantIDs)), " ") {
				t.Fatalf("entries %v, want %s\n%s", got, tt.wantIDs, out)
			}
			if !bytes.HasPrefix(out, []byte("<!-- TL;DR:")) || !bytes.Contains(out, []byte("\n# Architectural Decisions\n")) {
				t.Fatalf("preamble lost:\n%s", out)
			}
		})
	}
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// hasSource reports whether out holds "self-learning:" followed by white
// space (a line break included) and then source. A plain byte scan, not a regular expression: a
// fuzzed source may be invalid UTF-8, which regexp cannot compile.
func hasSource(out []byte, source string) bool {
	const marker = "self-learning:"
	for rest := out; ; {
		i := bytes.Index(rest, []byte(marker))
		if i < 0 {
			return false
		}
		rest = rest[i+len(marker):]
		// The id is the value's first field (markdown.Sections splits it
		// with strings.Fields), so it may follow on a continuation line.
		if bytes.HasPrefix(bytes.TrimLeftFunc(rest, unicode.IsSpace), []byte(source)) {
			return true
		}
	}
}

// FuzzKnowledge: whatever the three versions, nothing of either side is
// lost — every Source marker of ours and theirs is in the result — and a
// side merged with itself keeps its entries.
func FuzzKnowledge(f *testing.F) {
	f.Add(string(file(adr("1", "A", "obs_a"))), string(file(adr("1", "A", "obs_a"), adr("2", "B", "obs_b"))), string(file(adr("1", "A", "obs_a"), adr("2", "C", "obs_c"))))
	f.Add("", "## ADR-1\n- **Source**: self-learning:obs_1\n", "## ADR-1 — x\n```\n## ADR-2\n```\n- **Source**: self-learning:obs_2\n")
	f.Add("\xEF\xBB\xBF<!-- TL;DR: x -->\n# T\n", "# T\n\n## PF-001: a\n", "# U\n\n## PF-001: b\n## PF-001: c\n")
	// The id on a continuation line of its bullet (found by CI's fuzz pass).
	f.Add("", "## ADR-0\n* **SourCe**:self-learning:\n0\n", "")
	f.Fuzz(func(t *testing.T, base, ours, theirs string) {
		out, _ := Knowledge([]byte(base), []byte(ours), []byte(theirs), "", Labels{})
		// A side's entries as the merge reads them: a first line starting
		// "<!-- TL;DR:" is the TL;DR line, rebuilt, not a comment hiding
		// what follows when it is not closed there (found by CI's fuzz
		// pass). src is the side without its BOM and that line.
		entries := func(side string) (src string, secs []markdown.Section) {
			src = strings.TrimPrefix(side, bomBytes)
			if parseKnowledge([]byte(side)).hadTLDR {
				_, src, _ = strings.Cut(src, "\n")
			}
			return src, markdown.Sections([]byte(src))
		}
		// An entry one side left as the base had it and the other side
		// removed is a deletion, and a deletion merges like git's: gone.
		unchangedIn := func(side string) map[string]string {
			m := map[string]string{}
			src, secs := entries(side)
			for _, s := range secs {
				if s.Source != "" {
					m[s.Source] = strings.TrimSpace(src[s.Start:s.End])
				}
			}
			return m
		}
		inBase := unchangedIn(base)
		// sourceByID maps a side's entry ids to their Source markers.
		sourceByID := func(side string) map[string]string {
			m := map[string]string{}
			_, secs := entries(side)
			for _, s := range secs {
				if _, dup := m[s.ID]; !dup {
					m[s.ID] = s.Source
				}
			}
			return m
		}
		baseIDs := sourceByID(base)
		for _, pair := range [][2]string{{ours, theirs}, {theirs, ours}} {
			side, other := pair[0], unchangedIn(pair[1])
			otherIDs := sourceByID(pair[1])
			src, secs := entries(side)
			for _, s := range secs {
				_, kept := other[s.Source]
				if b, ok := inBase[s.Source]; ok && !kept && b == strings.TrimSpace(src[s.Start:s.End]) {
					continue // deleted on the other side, unchanged on this one
				}
				if otherSource, ok := otherIDs[s.ID]; ok && !kept && baseIDs[s.ID] == s.Source && otherSource != s.Source {
					// The other side rewrote this entry's Source line,
					// which this side left as the base had it: the line
					// merge takes the other side's change (found by CI's
					// fuzz pass).
					continue
				}
				if s.Source != "" && !hasSource(out, s.Source) {
					t.Fatalf("Source %s lost:\n%q", s.Source, out)
				}
			}
		}
		self, rep := Knowledge([]byte(base), []byte(ours), []byte(ours), "", Labels{})
		if len(rep.Renumbered) > 0 || len(markdown.Sections(self)) < len(markdown.Sections([]byte(ours))) {
			t.Fatalf("merging a side with itself changed its entries:\n%q\n%q", ours, self)
		}
	})
}

func TestMergeLines(t *testing.T) {
	tests := []struct {
		name, o, a, b, want string
		ok                  bool
	}{
		{"theirs only", "x\ny\nz", "x\ny\nz", "x\nY\nz", "x\nY\nz", true},
		{"different lines", "x\ny\nz", "X\ny\nz", "x\ny\nZ", "X\ny\nZ", true},
		{"same change", "x\ny", "x\nY", "x\nY", "x\nY", true},
		{"both insert at the end", "x", "x\na", "x\nb", "x\n<<<<<<< HEAD\na\n=======\nb\n>>>>>>> bob", false},
		{"same line", "x\ny\nz", "x\nA\nz", "x\nB\nz", "x\n<<<<<<< HEAD\nA\n=======\nB\n>>>>>>> bob\nz", false},
		{"one deletes, other edits elsewhere", "x\ny\nz\nw", "y\nz\nw", "x\ny\nz\nW", "y\nz\nW", true},
		{"adjacent changes conflict, as in git", "x\ny\nz", "x\nz", "x\ny\nZ", "x\n<<<<<<< HEAD\nz\n=======\ny\nZ\n>>>>>>> bob", false},
		{"empty base", "", "a", "a", "a", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := mergeLines([]byte(tt.o), []byte(tt.a), []byte(tt.b), Labels{Ours: "HEAD", Theirs: "bob"})
			if string(got) != tt.want || ok != tt.ok {
				t.Fatalf("got %q %v, want %q %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

// FuzzMergeLines: a side unchanged from base yields the other side; a side
// merged with itself is itself.
func FuzzMergeLines(f *testing.F) {
	f.Add("x\ny\nz", "x\nY\nz", "X\ny\nz")
	f.Add("", "a\n", "\nb")
	f.Fuzz(func(t *testing.T, o, a, b string) {
		if got, ok := mergeLines([]byte(o), []byte(o), []byte(b), Labels{}); !ok || string(got) != b {
			t.Fatalf("merge(o, o, b) = %q %v, want b %q", got, ok, b)
		}
		if got, ok := mergeLines([]byte(o), []byte(a), []byte(a), Labels{}); !ok || string(got) != a {
			t.Fatalf("merge(o, a, a) = %q %v, want a %q", got, ok, a)
		}
	})
}
