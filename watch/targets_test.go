package watch

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/learnwatch/learnwatch/manifest"
)

// TestTargetsIncrementalProperty runs random sequences of what changes a
// watch set — manifest paths added (in new directories, nested ones,
// knowledge anchors, outside the root), dropped and moved, skill
// directories replaced by a symlink out of the root and restored,
// directories a command may move to — through the watcher's incremental
// upkeep (rearm after a manifest rewrite, invalidate and rearm after a
// directory changed), and after every step compares the watch set and the
// armed watches with those a watcher built from scratch has.
func TestTargetsIncrementalProperty(t *testing.T) {
	fsw, err := newFS()
	if err != nil {
		t.Skip("no inotify:", err)
	}
	fsw.Close()
	for seed := range uint64(16) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { targetsProperty(t, seed) })
	}
}

func targetsProperty(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	root := fixture(t, 3, 3)
	outside := t.TempDir()
	p := manifest.PathsFor(root)
	w := newWatcher(root, Options{})
	fsw, err := newFS()
	if err != nil {
		t.Fatal(err)
	}
	defer fsw.Close()
	w.fsw = fsw
	go func() {
		for range fsw.Events {
		}
	}()
	go func() {
		for range fsw.Errors {
		}
	}()
	w.rearm(true, true)

	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	write := func() {
		if err := manifest.WriteManifest(p.Manifest, m); err != nil {
			t.Fatal(err)
		}
	}
	newPath := func() string {
		n++
		switch rng.IntN(6) {
		case 0:
			return fmt.Sprintf(".claude/skills/n%d/SKILL.md", n)
		case 1:
			return fmt.Sprintf("docs/a%d/b/c%d.md", n%3, n)
		case 2:
			return ".memory/knowledge/decisions.md#ADR-" + fmt.Sprint(n)
		case 3:
			return "../escape/x.md"
		case 4:
			return filepath.Join(outside, fmt.Sprintf("o%d.md", n))
		default:
			return fmt.Sprintf(".claude/commands/self-learning/x%d.md", n)
		}
	}
	makeFile := func(path string) {
		if filepath.IsAbs(path) || path[0] == '.' && path[1] == '.' {
			return
		}
		path, _, _ = strings.Cut(path, "#")
		f := abs(root, path)
		made := filepath.Dir(f) // the first directory made: its event re-arms what is below it (onEvent)
		for _, err := os.Stat(filepath.Dir(made)); err != nil; _, err = os.Stat(filepath.Dir(made)) {
			made = filepath.Dir(made)
		}
		_, err := os.Stat(made)
		_ = os.MkdirAll(filepath.Dir(f), 0o755)
		if err != nil {
			w.rearmUnder(made)
		}
		_ = os.WriteFile(f, []byte("x"), 0o644)
	}
	skillDirs := func() []string {
		var out []string
		for _, e := range m.Entries {
			if d := filepath.Dir(e.Path); filepath.Dir(d) == ".claude/skills" {
				out = append(out, d)
			}
		}
		slices.Sort(out)
		return slices.Compact(out)
	}

	for step := range 60 {
		var what string
		changed := map[string]bool{}
		switch op := rng.IntN(7); {
		case op <= 1: // a path added, its file made (or not)
			path := newPath()
			if rng.IntN(4) > 0 {
				makeFile(path)
			}
			m.Entries = append(m.Entries, manifest.Entry{ObservationID: fmt.Sprintf("obs_n%d", n), Type: "workflow", Path: path})
			what = "add " + path
		case op == 2 && len(m.Entries) > 0: // a path dropped
			i := rng.IntN(len(m.Entries))
			what = "drop " + m.Entries[i].Path
			m.Entries = slices.Delete(m.Entries, i, i+1)
		case op == 3 && len(m.Entries) > 0: // a path moved
			i := rng.IntN(len(m.Entries))
			path := newPath()
			makeFile(path)
			what = "move " + m.Entries[i].Path + " → " + path
			m.Entries[i].Path = path
		case op == 4: // a skill directory replaced by a symlink out of the root, or back
			ds := skillDirs()
			if len(ds) == 0 {
				continue
			}
			d := abs(root, ds[rng.IntN(len(ds))])
			if fi, err := os.Lstat(d); err == nil && fi.Mode()&os.ModeSymlink != 0 {
				_ = os.Remove(d)
				_ = os.MkdirAll(d, 0o755)
				_ = os.WriteFile(filepath.Join(d, "SKILL.md"), []byte("x"), 0o644)
				what = "restore " + d
			} else {
				_ = os.RemoveAll(d)
				_ = os.Symlink(outside, d)
				what = "symlink " + d
			}
			changed[d] = true
		case op == 5: // a directory a command may move to
			d := filepath.Join(filepath.Dir(p.Commands), fmt.Sprintf("ops%d", rng.IntN(3)), "deep")
			_ = os.MkdirAll(d, 0o755)
			w.noteMoveDir(fsnotify.Event{Name: filepath.Dir(d), Op: fsnotify.Create}, filepath.Dir(d))
			what = "move dir " + d
		default: // the docs tree moved away and back (every path below re-resolved)
			d := abs(root, "docs")
			if _, err := os.Stat(d); err != nil {
				continue
			}
			tmp := d + ".away"
			_ = os.Rename(d, tmp)
			_ = os.Rename(tmp, d)
			changed[d] = true
			what = "docs moved away and back"
		}
		if len(changed) > 0 {
			// As the watcher does: the directory's event re-arms what
			// is below it (onEvent), the burst's pass re-resolves
			// (absorbChanged).
			for d := range changed {
				w.rearmUnder(d)
			}
			w.invalidate(changed)
		} else {
			write()
		}
		w.rearm(true, false)

		fresh := newWatcher(root, Options{})
		fresh.moveDirs = maps.Clone(w.moveDirs)
		want := fresh.buildTargets(nil)
		if !maps.Equal(w.targets.dirs, want.dirs) {
			t.Fatalf("step %d (%s): dirs\n got %v\nwant %v", step, what, w.targets.dirs, want.dirs)
		}
		if !maps.Equal(w.targets.files, want.files) {
			t.Fatalf("step %d (%s): files\n got %v\nwant %v", step, what, w.targets.files, want.files)
		}
		for path, tg := range want.paths {
			if got := w.targets.paths[path]; got == nil || got.abs != tg.abs {
				t.Fatalf("step %d (%s): %s resolves to %+v, want %q", step, what, path, got, tg.abs)
			}
		}
		if len(w.targets.paths) != len(want.paths) {
			t.Fatalf("step %d (%s): %d paths, want %d", step, what, len(w.targets.paths), len(want.paths))
		}
		// Armed: every wanted directory that exists, and nothing else.
		if got, wantArmed := slices.Sorted(maps.Keys(w.armed)), existing(want.dirs); !slices.Equal(got, wantArmed) {
			t.Fatalf("step %d (%s): armed\n got %v\nwant %v", step, what, got, wantArmed)
		}
	}
}

