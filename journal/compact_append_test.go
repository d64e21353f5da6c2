package journal

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/learn"
)

// A writer that opened the journal just before a compaction replaced it,
// and writes after the compaction is over: its line is in the new journal,
// not in the file the compaction let go. (With only the compaction's two
// looks for late appends, a writer descheduled between its open and its
// write for longer than they last lost its line: once in 300 under a
// loaded machine's full test run.) And a writer about to write when the
// compaction starts: the compaction waits for it, and its line is carried
// over. The writer is another process, paused at a failpoint between its
// open and its write.
func TestAppendOpenedBeforeCompactionIsKept(t *testing.T) {
	for _, point := range []string{"append-opened:", "append-locked:"} {
		t.Run(point, func(t *testing.T) { appendAcrossCompaction(t, point) })
	}
}

func appendAcrossCompaction(t *testing.T, point string) {
	root := t.TempDir()
	appendCited(t, root, 200, 7)
	resume := filepath.Join(t.TempDir(), "resume")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperAppendFeedback$", "-test.v")
	cmd.Env = append(os.Environ(),
		"LEARNWATCH_TEST_APPEND_ROOT="+root,
		"LEARNWATCH_FAILPOINT="+point+FeedbackFile+"=pause",
		"LEARNWATCH_FAILPOINT_RESUME="+resume)
	out, err := os.CreateTemp(t.TempDir(), "helper")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	for end := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(resume + ".paused"); err == nil {
			break
		}
		if time.Now().After(end) {
			t.Fatal("the writer never reached its pause between open and write")
		}
	}
	type compaction struct {
		res Compaction
		err error
	}
	done := make(chan compaction, 1)
	go func() {
		res, err := CompactFeedback(t.Context(), root, t0.Add(100*time.Minute), 10*time.Second)
		done <- compaction{res, err}
	}()
	var c compaction
	if point == "append-opened:" {
		c = <-done // over before the writer goes on
	} else {
		time.Sleep(100 * time.Millisecond) // the compaction waits for the writer
	}
	if err := os.WriteFile(resume, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if point != "append-opened:" {
		c = <-done
	}
	if c.err != nil || c.res.Folded == 0 {
		t.Fatalf("compaction: %+v, %v", c.res, c.err)
	}
	if err := cmd.Wait(); err != nil {
		b, _ := os.ReadFile(out.Name())
		t.Fatalf("writer: %v\n%s", err, b)
	}
	got := refFold(t, root, t0.Add(10*24*time.Hour), learn.Params{})
	if s := got.Stats["obs_paused"]; s.HelpfulEvents != 1 {
		t.Fatalf("the paused writer's event folded %d times, want once", s.HelpfulEvents)
	}
	if got.Events != 201 || got.Corrupt != 0 {
		t.Fatalf("%d events, %d corrupt; want 201, 0", got.Events, got.Corrupt)
	}
}

// TestHelperAppendFeedback is the writer of
// TestAppendOpenedBeforeCompactionIsKept, run as another process.
func TestHelperAppendFeedback(t *testing.T) {
	root := os.Getenv("LEARNWATCH_TEST_APPEND_ROOT")
	if root == "" {
		t.Skip("the writer of TestAppendOpenedBeforeCompactionIsKept")
	}
	e := learn.Event{TS: t0.Add(5000 * time.Minute), Target: "obs_paused", Kind: learn.KindKept, Source: "devflow"}
	if err := AppendFeedback(root, e); err != nil {
		t.Fatal(err)
	}
}
