package engine

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/manifest"
)

// twin is one repository set up twice, identically: A reconciles with the
// stat cache, B without. Every operation is applied to both.
type twin struct {
	t    *testing.T
	a, b string
	cfg  config.Config
	step int
	// kept, when set, is A's engine across passes (the watcher's), told
	// which files changed (touched: what inotify would report).
	kept    *Engine
	touched map[string]bool
	// quiet, when set, lets A's engine replay a pass whose inputs were
	// left alone that long (replay.go); every pass waits that long first.
	// replays counts A's replayed passes.
	quiet   time.Duration
	replays int
	// deferred makes A's kept engine run the watcher's passes (Deferred:
	// the parsed state kept, the staleness pass and the cache write left
	// to Settle, which runs after each pass; its staleness count is A's).
	// prove lets the state be proved before the next pass.
	deferred, prove bool
	// warmPasses counts A's passes that took the kept state.
	warmPasses int
	// confirm, when not nil, is both passes' Pass.Confirm: the missing
	// artifacts they may call deleted (the watcher's grace window).
	confirm map[string]bool
	// norm, when set, is applied to both reports and both files' renderings
	// before they are compared.
	norm func(string) string
	// markTracked, when set, is both passes' Pass.MarkTracked (the
	// reconcile command's pass when true, a hook's when false).
	markTracked bool
}

const nArtifacts = 12

func newTwin(t *testing.T, mode string) *twin {
	t.Helper()
	tw := &twin{t: t, a: t.TempDir(), b: t.TempDir(), cfg: config.Default()}
	tw.cfg.Engine.CheckStat = mode
	var log strings.Builder
	for i := range nArtifacts {
		log.WriteString(readyObs(fmt.Sprintf("obs_%02d", i), manifest.Workflow, fmt.Sprintf("Workflow number %02d for the build", i), ""))
	}
	log.WriteString(readyObs("obs_de", manifest.Decision, "Use SQLite for the local cache", "One file, no server."))
	for _, root := range []string{tw.a, tw.b} {
		putFile(t, root, ".memory/learning-log.jsonl", log.String())
		if _, _, err := New(root, tw.cfg, nil).Render(context.Background(), testNow); err != nil {
			t.Fatal(err)
		}
	}
	tw.reconcile("setup")
	return tw
}

// artifacts lists the rendered command files (relative paths).
func (tw *twin) artifacts() []string {
	m, _, err := manifest.ReadManifest(manifest.PathsFor(tw.a).Manifest)
	if err != nil {
		tw.t.Fatal(err)
	}
	var out []string
	for _, e := range m.Entries {
		if e.AnchorID == "" {
			out = append(out, e.Path)
		}
	}
	return out
}

// do applies op to both roots.
func (tw *twin) do(op func(root string)) { op(tw.a); op(tw.b) }

// sameCommits dates every commit of the test alike, so that both roots of
// a twin make the same commits (a penalty records HEAD).
func sameCommits(t *testing.T) {
	t.Helper()
	t.Setenv("GIT_AUTHOR_DATE", "2026-01-02T03:04:05Z")
	t.Setenv("GIT_COMMITTER_DATE", "2026-01-02T03:04:05Z")
}

var passID = regexp.MustCompile(`"pass":"[^"]*"`)

// reconcile runs one pass on both and requires byte-identical reports and
// files (the cache directory aside).
func (tw *twin) reconcile(what string) Report {
	tw.t.Helper()
	tw.step++
	now := testNow.Add(time.Duration(tw.step) * time.Minute)
	ea, pa := New(tw.a, tw.cfg, nil), Pass{Now: now, MarkTracked: tw.markTracked}
	if tw.kept != nil {
		ea, pa.Touched, tw.touched = tw.kept, tw.touched, map[string]bool{}
	}
	if tw.quiet > 0 {
		ea.replayQuiet = tw.quiet
		time.Sleep(tw.quiet + 5*time.Millisecond)
	}
	pa.Deferred, pa.Confirm = tw.deferred, tw.confirm
	logBefore := ea.warm.Log()
	ra, errA := ea.Reconcile(context.Background(), pa)
	if ra.Replayed {
		tw.replays++
	}
	if tw.deferred {
		if logBefore != nil && ra.Log == logBefore {
			tw.warmPasses++
		}
		rs := tw.settle(ea, now)
		ra.Stale, ra.Problems = rs.Stale, append(ra.Problems, rs.Problems...)
	}
	rb, errB := New(tw.b, tw.cfg, nil).Reconcile(context.Background(), Pass{Now: now, NoStatCache: true, Confirm: tw.confirm, MarkTracked: tw.markTracked})
	if (errA == nil) != (errB == nil) {
		tw.t.Fatalf("%s: errors differ: %v / %v", what, errA, errB)
	}
	ja, jb := tw.report(ra, tw.a), tw.report(rb, tw.b)
	if tw.norm != nil {
		ja, jb = tw.norm(ja), tw.norm(jb)
	}
	if ja != jb {
		tw.t.Fatalf("%s: reports differ\nwith cache:    %s\nwithout cache: %s", what, ja, jb)
	}
	fa, fb := tw.files(tw.a), tw.files(tw.b)
	if tw.norm != nil {
		fa, fb = tw.norm(fa), tw.norm(fb)
	}
	if fa != fb {
		tw.t.Fatalf("%s: files differ\nwith cache:\n%s\nwithout cache:\n%s", what, fa, fb)
	}
	return ra
}