// underAny answers as the plain definition does — the path is a changed
// directory or below one — whether it compares prefixes (a few changed)
// or remembers directories (many).
func TestTargetsInside(t *testing.T) {
	tg := newTargets("/repo/work")
	for p, want := range map[string]bool{
		"/repo/work":           true,
		"/repo/work/a":         true,
		"/repo/work/.claude/x": true,
		"/repo/workshop":       false,
		"/repo/work2/a":        false,
		"/repo":                false,
		"/repo/wor":            false,
		"":                     false,
		"/other/repo/work":     false,
	} {
		if got := tg.inside(p); got != want {
			t.Errorf("inside(%q) = %v, want %v", p, got, want)
		}
	}
	long := newTargets("/home/someone/projects/a-repository-with-a-long-name")
	file := long.root + "/.claude/commands/deploy.md"
	if n := testing.AllocsPerRun(100, func() { long.inside(file) }); n != 0 {
		t.Errorf("inside allocates %v times per call", n)
	}
}

func TestUnderAny(t *testing.T) {
	root := "/r"
	tg := newTargets(root)
	rng := rand.New(rand.NewPCG(1, 2))
	path := func() string {
		p := root
		for range rng.IntN(5) {
			p = filepath.Join(p, fmt.Sprint("d", rng.IntN(3)))
		}
		return p
	}
	for _, n := range []int{0, 1, 3, 8, 9, 30} {
		changed := map[string]bool{}
		for range n {
			changed[path()] = true
		}
		under := tg.underAny(changed)
		for range 500 {
			p := filepath.Join(path(), "f.md")
			if rng.IntN(3) == 0 {
				p = filepath.Dir(p)
			}
			want := false
			for d := range changed {
				if p == d || strings.HasPrefix(p, d+"/") {
					want = true
				}
			}
			if got := under(p); got != want {
				t.Fatalf("%d changed %v: under(%s) = %v, want %v", n, slices.Sorted(maps.Keys(changed)), p, got, want)
			}
		}
	}
	if tg.underAny(map[string]bool{"/r/d0": true})("/r/d00/f.md") {
		t.Error("a sibling whose name starts with a changed directory's counts as below it")
	}
}

