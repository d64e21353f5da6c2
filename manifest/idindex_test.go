package manifest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// firstValid is what FindLine must return: the first valid line with id.
func firstValid(l *Log, id string) *Line {
	for _, ln := range l.Lines {
		if ln.valid() && ln.ID() == id {
			return ln
		}
	}
	return nil
}

// TestFindLineFirstValid compares FindLine with a scan of the lines on
// logs of every size around the index's growth, with ids repeated (first
// valid wins), lines that fail Validate or do not parse, and ids absent.
func TestFindLineFirstValid(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for _, n := range []int{0, 1, 2, 10, 11, 12, 16, 17, 100, 683, 1000, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var b strings.Builder
			ids := max(1, n*2/3) // about a third of the lines repeat an id
			for range n {
				id := fmt.Sprintf("obs_%d", rng.IntN(ids))
				switch rng.IntN(8) {
				case 0: // does not parse
					fmt.Fprintf(&b, "{\"id\":%q,\n", id)
				case 1: // parses, fails Validate (no type)
					fmt.Fprintf(&b, "{\"id\":%q,\"pattern\":\"p\"}\n", id)
				default:
					fmt.Fprintf(&b, "{\"id\":%q,\"type\":\"workflow\",\"pattern\":\"p\",\"confidence\":0.5,\"observations\":1,\"first_seen\":\"2026-01-01T00:00:00Z\",\"last_seen\":\"2026-01-01T00:00:00Z\",\"status\":\"observing\",\"evidence\":[],\"details\":\"\"}\n", id)
				}
			}
			l := ParseLog([]byte(b.String()))
			found := 0
			for k := range ids + 5 {
				id := fmt.Sprintf("obs_%d", k)
				want := firstValid(l, id)
				if got := l.FindLine(id); got != want {
					t.Fatalf("FindLine(%s) = %p, want %p", id, got, want)
				}
				if want != nil {
					found++
				}
			}
			if n >= 100 && found == 0 {
				t.Fatal("no id found: the test lost its valid lines")
			}
			// Lines appended are indexed at the next look-up; a clone
			// shares the index and finds its own lines.
			l.Append(&Observation{ID: "obs_new", Type: "workflow", Pattern: "p", Status: "observing", Confidence: 0.5, Observations: 1})
			if got := l.FindLine("obs_new"); got != firstValid(l, "obs_new") || got == nil {
				t.Fatalf("appended line: got %p", got)
			}
			c, _ := l.Clone()
			for k := range ids {
				id := fmt.Sprintf("obs_%d", k)
				if got, want := c.FindLine(id), firstValid(c, id); got != want {
					t.Fatalf("clone: FindLine(%s) = %p, want %p", id, got, want)
				}
			}
		})
	}
}
