package journal

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/learn"
)

// journalLines are n events the way a busy repository accumulates them:
// 2,000 targets, the reconcile's kept/deleted/edited, outcomes, citations.
func journalLines(n, from int) [][]byte {
	kinds := []string{learn.KindKept, learn.KindKept, learn.KindCited, learn.KindOutcome, learn.KindEdited, learn.KindDeleted, learn.KindAged}
	types := []string{"decision", "pitfall", "workflow", "procedural"}
	lines := make([][]byte, 0, n)
	for i := from; i < from+n; i++ {
		l, err := MarshalEvent(learn.Event{TS: t0.Add(time.Duration(i) * time.Minute), Target: fmt.Sprintf("obs_%04d", i%2000),
			Kind: kinds[i%len(kinds)], Value: 0.7, Source: "reconcile", Type: types[i%len(types)], Reason: []string{"", "stale"}[i%2]})
		if err != nil {
			panic(err)
		}
		lines = append(lines, l)
	}
	return lines
}

// BenchmarkSessionStartFold66k is what a session start spends on the
// feedback journal at 66,000 events, side by side: before the snapshot,
// the policy refresh and the ranking each read and folded the whole file
// (full-twice); now the refresh resumes the snapshot and folds the appended
// tail, and the ranking does the same and writes the new snapshot
// (snapshot-), or takes the refresh's fold, RefreshPolicyFolded (once-).
func BenchmarkSessionStartFold66k(b *testing.B) {
	const total = 66_000
	now := t0.Add(total*time.Minute + 24*time.Hour)
	p := learn.Params{}
	setup := func(b *testing.B, tail int) (root string, snap []byte) {
		root = b.TempDir()
		os.MkdirAll(Path(root, ""), 0o755)
		if err := appendLines(Path(root, FeedbackFile), journalLines(total-tail, 0)); err != nil {
			b.Fatal(err)
		}
		if _, _, err := foldFeedbackLocked(root, nil, true); err != nil {
			b.Fatal(err)
		}
		snap, err := os.ReadFile(cachedir.Path(root, SnapshotFile))
		if err != nil {
			b.Fatal(err)
		}
		if tail > 0 {
			if err := appendLines(Path(root, FeedbackFile), journalLines(tail, total-tail)); err != nil {
				b.Fatal(err)
			}
		}
		return root, snap
	}
	b.Run("full-twice", func(b *testing.B) {
		root, _ := setup(b, 0)
		b.ReportAllocs()
		for b.Loop() {
			evs, _, err := ReadFeedback(root)
			if err != nil {
				b.Fatal(err)
			}
			_ = learn.Tally(evs, nil)
			evs, _, err = ReadFeedback(root)
			if err != nil {
				b.Fatal(err)
			}
			if st := learn.FoldWith(evs, now, p); len(st) != 2000 {
				b.Fatal(len(st))
			}
		}
	})
	for _, tail := range []int{0, 100} {
		// The refresh hands its fold to the ranking (RefreshPolicyFolded):
		// one resume instead of two.
		b.Run(fmt.Sprintf("once-tail%d", tail), func(b *testing.B) {
			root, snap := setup(b, tail)
			path := cachedir.Path(root, SnapshotFile)
			b.ReportAllocs()
			for b.Loop() {
				if tail > 0 {
					b.StopTimer()
					if err := os.WriteFile(path, snap, 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				fd, _, err := foldFeedbackLocked(root, nil, true)
				if err != nil || !fd.fromSnapshot {
					b.Fatal(err, fd.fromSnapshot)
				}
				if f := fd.result(now, p); len(f.Stats) != 2000 || f.Events != total {
					b.Fatal(len(f.Stats), f.Events)
				}
			}
		})
		b.Run(fmt.Sprintf("snapshot-tail%d", tail), func(b *testing.B) {
			root, snap := setup(b, tail)
			path := cachedir.Path(root, SnapshotFile)
			b.ReportAllocs()
			for b.Loop() {
				if tail > 0 {
					b.StopTimer()
					if err := os.WriteFile(path, snap, 0o644); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				fd, _, err := foldFeedbackLocked(root, nil, false) // the policy refresh (RefreshPolicyLocked)
				if err != nil || !fd.fromSnapshot || fd.tail == 0 != (tail == 0) {
					b.Fatal(err, fd.fromSnapshot, fd.tail)
				}
				f, err := FoldFeedback(root, now, p) // the ranking
				if err != nil || !f.FromSnapshot || (f.TailBytes == 0) != (tail == 0) || len(f.Stats) != 2000 || f.Events != total {
					b.Fatal(err, f.FromSnapshot, f.TailBytes, f.Events)
				}
			}
		})
	}
}