// TestTargetsFollowPasses: a running watcher keeps its watch set by what
// its passes changed — a command deleted, a skill's directory removed, a
// skill's directory renamed (its path moved in the manifest) — and after
// every pass the set and the watches armed are those a watcher built from
// scratch has. The renamed skill's new directory is armed: an edit of its
// file is recorded.
func TestTargetsFollowPasses(t *testing.T) {
	root := fixture(t, 3, 3)
	var mu sync.Mutex
	var mismatches []string
	kept := 0 // passes after which the engine's kept manifest gave the paths
	r := start(t, root, Options{}, func(w *watcher) {
		after := w.afterFire
		w.afterFire = func() {
			// Before the pass is counted: the test's next change waits
			// for it.
			defer after()
			fresh := newWatcher(root, Options{})
			fresh.moveDirs = maps.Clone(w.moveDirs)
			want := fresh.buildTargets(nil)
			mu.Lock()
			defer mu.Unlock()
			if _, ok := w.eng.ManifestPaths(); ok {
				kept++
			}
			if !maps.Equal(w.targets.dirs, want.dirs) || !maps.Equal(w.targets.files, want.files) {
				mismatches = append(mismatches, fmt.Sprintf("watch set\n got %v %v\nwant %v %v", w.targets.dirs, w.targets.files, want.dirs, want.files))
			}
			if got, wantArmed := slices.Sorted(maps.Keys(w.armed)), existing(want.dirs); !slices.Equal(got, wantArmed) {
				mismatches = append(mismatches, fmt.Sprintf("armed\n got %v\nwant %v", got, wantArmed))
			}
		}
	})
	if err := os.Remove(abs(root, cmdRel(0))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(5*time.Second, "obs_c0 deprecated", func() bool { return status(t, root, "obs_c0") == manifest.Deprecated })
	if err := os.RemoveAll(filepath.Dir(abs(root, skillRel(0)))); err != nil {
		t.Fatal(err)
	}
	r.waitFor(5*time.Second, "obs_s0 deprecated", func() bool { return status(t, root, "obs_s0") == manifest.Deprecated })
	from := filepath.Dir(abs(root, skillRel(1)))
	if err := os.Rename(from, from+"-renamed"); err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(from+"-renamed", "SKILL.md")
	r.waitFor(5*time.Second, "the move followed", func() bool {
		m, _, err := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
		return err == nil && slices.ContainsFunc(m.Entries, func(e manifest.Entry) bool { return abs(root, e.Path) == moved })
	})
	r.settle()
	f, err := os.OpenFile(moved, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\nEdited by a person.\n")
	f.Close()
	r.waitFor(5*time.Second, "the edit of the moved skill recorded", func() bool {
		_, edits := r.sum()
		return edits == 1
	})
	mu.Lock()
	defer mu.Unlock()
	for _, m := range mismatches {
		t.Error(m)
	}
	if kept == 0 {
		t.Error("no pass left its manifest's paths to the watch set")
	}
}

// existing returns the directories of dirs that exist, sorted: those a
// watcher with that watch set has armed.
func existing(dirs map[string]int) []string {
	var out []string
	for d := range dirs {
		if _, ok := dirID(d); ok {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}
