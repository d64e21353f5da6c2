package engine

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/staleness"
)

// settle reconciles tw until A's engine replays a pass (the record is
// written, confirmed, then used), each pass compared with a full one.
func settle(t *testing.T, tw *twin) {
	t.Helper()
	tw.quiet = 20 * time.Millisecond
	before := tw.replays
	for i := 0; i < 4 && tw.replays == before; i++ {
		tw.reconcile("settle")
	}
	if tw.replays == before {
		t.Fatal("left alone, no pass was replayed")
	}
}

// notReplayed runs op on both repositories and requires the next pass to
// be a full one, identical to B's.
func notReplayed(t *testing.T, tw *twin, what string, op func(root string)) Report {
	t.Helper()
	tw.do(op)
	before := tw.replays
	r := tw.reconcile(what)
	if tw.replays != before {
		t.Fatalf("%s: the pass was replayed", what)
	}
	return r
}

// gitTwin makes both roots git repositories with one commit of everything.
func gitTwin(t *testing.T, tw *twin) {
	t.Helper()
	tw.do(func(root string) {
		putFile(t, root, "src/cache.go", "package src\n")
		putFile(t, root, "src/store.go", "package src\n")
		gitRun(t, root, "init", "-q", "-b", "main")
		gitRun(t, root, "add", "-A")
		gitRun(t, root, "commit", "-q", "-m", "initial")
	})
}

func gitRun(t *testing.T, dir string, args ...string) {
	t.Helper()
	run(t, "git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"}, args...)...)
}

// Every change a pass depends on makes the next pass a full one, whose
// report and files are those of a pass that never replays.
func TestReplayInvalidation(t *testing.T) {
	cases := []struct {
		name string
		git  bool
		op   func(t *testing.T, tw *twin, root string)
		want func(r Report) bool
	}{
		{"artifact rewritten at the same size and mtime", false, func(t *testing.T, tw *twin, root string) {
			rewriteSameSize(t, root, tw.artifacts()[2])
		}, edited},
		{"artifact deleted", false, func(t *testing.T, tw *twin, root string) {
			os.Remove(filepath.Join(root, tw.artifacts()[2]))
		}, func(r Report) bool { return r.Deletions == 1 }},
		{"knowledge file edited", false, func(t *testing.T, tw *twin, root string) {
			p := manifest.PathsFor(root).Decisions
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, "\nSee `src/removed_module.go` for the details.\n"...), 0o644)
		}, func(r Report) bool { return r.Stale == 1 }},
		{"another tool appended to the log", false, func(t *testing.T, tw *twin, root string) {
			f, _ := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(readyObs("obs_new", manifest.Pitfall, "Cache keys collide", "See src/keys_old.go."))
			f.Close()
		}, func(r Report) bool { return r.Stale == 1 }},
		{"a referenced file appears outside git", false, func(t *testing.T, tw *twin, root string) {
			f, _ := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString(readyObs("obs_new", manifest.Pitfall, "Cache keys collide", "See keys_old.go."))
			f.Close()
		}, func(r Report) bool { return r.Stale == 0 }},
		{"a directory on the way swapped for a symlink", false, func(t *testing.T, tw *twin, root string) {
			dir := filepath.Join(root, filepath.Dir(tw.artifacts()[0]))
			moved := filepath.Join(root, "elsewhere")
			os.Rename(dir, moved)
			os.Symlink(moved, dir)
		}, func(r Report) bool { return r.Unchanged == 13 }}, // inside the root: followed, like a full pass does
		{"an inbox item", false, func(t *testing.T, tw *twin, root string) {
			o := &manifest.Observation{ID: "obs_q", Type: manifest.Workflow, Pattern: "Queued while the lock was busy", Confidence: 0.5, Observations: 1, Status: manifest.Observing}
			if _, err := inbox.Enqueue(root, testNow, []*manifest.Observation{o}); err != nil {
				t.Fatal(err)
			}
		}, func(r Report) bool { return r.Inbox.Drained == 1 }},
		{"the record from another version", false, func(t *testing.T, tw *twin, root string) {
			p := cachedir.Path(root, ReplayFile)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(replayMagic), []byte("learnwatch pass replay 0\n"), 1), 0o644)
		}, func(r Report) bool { return true }},
		{"a commit removes a referenced file", true, func(t *testing.T, tw *twin, root string) {
			gitRun(t, root, "rm", "-q", "src/store.go")
			gitRun(t, root, "commit", "-q", "-m", "drop the store")
		}, func(r Report) bool { return r.Stale == 1 }},
		{"a staged removal (HEAD unchanged)", true, func(t *testing.T, tw *twin, root string) {
			gitRun(t, root, "rm", "-q", "--cached", "src/cache.go")
		}, func(r Report) bool { return true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tw := newTwin(t, "")
			// Both name src/store.go (and keys_old.go) somewhere.
			tw.do(func(root string) {
				f, _ := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
				f.WriteString(readyObs("obs_ref", manifest.Pitfall, "Store writes race", "See `src/store.go` and `src/cache.go`."))
				f.Close()
			})
			if c.git {
				gitTwin(t, tw)
			} else {
				tw.do(func(root string) {
					putFile(t, root, "src/store.go", "package src\n")
					putFile(t, root, "src/cache.go", "package src\n")
				})
			}
			settle(t, tw)
			if c.name == "a referenced file appears outside git" {
				notReplayed(t, tw, "reference a missing bare name", func(root string) { c.op(t, tw, root) })
				settle(t, tw)
				c.op = func(t *testing.T, tw *twin, root string) { putFile(t, root, "lib/keys_old.go", "package lib\n") }
			}
			r := notReplayed(t, tw, c.name, func(root string) { c.op(t, tw, root) })
			if !c.want(r) {
				t.Errorf("%s: %+v", c.name, r.Result)
			}
			settle(t, tw)
		})
	}
}

