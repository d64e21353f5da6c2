package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/learn"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestFeedbackRoundTripAndCorruptLines(t *testing.T) {
	root := t.TempDir()
	evs := []learn.Event{
		{TS: t0, Target: "ADR-001", Kind: learn.KindKept, Value: 1, Source: "reconcile", Type: "decision"},
		{TS: t0.Add(time.Second), Target: "obs_x", Kind: learn.KindOutcome, Value: 0.38, Source: "outcome:r1", Reason: "timeout"},
	}
	if err := AppendFeedback(root, evs...); err != nil {
		t.Fatal(err)
	}
	path := Path(root, FeedbackFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("not json\n{\"ts\":\"2026-03-01T12:00:00Z\",\"kind\":\"kept\"}\n\n{\"ts\":\"x\",\"target\":\"a\",\"kind\":\"kept\"}\n{\"ts\":\"2026-03-01T12:00:00Z\",\"target\":\"PF-1\",\"kind\":\"cited\",\"extra\":true}\n")
	f.Close()
	if err := AppendFeedback(root, learn.Event{TS: t0, Target: "PF-2", Kind: learn.KindDeleted}); err != nil {
		t.Fatal(err)
	}
	got, corrupt, err := ReadFeedback(root)
	if err != nil {
		t.Fatal(err)
	}
	if corrupt != 3 || len(got) != 4 {
		t.Fatalf("read %d events, %d corrupt: %+v", len(got), corrupt, got)
	}
	for i, e := range evs {
		if !got[i].TS.Equal(e.TS) || got[i].Target != e.Target || got[i].Kind != e.Kind || got[i].Value != e.Value ||
			got[i].Source != e.Source || got[i].Type != e.Type || got[i].Reason != e.Reason {
			t.Errorf("event %d = %+v, want %+v", i, got[i], e)
		}
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), "not json\n") {
		t.Error("corrupt line was dropped from the file")
	}
	first := strings.SplitN(string(data), "\n", 2)[0]
	if first != `{"ts":"2026-03-01T12:00:00Z","target":"ADR-001","kind":"kept","value":1,"source":"reconcile","type":"decision"}` {
		t.Errorf("line format: %s", first)
	}
	if _, err := MarshalEvent(learn.Event{Target: "x", Kind: "kept"}); err == nil {
		t.Error("event without ts marshalled")
	}
}

func TestAppendAfterTornLine(t *testing.T) {
	root := t.TempDir()
	path := Path(root, FeedbackFile)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"ts":"2026-03-01T12:00:00Z","target":"A","kind":"kept"}`+"\n"+`{"ts":"2026-03-01T12:00:00Z","tar`), 0o644)
	if err := AppendFeedback(root, learn.Event{TS: t0, Target: "B", Kind: learn.KindKept}); err != nil {
		t.Fatal(err)
	}
	got, corrupt, _ := ReadFeedback(root)
	if len(got) != 2 || corrupt != 1 || got[1].Target != "B" {
		t.Fatalf("after torn line: %+v, %d corrupt", got, corrupt)
	}
}

func TestMissingFilesAreEmpty(t *testing.T) {
	root := t.TempDir()
	if evs, n, err := ReadFeedback(root); err != nil || n != 0 || len(evs) != 0 {
		t.Error("feedback", err)
	}
	if o, n, err := ReadOutcomes(root); err != nil || n != 0 || len(o) != 0 {
		t.Error("outcomes", err)
	}
	if e, n, err := ReadErrors(root); err != nil || n != 0 || len(e) != 0 {
		t.Error("errors", err)
	}
	if p, err := LoadPolicy(root); err != nil || len(p.Overlays) != 0 {
		t.Error("policy", err)
	}
	if p, err := RefreshPolicy(context.Background(), root, t0, time.Second); err != nil || len(p.Overlays) != 0 {
		t.Error("refresh", err)
	}
	if _, err := os.Stat(filepath.Join(root, ".memory")); !os.IsNotExist(err) {
		t.Error("refresh without .memory created it")
	}
}

