package watch

import (
	"errors"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/manifest"
)

// buildTargets derives the watch set from scratch: the fixed files and
// directories, the manifest's paths, the directories a command may move to.
// Manifest paths that resolve outside the root are never watched. cache
// holds earlier resolutions still good (a manifest of 10,000 artifacts
// costs 10,000 lstats to resolve); a refused one is resolved again.
func (w *watcher) buildTargets(cache map[string]*target) targets {
	p := w.paths
	t := newTargets(w.root)
	t.manifestFP, _ = stat(p.Manifest)
	for _, f := range w.fixedFiles() {
		t.files[f]++
	}
	res := manifest.NewResolver(w.root)
	refused := 0
	for _, d := range w.fixedDirs() {
		// .claude may be a symlink to somewhere else: never watch there.
		if _, _, err := res.Resolve(w.rel(d)); err != nil {
			refused++
			continue
		}
		t.wantDir(d)
	}
	refused += t.refresh(w.readManifestPaths(), func(path string) string {
		if c := cache[path]; c != nil && c.abs != "" {
			return c.abs
		}
		return resolveIn(res, path)
	})
	for d := range w.moveDirs {
		t.wantDir(d)
	}
	if refused > 0 {
		w.log.Debug("paths outside the root are not watched", "refused", refused)
	}
	t.takeChanges() // all new: a full rearm arms them
	return t
}

// fixedFiles are the files watched whatever the manifest holds.
func (w *watcher) fixedFiles() []string {
	p := w.paths
	return []string{p.Log, p.Manifest, p.Decisions, p.Pitfalls}
}

// fixedDirs are the directories watched whatever the manifest holds.
func (w *watcher) fixedDirs() []string {
	p := w.paths
	return []string{p.Memory, inbox.Path(w.root), filepath.Dir(p.Decisions), p.Commands, p.Skills}
}

// resolveIn resolves a manifest path to the file it names, "" when it is
// refused (outside the root, through a symlink).
func resolveIn(res *manifest.Resolver, path string) string {
	abs, _, err := res.Resolve(path)
	if err != nil {
		return ""
	}
	return abs
}

// refreshTargets brings the manifest paths in line with the manifest on
// disk, changing only what its paths changed. After the watcher's own
// pass the engine still holds that manifest (no 14 MB read at 50,000
// artifacts); after another writer's, the file is read.
func (w *watcher) refreshTargets() {
	t := &w.targets
	t.manifestFP, _ = stat(w.paths.Manifest)
	paths, ok := iter.Seq[string](nil), false
	if w.eng != nil {
		paths, ok = w.eng.ManifestPaths()
	}
	if !ok {
		paths = w.readManifestPaths()
	}
	res := manifest.NewResolver(w.root)
	if refused := t.refresh(paths, func(path string) string { return resolveIn(res, path) }); refused > 0 {
		w.log.Debug("paths outside the root are not watched", "refused", refused)
	}
}

// readManifestPaths reads the path of every manifest entry (the manifest
// codec's byte scan, not encoding/json): none when the manifest is missing
// or unreadable, and then the fixed directories only are watched.
func (w *watcher) readManifestPaths() iter.Seq[string] {
	m, _, err := manifest.ReadManifest(w.paths.Manifest)
	if err != nil {
		w.log.Debug("manifest unreadable; watching the fixed directories only", "err", err)
		return func(func(string) bool) {}
	}
	return func(yield func(string) bool) {
		for i := range m.Entries {
			if !yield(m.Entries[i].Path) {
				return
			}
		}
	}
}

// rearm makes the armed watches match the targets: it adds missing
// directories, replaces watches whose directory was re-created (another
// inode at the same path), and drops watches on directories that are gone
// or no longer wanted. With recompute, the targets are re-read from the
// manifest when it changed.
//
// thorough also stats the directories that are armed and listed, to find
// one re-created without an event (after an overflow, or a directory the
// limit left unwatched); otherwise the directory events did that already.
func (w *watcher) rearm(recompute, thorough bool) {
	if thorough {
		// Events may have been lost: list the commands' directories again.
		w.moveDirs = w.moveDirsUnder(filepath.Dir(w.paths.Commands), nil)
		w.targets.valid = false
	}
	switch {
	case !w.targets.valid:
		w.targets = w.buildTargets(w.targets.paths)
	case recompute && w.manifestChanged():
		w.refreshTargets()
	}
	if w.fsw == nil {
		w.state.Watches = 0
		return
	}
	if w.targets.armed && !thorough {
		// Armed for this set already: only what grew into it or shrank
		// out of it since. Listing and sorting 25,000 directories after
		// every pass at 50,000 artifacts kept the watcher from its next
		// timer for 70–90 ms.
		w.armChanges()
		return
	}
	w.targets.takeChanges()
	listed := map[string]bool{}
	for _, p := range w.fsw.WatchList() {
		listed[p] = true
	}
	dirs := make([]string, 0, len(w.targets.dirs))
	for d := range w.targets.dirs {
		dirs = append(dirs, d)
	}
	w.arm(dirs, listed, thorough)
	for d := range w.armed {
		if w.targets.dirs[d] == 0 {
			_ = w.fsw.Remove(d)
			delete(w.armed, d)
		}
	}
	w.targets.armed = w.limitErr == nil
}