// The configuration and, for the session-start pass, the day are part of
// what a record was asked: another one runs a full pass.
func TestReplayKey(t *testing.T) {
	root, _ := memory(t)
	pass := func(cfg config.Config, p Pass) Report {
		t.Helper()
		time.Sleep(25 * time.Millisecond)
		e := New(root, cfg, nil)
		e.replayQuiet = 20 * time.Millisecond
		r, err := e.Reconcile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	cfg := config.Default()
	day := Pass{Now: testNow, Session: true}
	var r Report
	for range 4 {
		r = pass(cfg, day)
	}
	if !r.Replayed {
		t.Fatal("a session pass left alone was not replayed")
	}
	next := Pass{Now: testNow.Add(24 * time.Hour), Session: true}
	if r = pass(cfg, next); r.Replayed || r.Recorded == 0 {
		t.Fatalf("the next day's session pass must run and record kept events: %+v", r)
	}
	other := cfg
	other.Staleness.Extensions = append([]string{"proto"}, cfg.Staleness.Extensions...)
	for range 3 {
		pass(cfg, next)
	}
	if r = pass(other, next); r.Replayed {
		t.Fatal("a pass with another configuration was replayed")
	}
}

// After a pass that wrote, the next pass confirms its record at once (the
// writing pass left the paths it depended on, stat'ed before the next one
// reads), so the pass after it replays; a record another kind of pass left
// (one without feedback) serves the same way, never replayed. The reconcile
// command's pass and a hook's share their records.
func TestReplayConfirmedOnePassAfterAWrite(t *testing.T) {
	root, _ := memory(t)
	pass := func(p Pass) Report {
		t.Helper()
		time.Sleep(25 * time.Millisecond)
		e := New(root, config.Default(), nil)
		e.replayQuiet = 20 * time.Millisecond
		r, err := e.Reconcile(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	confirmed := func() bool {
		rec := readReplay(root)
		return rec != nil && rec.Confirmed
	}
	plain := Pass{Now: testNow}
	for range 3 {
		pass(plain)
	}
	if r := pass(plain); !r.Replayed {
		t.Fatal("left alone, no pass was replayed")
	}
	cmds := filepath.Join(root, ".claude", "commands", "self-learning")
	if err := os.Remove(filepath.Join(cmds, "run-the-linter-before-pushing.md")); err != nil {
		t.Fatal(err)
	}
	if r := pass(plain); r.Replayed || r.Deletions != 1 || confirmed() {
		t.Fatalf("the deletion's pass: %+v, confirmed %v", r.Result, confirmed())
	}
	if r := pass(plain); r.Replayed || !confirmed() {
		t.Fatalf("the pass after the write: replayed %v, its record confirmed %v", r.Replayed, confirmed())
	}
	if r := pass(plain); !r.Replayed {
		t.Fatal("the second pass after the write was not replayed")
	}

	// A pass of another key (no feedback) writes an edit; a hook's plain
	// pass after it confirms its own record from that pass's paths.
	f, err := os.OpenFile(filepath.Join(cmds, "rebase-on-main-before-review.md"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nMine.\n")
	f.Close()
	other := Pass{Now: testNow, NoFeedback: true}
	if r := pass(other); r.Edits != 1 {
		t.Fatalf("the other kind's pass: %+v", r.Result)
	}
	if r := pass(plain); r.Replayed || !confirmed() {
		t.Fatalf("the hook's pass after the other kind's: replayed %v, confirmed %v", r.Replayed, confirmed())
	}
	if r := pass(plain); !r.Replayed {
		t.Fatal("the hook's next pass was not replayed")
	}
	if r := pass(other); r.Replayed || !confirmed() {
		t.Fatalf("the other kind after the hook's: replayed %v (another key), confirmed %v", r.Replayed, confirmed())
	}
	// The reconcile command's pass shares the hook's record, and back
	// (nothing was left for it: outside git no mark is withheld).
	if r := pass(Pass{Now: testNow, MarkTracked: true}); r.Replayed {
		t.Fatal("the command right after the other kind's pass was replayed")
	}
	if r := pass(plain); !r.Replayed {
		t.Fatal("the hook after the command's pass was not replayed")
	}
	if r := pass(Pass{Now: testNow, MarkTracked: true}); !r.Replayed {
		t.Fatal("the command after the hook's pass was not replayed")
	}
}

// A replayed pass writes nothing, not even its record.
func TestReplayWritesNothing(t *testing.T) {
	tw := newTwin(t, "")
	settle(t, tw)
	rec := cachedir.Path(tw.a, ReplayFile)
	before, err := os.Stat(rec)
	if err != nil {
		t.Fatal(err)
	}
	filesBefore := tw.files(tw.a)
	r := tw.reconcile("replayed")
	if !r.Replayed || len(r.Wrote) != 0 {
		t.Fatalf("not a replay: %+v", r)
	}
	after, _ := os.Stat(rec)
	if !after.ModTime().Equal(before.ModTime()) || tw.files(tw.a) != filesBefore {
		t.Error("a replayed pass wrote")
	}
}

// A replayed session pass's index takes the log's facts (logfacts.go)
// instead of the log, and is byte for byte the index built from the log;
// when an inverted observation must be named, or the log changed, the log
// is read.
func TestIndexFromLogFacts(t *testing.T) {
	root, e0 := memory(t)
	ctx := context.Background()
	// A second decision, less trusted: the ranking follows confidence.
	f, _ := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(strings.Replace(readyObs("obs_de2", manifest.Decision, "Keep the cache in one directory", "Simple to clear."), `"confidence":0.95`, `"confidence":0.6`, 1))
	f.Close()
	if _, _, err := e0.Render(ctx, testNow); err != nil {
		t.Fatal(err)
	}
	order := func(r index.Result) string {
		var ids []string
		for _, en := range r.Entries {
			ids = append(ids, fmt.Sprintf("%s %.3f", en.ID, en.Score))
		}
		return strings.Join(ids, ", ")
	}
	session := func() (Report, index.Result) {
		t.Helper()
		time.Sleep(25 * time.Millisecond)
		e := New(root, config.Default(), nil)
		e.replayQuiet = 20 * time.Millisecond
		r, err := e.Reconcile(ctx, Pass{Now: testNow, Session: true})
		if err != nil {
			t.Fatal(err)
		}
		idx, _, err := e.Index(IndexOptions{Now: testNow, Budget: 2000, Log: r.Log})
		if err != nil {
			t.Fatal(err)
		}
		return r, idx
	}
	fromLog := func() index.Result {
		t.Helper()
		log, err := manifest.ReadLog(manifest.PathsFor(root).Log)
		if err != nil {
			t.Fatal(err)
		}
		idx, _, err := New(root, config.Default(), nil).Index(IndexOptions{Now: testNow, Budget: 2000, Log: log})
		if err != nil {
			t.Fatal(err)
		}
		return idx
	}
	settled := func(what string) {
		t.Helper()
		for range 5 {
			r, idx := session()
			if r.Replayed {
				if _, err := os.Stat(cachedir.Path(root, LogFactsFile)); err != nil {
					t.Fatalf("%s: replayed without log facts: %v", what, err)
				}
				if want := fromLog(); idx.Text != want.Text || order(idx) != order(want) {
					t.Fatalf("%s: index from the facts\n%s\n%s\nfrom the log\n%s\n%s", what, order(idx), idx.Text, order(want), want.Text)
				}
				return
			}
		}
		t.Fatalf("%s: never replayed", what)
	}
	settled("settled")

	// Another tool lowers the decision's confidence: the facts no longer
	// match the log's stat.
	p := manifest.PathsFor(root).Log
	b, _ := os.ReadFile(p)
	changed := bytes.Replace(b, []byte(`"confidence":0.95,"details":"It is one file`), []byte(`"confidence":0.3,"details":"It is one file`), 1)
	if bytes.Equal(changed, b) {
		t.Fatal("the decision's line was not found")
	}
	_, before := session()
	os.WriteFile(p, changed, 0o644)
	// Before any pass: the facts on disk are of the old log.
	stale, _, err := New(root, config.Default(), nil).Index(IndexOptions{Now: testNow, Budget: 2000})
	if err != nil {
		t.Fatal(err)
	}
	if want := fromLog(); order(stale) != order(want) {
		t.Fatalf("facts of an older log were used: %s, want %s", order(stale), order(want))
	}
	settled("after another tool's write")
	if _, after := session(); order(after) == order(before) {
		t.Fatalf("lowering the confidence changed no score: %s", order(after))
	}

	// Three failed runs invert a workflow: its AVOID line names the
	// observation's pattern, which only the log holds.
	var evs []learn.Event
	for i := range 3 {
		evs = append(evs, learn.Event{TS: testNow.Add(time.Duration(i) * time.Hour), Target: "obs_wf", Kind: learn.KindOutcome, Value: 0, Reason: "tests failed", Source: "outcome", Type: manifest.Workflow})
	}
	if err := journal.AppendFeedback(root, evs...); err != nil {
		t.Fatal(err)
	}
	settled("an inverted observation")
	if _, idx := session(); !strings.Contains(idx.Text, "Run the linter before pushing") || len(idx.Avoid) == 0 {
		t.Fatalf("the AVOID line does not name the observation:\n%s", idx.Text)
	}
}

// A file whose mtime lies ahead of the clock (unpacked from an archive
// made on a machine whose clock ran fast, touch -d tomorrow) does not keep
// every pass full: its ctime, which no one sets, says when it last
// changed. Under check_stat: minimal, where ctime is not trusted, such a
// file keeps the record unconfirmed until its mtime has passed.
func TestReplayConfirmedWithAFileDatedAhead(t *testing.T) {
	for _, c := range []struct {
		checkStat string
		replayed  bool
	}{{"", true}, {"minimal", false}} {
		t.Run("check_stat="+c.checkStat, func(t *testing.T) {
			root, _ := memory(t)
			cfg := config.Default()
			cfg.Engine.CheckStat = c.checkStat
			pass := func() Report {
				t.Helper()
				time.Sleep(25 * time.Millisecond)
				e := New(root, cfg, nil)
				e.replayQuiet = 20 * time.Millisecond
				r, err := e.Reconcile(context.Background(), Pass{Now: testNow})
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			ahead := time.Now().Add(time.Hour)
			cmd := filepath.Join(root, ".claude", "commands", "self-learning", "run-the-linter-before-pushing.md")
			if err := os.Chtimes(cmd, ahead, ahead); err != nil {
				t.Fatal(err)
			}
			for range 3 {
				pass()
			}
			if r := pass(); r.Replayed != c.replayed {
				t.Fatalf("a command dated an hour ahead, left alone: replayed %v, want %v", r.Replayed, c.replayed)
			}
			// Rewritten at the same size and given back its mtime: ctime
			// moved, the pass is not replayed.
			b, _ := os.ReadFile(cmd)
			b[len(b)-2] ^= 1
			os.WriteFile(cmd, b, 0o644)
			os.Chtimes(cmd, ahead, ahead)
			if r := pass(); r.Replayed || r.Edits != 1 {
				t.Fatalf("rewritten with its mtime kept: replayed %v, edits %d", r.Replayed, r.Edits)
			}
		})
	}
}

// A file changed in the moments before a pass (less than the quiet time)
// leaves a record that is not trusted: a second write within the file
// system's clock tick could keep its stat (git's racily clean entries).
// Its ctime says so even when its mtime was put back an hour.
func TestReplayUnconfirmedAfterARecentWrite(t *testing.T) {
	root, _ := memory(t)
	pass := func(quiet time.Duration) Report {
		t.Helper()
		time.Sleep(25 * time.Millisecond)
		e := New(root, config.Default(), nil)
		e.replayQuiet = quiet
		r, err := e.Reconcile(context.Background(), Pass{Now: testNow})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for range 3 {
		pass(20 * time.Millisecond)
	}
	if r := pass(20 * time.Millisecond); !r.Replayed {
		t.Fatal("left alone, no pass was replayed")
	}
	cmd := filepath.Join(root, ".claude", "commands", "self-learning", "run-the-linter-before-pushing.md")
	old := time.Now().Add(-time.Hour)
	f, _ := os.OpenFile(cmd, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\nMine.\n")
	f.Close()
	if r := pass(20 * time.Millisecond); r.Replayed || r.Edits != 1 {
		t.Fatalf("the edit's pass: replayed %v, edits %d", r.Replayed, r.Edits)
	}
	// The log and the manifest that pass wrote grow older than the quiet
	// time; the command's mtime goes an hour back, its ctime is now.
	time.Sleep(400 * time.Millisecond)
	os.Chtimes(cmd, old, old)
	for i := range 2 {
		if r := pass(300 * time.Millisecond); r.Replayed {
			t.Fatalf("pass %d after a change just now (its mtime an hour back) was replayed", i+1)
		}
		if rec := readReplay(root); rec == nil || rec.Confirmed {
			t.Fatalf("pass %d after a change just now (its mtime an hour back): its record is confirmed", i+1)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if r := pass(300 * time.Millisecond); r.Replayed || !readReplay(root).Confirmed {
		t.Fatal("quiet since: the record is not confirmed")
	}
	if r := pass(300 * time.Millisecond); !r.Replayed {
		t.Fatal("quiet since: not replayed")
	}
}

// A memory with nothing rendered yet (observations only: a repository that
// just took the tool up) has no kept events to record. Its day's first
// session pass still settles the day, so the next ones are replayed; they
// once ran in full every time, the day's kept events forever due.
func TestReplaySessionWithNothingRendered(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_wf", manifest.Workflow, "Run the linter before pushing", "")+
			readyObs("obs_de", manifest.Decision, "Use SQLite for the local cache", "It is one file and needs no server."))
	pass := func(now time.Time) Report {
		t.Helper()
		time.Sleep(25 * time.Millisecond)
		e := New(root, config.Default(), nil)
		e.replayQuiet = 20 * time.Millisecond
		r, err := e.Reconcile(context.Background(), Pass{Now: now, Session: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	for range 3 {
		pass(testNow)
	}
	if r := pass(testNow); !r.Replayed {
		t.Fatal("a session pass on a memory with nothing rendered, left alone, was not replayed")
	}
	// The next day's first session pass runs in full (its kept events,
	// none here, are due again), then the day settles.
	next := testNow.Add(24 * time.Hour)
	if r := pass(next); r.Replayed {
		t.Fatal("the next day's first session pass was replayed")
	}
	pass(next)
	if r := pass(next); !r.Replayed {
		t.Fatal("the next day, left alone: not replayed")
	}
}

// A pass that asked git (an artifact absent from the checkout, another
// line's version checked out) is replayed while nothing it depends on
// changed, git's references included, and every pass, replayed or not, is
// byte for byte a pass that never replays: random checkouts, branches
// made, deleted and put back, resets to ORIG_HEAD, stashes, packed
// references and a person's changes, in a repository where the artifacts
// were committed on a branch of their own (.memory local).
func TestReplayGitProperty(t *testing.T) {
	sameCommits(t)
	replayedAsked := 0
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 29))
			tw := newTwin(t, "")
			tw.quiet = 20 * time.Millisecond
			arts := tw.artifacts()
			feat := gitAbsentTwin(t, tw)
			saved := map[string][]byte{}
			branch := "main"
			for i := range 30 {
				rel := arts[rng.IntN(len(arts))]
				var what string
				switch op := rng.IntN(11); op {
				case 0, 1:
					to := map[string]string{"main": "feat", "feat": "main"}[branch]
					tw.gitBoth("checkout", "-q", to)
					if now := strings.TrimSpace(gitOut(t, tw.a, "branch", "--show-current")); now != "" {
						branch = now
					}
					what = "checkout " + to
				case 2:
					what = fmt.Sprintf("branch tmp%d", i)
					tw.gitBoth("branch", fmt.Sprintf("tmp%d", i))
				case 3:
					// feat goes and comes back (its commit is kept).
					if gitOut(t, tw.a, "branch", "--list", "feat") == "" {
						what = "feat put back"
						tw.gitBoth("update-ref", "refs/heads/feat", feat)
					} else if branch != "feat" {
						what = "feat deleted"
						tw.gitBoth("update-ref", "-d", "refs/heads/feat")
					}
				case 4:
					what = "reset --hard ORIG_HEAD"
					tw.gitBoth("reset", "-q", "--hard", "ORIG_HEAD")
				case 5:
					what = "pack-refs"
					tw.gitBoth("pack-refs", "--all")
				case 6:
					if rng.IntN(2) == 0 {
						what = "stash -u"
						tw.gitBoth("stash", "-q", "-u")
					} else {
						what = "stash pop"
						tw.gitBoth("stash", "pop", "-q")
					}
				case 7, 8:
					what = tw.personOp(rng.IntN(3), rel, i, saved)
				case 9:
					// The index rewritten with new stat data only, or
					// another blob staged under the same name.
					if rng.IntN(2) == 0 {
						what = "notes.txt touched, git status"
						later := time.Now().Add(time.Duration(2+i) * time.Second)
						tw.do(func(root string) { gitStatusRefresh(t, root, "notes.txt", later) })
					} else {
						what = "notes.txt changed and staged"
						tw.do(func(root string) {
							putFile(t, root, "notes.txt", fmt.Sprintf("notes %d\n", i))
							gitRun(t, root, "add", "notes.txt")
						})
					}
				default:
					what = "nothing"
				}
				r := tw.reconcile(fmt.Sprintf("step %d: %s", i, what))
				if r.Replayed && r.GitAsked {
					t.Fatalf("step %d: a replay claims to have asked git", i)
				}
				// Left alone, the pass settles and is replayed.
				for k := range 3 {
					r = tw.reconcile(fmt.Sprintf("step %d: %s, again %d", i, what, k))
				}
				if r.Replayed && r.Absent+r.CheckedOut > 0 {
					replayedAsked++
				}
			}
			if tw.replays == 0 {
				t.Fatal("no pass was replayed")
			}
		})
	}
	if replayedAsked == 0 {
		t.Fatal("no pass with an artifact absent or checked out was replayed")
	}
}

// gitOut runs git in dir and returns its output.
func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// gitAbsentTwin makes both roots git repositories whose artifacts were
// committed on a branch "feat" only, .memory gitignored, main checked
// out: every artifact is absent. It returns feat's commit. Both branches
// track notes.txt, which no pass reads.
func gitAbsentTwin(t *testing.T, tw *twin) string {
	t.Helper()
	tw.do(func(root string) {
		putFile(t, root, ".gitignore", ".memory/\n")
		putFile(t, root, "notes.txt", "notes\n")
		gitRun(t, root, "init", "-q", "-b", "main")
		gitRun(t, root, "add", ".gitignore", "notes.txt")
		gitRun(t, root, "commit", "-q", "-m", "base")
		gitRun(t, root, "checkout", "-q", "-b", "feat")
		gitRun(t, root, "add", "-A")
		gitRun(t, root, "commit", "-q", "-m", "the artifacts")
		gitRun(t, root, "checkout", "-q", "main")
	})
	return strings.TrimSpace(gitOut(t, tw.a, "rev-parse", "feat"))
}

// A pass whose artifacts are absent is replayed; a change to what git's
// answers read — a reference deleted, packed, ORIG_HEAD moved — runs a
// full pass, identical to one that never replays.
func TestReplayGitReferences(t *testing.T) {
	sameCommits(t)
	n := nArtifacts
	cases := []struct {
		name  string
		setup func(tw *twin) // after gitAbsentTwin, before settling
		op    func(tw *twin)
		want  func(r Report) bool
	}{
		{"the only branch that has them deleted", nil, func(tw *twin) {
			tw.gitBoth("update-ref", "-d", "refs/heads/feat")
		}, func(r Report) bool { return r.Deletions == n }},
		{"the references packed", nil, func(tw *twin) {
			tw.gitBoth("pack-refs", "--all")
		}, func(r Report) bool { return r.Absent == n }},
		{"a packed branch deleted", func(tw *twin) {
			tw.gitBoth("pack-refs", "--all")
		}, func(tw *twin) {
			tw.gitBoth("update-ref", "-d", "refs/heads/feat")
		}, func(r Report) bool { return r.Deletions == n }},
		{"ORIG_HEAD moved off the dropped commit", func(tw *twin) {
			// feat's commit dropped by a reset: only ORIG_HEAD has it.
			tw.gitBoth("checkout", "-q", "feat")
			tw.gitBoth("reset", "-q", "--hard", "HEAD~1")
		}, func(tw *twin) {
			tw.gitBoth("update-ref", "ORIG_HEAD", "HEAD")
		}, func(r Report) bool { return r.Deletions == n }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tw := newTwin(t, "")
			gitAbsentTwin(t, tw)
			if c.setup != nil {
				c.setup(tw)
			}
			settle(t, tw)
			if r := tw.reconcile("settled"); !r.Replayed || r.Absent != n {
				t.Fatalf("settled: replayed %v, absent %d of %d", r.Replayed, r.Absent, n)
			}
			c.op(tw)
			before := tw.replays
			r := tw.reconcile(c.name)
			if tw.replays != before {
				t.Fatalf("%s: the pass was replayed", c.name)
			}
			if !c.want(r) {
				t.Fatalf("%s: %+v", c.name, r.Result)
			}
		})
	}
}

// A git hook's pass is not skipped when the record it would take asked
// git: only git's own files changed (a fetch --prune in a pull dropped the
// only branch that had the absent artifacts), yet git's answers did.
func TestReplayAfterGitWhenGitWasAsked(t *testing.T) {
	sameCommits(t)
	tw := newTwin(t, "")
	gitAbsentTwin(t, tw)
	settle(t, tw)
	tw.gitBoth("update-ref", "-d", "refs/heads/feat")
	e := New(tw.a, tw.cfg, nil)
	e.replayQuiet = tw.quiet
	r, err := e.Reconcile(context.Background(), Pass{Now: testNow.Add(time.Hour), AfterGit: true})
	if err != nil || r.Replayed || r.Deletions != nArtifacts {
		t.Fatalf("the hook's pass after the branch went: replayed %v, %d deletions of %d, %v", r.Replayed, r.Deletions, nArtifacts, err)
	}
}

// A repository whose .git is a file (a separate git directory, as a linked
// worktree or a submodule has): the file is among a replayed pass's
// inputs, so pointing it elsewhere runs a full pass.
func TestReplayGitFile(t *testing.T) {
	sameCommits(t)
	tw := newTwin(t, "")
	gitAbsentTwin(t, tw)
	tw.do(func(root string) {
		// The git directory moved out of the work tree, .git a file
		// naming it (git init --separate-git-dir does the same).
		gd := root + "-git"
		if err := os.Rename(filepath.Join(root, ".git"), gd); err != nil {
			t.Fatal(err)
		}
		putFile(t, root, ".git", "gitdir: "+gd+"\n")
	})
	tw.norm = strings.NewReplacer(tw.a+"-git", "GITDIR", tw.b+"-git", "GITDIR").Replace
	settle(t, tw)
	tw.do(func(root string) {
		// The same words, written anew: another file where .git was.
		p := filepath.Join(root, ".git")
		b, _ := os.ReadFile(p)
		os.WriteFile(p+".new", b, 0o644)
		os.Rename(p+".new", p)
	})
	before := tw.replays
	if r := tw.reconcile(".git rewritten"); tw.replays != before || r.Absent != nArtifacts {
		t.Fatalf(".git rewritten: replayed %v, absent %d", tw.replays != before, r.Absent)
	}
}

// The reconcile command's passes and the hooks' share their replay records
// (replayKey leaves MarkTracked out): over random steps on a memory git
// tracks — the file an observation names removed and put back (marks a
// hook leaves out of the log and the command writes), the memory
// committed, a person's deletions, restores and edits — every pass of
// either kind, replayed or not, is byte for byte the pass of an engine
// that never replays. Passes of each kind must replay the other's record,
// and a hook's record that left marks must not answer the command.
func TestReplayKindsProperty(t *testing.T) {
	sameCommits(t)
	crossed, withheld := 0, 0
	for seed := range uint64(3) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 31))
			tw := newTwin(t, "")
			tw.quiet = 20 * time.Millisecond
			tw.do(func(root string) {
				putFile(t, root, "src/store.go", "package src\n")
				// The journal stays local: its events carry each pass's own
				// id, so the twins' commits would differ.
				putFile(t, root, ".gitignore", ".memory/feedback.jsonl\n")
				f, err := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Fatal(err)
				}
				f.WriteString(readyObs("obs_ref", manifest.Decision, "Checks live in the store", "Run the checks in src/store.go before a release."))
				f.Close()
				gitRun(t, root, "init", "-q", "-b", "main")
				gitRun(t, root, "add", "-A")
				gitRun(t, root, "commit", "-q", "-m", "memory")
			})
			arts := tw.artifacts()
			saved := map[string][]byte{}
			last := false // the kind of the last pass that settled
			for i := range 30 {
				rel := arts[rng.IntN(len(arts))]
				var what string
				switch op := rng.IntN(8); op {
				case 0:
					what = "src/store.go removed"
					tw.gitBoth("rm", "-q", "--ignore-unmatch", "src/store.go")
				case 1:
					what = "src/store.go put back"
					tw.do(func(root string) { putFile(t, root, "src/store.go", "package src\n") })
					tw.gitBoth("add", "src/store.go")
				case 2:
					what = "memory committed"
					tw.gitBoth("add", "-A")
					tw.gitBoth("commit", "-q", "-m", fmt.Sprint("step ", i))
				case 3, 4:
					what = tw.personOp(rng.IntN(3), rel, i, saved)
				default:
					what = "nothing"
				}
				tw.markTracked = rng.IntN(2) == 0
				tw.reconcile(fmt.Sprintf("step %d: %s (command %v)", i, what, tw.markTracked))
				// Settled by one kind, then asked by either.
				for k := range 2 {
					tw.reconcile(fmt.Sprintf("step %d: %s, settling %d (command %v)", i, what, k, tw.markTracked))
				}
				last = tw.markTracked
				rec := readReplay(tw.a)
				tw.markTracked = rng.IntN(2) == 0
				r := tw.reconcile(fmt.Sprintf("step %d: %s, asked (command %v after %v)", i, what, tw.markTracked, last))
				switch {
				case rec == nil || !rec.Confirmed:
				case r.Replayed && last != tw.markTracked:
					crossed++
				case !r.Replayed && rec.Withheld && last != tw.markTracked:
					withheld++
				}
			}
		})
	}
	if crossed == 0 || withheld == 0 {
		t.Fatalf("replays across kinds %d, records left for the command and not replayed %d: want both", crossed, withheld)
	}
}