func TestOutcomesRoundTrip(t *testing.T) {
	root := t.TempDir()
	o := learn.Outcome{TS: t0, RunID: "r1", Success: false, DurationMS: 400000, ErrorCount: 1, ErrorCountSet: true, RetryCount: 1,
		Quality: 0.5, QualitySet: true, Cited: []string{"ADR-001"}, FailureType: "timeout", Strategy: "tdd"}
	if err := AppendOutcome(root, o); err != nil {
		t.Fatal(err)
	}
	if err := AppendOutcome(root, learn.Outcome{TS: t0, RunID: "r2", Success: true}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(Path(root, OutcomesFile))
	if !strings.Contains(string(data), `"score":0.38,"verdict":"harmful"`) || !strings.Contains(string(data), `"cited":[]`) {
		t.Errorf("stored: %s", data)
	}
	got, corrupt, err := ReadOutcomes(root)
	if err != nil || corrupt != 0 || len(got) != 2 {
		t.Fatal(got, corrupt, err)
	}
	g := got[0]
	if !g.TS.Equal(o.TS) || g.RunID != o.RunID || g.Success || g.DurationMS != o.DurationMS || g.ErrorCount != 1 || g.RetryCount != 1 ||
		g.Quality != 0.5 || g.Cited[0] != "ADR-001" || g.FailureType != "timeout" || g.Strategy != "tdd" {
		t.Errorf("round trip: %+v", g)
	}
}

func TestErrorsAccumulator(t *testing.T) {
	root := t.TempDir()
	for i, typ := range []string{"timeout", "validation", "timeout"} {
		if err := AppendError(root, learn.RunError{ID: fmt.Sprintf("err_%d", i), RunID: "r", Type: typ, Message: "m", TS: t0.Add(time.Duration(i) * time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	AppendResolve(root, "err_1", t0.Add(time.Minute))
	AppendResolve(root, "err_1", t0.Add(2*time.Minute))
	AppendResolve(root, "err_9", t0)
	errs, corrupt, err := ReadErrors(root)
	if err != nil || corrupt != 1 || len(errs) != 3 {
		t.Fatal(errs, corrupt, err)
	}
	if !errs[1].Resolved || !errs[1].ResolvedAt.Equal(t0.Add(time.Minute)) || errs[0].Resolved {
		t.Errorf("resolution: %+v", errs)
	}
	if learn.BuildErrorStats(errs, "r").Unresolved != 2 {
		t.Error("unresolved")
	}
}

func TestPolicyKeepsUnknownKeys(t *testing.T) {
	root := t.TempDir()
	path := Path(root, PolicyFile)
	os.MkdirAll(filepath.Dir(path), 0o755)
	os.WriteFile(path, []byte(`{"version":1,"owner":"other-tool","overlays":{"decision":{"threshold_multiplier":1.4,"requires_approval":true,"note":"keep me","updated_at":"2026-01-01T00:00:00Z"}},"approvals":[]}`), 0o644)
	p, err := UpdatePolicy(context.Background(), root, time.Second, func(p learn.Policy) (learn.Policy, error) {
		if p.Overlays["decision"].ThresholdMultiplier != 1.4 {
			t.Errorf("loaded %+v", p)
		}
		p = learn.Approve(p, "obs_1")
		o := p.Overlays["decision"]
		o.Reason = "r"
		p.Overlays["decision"] = o
		p.Overlays["pitfall"] = learn.Overlay{ThresholdMultiplier: 0.9, UpdatedAt: t0}
		return p, nil
	})
	if err != nil || len(p.Approvals) != 1 {
		t.Fatal(p, err)
	}
	var doc map[string]any
	data, _ := os.ReadFile(path)
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	ov := doc["overlays"].(map[string]any)
	if doc["owner"] != "other-tool" || ov["decision"].(map[string]any)["note"] != "keep me" || ov["decision"].(map[string]any)["reason"] != "r" {
		t.Errorf("unknown keys lost: %s", data)
	}
	if ov["pitfall"].(map[string]any)["threshold_multiplier"] != 0.9 {
		t.Errorf("new overlay: %s", data)
	}
	// An unchanged policy is not rewritten.
	fi, _ := os.Stat(path)
	time.Sleep(10 * time.Millisecond)
	UpdatePolicy(context.Background(), root, time.Second, func(p learn.Policy) (learn.Policy, error) { return p, nil })
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Error("unchanged policy rewritten")
	}
	// A corrupt policy is an error naming the file and is not replaced.
	os.WriteFile(path, []byte("{broken"), 0o644)
	if _, err := LoadPolicy(root); err == nil || !strings.Contains(err.Error(), PolicyFile) {
		t.Errorf("corrupt policy: %v", err)
	}
	if err := SavePolicy(root, learn.Policy{}); err == nil {
		t.Error("corrupt policy replaced")
	}
}

func TestRefreshPolicy(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 3; i++ {
		AppendFeedback(root, learn.Event{TS: t0.Add(time.Duration(i) * 24 * time.Hour), Target: "ADR-00" + strconv.Itoa(i), Kind: learn.KindDeleted, Type: "decision"})
	}
	p, err := RefreshPolicy(context.Background(), root, t0.Add(72*time.Hour), time.Second)
	if err != nil || !p.Overlays["decision"].RequiresApproval || p.Overlays["decision"].ThresholdMultiplier != 1.4 {
		t.Fatalf("%+v %v", p, err)
	}
	if !learn.Held(p, "decision", "obs_next") {
		t.Error("not held")
	}
	// Reset under the lock, then refresh: the overlay stays gone.
	if _, err := UpdatePolicy(context.Background(), root, time.Second, func(p learn.Policy) (learn.Policy, error) {
		return learn.ResetType(p, "decision", t0.Add(73*time.Hour)), nil
	}); err != nil {
		t.Fatal(err)
	}
	p, _ = RefreshPolicy(context.Background(), root, t0.Add(74*time.Hour), time.Second)
	if _, ok := p.Overlays["decision"]; ok {
		t.Errorf("overlay back after reset: %+v", p)
	}
}

// Concurrent appenders in one process and in several processes never
// interleave partial lines.
func TestConcurrentAppends(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				e := learn.Event{TS: t0, Target: fmt.Sprintf("obs_%d_%d", w, i), Kind: learn.KindCited, Reason: strings.Repeat("x", 3000)}
				if err := AppendFeedback(root, e, e); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	var cmds []*exec.Cmd
	for p := 0; p < 3; p++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppender$")
		cmd.Env = append(os.Environ(), "JOURNAL_HELPER_ROOT="+root, "JOURNAL_HELPER_ID="+strconv.Itoa(p))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
	}
	wg.Wait()
	for _, c := range cmds {
		if err := c.Wait(); err != nil {
			t.Fatal(err)
		}
	}
	evs, corrupt, err := ReadFeedback(root)
	if err != nil || corrupt != 0 || len(evs) != 6*30*2+3*50 {
		t.Fatalf("%d events, %d corrupt, %v", len(evs), corrupt, err)
	}
}

func TestHelperAppender(t *testing.T) {
	root := os.Getenv("JOURNAL_HELPER_ROOT")
	if root == "" {
		t.Skip("helper process only")
	}
	for i := 0; i < 50; i++ {
		e := learn.Event{TS: t0, Target: "obs_p" + os.Getenv("JOURNAL_HELPER_ID"), Kind: learn.KindKept, Reason: strings.Repeat("y", 5000)}
		if err := AppendFeedback(root, e); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkReadFeedback100k(b *testing.B) {
	root := b.TempDir()
	var lines [][]byte
	for i := 0; i < 100_000; i++ {
		l, _ := MarshalEvent(learn.Event{TS: t0.Add(time.Duration(i) * time.Second), Target: fmt.Sprintf("obs_%d", i%2000),
			Kind: learn.KindKept, Value: 1, Source: "reconcile", Type: "decision"})
		lines = append(lines, l)
	}
	if err := appendLines(Path(root, FeedbackFile), lines); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		evs, _, err := ReadFeedback(root)
		if err != nil || len(evs) != 100_000 {
			b.Fatal(len(evs), err)
		}
	}
}