// settle runs A's Settle until it has nothing left (proving the kept
// state first when tw.prove, else only the staleness pass and the cache).
func (tw *twin) settle(e *Engine, now time.Time) Report {
	tw.t.Helper()
	var out Report
	for range 100 {
		r, again, err := e.Settle(context.Background(), now)
		if err != nil {
			tw.t.Fatalf("settle: %v", err)
		}
		out.Stale += r.Stale
		out.Problems = append(out.Problems, r.Problems...)
		if !again || !tw.prove && !e.settle.stale {
			return out
		}
		time.Sleep(15 * time.Millisecond)
	}
	tw.t.Fatal("the engine did not settle")
	return out
}

func (tw *twin) report(r Report, root string) string {
	b, err := json.Marshal(struct {
		R    Report
		Kept []string
		W    []string
	}{r, r.Kept, r.Warnings})
	if err != nil {
		tw.t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), root, "ROOT")
}

// files renders every file under root but the cache directory and lock
// files as "path\ncontent" (pass ids of the journal normalised).
func (tw *twin) files(root string) string {
	var buf bytes.Buffer
	cache := cachedir.Dir(root)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == cache || d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir // git's objects hold commit times
		}
		if d.IsDir() || strings.HasSuffix(p, ".lock") {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			to, _ := os.Readlink(p)
			rel, _ := filepath.Rel(root, p)
			fmt.Fprintf(&buf, "== %s -> %s\n", rel, strings.ReplaceAll(to, root, "ROOT"))
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&buf, "== %s\n%s\n", rel, passID.ReplaceAll(b, []byte(`"pass":"ID"`)))
		return nil
	})
	if err != nil {
		tw.t.Fatal(err)
	}
	return buf.String()
}

// rewriteSameSize replaces rel's content with as many other bytes and
// gives it back its mtime: size and mtime say "unchanged".
func rewriteSameSize(t *testing.T, root, rel string) {
	p := filepath.Join(root, rel)
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	b = bytes.ToUpper(b)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

func TestStatCacheNothingChangedWritesNothing(t *testing.T) {
	tw := newTwin(t, "")
	cache := cachedir.Path(tw.a, statcache.FileName)
	tw.reconcile("after setup") // racily clean entries of setup proved clean
	before, err := os.Stat(cache)
	if err != nil {
		t.Fatalf("no stat cache after a pass: %v", err)
	}
	time.Sleep(10 * time.Millisecond)
	r := tw.reconcile("nothing changed")
	if r.Unchanged != nArtifacts+1 || len(r.Wrote) != 0 {
		t.Fatalf("nothing changed: %+v", r.Result)
	}
	after, _ := os.Stat(cache)
	if !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("the nothing-changed pass rewrote the stat cache")
	}
	// The cache did stand in for the reads: with every artifact made
	// unreadable without touching its stat… is not possible, so count
	// what the cache vouches for instead.
	c := statcache.Load(tw.a, statcache.Default)
	vouched := 0
	for _, rel := range tw.artifacts() {
		if st, ok := statcache.Lstat(filepath.Join(tw.a, rel)); ok {
			if _, ok := c.Lookup(rel, st); ok {
				vouched++
			}
		}
	}
	if vouched != nArtifacts {
		t.Errorf("the cache vouches for %d of %d artifacts", vouched, nArtifacts)
	}
}