// gitStatusRefresh touches file in root (later than the index) and runs
// git status, which rewrites the index with the file's new stat and
// nothing else; it fails the test when the index did not change.
func gitStatusRefresh(t *testing.T, root, file string, later time.Time) {
	t.Helper()
	index := filepath.Join(root, ".git", "index")
	before, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(root, file), later, later); err != nil {
		t.Fatal(err)
	}
	gitRun(t, root, "status", "--porcelain")
	if after, _ := os.ReadFile(index); bytes.Equal(before, after) {
		t.Fatal("git status did not rewrite the index: the test proves nothing")
	}
}

// git status rewrites the index with new stat data when a tracked file
// was touched (and after most commits): what the index stages is the
// same, and the pass is replayed — every time, the record left as it
// was. So is it after git add of a changed file, a skip-worktree bit or a
// file unstaged: a pass that did not ask git reads only the names the
// index holds. A change of those runs a full pass.
func TestReplayAfterIndexRefresh(t *testing.T) {
	tw := newTwin(t, "")
	gitTwin(t, tw)
	settle(t, tw)
	record, err := os.ReadFile(cachedir.Path(tw.a, ReplayFile))
	if err != nil {
		t.Fatal(err)
	}
	memo, err := os.ReadFile(cachedir.Path(tw.a, staleness.IndexDigestFile))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		later := time.Now().Add(time.Duration(2+i) * time.Second)
		tw.do(func(root string) { gitStatusRefresh(t, root, "src/store.go", later) })
		before := tw.replays
		tw.reconcile(fmt.Sprintf("git status %d", i))
		if tw.replays != before+1 {
			t.Fatalf("git status %d: the pass was not replayed", i)
		}
	}
	if now, _ := os.ReadFile(cachedir.Path(tw.a, ReplayFile)); !bytes.Equal(now, record) {
		t.Fatal("a replay wrote the record")
	}
	if now, _ := os.ReadFile(cachedir.Path(tw.a, staleness.IndexDigestFile)); !bytes.Equal(now, memo) {
		t.Fatal("a replay kept the index's identity")
	}
	for _, c := range []struct {
		what string
		op   func(root string)
	}{
		{"a changed file staged", func(root string) {
			putFile(t, root, "src/store.go", "package src // changed\n")
			gitRun(t, root, "add", "src/store.go")
		}},
		{"a file marked skip-worktree", func(root string) {
			gitRun(t, root, "update-index", "--skip-worktree", "src/cache.go")
		}},
		{"a file unstaged", func(root string) {
			gitRun(t, root, "reset", "-q", "--", "src/store.go")
		}},
	} {
		tw.do(c.op)
		before := tw.replays
		tw.reconcile(c.what)
		if tw.replays != before+1 {
			t.Fatalf("%s: the pass was not replayed", c.what)
		}
	}
	notReplayed(t, tw, "a new file staged", func(root string) {
		putFile(t, root, "src/new.go", "package src\n")
		gitRun(t, root, "add", "src/new.go")
	})
	settle(t, tw)
	notReplayed(t, tw, "a file removed from the index", func(root string) {
		gitRun(t, root, "rm", "-q", "--cached", "src/new.go")
	})
	settle(t, tw)
	notReplayed(t, tw, "the index removed", func(root string) {
		os.Remove(filepath.Join(root, ".git", "index"))
	})
}