// armChanges arms the directories that grew into the watch set and drops
// the watches of those that shrank out of it.
func (w *watcher) armChanges() {
	grown, shrunk := w.targets.takeChanges()
	for _, d := range shrunk {
		if _, ok := w.armed[d]; ok {
			_ = w.fsw.Remove(d)
			delete(w.armed, d)
		}
	}
	if len(grown) > 0 {
		w.arm(grown, nil, false)
	}
	w.state.Watches = len(w.armed)
	w.targets.armed = w.limitErr == nil
}

// rearmUnder re-arms the target directories at or below dir, after dir
// itself appeared, disappeared or moved. It is cheap enough to run for
// every such event of a burst (rm -rf of thousands of skill directories).
func (w *watcher) rearmUnder(dir string) {
	if w.fsw == nil {
		return
	}
	var dirs []string
	prefix := dir + string(filepath.Separator)
	for d := range w.targets.dirs {
		if d == dir || strings.HasPrefix(d, prefix) {
			dirs = append(dirs, d)
		}
	}
	w.arm(dirs, nil, true)
}

// invalidate resolves again every manifest path at or below a directory
// that changed (and every refused one): the directory may have been
// replaced by a symlink. When a fixed directory (or one above it) changed,
// the whole set is rebuilt at the next rearm, with the other resolutions
// kept. It returns the watched files that were below a changed directory
// (one walk over the paths: a burst's pass touches them, absorbChanged).
func (w *watcher) invalidate(changed map[string]bool) (below []string) {
	if len(changed) == 0 {
		return nil
	}
	t := &w.targets
	under := t.underAny(changed)
	for _, f := range w.fixedFiles() {
		if t.files[f] > 0 && under(f) {
			below = append(below, f)
		}
	}
	if t.valid {
		for _, d := range w.fixedDirs() {
			if under(d) {
				t.valid = false
				break
			}
		}
	}
	if t.valid {
		res := manifest.NewResolver(w.root)
		return append(below, t.reresolve(under, func(path string) string { return resolveIn(res, path) })...)
	}
	for path, tg := range t.paths {
		switch {
		case tg.abs == "":
			delete(t.paths, path)
		case under(tg.abs):
			below = append(below, tg.abs)
			delete(t.paths, path)
		}
	}
	return below
}

// arm checks each directory and (re-)adds its watch when needed. listed is
// fsnotify's watch list; nil means unknown, and Add is called again for
// every existing directory (Add on a watched path is a no-op, and it
// restores a watch fsnotify dropped when the directory moved away and
// back with the same inode). Without thorough, a directory armed and
// listed is trusted without a stat.
func (w *watcher) arm(dirs []string, listed map[string]bool, thorough bool) {
	// Shallow first: the root chain and the fixed directories get the
	// watches when the limit is near.
	sort.Slice(dirs, func(i, j int) bool {
		di, dj := strings.Count(dirs[i], string(filepath.Separator)), strings.Count(dirs[j], string(filepath.Separator))
		if di != dj {
			return di < dj
		}
		return dirs[i] < dirs[j]
	})
	var limitErr error
	missing := 0
	for _, d := range dirs {
		cur, armed := w.armed[d]
		if armed && !thorough && listed[d] {
			continue
		}
		id, ok := dirID(d)
		if !ok {
			if armed {
				_ = w.fsw.Remove(d) // the kernel may have dropped it already
				delete(w.armed, d)
			}
			continue
		}
		if armed && cur == id && listed != nil && listed[d] {
			continue
		}
		if armed && cur != id {
			_ = w.fsw.Remove(d) // a stale watch on the old inode
		}
		delete(w.armed, d)
		if err := w.add(d); err != nil {
			if isLimit(err) {
				limitErr = err
				missing++
				continue
			}
			if !errors.Is(err, os.ErrNotExist) {
				w.log.Warn("cannot watch directory", "dir", d, "err", err)
			}
			continue
		}
		w.armed[d] = id
	}
	w.state.Watches = len(w.armed)
	if listed != nil || limitErr != nil {
		// A full pass knows whether the limit still bites; a partial one
		// only that it does.
		w.setLimit(limitErr, missing)
	}
}