// Every way a stat can lie, or the cache be wrong, gives the result of a
// full reconcile.
func TestStatCacheInvalidation(t *testing.T) {
	cases := []struct {
		name string
		mode string
		op   func(t *testing.T, root, rel string)
		want func(r Report) bool
	}{
		{"same size within one mtime tick", "", rewriteSameSize, edited},
		{"cp -p keeps the mtime", "", func(t *testing.T, root, rel string) {
			src := filepath.Join(t.TempDir(), "src")
			b, _ := os.ReadFile(filepath.Join(root, rel))
			os.WriteFile(src, bytes.ToUpper(b), 0o644)
			run(t, "touch", "-r", filepath.Join(root, rel), src)
			run(t, "cp", "-p", src, filepath.Join(root, rel))
		}, edited},
		{"touch -r after an edit", "", func(t *testing.T, root, rel string) {
			ref := filepath.Join(t.TempDir(), "ref")
			os.WriteFile(ref, nil, 0o644)
			run(t, "touch", "-r", filepath.Join(root, rel), ref)
			b, _ := os.ReadFile(filepath.Join(root, rel))
			os.WriteFile(filepath.Join(root, rel), bytes.ToUpper(b), 0o644)
			run(t, "touch", "-r", ref, filepath.Join(root, rel))
		}, edited},
		{"inode change (replaced by rename)", "", func(t *testing.T, root, rel string) {
			p := filepath.Join(root, rel)
			fi, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			tmp := p + ".new"
			os.WriteFile(tmp, bytes.ToUpper(b), 0o644)
			os.Chtimes(tmp, fi.ModTime(), fi.ModTime())
			os.Rename(tmp, p)
		}, edited},
		{"racily clean under check_stat minimal", "minimal", nil, edited},
		{"cache file corrupt", "", func(t *testing.T, root, rel string) {
			p := cachedir.Path(root, statcache.FileName)
			if c, err := os.ReadFile(p); err == nil { // the twin with a cache
				os.WriteFile(p, c[:len(c)-7], 0o644) // cut in the last entry
			}
			b, _ := os.ReadFile(filepath.Join(root, rel))
			os.WriteFile(filepath.Join(root, rel), append(b, "more\n"...), 0o644)
		}, edited},
		{"cache file from another version", "", func(t *testing.T, root, rel string) {
			p := cachedir.Path(root, statcache.FileName)
			if b, err := os.ReadFile(p); err == nil { // the twin with a cache
				other := bytes.Replace(b, fmt.Appendf(nil, "learnwatch stat cache %d\n", statcache.Version), []byte("learnwatch stat cache 1\n"), 1)
				if bytes.Equal(other, b) {
					t.Fatal("the cache file does not start with its version")
				}
				os.WriteFile(p, other, 0o644)
			}
			rewriteSameSize(t, root, rel)
		}, edited},
		// A cached hash that is not the manifest's never vouches for a
		// file: it is read (and the cache, written without an fsync, is
		// refused by its checksum before that: codec.go).
		{"a digit of a cached hash changed", "", func(t *testing.T, root, rel string) {
			p := cachedir.Path(root, statcache.FileName)
			b, err := os.ReadFile(p)
			if err != nil {
				return // the twin without a cache
			}
			content, _ := os.ReadFile(filepath.Join(root, rel))
			i := bytes.Index(b, []byte(manifest.Hash(content)))
			if i < 0 {
				t.Fatal("the artifact's hash is not in the cache file")
			}
			i += len(manifest.Hash(content)) - 1
			b[i] = "01"[b[i]&1^1] // another hex digit
			os.WriteFile(p, b, 0o644)
		}, func(r Report) bool { return r.Edits == 0 && r.Deletions == 0 }},
		{"another tool rewrote the manifest", "", func(t *testing.T, root, rel string) {
			p := manifest.PathsFor(root).Manifest
			m, _, _ := manifest.ReadManifest(p)
			i := slicesIndex(m.Entries, rel)
			m.Entries[i].ContentHash = manifest.Hash([]byte("what another tool thinks it rendered\n"))
			b, _ := m.Encode()
			os.WriteFile(p, b, 0o644)
		}, edited},
		{"another tool rewrote the log", "", func(t *testing.T, root, rel string) {
			p := manifest.PathsFor(root).Log
			b, _ := os.ReadFile(p)
			lines := strings.SplitAfter(string(b), "\n")
			os.WriteFile(p, []byte(strings.Join(lines[1:], "")), 0o644)
		}, func(r Report) bool { return r.Dropped == 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tw := newTwin(t, c.mode)
			rel := tw.artifacts()[3]
			op := c.op
			if op == nil {
				// The racy case: the artifact's mtime is not older than the
				// cache file's, then it is rewritten at the same size and
				// the same mtime (a write within the tick of the cache's).
				future := time.Now().Add(time.Hour)
				tw.do(func(root string) { os.Chtimes(filepath.Join(root, rel), future, future) })
				tw.reconcile("mtime ahead of the cache")
				op = rewriteSameSize
			}
			tw.do(func(root string) { op(t, root, rel) })
			if r := tw.reconcile(c.name); !c.want(r) {
				t.Errorf("%s: %+v", c.name, r.Result)
			}
			tw.reconcile(c.name + ", then nothing")
		})
	}
}

