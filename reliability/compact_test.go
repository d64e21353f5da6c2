package reliability

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
)

// compactJournal is a feedback journal of 200 days of events on targets
// the template does not have.
func compactJournal() []string {
	var lines []string
	// No deleted events and no garbage: the harness's invariants allow
	// neither for artifacts the scenario never removed.
	kinds := []string{"cited", "kept", "edited", "aged", "false_positive", "outcome"}
	for i := range 300 {
		ts := day(-200 + i*2/3).Add(time.Duration(i%5) * time.Hour)
		lines = append(lines, fmt.Sprintf(`{"ts":%q,"target":"ADR-9%02d","kind":%q,"value":0.75,"source":"reconcile","type":"decision"}`,
			ts.Format("2006-01-02T15:04:05Z"), i%17, kinds[i%len(kinds)]))
	}
	return lines
}

// compactScenario compacts the journal (and ranks from it, writing the fold
// snapshot): killed anywhere, nothing is lost and the fold of the journal
// stays the fold of the events written.
func compactScenario() scenario {
	return scenario{
		name: "compact",
		setup: func(t testing.TB, root string) {
			writeFile(t, filepath.Join(root, ".memory", "feedback.jsonl"), strings.Join(compactJournal(), "\n")+"\n")
		},
		steps: []step{
			{c: call{args: []string{"compact", "--keep-days", "60"}, now: day(20)}},
			{c: call{args: []string{"index"}, now: day(20)}},
		},
		check: func(root, _ string) []string {
			var probs []string
			j, _ := os.ReadFile(filepath.Join(root, ".memory", journal.FeedbackFile))
			a, _ := os.ReadFile(filepath.Join(root, ".memory", journal.ArchiveFile))
			have := map[string]bool{}
			for _, l := range strings.Split(string(j)+"\n"+string(a), "\n") {
				have[l] = true
			}
			var want []learn.Event
			for _, l := range compactJournal() {
				if !have[l] {
					probs = append(probs, "feedback line lost: "+l)
				}
				if e, err := journal.ParseEvent([]byte(l)); err == nil {
					want = append(want, e)
				}
			}
			got, _, err := journal.ReadFeedback(root)
			if err != nil {
				return append(probs, err.Error())
			}
			w, g := learn.Fold(want, day(40)), learn.Fold(got, day(40))
			for id, s := range w {
				if !reflect.DeepEqual(g[id], s) {
					probs = append(probs, fmt.Sprintf("the fold of %s changed: %+v, want %+v", id, g[id], s))
				}
			}
			return probs
		},
	}
}
