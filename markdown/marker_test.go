package markdown

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestMarker(t *testing.T) {
	tests := []struct {
		date time.Time
		conf float64
		obs  int
		want string
	}{
		{day, 0.8, 4, "# devflow-learning: auto-generated (2024-03-05, confidence: 0.8, obs: 4)"},
		{day, 1, 1, "# devflow-learning: auto-generated (2024-03-05, confidence: 1, obs: 1)"},
		{day, 0, 0, "# devflow-learning: auto-generated (2024-03-05, confidence: 0, obs: 0)"},
		{day, 0.65, 3, "# devflow-learning: auto-generated (2024-03-05, confidence: 0.65, obs: 3)"},
		// JavaScript prints the shortest round-tripping decimal, as does 'f', -1.
		{day, 1.0 / 3, 7, "# devflow-learning: auto-generated (2024-03-05, confidence: 0.3333333333333333, obs: 7)"},
		// The date is the UTC day, like devflow's toISOString().slice(0, 10).
		{time.Date(2024, 3, 6, 1, 0, 0, 0, time.FixedZone("CET", 3600*2)), 0.9, 2, "# devflow-learning: auto-generated (2024-03-05, confidence: 0.9, obs: 2)"},
	}
	for _, tt := range tests {
		if got := Marker(tt.date, tt.conf, tt.obs); got != tt.want {
			t.Errorf("Marker(%v, %v, %d) = %q, want %q", tt.date, tt.conf, tt.obs, got, tt.want)
		}
	}
}

func TestHasMarkerAndWithoutMarker(t *testing.T) {
	const m = "# devflow-learning: auto-generated (2024-03-05, confidence: 0.8, obs: 4)"
	tests := []struct {
		name, doc, without string
		has                bool
	}{
		{"devflow command", "---\ndescription: \"x\"\n" + m + "\n---\n\n# x\n", "---\ndescription: \"x\"\n---\n\n# x\n", true},
		{"bare marker", "---\n# devflow-learning: auto-generated\n---\n", "---\n---\n", true},
		{"CRLF", "---\r\nname: a\r\n" + m + "\r\n---\r\n", "---\r\nname: a\r\n---\r\n", true},
		{"no frontmatter", m + "\n# x\n", m + "\n# x\n", false},
		{"marker in the body", "---\nname: a\n---\n" + m + "\n", "---\nname: a\n---\n" + m + "\n", false},
		{"indented: inside a block scalar", "---\ndescription: |\n  " + m + "\n---\n", "---\ndescription: |\n  " + m + "\n---\n", false},
		{"unclosed frontmatter", "---\n" + m + "\n", "---\n" + m + "\n", false},
		{"other comment", "---\n# devflow-learning: hand-written\n---\n", "---\n# devflow-learning: hand-written\n---\n", false},
		{"marker with text after the parenthesis", "---\n" + m + " extra\n---\n", "---\n" + m + " extra\n---\n", false},
	}
	for _, tt := range tests {
		if got := HasMarker([]byte(tt.doc)); got != tt.has {
			t.Errorf("%s: HasMarker = %v, want %v", tt.name, got, tt.has)
		}
		if got := string(WithoutMarker([]byte(tt.doc))); got != tt.without {
			t.Errorf("%s: WithoutMarker = %q, want %q", tt.name, got, tt.without)
		}
	}
}

// Two renders of one observation on different days and at different
// confidences differ only in the marker line.
func TestWithoutMarkerComparesRenders(t *testing.T) {
	e := Entry{ObservationID: "obs_1", Pattern: "Squash fixups before pushing", Details: "steps: git rebase -i --autosquash", Evidence: []string{"PR 12"}, Date: day, Confidence: 0.7, Observations: 3}
	later := e
	later.Date, later.Confidence, later.Observations = day.AddDate(0, 1, 0), 0.95, 9
	for _, r := range []func(Entry) ([]byte, error){RenderCommand, func(e Entry) ([]byte, error) { return RenderSkill(e, Slug(e.Pattern)) }} {
		a, err := r(e)
		if err != nil {
			t.Fatal(err)
		}
		b, err := r(later)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(a, b) {
			t.Fatalf("renders on different days are equal:\n%s", a)
		}
		if !HasMarker(a) || !HasMarker(b) {
			t.Fatalf("render without marker:\n%s", a)
		}
		if !bytes.Equal(WithoutMarker(a), WithoutMarker(b)) {
			t.Errorf("without marker:\n%s\n---- vs ----\n%s", WithoutMarker(a), WithoutMarker(b))
		}
		if bytes.Contains(WithoutMarker(a), []byte("devflow-learning")) {
			t.Errorf("marker left in:\n%s", WithoutMarker(a))
		}
	}
}

// The marker is the last line of the frontmatter of every rendered command
// and skill, whatever the pattern, and the frontmatter still decodes.
func TestMarkerIsLastFrontmatterLine(t *testing.T) {
	for _, p := range append(hostile, "# devflow-learning: auto-generated (forged)", "x\n# devflow-learning: auto-generated\ny", "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk", "para\u2028graph\r\nx") {
		e := Entry{Pattern: p, Date: day, Confidence: 0.5, Observations: 2}
		cmd, err := RenderCommand(e)
		if err != nil {
			t.Fatal(err)
		}
		skill, err := RenderSkill(e, Slug(p))
		if err != nil {
			t.Fatal(err)
		}
		for i, out := range [][]byte{cmd, skill} {
			// Every key on one line: the marker is line 3 of a command and
			// line 6 of a skill, within the first 10 lines devflow reads.
			if want := []int{2, 5}[i]; strings.Split(string(out), "\n")[want] != Marker(day, 0.5, 2) {
				t.Errorf("%q: marker not on line %d\n%s", p, want+1, out)
			}
			fm, _, ok := frontmatterBlock(out)
			if !ok {
				t.Fatalf("%q: no frontmatter\n%s", p, out)
			}
			lines := strings.Split(strings.TrimSuffix(string(fm), "\n"), "\n")
			if last := lines[len(lines)-1]; last != Marker(day, 0.5, 2) {
				t.Errorf("%q: last frontmatter line %q\n%s", p, last, out)
			}
			if n := strings.Count(string(fm), "\n# devflow-learning"); n != 1 {
				t.Errorf("%q: %d marker lines at column 0\n%s", p, n, out)
			}
			got, _, err := Frontmatter(out)
			if err != nil || got["description"] != p {
				t.Errorf("%q: frontmatter %v, %v", p, got, err)
			}
		}
	}
}