func edited(r Report) bool { return r.Edits == 1 }

func slicesIndex(es []manifest.Entry, rel string) int {
	for i, e := range es {
		if e.Path == rel {
			return i
		}
	}
	return -1
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %v: %v\n%s", name, args, err, out)
	}
}

// Random sequences of what people and tools do to artifacts, reconciled
// with the stat cache and without: every report and every file identical.
func TestStatCacheProperty(t *testing.T) {
	for seed := range uint64(12) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 12))
			mode := []string{"", "minimal"}[seed%2]
			tw := newTwin(t, mode)
			if seed >= 4 {
				// The watcher's way: one engine, told what changed; from
				// seed 8 its passes are the watcher's (Deferred), the kept
				// state proved before the next pass or not.
				tw.kept = New(tw.a, tw.cfg, nil)
				tw.deferred, tw.prove = seed >= 8, seed >= 10
				tw.reconcile("the kept engine's first pass")
				tw.touched = map[string]bool{}
			} else {
				// A command's way: a new engine per pass, which replays
				// a pass whose inputs did not change.
				tw.quiet = 20 * time.Millisecond
			}
			arts := tw.artifacts()
			saved := map[string][]byte{}
			for i := range 25 {
				rel := arts[rng.IntN(len(arts))]
				var what string
				switch op := rng.IntN(12); op {
				case 0, 1, 2:
					what = tw.personOp(op, rel, i, saved)
				case 3:
					// check_stat minimal trusts size and mtime, like git's:
					// a rewrite that also restores the mtime is what it
					// gives up (docs/engine.md); its rewrite keeps the new
					// mtime.
					what = "same-size rewrite " + rel
					tw.do(func(root string) {
						p := filepath.Join(root, rel)
						if _, err := os.Stat(p); err != nil {
							return
						}
						if mode == "minimal" {
							b, _ := os.ReadFile(p)
							os.WriteFile(p, bytes.ToUpper(b), 0o644)
							return
						}
						rewriteSameSize(t, root, rel)
					})
				case 4:
					what = "touch " + rel
					at := time.Now().Add(time.Duration(rng.IntN(3)-1) * time.Hour)
					tw.do(func(root string) { os.Chtimes(filepath.Join(root, rel), at, at) })
				case 5:
					what = "corrupt the cache"
					tw.do(func(root string) {
						os.WriteFile(cachedir.Path(root, statcache.FileName), []byte("garbage"), 0o644)
						os.WriteFile(cachedir.Path(root, ReplayFile), []byte("garbage"), 0o644)
					})
				case 6:
					// Another tool appends to the log between passes.
					what = "another tool appends an observation"
					line := readyObs(fmt.Sprintf("obs_t%02d", i), manifest.Pitfall, fmt.Sprintf("Pitfall %d in docs/missing-%d.md", i, i), "See src/gone.go.")
					tw.do(func(root string) {
						f, err := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
						if err == nil {
							f.WriteString(line)
							f.Close()
						}
					})
				case 7:
					// Another tool rewrites the manifest with the same
					// bytes (a new inode, the same content).
					what = "another tool rewrites the manifest"
					tw.do(func(root string) {
						p := manifest.PathsFor(root).Manifest
						if b, err := os.ReadFile(p); err == nil {
							os.WriteFile(p+".new", b, 0o644)
							os.Rename(p+".new", p)
						}
					})
				case 8:
					// A file a reference names appears or goes (outside
					// git the staleness pass resolves against the working
					// tree).
					what = "toggle src/gone.go"
					tw.do(func(root string) {
						p := filepath.Join(root, "src", "gone.go")
						if _, err := os.Stat(p); err == nil {
							os.Remove(p)
							return
						}
						os.MkdirAll(filepath.Dir(p), 0o755)
						os.WriteFile(p, []byte("package src\n"), 0o644)
					})
				case 9:
					// Another tool rewrites the log in place, as many
					// bytes, and puts its mtime back: only the ctime (and
					// the content) tell. No event reaches the engine.
					what = "another tool rewrites the log in place"
					tw.do(func(root string) {
						p := manifest.PathsFor(root).Log
						fi, err := os.Stat(p)
						if err != nil {
							return
						}
						b, _ := os.ReadFile(p)
						b = bytes.Replace(b, []byte("Workflow number"), []byte("Workflow Number"), 1)
						os.WriteFile(p, b, 0o644)
						os.Chtimes(p, fi.ModTime(), fi.ModTime())
					})
				default:
					what = "nothing"
				}
				if tw.kept != nil && !strings.HasPrefix(what, "touch ") && !strings.HasPrefix(what, "corrupt") && !strings.HasPrefix(what, "another tool") && what != "nothing" {
					// A content change is an event; a touch is an
					// attribute change the watcher ignores.
					tw.touched[rel] = true
				}
				tw.reconcile(fmt.Sprintf("step %d: %s", i, what))
			}
			if tw.deferred {
				t.Logf("%d passes took the kept state", tw.warmPasses)
			}
			if tw.kept == nil {
				// Left alone, the passes settle: recorded, confirmed,
				// then replayed, identical to a full pass.
				for i := range 3 {
					tw.reconcile(fmt.Sprintf("settle %d", i))
				}
				if tw.replays == 0 {
					t.Fatalf("no pass was replayed")
				}
			}
		})
	}
}