func (w *watcher) manifestChanged() bool {
	fp, _ := stat(w.paths.Manifest)
	return fp != w.targets.manifestFP
}

// setLimit records whether the inotify limits keep directories unwatched,
// says so once in the log, and turns the periodic rescan on or off.
func (w *watcher) setLimit(err error, missing int) {
	was := w.limitErr != nil
	w.limitErr = err
	w.state.WatchLimitHit = err != nil
	w.state.Unwatched = missing
	switch {
	case err != nil && !was:
		w.state.LimitError = err.Error()
		w.log.Error("inotify limit reached: some directories are not watched; falling back to a full reconcile every watch.rescan",
			"err", err, "unwatched_dirs", missing, "watched_dirs", len(w.armed), "rescan", w.set.rescan.String(),
			"fix", "raise fs.inotify.max_user_watches / fs.inotify.max_user_instances (sysctl)")
	case err == nil && was:
		w.state.LimitError = ""
		w.log.Info("every directory is watched again; periodic rescans stop", "watched_dirs", len(w.armed))
	}
	if w.timer != nil { // not before run set things up
		w.updateTicker()
	}
}

// isLimit reports an inotify resource limit: ENOSPC from inotify_add_watch
// (max_user_watches) or EMFILE (max_user_instances).
func isLimit(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EMFILE)
}

// onEvent decides whether an fsnotify event belongs to the current burst.
func (w *watcher) onEvent(ev fsnotify.Event) {
	w.noteArrival(ev)
	matters := w.matters(ev)
	name := filepath.Clean(ev.Name)
	w.noteMoveDir(ev, name) // after matters: a directory made is no reason for a pass
	if !matters {
		return
	}
	w.events++
	if w.targets.dirs[name] > 0 {
		// A watched directory (or one on the way to it) appeared,
		// disappeared or moved: re-arm at once so files created in a new
		// directory are seen, and reconcile.
		w.rearmUnder(name)
		if w.changed == nil {
			w.changed = map[string]bool{}
		}
		w.changed[name] = true // re-resolve the paths below it before reconciling
		w.markPending("dir "+ev.Op.String()+" "+w.rel(name), false)
		return
	}
	if inbox.IsItem(w.root, name) {
		// A writer queued its input (an item appears by rename): drain it.
		w.markPending("inbox "+filepath.Base(name), false)
		return
	}
	delete(w.own, name) // not our own write (matters compared it)
	if w.touched == nil {
		w.touched = map[string]bool{}
	}
	rel := w.rel(name)
	w.touched[rel] = true
	switch {
	case ev.Has(fsnotify.Create):
		delete(w.goneAt, rel) // back
	case ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename):
		if _, ok := w.goneAt[rel]; !ok {
			if w.goneAt == nil {
				w.goneAt = map[string]time.Time{}
			}
			w.goneAt[rel] = time.Now()
		}
	}
	w.markPending(ev.Op.String()+" "+w.rel(name), false)
}

// maxArrivals bounds the arrivals a burst keeps (a checkout of thousands of
// commands): past it, a missing artifact's move is looked for among the
// first ones only.
const maxArrivals = 4096

// noteArrival remembers a file or directory that appeared under the
// commands or skills directories (created, or moved there): where a missing
// artifact may have moved (engine.Pass.Arrived). It starts no pass itself.
func (w *watcher) noteArrival(ev fsnotify.Event) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Rename) || len(w.arrived) >= maxArrivals {
		return
	}
	rel := w.rel(filepath.Clean(ev.Name))
	if !strings.HasPrefix(rel, ".claude/commands/") && !strings.HasPrefix(rel, ".claude/skills/") || ignoredName(filepath.Base(rel)) {
		return
	}
	if w.arrived == nil {
		w.arrived = map[string]bool{}
	}
	w.arrived[rel] = true
}

// maxMoveDirs bounds the directories below .claude/commands watched for
// moved commands (moveDirs), as deep as a full pass looks for them
// (heal.MaxMoveDepth).
const maxMoveDirs = 1024

// moveDirsUnder lists the real directories at and below dir, a directory
// below .claude/commands (or that directory itself), into into (a new set
// when nil), up to maxMoveDirs in all and heal.MaxMoveDepth below the commands
// directory. Symbolic links are not followed, and a commands directory
// reached through one (.claude a link out of the repository) is not
// listed at all.
func (w *watcher) moveDirsUnder(dir string, into map[string]bool) map[string]bool {
	if into == nil {
		into = map[string]bool{}
	}
	top := filepath.Dir(w.paths.Commands)
	if _, _, err := manifest.NewResolver(w.root).Resolve(w.rel(dir)); err != nil {
		return into
	}
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil // unreadable or a file: nothing to watch
		}
		if len(into) >= maxMoveDirs {
			return fs.SkipAll
		}
		if r, err := filepath.Rel(top, p); err != nil || strings.Count(filepath.ToSlash(r), "/") >= heal.MaxMoveDepth {
			return fs.SkipDir
		}
		into[p] = true
		return nil
	})
	return into
}

