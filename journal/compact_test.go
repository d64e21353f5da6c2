package journal

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/learn"
)

// orderedJournal is randomJournal with every line in time order (the
// tally is a file-order sum: compaction keeps it exact for such journals).
func orderedJournal(r *rand.Rand, clock *time.Time, n int) []byte {
	var b bytes.Buffer
	for range n {
		l := randomLine(r, clock)
		if e, err := ParseEvent([]byte(l)); err == nil && e.TS.Before(clock.Add(-time.Microsecond)) {
			continue // a line from a slow clock: left out here
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// The property: compacting at any cut, once or repeatedly, with appends
// in between, leaves a journal whose fold is the fold before — the learn
// fold bit for bit; the tally bit for bit for a journal in time order —
// and loses no line: every line is in the
// journal or, verbatim, in the archive.
func TestCompactionKeepsTheFold(t *testing.T) {
	p := learn.Params{}
	for seed := range uint64(60) {
		r := rand.New(rand.NewPCG(seed, 11))
		ordered := seed%2 == 0
		root := t.TempDir()
		os.MkdirAll(Path(root, ""), 0o755)
		if r.IntN(3) == 0 {
			os.WriteFile(Path(root, PolicyFile), []byte(`{"resets":{"decision":"2026-03-02T00:00:00Z"}}`), 0o644)
		}
		clock := t0
		gen := func(n int) []byte {
			if ordered {
				return orderedJournal(r, &clock, n)
			}
			return randomJournal(r, &clock, n)
		}
		var written []string
		add := func(b []byte) {
			appendRaw(t, root, b)
			for _, l := range strings.Split(string(b), "\n") {
				if strings.TrimSpace(l) != "" {
					written = append(written, l)
				}
			}
		}
		add(gen(50 + r.IntN(200)))
		for round := range 3 {
			now := clock.Add(time.Duration(r.IntN(500)) * time.Hour)
			before := refFold(t, root, now, p)
			cut := t0.Add(time.Duration(r.Int64N(int64(clock.Sub(t0)) + 1)))
			res, err := CompactFeedback(t.Context(), root, cut, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			after := refFold(t, root, now, p)
			what := fmt.Sprintf("seed %d round %d (cut %v, %d folded, %d kept)", seed, round, cut, res.Folded, res.Kept)
			if !reflect.DeepEqual(after.Stats, before.Stats) {
				sameFold(t, what, after, before) // names the target
				t.Fatalf("%s: stats differ", what)
			}
			if after.Events != before.Events || after.Corrupt != before.Corrupt {
				t.Fatalf("%s: %d events %d corrupt, want %d %d", what, after.Events, after.Corrupt, before.Events, before.Corrupt)
			}
			// The tally is a file-order sum: exact for a journal in time
			// order; lines out of order move to the other side of the cut.
			if ordered && !reflect.DeepEqual(after.Tally, before.Tally) {
				t.Fatalf("%s: tally\n got %+v\nwant %+v", what, after.Tally, before.Tally)
			}
			got, err := FoldFeedback(root, now, p)
			if err != nil {
				t.Fatal(err)
			}
			sameFold(t, what+", with the snapshot", got, after)
			add(gen(r.IntN(40)))
		}
		// Nothing lost: every line written is in the journal or the archive.
		j, _ := os.ReadFile(Path(root, FeedbackFile))
		a, _ := os.ReadFile(Path(root, ArchiveFile))
		have := map[string]int{}
		for _, l := range strings.Split(string(j)+"\n"+string(a), "\n") {
			have[l]++
		}
		for _, l := range written {
			if have[l] == 0 {
				t.Fatalf("seed %d: line lost: %s", seed, l)
			}
			have[l]--
		}
	}
}

// The journal stops growing: compacting a year of daily events at a cut
// a month back leaves one base line and the last month.
func TestCompactionBoundsTheJournal(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(Path(root, ""), 0o755)
	var lines [][]byte
	for d := range 365 {
		for i := range 20 {
			l, _ := MarshalEvent(learn.Event{TS: t0.Add(time.Duration(d)*24*time.Hour + time.Duration(i)*time.Minute), Target: fmt.Sprintf("obs_%d", i), Kind: learn.KindKept, Source: "reconcile", Type: "workflow"})
			lines = append(lines, l)
		}
	}
	if err := appendLines(Path(root, FeedbackFile), lines); err != nil {
		t.Fatal(err)
	}
	now := t0.Add(365 * 24 * time.Hour)
	before := refFold(t, root, now, learn.Params{})
	res, err := CompactFeedback(t.Context(), root, now.Add(-30*24*time.Hour), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if res.Folded != 335*20 || res.Kept != 30*20 || res.BytesNow*5 > res.BytesWas {
		t.Fatalf("%+v", res)
	}
	sameFold(t, "a year", refFold(t, root, now, learn.Params{}), before)
	// Compacting again at the same cut has nothing new to fold.
	again, err := CompactFeedback(t.Context(), root, now.Add(-30*24*time.Hour), time.Second)
	if err != nil || again.Folded != 0 || again.Kept != 600 || again.BytesNow != res.BytesNow {
		t.Fatalf("%+v %v", again, err)
	}
	sameFold(t, "twice", refFold(t, root, now, learn.Params{}), before)
}

// appendCited appends n citations to the feedback journal under root, a
// minute apart from t0, of targets observations in turn.
func appendCited(t *testing.T, root string, n, targets int) {
	t.Helper()
	os.MkdirAll(Path(root, ""), 0o755)
	var lines [][]byte
	for i := range n {
		l, _ := MarshalEvent(learn.Event{TS: t0.Add(time.Duration(i) * time.Minute), Target: fmt.Sprintf("obs_%d", i%targets), Kind: learn.KindCited, Source: "cli", Type: "decision"})
		lines = append(lines, l)
	}
	if err := appendLines(Path(root, FeedbackFile), lines); err != nil {
		t.Fatal(err)
	}
}

// Another process keeps appending while the journal is compacted: none of
// its lines is lost, and the fold is the fold of everything written.
func TestCompactionWithAConcurrentWriter(t *testing.T) {
	root := t.TempDir()
	appendCited(t, root, 2000, 13)
	var wg sync.WaitGroup
	const n = 300
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range n {
			e := learn.Event{TS: t0.Add(time.Duration(3000+i) * time.Minute), Target: "obs_late", Kind: learn.KindKept, Source: "devflow", Reason: fmt.Sprint(i)}
			if err := AppendFeedback(root, e); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(200 * time.Microsecond)
		}
	}()
	for i := range 5 {
		if _, err := CompactFeedback(t.Context(), root, t0.Add(time.Duration(400*(i+1))*time.Minute), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	now := t0.Add(10 * 24 * time.Hour)
	got := refFold(t, root, now, learn.Params{})
	if s := got.Stats["obs_late"]; s.HelpfulEvents != n {
		t.Fatalf("the concurrent writer's %d events folded as %d", n, s.HelpfulEvents)
	}
	if got.Events != 2000+n || got.Corrupt != 0 {
		t.Fatalf("%d events, %d corrupt", got.Events, got.Corrupt)
	}
}

// A branch that appended feedback merges (git's union merge, as `hooks
// install` sets it up) into a branch that compacted: the merged journal
// folds like every event of both.
func TestCompactionThenGitMerge(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	os.MkdirAll(Path(root, ""), 0o755)
	os.WriteFile(filepath.Join(root, ".gitattributes"), []byte("/.memory/feedback.jsonl merge=union\n"), 0o644)
	ev := func(d int, target, kind string) learn.Event {
		return learn.Event{TS: t0.Add(time.Duration(d) * 24 * time.Hour), Target: target, Kind: kind, Value: 1, Source: "reconcile", Type: "decision"}
	}
	var all []learn.Event
	for d := range 100 {
		e := ev(d, fmt.Sprintf("ADR-%03d", d%7), []string{learn.KindCited, learn.KindKept, learn.KindEdited}[d%3])
		all = append(all, e)
		if err := AppendFeedback(root, e); err != nil {
			t.Fatal(err)
		}
	}
	git("add", "-A")
	git("commit", "-qm", "journal")
	git("checkout", "-qb", "feature")
	for d := 100; d < 110; d++ {
		e := ev(d, "ADR-001", learn.KindFalsePositive)
		all = append(all, e)
		AppendFeedback(root, e)
	}
	git("commit", "-qam", "feature feedback")
	git("checkout", "-q", "main")
	for d := 100; d < 105; d++ {
		e := ev(d, "ADR-002", learn.KindCited)
		all = append(all, e)
		AppendFeedback(root, e)
	}
	if _, err := CompactFeedback(t.Context(), root, t0.Add(60*24*time.Hour), time.Second); err != nil {
		t.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-qm", "compact")
	git("merge", "-q", "--no-edit", "feature")
	now := t0.Add(120 * 24 * time.Hour)
	got := refFold(t, root, now, learn.Params{})
	if want := learn.Fold(all, now); !reflect.DeepEqual(got.Stats, want) {
		t.Fatalf("after the merge:\n got %+v\nwant %+v", got.Stats, want)
	}
	j, _ := os.ReadFile(Path(root, FeedbackFile))
	if n := strings.Count(string(j), `"kind":"compacted"`); n != 1 {
		t.Fatalf("%d base lines after the merge", n)
	}
}