// A kept engine told that nothing changed does not even stat the files it
// knows: a change it was not told about (inotify would have reported it)
// is not seen until a pass checks every file.
func TestKeptEngineTrustsTouched(t *testing.T) {
	root, _ := memory(t)
	e := New(root, config.Default(), nil)
	ctx := context.Background()
	for i := range 2 {
		if _, err := e.Reconcile(ctx, Pass{Now: testNow}); err != nil {
			t.Fatal(i, err)
		}
	}
	rel := ".claude/commands/self-learning/run-the-linter-before-pushing.md"
	old := time.Now().Add(-time.Hour) // not racily clean
	os.Chtimes(filepath.Join(root, rel), old, old)
	if _, err := e.Reconcile(ctx, Pass{Now: testNow}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, rel), []byte("rewritten behind the watcher's back\n"), 0o644)
	r, err := e.Reconcile(ctx, Pass{Now: testNow, Touched: map[string]bool{}})
	if err != nil || r.Edits != 0 {
		t.Fatalf("untouched file was checked: %+v %v", r.Result, err)
	}
	r, err = e.Reconcile(ctx, Pass{Now: testNow, Touched: map[string]bool{rel: true}})
	if err != nil || r.Edits != 1 {
		t.Fatalf("touched file not checked: %+v %v", r.Result, err)
	}
}

// The watcher's passes take the kept state: a property run that never
// took it would prove nothing about it.
func TestDeferredPassesTakeTheKeptState(t *testing.T) {
	tw := newTwin(t, "")
	tw.kept = New(tw.a, tw.cfg, nil)
	tw.deferred, tw.prove = true, true
	tw.touched = map[string]bool{}
	tw.reconcile("the kept engine's first pass")
	arts := tw.artifacts()
	for i, rel := range arts[:4] {
		tw.do(func(root string) { os.Remove(filepath.Join(root, rel)) })
		tw.touched[rel] = true
		if r := tw.reconcile(fmt.Sprintf("delete %d", i)); r.Deletions != 1 {
			t.Fatalf("delete %d: %+v", i, r.Result)
		}
	}
	if tw.warmPasses < 4 {
		t.Fatalf("%d of 4 passes took the kept state", tw.warmPasses)
	}
}

