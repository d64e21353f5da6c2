package watch

import (
	"iter"
	"maps"
	"path/filepath"
	"slices"
	"strings"
)

// targets is what the watcher cares about: the directories to watch and the
// files whose change calls for a reconcile. It is built once (buildTargets)
// and then kept up to date by the paths that changed: a manifest rewritten
// by a pass adds and drops the paths it added and dropped (refresh), a
// directory that moved re-resolves the paths below it (reresolve). At
// 50,000 artifacts a rebuild after every pass took 170–250 ms and the
// re-arm of its 25,000 directories 80 ms more.
type targets struct {
	valid bool
	// root bounds the directories: none above it is watched.
	root string
	// dirs: every directory holding a watched file, the knowledge,
	// commands and skills directories, and their ancestors up to the root
	// (so that a removed and re-created directory is noticed), each with
	// how many wants it has: a manifest path's file counts once for its
	// directory and for each ancestor, so does a fixed directory and a
	// directory a command may move to. A directory is in the map exactly
	// while it has one.
	dirs map[string]int
	// files: the log, the manifest, the knowledge files and every manifest
	// path, with how many of those name it. Other files in watched
	// directories are ignored.
	files map[string]int
	// paths: every manifest path (its #anchor cut) and where it resolves,
	// "" when it was refused (outside the root, through a symlink).
	paths map[string]*target
	// gen counts the manifest reads: a path the last read did not list
	// carries an older one.
	gen uint64
	// manifestFP is the manifest the set was computed from.
	manifestFP fingerprint
	// armed: a rearm armed every directory of this set, none refused by
	// the limits. Until the set is rebuilt, the directories that grew into
	// it or shrank out of it are armed and disarmed (armChanges), and
	// directory events (rearmUnder) and thorough re-arms change the rest.
	armed bool
	// grown and shrunk are the directories that entered dirs or left it
	// since the watches were last made to match.
	grown, shrunk map[string]bool
}

// target is one manifest path's resolution.
type target struct {
	abs string // "" refused
	gen uint64
}

func newTargets(root string) targets {
	return targets{valid: true, root: root, dirs: map[string]int{}, files: map[string]int{},
		paths: map[string]*target{}, grown: map[string]bool{}, shrunk: map[string]bool{}}
}

func (t *targets) inside(p string) bool {
	// Compared in place: a path built per call (root+"/") allocated on
	// every event and every refresh.
	return strings.HasPrefix(p, t.root) && (len(p) == len(t.root) || p[len(t.root)] == filepath.Separator)
}

// wantDir counts one want for d and each of its ancestors up to the root.
func (t *targets) wantDir(d string) { t.countDir(d, 1) }

// unwantDir takes back a want wantDir counted.
func (t *targets) unwantDir(d string) { t.countDir(d, -1) }

// countDir adds delta to the wants of d and of each ancestor up to the
// root, noting the directories that enter the set or leave it.
func (t *targets) countDir(d string, delta int) {
	for {
		was := t.dirs[d]
		now := max(was+delta, 0)
		if now == 0 {
			delete(t.dirs, d)
		} else {
			t.dirs[d] = now
		}
		switch {
		case was == 0 && now > 0:
			t.grown[d] = true
			delete(t.shrunk, d)
		case was > 0 && now == 0:
			t.shrunk[d] = true
			delete(t.grown, d)
		}
		up := filepath.Dir(d)
		if up == d || !t.inside(up) {
			return
		}
		d = up
	}
}

// addFile watches a manifest path's file and its directory.
func (t *targets) addFile(abs string) {
	t.files[abs]++
	t.wantDir(filepath.Dir(abs))
}

// dropFile takes back addFile.
func (t *targets) dropFile(abs string) {
	if n := t.files[abs]; n > 1 {
		t.files[abs] = n - 1
	} else {
		delete(t.files, abs)
	}
	t.unwantDir(filepath.Dir(abs))
}

// refresh makes the manifest paths those of the manifest just read: a new
// path is resolved (resolve: "" refused) and watched, a path no longer
// listed is dropped. It returns how many new paths were refused.
func (t *targets) refresh(paths iter.Seq[string], resolve func(string) string) (refused int) {
	t.gen++
	for p := range paths {
		p, _, _ = strings.Cut(p, "#")
		if tg := t.paths[p]; tg != nil {
			tg.gen = t.gen
			continue
		}
		tg := &target{abs: resolve(p), gen: t.gen}
		t.paths[p] = tg
		if tg.abs == "" {
			refused++
			continue
		}
		t.addFile(tg.abs)
	}
	for p, tg := range t.paths {
		if tg.gen != t.gen {
			delete(t.paths, p)
			if tg.abs != "" {
				t.dropFile(tg.abs)
			}
		}
	}
	return refused
}

// reresolve resolves again every path refused and every path whose file is
// below a directory that changed (under: it may have been replaced by a
// symlink), and watches where it resolves now. It returns the files that
// were below one.
func (t *targets) reresolve(under func(string) bool, resolve func(string) string) (below []string) {
	for p, tg := range t.paths {
		if tg.abs != "" {
			if !under(tg.abs) {
				continue
			}
			below = append(below, tg.abs)
		}
		abs := resolve(p)
		if abs == tg.abs {
			continue
		}
		if tg.abs != "" {
			t.dropFile(tg.abs)
		}
		if tg.abs = abs; abs != "" {
			t.addFile(abs)
		}
	}
	return below
}

// takeChanges returns the directories that grew into the set and those
// that shrank out of it since the last call.
func (t *targets) takeChanges() (grown, shrunk []string) {
	for d := range t.grown {
		grown = append(grown, d)
	}
	for d := range t.shrunk {
		shrunk = append(shrunk, d)
	}
	clear(t.grown)
	clear(t.shrunk)
	return grown, shrunk
}

// underAny returns a test of whether a path is one of the directories
// changed or below one. A burst changes a directory or a few (a skill
// removed): each path is compared with their prefixes, 50,000 in well
// under a millisecond. Past a few, the answers for each directory up to
// the root are remembered instead (rm -rf of thousands of skills).
func (t *targets) underAny(changed map[string]bool) func(path string) bool {
	switch {
	case len(changed) == 0:
		return func(string) bool { return false }
	case len(changed) <= 8:
		dirs := slices.Collect(maps.Keys(changed))
		return func(p string) bool {
			for _, d := range dirs {
				if strings.HasPrefix(p, d) && (len(p) == len(d) || p[len(d)] == filepath.Separator) {
					return true
				}
			}
			return false
		}
	}
	memo := map[string]bool{}
	var dirUnder func(d string) bool
	dirUnder = func(d string) bool {
		if !t.inside(d) {
			return false
		}
		if v, ok := memo[d]; ok {
			return v
		}
		v := changed[d]
		if up := filepath.Dir(d); !v && d != t.root && up != d {
			v = dirUnder(up)
		}
		memo[d] = v
		return v
	}
	return func(p string) bool { return changed[p] || dirUnder(filepath.Dir(p)) }
}