// A pass that asked git (its artifacts absent) read the index's blobs: a
// stat-only rewrite replays it, another blob staged under the same name
// runs a full pass.
func TestReplayAskedGitAfterIndexChange(t *testing.T) {
	sameCommits(t)
	tw := newTwin(t, "")
	gitAbsentTwin(t, tw)
	settle(t, tw)
	later := time.Now().Add(2 * time.Second)
	tw.do(func(root string) { gitStatusRefresh(t, root, "notes.txt", later) })
	before := tw.replays
	if r := tw.reconcile("git status"); tw.replays != before+1 || r.Absent != nArtifacts {
		t.Fatalf("git status: replayed %v, absent %d", tw.replays != before, r.Absent)
	}
	notReplayed(t, tw, "notes.txt changed and staged", func(root string) {
		putFile(t, root, "notes.txt", "other notes\n")
		gitRun(t, root, "add", "notes.txt")
	})
}

// The record's stats are let go before the full pass (letGoRecorded); the
// index's identity is still taken from the record when the index's stat is
// the one it recorded, and never when it is not.
func TestNoteIndexAfterRecordedStatsLetGo(t *testing.T) {
	root := t.TempDir()
	gitOut(t, root, "init", "-q")
	putFile(t, root, "a.go", "package a\n")
	gitOut(t, root, "add", "a.go")
	path := indexPath(root)
	if path == "" {
		t.Fatal("no index path in a git repository")
	}
	now := lstatDep(path)
	if now.Type == 0 {
		t.Fatal("the index is not there")
	}
	other := now
	other.Mtime++
	for _, c := range []struct {
		what     string
		recorded depStat
		planted  bool
	}{
		{"same stat", now, true},
		{"another stat", other, false},
	} {
		last := &replayRecord{Paths: []string{path}, Kinds: []depKind{depFile}, Stats: []depStat{c.recorded}, Index: path, IndexID: "planted"}
		start := &replayStart{rec: last}
		start.letGoRecorded()
		if start.rec.Stats != nil || last.Stats == nil {
			t.Fatalf("%s: the start's record kept its stats (or the record read lost them)", c.what)
		}
		if start.recIndex == nil || *start.recIndex != c.recorded {
			t.Fatalf("%s: the index's recorded stat not kept: %v", c.what, start.recIndex)
		}
		rec := &replayRecord{Paths: []string{path}, Kinds: []depKind{depFile}, Stats: []depStat{now}}
		noteIndex(root, rec, start.rec, start.recIndex)
		if got := rec.IndexID == "planted"; got != c.planted {
			t.Fatalf("%s: identity taken from the record = %v, want %v (IndexID %q)", c.what, got, c.planted, rec.IndexID)
		}
		if !c.planted && rec.IndexID == "" {
			t.Fatalf("%s: no identity taken from the index itself", c.what)
		}
		// The record as read (not let go) answers the same.
		rec = &replayRecord{Paths: []string{path}, Kinds: []depKind{depFile}, Stats: []depStat{now}}
		noteIndex(root, rec, last, nil)
		if got := rec.IndexID == "planted"; got != c.planted {
			t.Fatalf("%s, record as read: identity taken from the record = %v, want %v", c.what, got, c.planted)
		}
	}
}