// Another tool writes a file of the kept state between two of the
// watcher's passes, and no event says so (inotify may drop them): the next
// pass sees each change exactly as a full pass does.
func TestDeferredSeesAnotherToolsWrites(t *testing.T) {
	ops := []struct {
		what string
		op   func(root string)
	}{
		{"appends an observation to the log", func(root string) {
			f, err := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString(readyObs("obs_other", manifest.Pitfall, "Pitfall from another tool in docs/missing.md", "See src/gone.go."))
			f.Close()
		}},
		{"rewrites the log in place with as many bytes, mtime put back", func(root string) {
			p := manifest.PathsFor(root).Log
			fi, _ := os.Stat(p)
			b, _ := os.ReadFile(p)
			os.WriteFile(p, bytes.Replace(b, []byte(`"confidence":0.95`), []byte(`"confidence":0.15`), 1), 0o644)
			os.Chtimes(p, fi.ModTime(), fi.ModTime())
		}},
		{"drops a manifest entry", func(root string) {
			p := manifest.PathsFor(root).Manifest
			m, _, err := manifest.ReadManifest(p)
			if err != nil {
				t.Fatal(err)
			}
			m.Entries = m.Entries[1:]
			if err := manifest.WriteManifest(p, m); err != nil {
				t.Fatal(err)
			}
		}},
		{"empties the usage file", func(root string) {
			os.WriteFile(manifest.PathsFor(root).Usage, []byte("{}\n"), 0o644)
		}},
		{"edits the decisions file", func(root string) {
			p := manifest.PathsFor(root).Decisions
			b, _ := os.ReadFile(p)
			os.WriteFile(p, append(b, "\nA note a person added.\n"...), 0o644)
		}},
	}
	for _, prove := range []bool{true, false} {
		for _, o := range ops {
			t.Run(fmt.Sprintf("%s/proved=%v", o.what, prove), func(t *testing.T) {
				tw := newTwin(t, "")
				tw.kept = New(tw.a, tw.cfg, nil)
				tw.deferred, tw.prove = true, prove
				tw.touched = map[string]bool{}
				tw.reconcile("first pass")
				time.Sleep(60 * time.Millisecond) // past the racy window
				tw.reconcile("a pass that takes the state")
				tw.do(o.op)
				// The same burst deletes an artifact: the pass writes.
				rel := tw.artifacts()[0]
				tw.do(func(root string) { os.Remove(filepath.Join(root, rel)) })
				tw.touched[rel] = true
				tw.reconcile("the pass after another tool's write")
				if tw.warmPasses == 0 {
					t.Fatal("no pass took the kept state")
				}
			})
		}
	}
}

