package heal

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// aheadRepo is a rendered memory of three observations, one of which
// names a source file, reconciled once (its marks settled); in git, all of
// it committed.
func aheadRepo(t *testing.T, inGit bool) (string, map[string]string) {
	t.Helper()
	root, arts := renderedRepo(t,
		readyObs("obs_a", manifest.Workflow, "Run the release checklist", "Steps: tag, build, publish.")+
			readyObs("obs_b", manifest.Workflow, "Rotate the staging keys", "Steps: revoke, issue, deploy.")+
			readyObs("obs_c", manifest.Procedural, "Profile a slow handler", "Steps: open `src/app.go`, run pprof, read the flame graph."), 3)
	putFile(t, root, "src/app.go", "package app\n")
	if _, err := Reconcile(context.Background(), root, Options{Now: testNow, LockTimeout: 10 * time.Second, Staleness: &config.Staleness{}}); err != nil {
		t.Fatal(err)
	}
	if inGit {
		gitIn(t, root, "init", "-q")
		gitIn(t, root, "add", "-A")
		gitIn(t, root, "commit", "-q", "-m", "memory")
	}
	return root, arts
}

// A pass that keeps no state stages its log before its staleness pass,
// from a copy of the log as its plan left it (stageAhead): the copy is the
// log written when the staleness pass changed no mark — none changed, or
// a hook's pass withheld them from a log git tracks — and is dropped when
// it changed one. Either way the file written is the one a pass that
// stages after its staleness pass writes (one that keeps its state never
// stages ahead), the pass's log is the log as written, and no temporary
// file is left.
func TestLogStagedAhead(t *testing.T) {
	for _, c := range []struct {
		name    string
		refGone bool // the source file obs_c names is removed: its marks change
		inGit   bool
		ahead   bool // the copy staged ahead is written
	}{
		{"no mark changes", false, false, true},
		{"a mark changes", true, false, false},
		{"a mark of a log git tracks, withheld", true, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs [2]string
			for i, opts := range []Options{{}, {Warm: &Warm{}}} {
				root, arts := aheadRepo(t, c.inGit)
				if err := os.Remove(filepath.Join(root, arts["obs_b"])); err != nil {
					t.Fatal(err)
				}
				switch {
				case c.refGone && c.inGit:
					gitIn(t, root, "rm", "-q", "src/app.go")
					gitIn(t, root, "commit", "-q", "-m", "app.go goes")
				case c.refGone:
					if err := os.Remove(filepath.Join(root, "src", "app.go")); err != nil {
						t.Fatal(err)
					}
				}
				opts.Now, opts.Feedback, opts.Staleness = testNow.Add(time.Second), true, &config.Staleness{}
				p := manifest.PathsFor(root)
				pr, res, err := prepareLocked(context.Background(), root, p, opts)
				if err != nil || pr == nil {
					t.Fatalf("prepare: %v %v", pr, err)
				}
				if res.Deletions != 1 || pr.logW == nil {
					t.Fatalf("deletions %d, log staged %v", res.Deletions, pr.logW != nil)
				}
				if i == 0 && ((pr.aheadLog != nil) != c.ahead || (pr.aheadW != nil) == c.ahead) {
					t.Fatalf("staged ahead and written %v, dropped %v; want written %v", pr.aheadLog != nil, pr.aheadW != nil, c.ahead)
				}
				if i == 1 && (pr.aheadLog != nil || pr.aheadW != nil) {
					t.Fatal("a pass that keeps its state staged its log ahead")
				}
				got, err := pr.commitLocked(context.Background())
				pr.drop()
				if err != nil {
					t.Fatal(err)
				}
				if c.inGit && !got.Withheld {
					t.Fatalf("the marks of a tracked log were not withheld (stale %d, problems %v)", got.Stale, got.Problems)
				}
				if c.refGone && !c.inGit && got.Stale != 1 {
					t.Fatalf("stale %d, want 1", got.Stale)
				}
				file, err := os.ReadFile(p.Log)
				if err != nil {
					t.Fatal(err)
				}
				// The pass's log is the file: nothing left to write, and
				// every line says what the file says.
				if got.Log.Changed() {
					t.Fatal("the pass's log differs from the file it wrote")
				}
				read := manifest.ParseLog(file)
				if len(read.Lines) != len(got.Log.Lines) {
					t.Fatalf("%d lines in the pass's log, %d in the file", len(got.Log.Lines), len(read.Lines))
				}
				for j, ln := range got.Log.Lines {
					r := read.Lines[j]
					if ln.ID() != r.ID() || ln.Status() != r.Status() || ln.Marks() != r.Marks() {
						t.Fatalf("line %d: %s %s %+v in the pass's log, %s %s %+v in the file", j, ln.ID(), ln.Status(), ln.Marks(), r.ID(), r.Status(), r.Marks())
					}
				}
				entries, err := os.ReadDir(filepath.Join(root, ".memory"))
				if err != nil {
					t.Fatal(err)
				}
				for _, e := range entries {
					if manifest.Volatile(e.Name()) {
						t.Fatalf("left behind: %s", e.Name())
					}
				}
				logs[i] = strings.ReplaceAll(string(file), root, "ROOT")
			}
			if logs[0] != logs[1] {
				t.Fatalf("the log written:\n%s\nthe log a pass staging after the staleness pass writes:\n%s", logs[0], logs[1])
			}
		})
	}
}