// A replay check that finds a change hands the full pass the stats it
// took of every recorded path (heal.Options.Known), each under its own
// path: the record's paths are sorted and unique, as statcache.NewKnown
// requires (else the pass would stat everything again, silently).
func TestReplayStartKnown(t *testing.T) {
	root, e := memory(t)
	ctx := context.Background()
	for i := range 3 {
		if _, err := e.Reconcile(ctx, Pass{Now: testNow}); err != nil {
			t.Fatal(i, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	log := manifest.PathsFor(root).Log
	later := time.Now().Add(time.Second)
	os.Chtimes(log, later, later) // a change: the check stats, the pass runs
	p := Pass{Now: testNow}
	_, ok, start := e.tryReplay(p, e.replayKey(p))
	if ok || start == nil || start.rec == nil {
		t.Fatalf("replayed %v, record %v: the check should have found the log changed", ok, start != nil && start.rec != nil)
	}
	k := start.known()
	if k.Len() == 0 || k.Len() != len(start.rec.Paths) {
		t.Fatalf("%d stats known of %d recorded paths", k.Len(), len(start.rec.Paths))
	}
	for i, path := range start.rec.Paths {
		if start.stats[i].Type == 0 {
			continue
		}
		if k.SeenFile(path) || k.SeenDir(path) {
			continue
		}
		t.Errorf("%s (type %o) is neither a known file nor a directory", path, start.stats[i].Type)
	}
}