// A Settle called off (an event came) leaves the staleness pass for the
// next one, which writes exactly what a full pass writes.
func TestSettleCalledOff(t *testing.T) {
	tw := newTwin(t, "")
	tw.kept = New(tw.a, tw.cfg, nil)
	tw.touched = map[string]bool{}
	// A reference that goes stale in both: a full pass marks it.
	tw.do(func(root string) {
		f, err := os.OpenFile(manifest.PathsFor(root).Log, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(readyObs("obs_ref", manifest.Pitfall, "Pitfall about the loader", "See src/loader.go."))
		f.Close()
	})
	rel := tw.artifacts()[0]
	tw.do(func(root string) { os.Remove(filepath.Join(root, rel)) })
	now := testNow.Add(time.Hour)
	ra, err := tw.kept.Reconcile(context.Background(), Pass{Now: now, Deferred: true, Touched: map[string]bool{rel: true}})
	if err != nil || ra.Deletions != 1 {
		t.Fatalf("%+v %v", ra.Result, err)
	}
	called, off := context.WithCancel(context.Background())
	off()
	if _, again, err := tw.kept.Settle(called, now); err != nil || !again {
		t.Fatalf("a Settle called off: again=%v err=%v", again, err)
	}
	if !tw.kept.settle.stale {
		t.Fatal("the staleness pass was dropped by a Settle called off")
	}
	rs := tw.settle(tw.kept, now)
	rb, err := New(tw.b, tw.cfg, nil).Reconcile(context.Background(), Pass{Now: now, NoStatCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if rs.Stale != rb.Stale || rs.Stale == 0 {
		t.Fatalf("stale: settled %d, full pass %d", rs.Stale, rb.Stale)
	}
	if fa, fb := tw.files(tw.a), tw.files(tw.b); fa != fb {
		t.Fatalf("files differ\nsettled:\n%s\nfull pass:\n%s", fa, fb)
	}
}

// An artifact a checkout took away is absent, not deleted, and stays so
// on the watcher's next passes about other files; when git stops
// explaining it (the only branch that had it is deleted), the next pass
// penalises it without an event on the file. Each outcome is decided
// anew by a pass that looks at the file: the watcher's kept notes never
// hold it as settled.
func TestDeferredAbsentIsAskedAgain(t *testing.T) {
	sameCommits(t)
	tw := newTwin(t, "")
	gitTwin(t, tw)
	tw.kept = New(tw.a, tw.cfg, nil)
	tw.deferred, tw.prove = true, true
	tw.touched = map[string]bool{}
	tw.reconcile("the kept engine's first pass")
	arts := tw.artifacts()
	gone, other := arts[0], arts[1]
	// A branch whose only commit never had the artifact.
	tw.do(func(root string) {
		gitRun(t, root, "checkout", "-q", "-b", "bare")
		gitRun(t, root, "rm", "-q", gone)
		gitRun(t, root, "commit", "-q", "--amend", "-m", "bare")
	})
	tw.touched[gone] = true
	if r := tw.reconcile("the checkout took it away"); r.Absent != 1 || r.Deletions != 0 {
		t.Fatalf("after the checkout: %+v", r.Result)
	}
	for i := range 2 {
		tw.do(func(root string) {
			f, err := os.OpenFile(filepath.Join(root, other), os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(f, "\nEdit %d.\n", i)
			f.Close()
		})
		tw.touched[other] = true
		if r := tw.reconcile(fmt.Sprintf("edit %d of another file", i)); r.Absent != 1 {
			t.Fatalf("edit %d: the absent artifact is not reported: %+v", i, r.Result)
		}
	}
	tw.do(func(root string) { gitRun(t, root, "branch", "-q", "-D", "main") })
	tw.touched[other] = true // an event elsewhere runs the pass
	if r := tw.reconcile("no branch has it any more"); r.Deletions != 1 || r.Absent != 0 {
		t.Fatalf("once git no longer explains it: %+v", r.Result)
	}
	if tw.warmPasses < 3 {
		t.Fatalf("%d passes took the kept state", tw.warmPasses)
	}
}

// The watcher's passes in git repositories, with random deletions, edits,
// restores, commits of the artifacts and checkouts of a branch that lacks
// some of them (and, once edits are committed, has other versions of
// others) (a checkout a local change blocks fails in both twins
// alike): every report and file is the one a full pass without caches
// gives. The touched files are those whose content the step changed, as
// inotify would report them.
func TestDeferredGitProperty(t *testing.T) {
	sameCommits(t)
	var absent, checkedOut, deletions, switches int // what the runs met, all seeds
	for seed := range uint64(6) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			tw, arts, rng := keptGitTwin(t, seed, 21)
			tw.reconcile("the kept engine's first pass")
			branch := "main"
			saved := map[string][]byte{}
			for i := range 30 {
				rel := arts[rng.IntN(len(arts))]
				before := contents(tw.a, arts)
				var what string
				switch op := rng.IntN(7); op {
				case 0, 1, 2:
					what = tw.personOp(op, rel, i, saved)
				case 3, 4:
					var now string
					what, now = tw.checkoutOther(branch)
					if now != branch {
						branch = now
						switches++
					}
				case 5:
					what = tw.commitArtifacts(branch, i)
				default:
					what = "nothing"
				}
				tw.noteTouched(arts, before)
				r := tw.reconcile(fmt.Sprintf("step %d: %s", i, what))
				absent += r.Absent
				checkedOut += r.CheckedOut
				deletions += r.Deletions
			}
			if tw.warmPasses == 0 {
				t.Fatal("no pass took the kept state")
			}
			t.Logf("%d passes took the kept state", tw.warmPasses)
		})
	}
	// The runs must have met what the notes may not hold quiet.
	if absent == 0 || checkedOut == 0 || deletions == 0 || switches == 0 {
		t.Fatalf("the runs met %d absences, %d checked-out versions, %d deletions, %d branch switches", absent, checkedOut, deletions, switches)
	}
	t.Logf("absences %d, checked-out versions %d, deletions %d, branch switches %d", absent, checkedOut, deletions, switches)
}

// keptGitTwin is the start of a property run of seed (rng stream): twins
// made git repositories with a branch "side" (gitWithSide), A's passes
// through a kept engine, Deferred as the watcher's, proving the kept state
// on odd seeds, no file touched yet. It returns the twin, its artifacts
// and the run's rng.
func keptGitTwin(t *testing.T, seed, stream uint64) (*twin, []string, *rand.Rand) {
	rng := rand.New(rand.NewPCG(seed, stream))
	tw := newTwin(t, "")
	arts := tw.gitWithSide(rng)
	tw.kept = New(tw.a, tw.cfg, nil)
	tw.deferred, tw.prove = true, seed%2 == 1
	tw.touched = map[string]bool{}
	return tw, arts, rng
}

// gitWithSide makes both twins git repositories (gitTwin) with a branch
// "side" that lacks up to two artifacts drawn by rng, main checked out,
// and returns the artifacts.
func (tw *twin) gitWithSide(rng *rand.Rand) []string {
	t := tw.t
	gitTwin(t, tw)
	arts := tw.artifacts()
	side := []string{arts[rng.IntN(len(arts))], arts[rng.IntN(len(arts))]}
	tw.do(func(root string) {
		gitRun(t, root, "checkout", "-q", "-b", "side")
		gitRun(t, root, append([]string{"rm", "-q", "--ignore-unmatch"}, side...)...)
		gitRun(t, root, "commit", "-q", "--allow-empty", "-m", "side")
		gitRun(t, root, "checkout", "-q", "main")
	})
	return arts
}

// gitBoth runs git in both twins; a refusal (a local change in the way)
// is the same in both.
func (tw *twin) gitBoth(args ...string) {
	tw.do(func(root string) {
		cmd := exec.Command("git", append([]string{"-C", root, "-c", "user.name=t", "-c", "user.email=t@e", "-c", "commit.gpgsign=false"}, args...)...)
		_ = cmd.Run()
	})
}

// checkoutOther checks the other branch out in both twins (main and side
// of gitWithSide) and returns what it did and the branch now checked out.
func (tw *twin) checkoutOther(branch string) (what, now string) {
	to := map[string]string{"main": "side", "side": "main"}[branch]
	tw.gitBoth("checkout", "-q", to)
	now = branch
	if out, err := exec.Command("git", "-C", tw.a, "branch", "--show-current").Output(); err == nil {
		now = strings.TrimSpace(string(out))
	}
	return "checkout " + to, now
}

// commitArtifacts commits the artifacts as they are in both twins (step i).
func (tw *twin) commitArtifacts(branch string, i int) string {
	tw.gitBoth("add", "-A", ".claude")
	tw.gitBoth("commit", "-q", "--allow-empty", "-m", fmt.Sprintf("step %d", i))
	return "commit the artifacts on " + branch
}

// personOp does to rel in both roots what a person does to an artifact
// at step i: delete it (its bytes kept in saved), restore what was
// deleted (op 1), or append a line (op 2). It returns what it did.
func (tw *twin) personOp(op int, rel string, i int, saved map[string][]byte) string {
	switch op {
	case 0:
		tw.do(func(root string) {
			p := filepath.Join(root, rel)
			if b, err := os.ReadFile(p); err == nil {
				saved[root+rel] = b
			}
			os.Remove(p)
		})
		return "delete " + rel
	case 1:
		tw.do(func(root string) {
			if b, ok := saved[root+rel]; ok {
				os.WriteFile(filepath.Join(root, rel), b, 0o644)
			}
		})
		return "restore " + rel
	}
	tw.do(func(root string) {
		p := filepath.Join(root, rel)
		if b, err := os.ReadFile(p); err == nil {
			os.WriteFile(p, append(b, fmt.Sprintf("note %d\n", i)...), 0o644)
		}
	})
	return "edit " + rel
}

// noteTouched adds to tw.touched the artifacts of arts whose content in
// twin A differs from before (contents taken before a step), as inotify
// would report them.
func (tw *twin) noteTouched(arts []string, before map[string]string) {
	after := contents(tw.a, arts)
	for _, a := range arts {
		if before[a] != after[a] {
			tw.touched[a] = true
		}
	}
}

// contents maps each of rels under root to its content ("\x00gone" when
// it is not there).
func contents(root string, rels []string) map[string]string {
	out := map[string]string{}
	for _, r := range rels {
		b, err := os.ReadFile(filepath.Join(root, r))
		if err != nil {
			out[r] = "\x00gone"
			continue
		}
		out[r] = string(b)
	}
	return out
}