// noteMoveDir arms a directory that appeared below .claude/commands (made,
// or moved there with what it holds), so that a command moved into it
// later is seen arriving.
func (w *watcher) noteMoveDir(ev fsnotify.Event, name string) {
	if !ev.Has(fsnotify.Create) && !ev.Has(fsnotify.Rename) || w.moveDirs[name] || len(w.moveDirs) >= maxMoveDirs {
		return
	}
	top := filepath.Dir(w.paths.Commands)
	if name != top && !strings.HasPrefix(name, top+string(filepath.Separator)) || ignoredName(filepath.Base(name)) {
		return
	}
	if fi, err := os.Lstat(name); err != nil || !fi.IsDir() {
		return
	}
	added := w.moveDirsUnder(name, map[string]bool{})
	if w.moveDirs == nil {
		w.moveDirs = map[string]bool{}
	}
	var dirs []string
	for d := range added {
		if len(w.moveDirs) >= maxMoveDirs {
			break
		}
		w.moveDirs[d] = true
		if w.targets.valid {
			w.targets.wantDir(d)
		}
		dirs = append(dirs, d)
	}
	if w.fsw != nil {
		w.arm(dirs, nil, false)
		for _, d := range dirs {
			delete(w.targets.grown, d) // armed already
		}
	}
}

// matters reports whether onEvent acts on ev: a watched directory that
// appeared, went or moved; an inbox item queued; a change to an input of
// reconcile that is not reconcile's own write. Everything else in a watched
// directory is not: the lock and owner files every pass creates and
// removes, the watcher's state file, temporary files, a drain's removals,
// attribute changes. It changes nothing (Settle's cancelOnEvent asks it on
// another goroutine while the loop waits).
func (w *watcher) matters(ev fsnotify.Event) bool {
	name := filepath.Clean(ev.Name)
	switch {
	case ignoredName(filepath.Base(name)):
		return false
	case w.targets.dirs[name] > 0:
		return ev.Has(fsnotify.Create) || ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	case inbox.IsItem(w.root, name):
		// An item appears by rename; the drain's own removals call for
		// nothing.
		return ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) && fileExists(name)
	case w.targets.files[name] == 0, ev.Op == fsnotify.Chmod:
		// Attributes only: the content reconcile compares is unchanged.
		return false
	}
	if fp, ok := w.own[name]; ok {
		if cur, err := stat(name); err == nil && cur == fp {
			return false // our own write
		}
	}
	return true
}

func fileExists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// recordOwn remembers the fingerprints of the files reconcile just wrote,
// so the events of those writes do not trigger another reconcile.
func (w *watcher) recordOwn(paths []string) {
	for _, p := range paths {
		p = filepath.Clean(p)
		if fp, err := stat(p); err == nil {
			w.own[p] = fp
		} else {
			delete(w.own, p)
		}
	}
}

// inside reports whether p is the root or below it.
func (w *watcher) inside(p string) bool {
	return p == w.root || strings.HasPrefix(p, w.root+string(filepath.Separator))
}

func (w *watcher) rel(p string) string {
	if r, err := filepath.Rel(w.root, p); err == nil {
		return filepath.ToSlash(r)
	}
	return p
}

// ignoredName reports files that never call for a reconcile: temp files of
// atomic writes, lock directories, the watcher's own pid and state files,
// backups of corrupt files.
func ignoredName(base string) bool {
	switch {
	case strings.Contains(base, ".tmp-"),
		strings.HasSuffix(base, ".lock"),
		strings.Contains(base, ".lock.stale-"),
		base == pidFile, base == stateFile,
		strings.Contains(base, ".corrupt-"):
		return true
	}
	return false
}

// fingerprint identifies one version of a file cheaply.
type fingerprint struct {
	size  int64
	mtime int64
	id    fileID
}

func stat(p string) (fingerprint, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return fingerprint{}, err
	}
	return fingerprint{size: fi.Size(), mtime: fi.ModTime().UnixNano(), id: idOf(fi)}, nil
}

// dirID returns the identity of the directory at p.
func dirID(p string) (fileID, bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.IsDir() {
		return fileID{}, false
	}
	return idOf(fi), true
}
