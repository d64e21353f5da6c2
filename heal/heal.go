// Package heal owns reconcile (DESIGN.md §4): it compares the manifest of
// rendered artifacts with the files on disk and turns what people did into
// learning signal — a deleted artifact or a lost knowledge anchor deprecates
// its observation with the ×0.3 penalty, an edit only updates the recorded
// hash, an unchanged file is counted — and it self-heals knowledge entries
// whose render crashed between the knowledge write and the log write.
//
// A missing artifact is a deletion only when the person removed it: in a
// git work tree, one the checked-out commit merely does not have (a branch
// switch, rebase, stash) is absent and kept (git.go decides from the index,
// trees and a bounded history walk). A penalty keeps the manifest entry with
// a record of what it changed, so that the artifact coming back reverses it
// exactly (Plan), or a person does (Undo, `learnwatch restore`).
//
// Plan decides from the loaded state without I/O; Reconcile loads the state
// under the lock, plans, and writes the log, then the manifest, atomically.
// Prepare does the same up to the writes, staged under temporary names, and
// leaves them to a later Commit that checks nothing it read has changed
// (the watcher's pass at the end of a grace window, prepared before it).
package heal

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/maphash"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/parallel"
	"github.com/learnwatch/learnwatch/safefs"
	"github.com/learnwatch/learnwatch/staleness"
)

// Options configure a reconcile run.
type Options struct {
	Now         time.Time     // zero: time.Now()
	LockTimeout time.Duration // how long to wait for .memory/.learning.lock
	// Render also renders ready observations after reconciling (the
	// watcher's watch.render).
	Render bool
	// RenderOptions are passed to render when Render is set.
	Hold func(o *manifest.Observation) bool
	// Staleness, when set, runs the staleness pass with these settings on
	// the loaded log (under the lock): the knowledge files and the log's
	// observations are checked against HEAD (the working tree outside
	// git), stale observations are marked in the log (reconcile writes
	// it) and Result.Stale counts the stale references.
	Staleness *config.Staleness
	// Confirm, when non-nil, holds the artifacts (keys as in
	// Result.Pending) that may be called deleted: any other missing one is
	// left alone and listed in Result.Pending. The watcher uses it for its
	// grace window; nil means every deletion is confirmed at once.
	Confirm map[string]bool
	// MarkTracked lets the staleness pass write its marks (mayBeStale,
	// staleReason, needsReview) into a learning log that git tracks. Off,
	// such a log keeps its marks as they were: marks computed on whatever
	// is checked out must not leave a tracked file modified (a checkout or
	// rebase would then refuse to run). The explicit reconcile command sets
	// it; hooks and the watcher do not.
	MarkTracked bool
	// Feedback records the learning signals (res.Events) in feedback.jsonl
	// under the lock, exactly once across a crash (journal/pass.go); kept
	// events only when Session is set, at most once per UTC day.
	Feedback bool
	Session  bool
	// StatCache, when not "", uses the stat cache (.memory/.cache/
	// stat.cache, package statcache) in this engine.check_stat mode
	// ("default" or "minimal"): artifacts whose stat it vouches for are
	// not read. It never changes a result.
	StatCache string
	// Cache, when set, is the stat cache to use (a long-running caller's,
	// kept in memory across passes); it overrides StatCache.
	Cache *statcache.Cache
	// Touched, when non-nil, promises that no artifact file outside it
	// (paths relative to the root, slash-separated) changed since the last
	// completed pass with Cache: those the cache knows are not even
	// stat'ed. The watcher sets it from the events of a burst; nil stats
	// every artifact.
	Touched map[string]bool
	// Arrived, with Touched, are the paths (relative, slash-separated)
	// created under .claude/commands and .claude/skills since the
	// watcher's last pass that left nothing pending: the only files a
	// missing artifact may have moved to (moved.go). Without Touched the
	// pass lists those directories instead.
	Arrived map[string]bool
	// Known are lstats the caller took moments before the pass, by
	// absolute path (the engine's replay check stats every input of the
	// last pass): the pass takes them instead of stat'ing those paths
	// again, to resolve them and for the stat cache. Only regular files
	// and directories are taken. The pass empties it once it has loaded
	// what it looks at (at 100,000 observations the stats of every input
	// of the last pass are 4 MB): the caller's map goes with it.
	Known *statcache.Known
	// Warm, when set, carries the parsed state from one pass to the next
	// in a long-running caller (the watcher's engine): a Touched pass
	// takes the log, manifest, usage and knowledge files from it while
	// their stats vouch for them (warm.go), and every pass leaves its
	// state in it (a failed pass forgets it).
	Warm *Warm
	// DeferCache ends the pass without writing the stat cache
	// (statcache.Cache.EndPass); the caller flushes it later.
	DeferCache bool
	// Lean leaves out what only a pass that may be replayed or records
	// kept artifacts needs: Result.Inputs is not listed and unchanged
	// artifacts give no kept events (they are still counted and listed in
	// Result.Kept). The watcher's passes are lean.
	Lean bool
	// Replaced, when set, receives the files the pass's commits replaced
	// instead of their being removed when the pass ends: the caller
	// releases them later (the watcher, when idle).
	Replaced *Replaced

	// keepWarm lends the pass a copy of Warm, which stays as it is until
	// the pass is committed (Prepare: a prepared pass may be dropped).
	keepWarm bool
}

// Result counts what a reconcile found and did.
type Result struct {
	Deletions int `json:"deletions"`
	Edits     int `json:"edits"`
	Unchanged int `json:"unchanged"`
	Healed    int `json:"healed"`
	Refused   int `json:"refused"`
	Corrupt   int `json:"corrupt"`
	Dropped   int `json:"dropped"`
	Stale     int `json:"stale"`
	Errors    int `json:"errors"`
	// At is the pass's time (Options.Now): the time its penalties carry
	// (manifest.Deletion.At), to the second.
	At time.Time `json:"-"`
	// Rebuilt counts created observations registered again because the
	// manifest had lost them (absent or corrupt manifest).
	Rebuilt int `json:"rebuilt"`
	// Absent counts artifacts missing because of git: the checked-out
	// commit does not have them (another branch does). They are kept.
	Absent int `json:"absent"`
	// Restored counts penalised artifacts that came back: the penalty was
	// reversed.
	Restored int `json:"restored"`
	// CheckedOut counts artifacts present with another line's content
	// because of git (a checkout, rebase or stash; gitView.checkedOut):
	// not an edit, their recorded hash is kept.
	CheckedOut int `json:"checked_out"`
	// Moved counts artifacts a person moved or renamed (moved.go): the
	// manifest entry follows the file, no penalty.
	Moved int `json:"moved"`
	// MovedTo lists them: "obs_x: old/path.md -> new/path.md".
	MovedTo []string `json:"moved_to,omitempty"`
	// Foreign counts entries written in another checkout (an absolute
	// path outside the root, devflow's: the repository moved or cloned
	// elsewhere) whose artifact was found here, with no learning signal:
	// rebased, their path is now relative and their hash this
	// checkout's, unless the manifest is tracked and the pass may not
	// write it (State.KeepForeign: then they are left as they are). One
	// whose artifact is not here is counted under Absent.
	Foreign int `json:"foreign"`

	Deleted    []string `json:"deleted,omitempty"`
	Edited     []string `json:"edited,omitempty"`
	HealedIDs  []string `json:"healed_ids,omitempty"`
	RebuiltIDs []string `json:"rebuilt_ids,omitempty"`
	AbsentIDs  []string `json:"absent_ids,omitempty"`
	// RestoredIDs are the observations whose penalty was reversed.
	RestoredIDs []string `json:"restored_ids,omitempty"`
	// CheckedOutIDs are the observations counted under CheckedOut.
	CheckedOutIDs []string `json:"checked_out_ids,omitempty"`
	// Pending are the missing artifacts not yet called deleted because
	// Options.Confirm did not list them: "path" or "path#ADR-NNN".
	Pending []string `json:"pending,omitempty"`
	// Kept are the observations whose artifacts were found unchanged.
	Kept         []string `json:"-"`
	RefusedPaths []string `json:"refused_paths,omitempty"`
	// Problems are human-readable notes (refused paths, unreadable files,
	// a corrupt manifest that was set aside).
	Problems []string `json:"problems,omitempty"`
	Rendered []string `json:"rendered,omitempty"`
	// Reanchored lists the knowledge entries a merge renumbered and that
	// followed their Source marker ("obs_x: ADR-002 -> ADR-003", reanchor.go).
	Reanchored []string `json:"reanchored,omitempty"`
	// Log is the learning log as this reconcile left it (nil when there is
	// none), so a caller that goes on to read it (the session-start index)
	// does not parse the file again.
	Log *manifest.Log `json:"-"`
	// Events are the learning signals of this reconcile (DESIGN.md §6):
	// deleted (harmful), edited (neutral) and kept (helpful) per artifact,
	// targeting the ADR/PF id for knowledge entries and the observation id
	// otherwise. The caller appends them to the feedback journal.
	Events []learn.Event `json:"-"`
	// Wrote lists the absolute paths this run wrote.
	Wrote []string `json:"-"`
	// CacheErr is set when the stat cache could not be written: nothing
	// is lost (it is rebuilt), but a full disk deserves a warning.
	CacheErr error `json:"-"`
	// StaleCacheErr is set when the staleness cache could not be written
	// (disposable too: the next pass computes it again).
	StaleCacheErr error `json:"-"`
	// Inbox is what the drain of the inbox did before the pass.
	Inbox inbox.Result `json:"inbox,omitzero"`
	// Recorded counts the feedback events this pass appended
	// (Options.Feedback).
	Recorded int `json:"-"`
	// Inputs are the absolute paths of the files this pass read or looked
	// up (the log, the manifest, the usage file, the knowledge files and
	// every artifact, present or missing); StaleInputs what the staleness
	// pass depended on besides those. GitAsked is set when a missing or
	// returned artifact made the pass ask git (absent or deleted?). They
	// tell a caller, from stats alone, whether another pass could report
	// anything else (the engine's pass replay).
	Inputs      []string         `json:"-"`
	StaleInputs staleness.Inputs `json:"-"`
	GitAsked    bool             `json:"-"`
	// Git is what git's answers depended on, when GitAsked.
	Git GitInputs `json:"-"`
	// Withheld is set when the pass left a change for a pass a person
	// asks for (Options.MarkTracked off): staleness marks of a log git
	// tracks, or the entries another checkout wrote into a manifest git
	// tracks. A pass with MarkTracked would have written them.
	Withheld bool `json:"-"`
}

// State is what reconcile reads.
type State struct {
	Root     string
	Log      *manifest.Log
	Manifest *manifest.Manifest
	// ManifestExists is false when there was no manifest file;
	// ManifestErr is set when it did not parse.
	ManifestExists bool
	ManifestErr    error
	Usage          *manifest.Usage
	// UsageErr is set when the usage file did not parse: it is rebuilt
	// (the corrupt one kept as a backup).
	UsageErr error
	// Knowledge holds the knowledge files by path relative to root, nil
	// content when the file is absent.
	Knowledge map[string][]byte
	// Files holds the content of each manifest path that could be read
	// (relative path → content); Missing the ones that do not exist;
	// Unreadable the ones that exist but could not be read; Refused the
	// ones outside the root.
	Files      map[string][]byte
	Rel        map[string]string // manifest path → relative path
	Missing    map[string]bool
	Unreadable map[string]error
	Refused    map[string]error
	// Foreign holds the manifest paths written in another checkout that
	// resolve here once rebased (manifest.ForeignRel).
	Foreign map[string]bool
	// Sections are the parsed sections of each knowledge file.
	Sections map[string][]markdown.Section
	// Absent holds the missing artifacts ("path" or "path#ADR-NNN") that
	// git took away (see gitView.deleted); CheckedOut the present ones
	// whose other content git checked out (gitView.checkedOut);
	// BackByCheckout the penalised ones present again only because HEAD
	// moved to another line. Head is the checked-out commit when there was
	// anything to decide.
	Absent map[string]bool
	// Moved holds, per missing artifact a person moved (moved.go), the
	// file it moved to (relative path) and its content.
	Moved          map[string]movedFile
	CheckedOut     map[string]bool
	BackByCheckout map[string]bool
	Head           string
	// GitAsked is set when askGit opened the repository; GitUnreadable
	// says why the repository holding the root could not be read (its
	// missing artifacts were then called absent, not deleted).
	GitAsked      bool
	GitUnreadable string
	// Git is what the answers of askGit depended on (GitInputs).
	Git GitInputs
	// Confirm is Options.Confirm.
	Confirm map[string]bool
	// NoKeptEvents leaves the kept events out of Plan's result
	// (Options.Lean).
	NoKeptEvents bool
	// KeepForeign leaves the entries written in another checkout (Foreign)
	// as they are: a manifest git tracks is not rewritten by a pass the
	// person did not ask for (Options.MarkTracked off: a hook, the
	// watcher).
	KeepForeign bool
	// Verified holds the artifact files (relative paths) the stat cache
	// proved unchanged: their content was not read (Files holds an empty
	// placeholder) and every manifest entry naming them is a live,
	// anchor-less entry whose hash the cached content matches.
	Verified map[string]bool
	// vouched are the stat cache entries behind Verified.
	vouched map[string]statcache.Entry
	// sums memoises the hashes of the artifacts this pass compares with
	// the manifest, askGit then Plan (State.unchanged): by file path, and
	// "path#anchor\x00observation" for a section.
	sums map[string]*fileSums
	// lost are the created observations with an artifact path that no
	// manifest entry names, as loading found them (lostKnown).
	lost      []*manifest.Observation
	lostKnown bool
	// prior are the notes of the pass that left a warm state, one per
	// manifest entry in order (nil on a pass that read the files): what
	// is quiet there is decided without looking at it again. notes are
	// this pass's, set by Plan, for the next one.
	prior, notes []entryNote
}

// entryNote is what Plan found of one manifest entry: the relative path
// its artifact resolved to ("" when it did not) and whether the outcome
// holds as long as that file is not touched (quiet). rescope un-quiets
// the entries of the touched files.
type entryNote struct {
	rel   string
	quiet quietness
}

// quietness says why an entry's outcome cannot change until its file is
// touched.
type quietness uint8

const (
	notQuiet quietness = iota
	// quietUnchanged: a live whole-file artifact whose content matches its
	// hash (counted unchanged).
	quietUnchanged
	// quietGone: a penalised whole-file artifact that is still missing
	// (its penalty stands).
	quietGone
)

// priorNotes returns the warm state's notes when they still describe the
// manifest's entries one for one (nil otherwise).
func (st *State) priorNotes() []entryNote {
	if len(st.prior) != len(st.Manifest.Entries) {
		return nil
	}
	return st.prior
}

// touchedTest returns a test of whether a relative path is in touched:
// the few paths of an event compared as strings (a string of another
// length is told apart without reading it), a burst's through the map.
func touchedTest(touched map[string]bool) func(rel string) bool {
	if len(touched) > 8 {
		return func(rel string) bool { return touched[rel] }
	}
	few := make([]string, 0, len(touched))
	for rel, ok := range touched {
		if ok {
			few = append(few, rel)
		}
	}
	return func(rel string) bool { return slices.Contains(few, rel) }
}

// registered lists the observations the manifest has an entry for.
func (st *State) registered() map[string]bool {
	out := make(map[string]bool, len(st.Manifest.Entries))
	for _, e := range st.Manifest.Entries {
		out[e.ObservationID] = true
	}
	return out
}

// lostStill are the lost observations a warm state lent (st.lost) that
// still are: created, with an artifact path, and no manifest entry.
func (st *State) lostStill() []*manifest.Observation {
	if len(st.lost) == 0 {
		return nil
	}
	registered := st.registered()
	var out []*manifest.Observation
	for _, o := range st.lost {
		if o.Status == manifest.Created && o.ArtifactPath != "" && !registered[o.ID] {
			out = append(out, o)
		}
	}
	return out
}

// rescope forgets what st (lent by a warm state) holds for the touched
// files and for the manifest paths it never resolved, and returns the
// manifest entries naming them: the pass looks at those again.
func rescope(st *State, touched map[string]bool) []manifest.Entry {
	redo := map[string]bool{}
	var scope []manifest.Entry
	prior := st.priorNotes()
	if prior != nil {
		// The notes hold each entry's resolved path: no lookup per entry.
		// Entries of one path have one note path, so the scope is taken
		// here, in the manifest's order.
		isTouched := touchedTest(touched)
		for i, e := range st.Manifest.Entries {
			if rel := prior[i].rel; rel == "" || isTouched(rel) {
				redo[e.Path] = true
				prior[i].quiet = notQuiet
				scope = append(scope, e)
			}
		}
	} else {
		for _, e := range st.Manifest.Entries {
			if rel, ok := st.Rel[e.Path]; !ok || touched[rel] {
				redo[e.Path] = true
			}
		}
	}
	for _, o := range st.lost {
		// A lost observation's path is resolved apart from the manifest's.
		p, _, _ := strings.Cut(o.ArtifactPath, "#")
		if rel, ok := st.Rel[p]; ok && touched[rel] {
			delete(st.Rel, p)
		}
	}
	for rel := range touched {
		delete(st.Files, rel)
		delete(st.Verified, rel)
		delete(st.vouched, rel)
		delete(st.Missing, rel)
		delete(st.Unreadable, rel)
	}
	if len(redo) == 0 {
		return nil
	}
	if prior == nil {
		for _, e := range st.Manifest.Entries {
			if redo[e.Path] {
				scope = append(scope, e)
			}
		}
	}
	for path := range redo {
		if rel, ok := st.Rel[path]; ok {
			delete(st.Files, rel)
			delete(st.Verified, rel)
			delete(st.vouched, rel)
			delete(st.Missing, rel)
			delete(st.Unreadable, rel)
		}
		delete(st.Rel, path)
		delete(st.Refused, path)
	}
	return scope
}

// Load reads everything reconcile needs. Manifest paths outside the root
// are never opened.
func Load(root string) (*State, error) { return LoadWith(root, nil) }

// trustable lists, per manifest path, whether the stat cache may stand in
// for reading it (every entry naming it is live and anchor-less: only its
// hash is compared) and whether an entry stores a legacy hash.
func trustable(entries []manifest.Entry) (trust, legacy map[string]bool) {
	trust, legacy = make(map[string]bool, len(entries)), map[string]bool{}
	for _, e := range entries {
		ok, seen := trust[e.Path]
		trust[e.Path] = (ok || !seen) && e.AnchorID == "" && e.Deleted == nil
		if manifest.IsLegacyHash(e.ContentHash) {
			legacy[e.Path] = true
		}
	}
	return trust, legacy
}

// presized returns m, or a copy of it with room for n entries when it
// holds fewer.
func presized[K comparable, V any](m map[K]V, n int) map[K]V {
	if len(m) >= n {
		return m
	}
	c := make(map[K]V, n)
	maps.Copy(c, m)
	return c
}

// LoadWith is Load with a stat cache (nil: none): a trustable artifact
// whose stat the cache vouches for is not read (State.Verified); every
// artifact that is read is recorded in the cache for the next pass.
func LoadWith(root string, cache *statcache.Cache) (*State, error) {
	return loadWith(root, cache, nil)
}

// loadWith is LoadWith trusting the cache without a stat for the files
// outside touched (Options.Touched), when touched is not nil.
func loadWith(root string, cache *statcache.Cache, touched map[string]bool) (*State, error) {
	return loadWarm(root, cache, touched, nil, nil, statcache.Known{}, false)
}

// loadWarm is loadWith taking the log, manifest, usage and knowledge files
// from w when it still vouches for them (Warm.usable), and the resolved
// relative path of every untouched artifact from it.
//
// known are lstats taken moments before the pass (Options.Known): a path
// in it is not stat'ed again, neither to resolve it nor for the stat cache.
func loadWarm(root string, cache *statcache.Cache, touched, arrived map[string]bool, w *Warm, known statcache.Known, copyWarm bool) (*State, error) {
	p := manifest.PathsFor(root)
	st := &State{Root: root, Knowledge: map[string][]byte{}, Files: map[string][]byte{},
		Missing: map[string]bool{}, Unreadable: map[string]error{}, Refused: map[string]error{}, Rel: map[string]string{},
		Verified: map[string]bool{}, Foreign: map[string]bool{}}
	res := manifest.NewResolver(root)
	if known.Len() > 0 {
		res.Trust(known)
	}
	vouched := map[string]statcache.Entry{}
	// scope are the manifest entries whose files this pass looks at: all
	// of them, or, taking a warm state, those of the touched files and of
	// paths it did not resolve (the others keep what the last pass found).
	var scope []manifest.Entry
	warm := w.usable(p, touched)
	if warm {
		if copyWarm {
			vouched = w.lendCopy(st)
		} else {
			vouched = w.lend(st)
		}
		scope = rescope(st, touched)
		if cache != nil {
			cache.CarryOver(touched)
		}
	} else {
		if err := loadFiles(st, p, res); err != nil {
			return nil, err
		}
		// The knowledge files are split first, while the pass holds the
		// least: goldmark's syntax tree of 2,000 entries is a few MB
		// until split, and once the artifacts were looked at it was
		// part of a first pass's peak (100,000 observations, 20,000
		// artifacts).
		st.Sections = make(map[string][]markdown.Section, len(st.Knowledge))
		for rel, src := range st.Knowledge {
			st.Sections[rel] = markdown.Sections(src)
		}
		scope = st.Manifest.Entries
		// Sized for the entries: grown an insert at a time, the maps a
		// pass fills for every artifact were rehashed over and over
		// (about 150 of the 8,800 pages a first reconcile touched at
		// 10,000 observations, perf stat).
		st.Rel, st.Verified = presized(st.Rel, len(scope)), presized(st.Verified, len(scope))
		vouched = presized(vouched, len(scope))
	}
	var trust, legacy map[string]bool
	if cache != nil {
		trust, legacy = trustable(scope)
	}
	// hashes lists the content hashes the manifest stores per path.
	hashes := make(map[string][]string, len(trust))
	for _, e := range scope {
		if trust[e.Path] {
			hashes[e.Path] = append(hashes[e.Path], e.ContentHash)
		}
	}
	// Looking at an artifact is split in two: fetch resolves, stats and
	// reads it without touching the pass's maps or the cache's entries
	// (so that many can run at once), apply notes what it found. done
	// says whether a path's file was looked at already; inKnowledge, the
	// part of it that holds while fetches run (the knowledge files were
	// loaded before).
	inKnowledge := func(rel string) bool { _, ok := st.Knowledge[rel]; return ok }
	done := func(rel string) bool { return inKnowledge(rel) || st.Missing[rel] || st.Files[rel] != nil }
	fetch := func(p string, useCache bool, skip func(rel string) bool) (f fetched) {
		f.abs, f.rel, f.foreign, f.resolveErr = res.ResolveEntry(p)
		if f.resolveErr != nil || skip(f.rel) {
			f.skip = f.resolveErr == nil
			return f
		}
		if useCache && touched != nil && !touched[f.rel] {
			if ce, ok := cache.Untouched(f.rel); ok && verifiesAll(ce, hashes[p]) {
				f.kept, f.ce = true, ce
				return f
			}
		}
		if useCache {
			if f.before, f.statted = known.Regular(f.abs); !f.statted {
				f.before, f.statted = statcache.Lstat(f.abs)
			}
			if ce, ok := cache.Lookup(f.rel, f.before); f.statted && ok && verifiesAll(ce, hashes[p]) {
				f.kept, f.ce = true, ce
				return f
			}
		}
		f.b, f.err = safefs.ReadFile(f.abs, safefs.MaxKnowledge)
		if f.err == nil && f.statted {
			f.after, _ = statcache.Lstat(f.abs)
			// Hashed here, on every core: the cache records the sums and
			// the pass compares them with the manifest (State.unchanged).
			f.ce = statcache.EntryOf(f.before, f.b, legacy[p])
			if verifiesAll(f.ce, hashes[p]) {
				// apply lets bytes that match every entry naming the
				// path go: they go here, so that the files looked at on
				// every core are not all held until the last is read
				// (22 MB at 20,000 artifacts).
				f.b = []byte{}
			}
		}
		return f
	}
	apply := func(p string, f fetched) {
		if f.resolveErr != nil {
			st.Refused[p] = f.resolveErr
			return
		}
		st.Rel[p] = f.rel
		if f.foreign {
			if st.Foreign == nil { // a state lent by a pass that had none
				st.Foreign = map[string]bool{}
			}
			st.Foreign[p] = true
		}
		if f.skip || done(f.rel) {
			return
		}
		rel, abs, err := f.rel, f.abs, f.err
		switch {
		case f.kept:
			cache.Keep(rel, f.ce)
			st.Files[rel], st.Verified[rel] = []byte{}, true
			vouched[rel] = f.ce
		case err == nil:
			st.Files[rel] = f.b
			if f.statted {
				cache.Record(rel, f.ce, f.after)
				st.noteSums(rel, f.ce)
				if verifiesAll(f.ce, hashes[p]) {
					// Every entry naming the path matches what was just
					// hashed: the pass compares hashes, not bytes, so the
					// bytes go now (a first pass at 20k artifacts held
					// 53 MB of them to its end), as they would had the
					// stat cache vouched for the file.
					st.Files[rel], st.Verified[rel] = []byte{}, true
					vouched[rel] = f.ce
				}
			} else {
				delete(st.sums, rel) // read again, not hashed yet
			}
		case safefs.IsRefused(err):
			st.Refused[p] = err
		case errors.Is(err, os.ErrNotExist):
			st.Missing[rel] = true
		default:
			// A directory where a file should be, or a permission problem:
			// never penalise what we could not look at.
			if fi, serr := os.Stat(abs); serr == nil && fi.IsDir() {
				st.Missing[rel] = true
			} else {
				st.Unreadable[rel] = err
			}
		}
	}
	read := func(p string, useCache bool) { apply(p, fetch(p, useCache, done)) }
	// The scope's files are looked at on every core when there are many
	// (a first pass reads every artifact: syscalls and hashing, each file
	// on its own); what they found is noted in the manifest's order, so
	// the pass is the one a single goroutine makes. Only the knowledge
	// files are skipped while they run.
	found := make([]fetched, len(scope))
	parallel.Ranges(len(scope), parallel.Workers(len(scope), fetchShare), func(lo, hi int) {
		for i, e := range scope[lo:hi] {
			found[lo+i] = fetch(e.Path, cache != nil && trust[e.Path], inKnowledge)
		}
	})
	for i, e := range scope {
		apply(e.Path, found[i])
	}
	// Two manifest paths may name one file (a relative and an absolute
	// spelling): every entry of a vouched-for file must be a live,
	// anchor-less entry its cached content matches, else it is read. (A
	// warm state's other files were checked by the pass that vouched for
	// them, and a pass changes no entry of a file it did not read.)
	for _, e := range scope {
		rel, ok := st.Rel[e.Path]
		if !ok || !st.Verified[rel] {
			continue
		}
		if e.AnchorID == "" && e.Deleted == nil && statcache.Verifies(vouched[rel], e.ContentHash) {
			continue
		}
		delete(st.Verified, rel)
		delete(st.Files, rel)
		read(e.Path, false)
	}
	// Created observations the manifest lost (absent, corrupt, or written
	// by a tool that dropped them): their artifacts are read so that Plan
	// can register them again.
	// Only those lines are decoded (the scan knows id, status and path).
	// Taking a warm state, only the last pass's lost ones can be: no
	// other line changed since, and a pass makes none created.
	var lost []*manifest.Observation
	if warm {
		lost = st.lostStill()
	} else {
		registered := st.registered()
		lost = st.Log.Select(func(e manifest.LogEntry) bool {
			return e.Status == manifest.Created && e.ArtifactPath != "" && !registered[e.ID]
		})
	}
	st.lost, st.lostKnown = lost, true
	for _, o := range lost {
		p, _, _ := strings.Cut(o.ArtifactPath, "#")
		if rel, ok := st.Rel[p]; ok && st.Verified[rel] {
			// Rebuild hashes this file: its content is needed.
			delete(st.Verified, rel)
			delete(st.Files, rel)
		}
		read(p, false)
	}
	st.vouched = vouched
	var only map[string]bool // the watcher's arrivals: no listing
	if touched != nil {
		only = arrived
		if only == nil {
			only = map[string]bool{}
		}
	}
	movesFound := st.findMoves(scope, only)
	st.askGit()
	movesFound()
	return st, nil
}

// loadFiles reads the log, the manifest, the usage file and the two
// knowledge files into st.
func loadFiles(st *State, p manifest.Paths, res *manifest.Resolver) error {
	log, err := manifest.ReadLogChunked(p.Log)
	if err != nil {
		return err
	}
	st.Log = log
	st.Manifest, st.ManifestExists, st.ManifestErr = manifest.ReadManifest(p.Manifest)
	if st.ManifestErr != nil && !errors.Is(st.ManifestErr, manifest.ErrCorruptManifest) {
		return st.ManifestErr
	}
	st.Usage, err = manifest.ReadUsage(p.Usage)
	if errors.Is(err, manifest.ErrCorruptUsage) {
		st.Usage, st.UsageErr = manifest.NewUsage(), err
	} else if err != nil {
		return err
	}
	for _, path := range []string{p.Decisions, p.Pitfalls} {
		rel, _ := filepath.Rel(p.Root, path)
		rel = filepath.ToSlash(rel)
		if _, _, err := res.Resolve(rel); err != nil {
			st.Refused[rel] = err
			continue
		}
		b, err := safefs.ReadFile(path, safefs.MaxKnowledge)
		if err == nil {
			// Never hand goldmark a nesting bomb (markdown.Check).
			if err := markdown.Check(b); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			st.Knowledge[rel] = b
		} else if safefs.IsRefused(err) {
			st.Refused[rel] = err // a planted symlink or special file: this file only
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("read %s: %w", path, err)
		}
	}
	return nil
}

// artifactKey names an artifact: its path, with "#anchor" for a knowledge
// entry.
func artifactKey(rel, anchor string) string {
	if anchor == "" {
		return rel
	}
	return rel + "#" + anchor
}

// present reports whether the manifest entry's artifact is in the work tree.
func (st *State) present(rel, anchor, obsID string) bool {
	if anchor == "" {
		_, ok := st.Files[rel]
		return ok
	}
	if _, ok := st.Knowledge[rel]; ok {
		_, ok := findAnchor(st.Sections[rel], anchor, obsID)
		return ok
	}
	if b, ok := st.Files[rel]; ok {
		_, ok := findAnchor(markdown.Sections(b), anchor, obsID)
		return ok
	}
	return false
}

// returned reports whether the artifact of a penalised entry is back: the
// file, or a section with its anchor that no live entry claims and whose
// Source marker, if any, names the entry's observation (render may give a
// freed ADR/PF id to another observation: that is not this one back).
func (st *State) returned(e manifest.Entry, rel string, live map[string]bool) bool {
	if !st.present(rel, e.AnchorID, e.ObservationID) {
		return false
	}
	if e.AnchorID == "" {
		return true
	}
	if live[rel+"#"+e.AnchorID] {
		return false
	}
	secs := st.Sections[rel]
	if _, ok := st.Knowledge[rel]; !ok {
		secs = markdown.Sections(st.Files[rel])
	}
	s, _ := findAnchor(secs, e.AnchorID, e.ObservationID)
	return s.Source == "" || s.Source == e.ObservationID
}

// liveAnchors are the "path#anchor" keys of the entries without a deletion
// record.
func liveAnchors(st *State) map[string]bool {
	out := map[string]bool{}
	for _, e := range st.Manifest.Entries {
		if e.Deleted == nil && e.AnchorID != "" {
			if rel, ok := st.Rel[e.Path]; ok {
				out[rel+"#"+e.AnchorID] = true
			}
		}
	}
	return out
}

// askGit decides, for the few artifacts that are missing, present with
// other content than recorded, or penalised and back, what git had to do
// with it. The repository is opened only when there is such an artifact.
func (st *State) askGit() {
	type item struct {
		key, rel, anchor, head string
		since                  time.Time
		// changed: present with other content (current), not missing.
		changed  bool
		obsID    string
		recorded string
		current  []byte
	}
	var asks, back []item
	live := liveAnchors(st)
	prior := st.priorNotes()
	for i, e := range st.Manifest.Entries {
		if prior != nil && prior[i].quiet != notQuiet {
			continue // there, or still gone: nothing to ask
		}
		if e.Deleted == nil && e.AnchorID == "" {
			// The common case first: a live whole-file artifact that is
			// there as rendered is nothing to ask git about.
			if rel, ok := st.Rel[e.Path]; ok {
				if b, ok := st.Files[rel]; ok && (st.Verified[rel] || st.unchanged(rel, e, b, b)) {
					continue
				}
			}
		}
		if _, refused := st.Refused[e.Path]; refused || st.Foreign[e.Path] {
			continue // a foreign entry teaches nothing yet (Plan)
		}
		rel, ok := st.Rel[e.Path]
		if !ok || st.Unreadable[rel] != nil || !st.Log.Has(e.ObservationID) {
			continue
		}
		it := item{key: artifactKey(rel, e.AnchorID), rel: rel, anchor: e.AnchorID}
		switch {
		case e.Deleted == nil && !st.present(rel, e.AnchorID, e.ObservationID):
			it.since, _ = time.Parse(time.RFC3339, e.RenderedAt)
			asks = append(asks, it)
		case e.Deleted != nil && st.returned(e, rel, live):
			it.head = e.Deleted.Head
			back = append(back, it)
		case e.Deleted == nil:
			if current, legacy, ok, err := st.text(e, rel); err == nil && ok && !st.unchanged(rel, e, current, legacy) {
				it.since, _ = time.Parse(time.RFC3339, e.RenderedAt)
				it.changed, it.obsID, it.recorded, it.current = true, e.ObservationID, e.ContentHash, current
				asks = append(asks, it)
			}
		}
	}
	st.Absent, st.CheckedOut, st.BackByCheckout = map[string]bool{}, map[string]bool{}, map[string]bool{}
	if len(asks) == 0 && len(back) == 0 {
		return
	}
	g, unreadable := openGit(st.Root)
	st.GitAsked = true
	if unreadable != nil && len(asks) > 0 {
		st.GitUnreadable = unreadable.Error()
	}
	st.Head = g.headHash()
	// The oldest render first: it sets how far back history is read.
	slices.SortStableFunc(asks, func(a, b item) int { return a.since.Compare(b.since) })
	for _, it := range asks {
		switch {
		case it.changed:
			if g.checkedOut(it.rel, it.anchor, it.obsID, it.recorded, it.current, it.since) {
				st.CheckedOut[it.key] = true
			}
		case unreadable != nil, !g.deleted(it.rel, it.anchor, it.since):
			// In a repository go-git cannot read, git may have taken any
			// of them away: none is called deleted.
			st.Absent[it.key] = true
		}
	}
	for _, it := range back {
		if g.backByCheckout(it.rel, it.anchor, it.head) {
			st.BackByCheckout[it.key] = true
		}
	}
	if g != nil && g.sparse && g.indexErr != nil && st.GitUnreadable == "" {
		st.GitUnreadable = fmt.Sprintf("the index of the sparse checkout at %s cannot be read (%v)", g.top, g.indexErr)
	}
	switch {
	case unreadable != nil:
		st.Git = GitInputs{} // not complete: nothing can be named
	case g == nil:
		st.Git = GitInputs{Complete: true} // outside git: no repository to depend on
	default:
		st.Git = g.inputs()
	}
}

// text returns entry e's artifact as the pass compares it with the
// manifest: the file rel, or its section's text and the span devflow's
// hash covers (from the knowledge files' parsed sections); found is
// false when it is not there. An anchor into a file that is not one of the
// two knowledge files is parsed on the fly, unless it is Markdown no
// parser should see: err says why (such an entry is never penalised).
func (st *State) text(e manifest.Entry, rel string) (current, legacy []byte, found bool, err error) {
	if e.AnchorID == "" {
		b, ok := st.Files[rel]
		return b, b, ok, nil
	}
	src, known := st.Knowledge[rel]
	var secs []markdown.Section
	switch b, ok := st.Files[rel]; {
	case known:
		if secs = st.Sections[rel]; secs == nil {
			secs = markdown.Sections(src)
		}
	case ok:
		if err := markdown.Check(b); err != nil {
			return nil, nil, false, err
		}
		src, secs = b, markdown.Sections(b)
	default:
		return nil, nil, false, nil
	}
	s, ok := findAnchor(secs, e.AnchorID, e.ObservationID)
	if !ok {
		return nil, nil, false, nil
	}
	return markdown.SectionText(src, s), src[s.Start:s.LegacyEnd], true, nil
}

// unchanged reports whether the entry's recorded hash matches current
// (State.text's answer for it): each hash, sha256 of current or devflow's
// djb2 of legacy, is computed once a pass per file or section, however
// many times askGit and Plan compare it.
func (st *State) unchanged(rel string, e manifest.Entry, current, legacy []byte) bool {
	key := rel
	if e.AnchorID != "" {
		// The section text State.text finds depends on the anchor and on
		// which observation's Source marker it prefers.
		key = artifactKey(rel, e.AnchorID) + "\x00" + e.ObservationID
	}
	if st.sums == nil {
		st.sums = map[string]*fileSums{}
	}
	s := st.sums[key]
	if s == nil {
		s = &fileSums{}
		st.sums[key] = s
	}
	// manifest.Unchanged with the hashes of the bytes kept; content
	// with CRLF line ends that did not match is compared once more with
	// LF ends (git's checkout under core.autocrlf, not an edit).
	if manifest.IsLegacyHash(e.ContentHash) {
		if s.djb2 == "" {
			s.djb2 = manifest.DJB2(legacy)
		}
		if manifest.SameLegacy(e.ContentHash, s.djb2) {
			return true
		}
	} else {
		if s.sha == "" {
			s.sha = manifest.Hash(current)
		}
		if s.sha == e.ContentHash {
			return true
		}
	}
	return manifest.SameButLineEnds(e.ContentHash, current, legacy)
}

// fileSums are a file's hashes, each computed when first needed.
type fileSums struct{ sha, djb2 string }

// noteSums notes the hashes e the read of rel computed (statcache.EntryOf:
// the djb2 only for a legacy entry).
func (st *State) noteSums(rel string, e statcache.Entry) {
	if st.sums == nil {
		st.sums = map[string]*fileSums{}
	}
	st.sums[rel] = &fileSums{sha: e.SHA, djb2: e.DJB2}
}

// Plan applies DESIGN.md §4 to st in memory: it edits the log's
// observations, the manifest entries and the usage file, and returns the
// counts. It does no I/O.
func Plan(st *State, now time.Time) Result {
	res := Result{At: now, Corrupt: st.Log.Corrupt()}
	if st.Sections == nil {
		// A state built by hand (loadWarm parses them): parsed once here,
		// for Plan and State.text alike.
		st.Sections = make(map[string][]markdown.Section, len(st.Knowledge))
		for rel, src := range st.Knowledge {
			st.Sections[rel] = markdown.Sections(src)
		}
	}
	sections := st.Sections
	stamp := now.UTC().Format(time.RFC3339)
	for _, rel := range sortedKeys(st.Knowledge) {
		first := map[string]int{}
		for _, s := range sections[rel] {
			if line, dup := first[s.ID]; dup {
				res.Problems = append(res.Problems, fmt.Sprintf("%s: %s appears twice (lines %d and %d); an entry is matched by its Source marker, else the first", rel, s.ID, line, s.Line))
				continue
			}
			first[s.ID] = s.Line
		}
	}
	if st.GitUnreadable != "" {
		res.Problems = append(res.Problems, st.GitUnreadable+": an artifact missing from the work tree is not called deleted (git may have taken it away) until learnwatch can read the repository")
	}
	reanchor(st, sections, &res)
	if !st.NoKeptEvents {
		// A kept event per unchanged entry, most of them: room for them at
		// once (22,000 at 100k grew the slice through 17 MB).
		res.Events = slices.Grow(res.Events, len(st.Manifest.Entries))
	}
	live := liveAnchors(st)
	kept := make([]manifest.Entry, 0, len(st.Manifest.Entries))
	res.Kept = make([]string, 0, len(st.Manifest.Entries))
	// notes follow kept one for one: keep adds an entry with its note.
	notes := make([]entryNote, 0, len(st.Manifest.Entries))
	keep := func(e manifest.Entry, n entryNote) {
		kept, notes = append(kept, e), append(notes, n)
	}
	prior := st.priorNotes()
	claimed := map[string]bool{} // rel#anchor registered in the manifest
	for i, e := range st.Manifest.Entries {
		if prior != nil {
			// Quiet since the last pass (its file untouched): the same
			// outcome, without a lookup.
			switch n := prior[i]; {
			case n.quiet == quietUnchanged && st.NoKeptEvents:
				res.Unchanged++
				res.Kept = append(res.Kept, e.ObservationID)
				keep(e, n)
				continue
			case n.quiet == quietGone:
				keep(e, n)
				continue
			}
		}
		// The line only: an entry whose observation does not change (most
		// of them) is never decoded.
		ln := st.Log.FindLine(e.ObservationID)
		if ln == nil {
			res.Dropped++
			continue
		}
		id, typ := ln.ID(), ln.Type()
		if err, refused := st.Refused[e.Path]; refused {
			res.Refused++
			res.RefusedPaths = append(res.RefusedPaths, e.Path)
			res.Problems = append(res.Problems, fmt.Sprintf("manifest entry %s: %v (left in place)", e.ObservationID, err))
			keep(e, entryNote{})
			continue
		}
		rel := st.Rel[e.Path]
		note := entryNote{rel: rel}
		if err, bad := st.Unreadable[rel]; bad {
			res.Errors++
			res.Problems = append(res.Problems, fmt.Sprintf("manifest entry %s: cannot read %s: %v (left in place)", e.ObservationID, rel, err))
			keep(e, note)
			continue
		}
		current, legacy, found, err := st.text(e, rel)
		if err != nil {
			res.Errors++
			res.Problems = append(res.Problems, fmt.Sprintf("manifest entry %s: %s: %v (left in place)", e.ObservationID, rel, err))
			keep(e, note)
			continue
		}
		if _, inKnowledge := st.Knowledge[rel]; found && inKnowledge && e.AnchorID != "" {
			claimed[rel+"#"+e.AnchorID] = true
		}
		if st.Foreign[e.Path] && e.Deleted == nil {
			// Written in another checkout: what this one has of it
			// teaches nothing yet. Found, the entry is taken as it is
			// here (path relative, this content's hash); not here, it is
			// absent (it may never have been in this checkout).
			if !found {
				res.Absent++
				res.AbsentIDs = append(res.AbsentIDs, id)
				keep(e, note)
				continue
			}
			res.Foreign++
			if st.KeepForeign {
				// Taken here, written by the command that may write
				// a tracked manifest.
				keep(e, note)
				continue
			}
			if o := ln.Observation(); o != nil {
				// The observation's artifact_path, when it names the same
				// foreign file, follows (a knowledge entry's with its
				// "#ADR-NNN").
				if p, anchor, hasAnchor := strings.Cut(o.ArtifactPath, "#"); p == e.Path {
					o.ArtifactPath = rel
					if hasAnchor {
						o.ArtifactPath += "#" + anchor
					}
				}
			}
			e.Path = rel
			st.Rel[rel] = rel
			if verified := e.AnchorID == "" && st.Verified[rel]; !verified && !manifest.Unchanged(e.ContentHash, current, legacy) {
				e.ContentHash = manifest.Hash(current)
			}
			keep(e, note)
			continue
		}
		verified := e.AnchorID == "" && st.Verified[rel]
		key := artifactKey(rel, e.AnchorID)
		if e.Deleted != nil {
			// Penalised earlier: still gone, or back only because a
			// checkout moved to a line that has it → the penalty stands.
			if !found || !st.returned(e, rel, live) || st.BackByCheckout[key] {
				if e.AnchorID != "" && !live[rel+"#"+e.AnchorID] {
					// Not this entry's section (or not back): leave it
					// to rebuild and self-heal.
					delete(claimed, rel+"#"+e.AnchorID)
				}
				if !found && e.AnchorID == "" {
					note.quiet = quietGone
				}
				keep(e, note)
				continue
			}
			if o := ln.Observation(); o != nil {
				restore(o, e.Deleted)
			}
			e.Deleted = nil
			res.Restored++
			res.RestoredIDs = append(res.RestoredIDs, id)
			res.Events = append(res.Events, signal(e, id, typ, learn.KindRestored, "reappeared", now))
			if !manifest.Unchanged(e.ContentHash, current, legacy) {
				// Back with other content: re-adopted as an edit.
				e.ContentHash = manifest.Hash(current)
				e.Path = rel
				res.Edits++
				res.Edited = append(res.Edited, id)
				res.Events = append(res.Events, signal(e, id, typ, learn.KindEdited, "", now))
			}
			keep(e, note)
			continue
		}
		if !found {
			if st.Absent[key] {
				res.Absent++
				res.AbsentIDs = append(res.AbsentIDs, id)
				keep(e, note)
				continue
			}
			if to, ok := st.Moved[key]; ok && e.AnchorID == "" {
				if o := ln.Observation(); o != nil {
					// Moved or renamed by a person: the entry (and the
					// observation's artifact_path) follow the file.
					res.Moved++
					res.MovedTo = append(res.MovedTo, fmt.Sprintf("%s: %s -> %s", id, rel, to.rel))
					e.Path = movedPath(st.Root, e.Path, to.rel)
					if o.ArtifactPath != "" {
						o.ArtifactPath = movedPath(st.Root, o.ArtifactPath, to.rel)
					}
					st.Rel[e.Path], st.Files[to.rel] = to.rel, to.b
					if !manifest.Unchanged(e.ContentHash, to.b, to.b) {
						// Moved and edited at once (matchEdited): the
						// edit is the person's, as in place.
						e.ContentHash = manifest.Hash(to.b)
						res.Edits++
						res.Edited = append(res.Edited, id)
						res.Events = append(res.Events, signal(e, id, typ, learn.KindEdited, "", now))
					}
					keep(e, entryNote{rel: to.rel})
					continue
				}
			}
			if st.Confirm != nil && !st.Confirm[key] {
				res.Pending = append(res.Pending, key)
				keep(e, note)
				continue
			}
			o := ln.Observation()
			if o == nil {
				// The scan vouched for a line the decoder refuses (never
				// seen): leave the entry as it is.
				keep(e, note)
				continue
			}
			e.Deleted = &manifest.Deletion{At: stamp, Status: o.Status, Confidence: o.Confidence, DeprecatedAt: o.DeprecatedAt, Head: st.Head}
			if o.Status != manifest.Deprecated {
				lifecycle.Penalize(o, now)
			}
			res.Deletions++
			res.Deleted = append(res.Deleted, id)
			reason := "deleted"
			if _, ok := st.Knowledge[rel]; ok && e.AnchorID != "" {
				reason = "anchor-lost"
			}
			res.Events = append(res.Events, signal(e, id, typ, learn.KindDeleted, reason, now))
			if e.AnchorID == "" {
				note.quiet = quietGone
			}
			keep(e, note)
			continue
		}
		if verified || st.unchanged(rel, e, current, legacy) {
			res.Unchanged++
			res.Kept = append(res.Kept, id)
			if !st.NoKeptEvents {
				res.Events = append(res.Events, signal(e, id, typ, learn.KindKept, "", now))
			}
			if e.AnchorID == "" {
				note.quiet = quietUnchanged
			}
			keep(e, note)
			continue
		}
		if st.CheckedOut[key] {
			// Another line's version, checked out by git: the recorded
			// one comes back with its branch.
			res.CheckedOut++
			res.CheckedOutIDs = append(res.CheckedOutIDs, id)
			keep(e, note)
			continue
		}
		e.ContentHash = manifest.Hash(current)
		e.Path = rel
		res.Edits++
		res.Edited = append(res.Edited, id)
		res.Events = append(res.Events, signal(e, id, typ, learn.KindEdited, "", now))
		keep(e, note)
	}
	st.Manifest.Entries = kept
	rebuild(st, sections, claimed, now, &res)
	heal(st, sections, claimed, now, &res)
	// Entries rebuild and heal added: looked at in full next time.
	for _, e := range st.Manifest.Entries[len(notes):] {
		notes = append(notes, entryNote{rel: st.Rel[e.Path]})
	}
	st.notes = notes
	// Every registered knowledge anchor has a usage entry: a crash between
	// the manifest and the usage write, or an entry rebuilt, would lose it.
	for _, e := range st.Manifest.Entries {
		if e.AnchorID == "" {
			continue
		}
		if _, refused := st.Refused[e.Path]; !refused {
			st.Usage.Register(e.AnchorID, now)
		}
	}
	return res
}

// restore reverses a deletion penalty recorded in d — when it is still in
// force: a person who deprecated or promoted the observation since has the
// last word.
func restore(o *manifest.Observation, d *manifest.Deletion) {
	if o.Status != manifest.Deprecated || (o.DeprecatedAt != d.At && d.Status != manifest.Deprecated) {
		return
	}
	o.Status, o.Confidence, o.DeprecatedAt = d.Status, d.Confidence, d.DeprecatedAt
}

// rebuild registers again the created observations whose manifest entry is
// missing while their artifact (file, or knowledge section) is there, with
// the artifact's current hash. Nothing is penalised here: without an entry
// there is no record of what was rendered.
func rebuild(st *State, sections map[string][]markdown.Section, claimed map[string]bool, now time.Time, res *Result) {
	lost := st.lost
	if !st.lostKnown {
		registered := st.registered()
		lost = st.Log.Select(func(e manifest.LogEntry) bool {
			return e.Status == manifest.Created && e.ArtifactPath != "" && !registered[e.ID]
		})
	}
	if len(lost) == 0 {
		return
	}
	registered := st.registered()
	for _, o := range lost {
		if o.Status != manifest.Created || o.ArtifactPath == "" || registered[o.ID] {
			continue
		}
		p, anchor, _ := strings.Cut(o.ArtifactPath, "#")
		rel, ok := st.Rel[p]
		if !ok {
			continue
		}
		e := manifest.Entry{ObservationID: o.ID, Type: o.Type, Path: rel, RenderedAt: now.UTC().Format(time.RFC3339)}
		if anchor != "" {
			src, ok := st.Knowledge[rel]
			if !ok {
				continue
			}
			s, ok := findAnchor(sections[rel], anchor, o.ID)
			if !ok || claimed[rel+"#"+anchor] || (s.Source != "" && s.Source != o.ID) {
				continue
			}
			e.AnchorID = anchor
			e.ContentHash = manifest.Hash(markdown.SectionText(src, s))
			claimed[rel+"#"+anchor] = true
		} else {
			b, ok := st.Files[rel]
			if !ok {
				continue
			}
			e.ContentHash = manifest.Hash(b)
		}
		st.Manifest.Entries = append(st.Manifest.Entries, e)
		registered[o.ID] = true
		res.Rebuilt++
		res.RebuiltIDs = append(res.RebuiltIDs, o.ID)
	}
}

// signal is one feedback event about a manifest entry's artifact.
func signal(e manifest.Entry, id, typ, kind, reason string, now time.Time) learn.Event {
	target := id
	if e.AnchorID != "" {
		target = e.AnchorID
	}
	ev := learn.Event{TS: now, Target: target, Kind: kind, Value: 1, Source: "reconcile", Type: typ, Reason: reason}
	if kind == learn.KindDeleted || kind == learn.KindRestored {
		ev.Of = deletionOf(e)
	}
	return ev
}

// deletionOf names the deletion of entry e's rendering (learn.Event.Of):
// a digest of its path, anchor, render time and recorded hash, which a
// penalty leaves as they were. Every pass that penalises the same entry —
// in another clone of the memory, or on another branch — names it alike;
// a rendering penalised again after a restore is the same name, counted
// again because the restore took the first out of force.
func deletionOf(e manifest.Entry) string {
	h := sha256.New()
	for _, s := range []string{e.Path, e.AnchorID, e.RenderedAt, e.ContentHash} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// findAnchor returns the section with id; with duplicates, the one whose
// Source names the observation, else the first.
func findAnchor(secs []markdown.Section, id, obsID string) (markdown.Section, bool) {
	var first *markdown.Section
	for i := range secs {
		if secs[i].ID != id {
			continue
		}
		if secs[i].Source == obsID {
			return secs[i], true
		}
		if first == nil {
			first = &secs[i]
		}
	}
	if first != nil {
		return *first, true
	}
	return markdown.Section{}, false
}

// heal registers knowledge sections that carry a self-learning Source
// marker but are not in the manifest, when exactly one ready observation of
// the same type has the section's title as its normalised pattern.
func heal(st *State, sections map[string][]markdown.Section, claimed map[string]bool, now time.Time, res *Result) {
	var registered map[string]bool // made for the first candidate section
	stamp := now.UTC().Format(time.RFC3339)
	for _, rel := range sortedKeys(st.Knowledge) {
		src := st.Knowledge[rel]
		for _, s := range sections[rel] {
			if claimed[rel+"#"+s.ID] || !s.HasMarker {
				continue
			}
			if registered == nil {
				registered = st.registered()
			}
			typ := manifest.Decision
			if s.Kind == markdown.PF {
				typ = manifest.Pitfall
			}
			// The heading holds the pattern on one line (whitespace runs
			// collapsed), so compare with whitespace runs collapsed.
			title := headingKey(s.Title)
			var match []*manifest.Observation
			for _, o := range st.Log.Observations() {
				if o.Type == typ && o.Status == manifest.Ready && !registered[o.ID] && headingKey(o.Pattern) == title {
					match = append(match, o)
				}
			}
			if len(match) != 1 {
				continue // zero: user-curated; several: ambiguous
			}
			o := match[0]
			o.Status = manifest.Created
			o.ArtifactPath = rel + "#" + s.ID
			st.Manifest.Entries = append(st.Manifest.Entries, manifest.Entry{
				ObservationID: o.ID, Type: o.Type, Path: rel, AnchorID: s.ID,
				ContentHash: manifest.Hash(markdown.SectionText(src, s)), RenderedAt: stamp,
			})
			st.Usage.Register(s.ID, now)
			registered[o.ID] = true
			claimed[rel+"#"+s.ID] = true
			res.Healed++
			res.HealedIDs = append(res.HealedIDs, o.ID)
		}
	}
}

// headingKey is the normalised pattern (DESIGN.md §2) with runs of spaces
// collapsed: render writes "## ADR-NNN: <pattern on one line>", so a pattern
// with a newline or double spaces must still match its own heading.
func headingKey(s string) string { return strings.Join(strings.Fields(lifecycle.Normalize(s)), " ") }

// sortedKeys lists the knowledge files in a fixed order (decisions before
// pitfalls), whatever the map order.
func sortedKeys(m map[string][]byte) []string { return slices.Sorted(maps.Keys(m)) }

// Reconcile runs §4 on the repository at root under the learning lock and
// writes what changed: log first, then manifest, then usage. With no log
// file it returns all zeros and writes nothing. A second call right after a
// first writes nothing.
func Reconcile(ctx context.Context, root string, opts Options) (Result, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	p := manifest.PathsFor(root)
	asked := time.Now()
	lock, drained, err := inbox.LockLog(ctx, root, opts.LockTimeout)
	if err != nil || lock == nil {
		return Result{}, err
	}
	defer lock.Release()
	if time.Since(asked) > knownWait {
		// Another process held the lock: what it wrote is not in the
		// stats taken before. They are emptied all the same.
		if opts.Known != nil {
			*opts.Known = statcache.Known{}
		}
		opts.Known = nil
	}
	res, err := reconcileLocked(ctx, root, p, opts)
	res.Inbox = drained
	if drained.Drained+drained.Completed > 0 {
		res.Wrote = append(res.Wrote, p.Log) // the drain's write: no event to react to
	}
	return res, err
}

// ErrGitMoved is what a pass returns, having written nothing, when git
// changed the worktree while the pass read it: HEAD, the index or
// index.lock differ between its first read and its first write
// (gitrepo.Stamp). What it read may then be half one commit's files and
// half another's — a manifest from before a checkout next to artifacts
// from after it — and a deletion or an edit it found would be git's, not
// the person's. The caller runs the pass again once git is done.
var ErrGitMoved = errors.New("git changed the worktree while the pass read it; nothing was written")

// knownWait is how long Reconcile may wait for the lock and still take
// Options.Known: a pass that waited for another holder stats again.
const knownWait = 100 * time.Millisecond

// reconcileLocked is Reconcile under the learning lock, the inbox drained.
func reconcileLocked(ctx context.Context, root string, p manifest.Paths, opts Options) (Result, error) {
	pr, res, err := prepareLocked(ctx, root, p, opts)
	if err != nil || pr == nil {
		return res, err
	}
	defer pr.drop() // a pass that ends early leaves no temporary file
	return pr.commitLocked(ctx)
}

// pass is a pass read, planned and staged (its log and manifest written
// under temporary names on other goroutines), waiting for commitLocked to
// record it, or for drop.
type pass struct {
	root          string
	p             manifest.Paths
	opts          Options
	cache         *statcache.Cache
	st            *State
	res           Result
	logW          *staged
	manifestW     *staged
	manifestBytes []byte
	manifestSum   string // journal.ManifestSum of manifestBytes, when taken ahead (Prepare)
	manifestProof uint64 // proofSeed's sum of manifestBytes (Warm.sums), taken while staged
	logProof      uint64 // and of the log's bytes, taken as they are written
	// aheadLog is the copy of the log staged before the staleness pass
	// when it is the one written (logW is its staging): once committed it
	// is the pass's log. aheadW is such a staging the staleness pass made
	// wrong (a mark changed, or none is left to write), dropped with the
	// pass.
	aheadLog    *manifest.Log
	aheadW      *staged
	usageBefore int
	gitDir      string
	stamp       gitrepo.Stamp
	passStart   int64
	prev        Warm
	// dirty, when set, is the stat cache's Dirty taken once the pass's
	// entries were final (Prepare).
	dirty *bool
	// cacheSaved: the stat cache was written before the staleness pass
	// (prepareLocked), with cacheErr; the commit does not write it again.
	cacheSaved bool
	cacheErr   error
}

// prepareLocked reads the state, plans and stages the writes of a pass
// (the lock held): nil when there is no log.
func prepareLocked(ctx context.Context, root string, p manifest.Paths, opts Options) (*pass, Result, error) {
	cache := opts.Cache
	if cache != nil {
		cache.Begin(root)
	} else if opts.StatCache != "" {
		cache = statcache.Load(root, statcache.ModeOf(opts.StatCache))
	}
	var touched map[string]bool
	if cache != nil {
		touched = opts.Touched
	}
	passStart := time.Now().UnixNano()
	var warm *Warm
	if cache != nil {
		warm = opts.Warm
	}
	// The staleness pass's Checker is opened (its cache read, git's index
	// and HEAD) while the pass loads and plans, none of which it depends
	// on; for a log read in chunks (a large memory) it is opened once the
	// plan is let go instead, so that its cache (12 MB at 100,000
	// observations) is not held at the load's peak next to the manifest
	// and the artifacts.
	var opening *openingChecker
	if opts.Staleness != nil && !largeLog(p.Log) {
		opening = openStaleness(root, *opts.Staleness)
		defer opening.wait() // a pass that ends early leaves nothing running
	}
	// What git's state was before the first read: a pass that read while
	// git wrote the worktree writes nothing (ErrGitMoved).
	gitDir, _ := gitrepo.GitDir(root)
	stamp := gitrepo.StampOf(gitDir)
	var known statcache.Known
	if opts.Known != nil {
		known, *opts.Known = *opts.Known, statcache.Known{}
	}
	st, err := loadWarm(root, cache, touched, opts.Arrived, warm, known, opts.keepWarm)
	var prev Warm
	if opts.keepWarm && opts.Warm != nil {
		prev = *opts.Warm // a copy was lent: the state stays until captured again
	} else {
		prev = opts.Warm.Forget() // lent or stale: captured again once written
	}
	if err != nil {
		return nil, Result{}, err
	}
	if cache != nil && opts.Warm == nil && !opts.DeferCache {
		// Nothing after the load looks an entry up: a pass that keeps
		// no state lets the loaded ones go.
		cache.LetOldGo()
	}
	failpoint.Pause("reconcile:after-read")
	if !st.Log.Exists {
		return nil, Result{}, nil
	}
	removeStrayTemps(p)
	// Change detection without encoding: heal only adds usage entries, and
	// manifest entries are plain values.
	usageBefore := len(st.Usage.Entries)
	manifestBefore := append([]manifest.Entry(nil), st.Manifest.Entries...)
	// Kept events are recorded by a session's pass alone
	// (journal.SelectEvents): another pass that keeps no state leaves them
	// out (20,000 events at 20,000 artifacts). With no state lent there
	// are no quiet entries, so Plan's outcomes are the same.
	st.Confirm, st.NoKeptEvents = opts.Confirm, opts.Lean || !opts.Session && opts.Warm == nil
	st.KeepForeign = !opts.MarkTracked && len(st.Foreign) > 0 && Tracked(root, p.Manifest)
	res := Plan(st, opts.Now)
	res.Log = st.Log
	res.Withheld = st.KeepForeign
	if !opts.Lean {
		res.Inputs = st.inputs(p)
	}
	res.GitAsked, res.Git = st.GitAsked, st.Git
	pr := &pass{root: root, p: p, opts: opts, cache: cache, st: st, usageBefore: usageBefore,
		gitDir: gitDir, stamp: stamp, passStart: passStart, prev: prev}
	// The log and the manifest are staged (written under temporary names
	// and synced) on other goroutines while the staleness pass runs, the
	// manifest is summed and the feedback record prepared; commitLocked
	// commits them in the order a crash relies on: the record, the log,
	// the manifest. The manifest is encoded once: its bytes are written,
	// and their sum names the state the feedback record describes. The
	// staleness pass changes the log's marks, never the manifest, so the
	// manifest is staged before it and the log after it.
	if manifestDue(st, manifestBefore) {
		b, err := st.Manifest.Encode()
		if err != nil {
			return nil, res, fmt.Errorf("encode manifest: %w", err)
		}
		pr.manifestBytes = b
		pr.manifestW = stage(func() (stagedFile, error) {
			pr.manifestProof = maphash.Bytes(proofSeed, b)
			return manifest.StageFile(p.Manifest, b, 0o644)
		})
	}
	manifestBefore = nil
	if opts.Staleness != nil {
		if opening == nil {
			opening = openStaleness(root, *opts.Staleness)
			defer opening.wait()
		}
		opening.parsed = st.parsedKnowledge()
		if opts.Warm == nil && !opts.Render {
			// Nothing after this pass reads its plan again (no state is
			// kept for a next pass, nothing is rendered from it): what
			// only planning needed goes before the staleness pass holds
			// the log's references, which with it was a first pass's peak
			// (about 25 of the 93 MB live at 100,000 observations).
			if pr.manifestBytes != nil && opts.Feedback {
				pr.manifestSum = journal.ManifestSum(pr.manifestBytes)
			}
			pr.manifestBytes = nil // the staging holds them until written
			st.letGo()
			if cache != nil && !opts.DeferCache && gitrepo.StampOf(gitDir) == stamp {
				// Nor does anything look the artifacts up again: the
				// stat cache is written now, not once the log and the
				// manifest are, and its entries go (at 20,000 artifacts,
				// 8 MB of a first pass's peak, the staleness pass's). Its
				// entries are facts about the stats they name whatever
				// the pass does next (a crash, git moving after all:
				// docs/engine.md); a pass that finds git moved already
				// writes nothing, this cache included.
				pr.cacheErr, pr.cacheSaved = cache.SaveAndUnload(root), true
			}
		}
		var aheadLog *manifest.Log
		var aheadW *staged
		if opts.Warm == nil && !opts.Render && st.Log.Held() && st.Log.Changed() {
			aheadLog, aheadW = stageAhead(p, st.Log)
		}
		changed := markStale(ctx, root, p, opts, opening, st.Log, &res)
		switch {
		case aheadW == nil:
		case changed || !st.Log.Changed():
			pr.aheadW = aheadW // staged for nothing: dropped with the pass
		default:
			pr.logW, pr.aheadLog = aheadW, aheadLog
		}
	}
	if pr.logW == nil && st.Log.Changed() {
		pr.logW = stage(func() (stagedFile, error) {
			h := proofHash()
			s, err := manifest.StageLog(p.Log, st.Log, h)
			pr.logProof = h.Sum64()
			return s, err
		})
	}
	pr.res = res
	return pr, res, nil
}

// stageAhead stages a copy of log (manifest.Log.Clone: its lines apart,
// its bytes shared) on another goroutine, before the staleness pass: that
// pass takes several milliseconds of CPU, and the log's write and sync
// (3.8 MB at 10,000 observations, 3–7 ms waited for after the staleness
// pass) run meanwhile. Most passes change no mark (a settled memory keeps
// its marks; a git-tracked log's are not written by a hook), and the copy
// staged is then the log the pass writes; a pass whose staleness pass
// changed a mark drops it and stages the log again. Only for a pass that
// keeps no state (nothing asks for the staged log's proof, heal.Warm) and
// a log held in memory (manifest.Log.Held): the copy's lines are not read
// back from the file while the staleness pass reads the log's.
func stageAhead(p manifest.Paths, log *manifest.Log) (*manifest.Log, *staged) {
	c, _ := log.Clone()
	return c, stage(func() (stagedFile, error) {
		return manifest.StageLog(p.Log, c, nil)
	})
}

// letGo drops what only planning read or decided — the manifest, the
// artifacts' contents and the maps that placed them, the notes — from a
// State whose pass keeps nothing for a next one: the rest of the pass
// reads the log, the usage file, the knowledge files and the errors
// (commitLocked, write).
func (st *State) letGo() {
	st.Manifest = nil
	st.Files, st.Rel, st.Missing, st.Unreadable, st.Foreign = nil, nil, nil, nil, nil
	st.Absent, st.Moved, st.CheckedOut, st.BackByCheckout = nil, nil, nil, nil
	st.Verified, st.vouched, st.sums = nil, nil, nil
	st.lost, st.prior, st.notes = nil, nil, nil
}

// drop removes what the pass staged and did not commit, and lets the
// files its commits replaced go (Options.Replaced).
func (pr *pass) drop() {
	for _, s := range []*staged{pr.logW, pr.manifestW, pr.aheadW} {
		if f := s.drop(); f != nil {
			if pr.opts.Replaced != nil {
				pr.opts.Replaced.files = append(pr.opts.Replaced.files, f)
			} else {
				f.Release()
			}
		}
	}
}

// Replaced holds the files a pass's commits replaced, each kept under a
// temporary name (manifest.Staged.Commit) until Release: removing a large
// file frees its blocks there and then (12 ms for a 14 MB manifest on
// ext4), so a caller whose next result is waited for (the watcher) lets
// them go when it is idle. The zero value holds none; not safe for
// concurrent use.
type Replaced struct {
	files []stagedFile
	// going counts the files handed to a goroutine (ReleaseAside) that
	// Release waits for.
	going sync.WaitGroup
}

// Held is how many files r holds.
func (r *Replaced) Held() int { return len(r.files) }

// Release removes them, and waits for those ReleaseAside handed on.
func (r *Replaced) Release() {
	for _, f := range r.files {
		f.Release()
	}
	r.files = nil
	r.going.Wait()
}

// ReleaseAside removes them on another goroutine: the watcher preparing
// its next pass does not wait for the blocks of a 14 MB manifest to be
// freed (10–12 ms at 50,000 artifacts). Release waits for it.
func (r *Replaced) ReleaseAside() {
	if len(r.files) == 0 {
		return
	}
	files := r.files
	r.files = nil
	r.going.Go(func() {
		for _, f := range files {
			f.Release()
		}
	})
}

// commitLocked records a staged pass (the lock held): the feedback
// record, the log, the manifest, the usage file, the stat cache and the
// state left for the next pass (Options.Warm).
func (pr *pass) commitLocked(ctx context.Context) (Result, error) {
	root, p, opts, st, res := pr.root, pr.p, pr.opts, pr.st, pr.res
	// The last moment nothing is written yet (the staged files are
	// temporary): git must not have moved since the first read.
	failpoint.Pause("reconcile:before-write")
	if gitrepo.StampOf(pr.gitDir) != pr.stamp {
		return Result{}, ErrGitMoved
	}
	if err := st.Log.Err(); err != nil {
		// A line of a log read in chunks could not be read back (another
		// program rewrote it in place): what the pass decided from it
		// stands on bytes it did not read, and nothing is written.
		return Result{}, err
	}
	var jp *journal.Pass
	settleDay := false // a session pass due to record kept events that has none
	if opts.Feedback {
		evs, kept, due := journal.SelectEvents(root, res.Events, opts.Session, opts.Now)
		settleDay = due && !kept
		sum := ""
		if sum = pr.manifestSum; sum == "" && pr.manifestBytes != nil {
			sum = journal.ManifestSum(pr.manifestBytes)
		}
		var err error
		if jp, err = journal.Prepare(root, evs, kept, sum, opts.Now); err != nil {
			return res, fmt.Errorf("record feedback: %w", err)
		}
	}
	if err := write(st, p, pr.logW, pr.manifestW, pr.usageBefore, &res); err != nil {
		return res, err
	}
	if pr.aheadLog != nil && pr.logW.committed {
		// The copy staged ahead holds the lines as written (and the
		// same observations as the log: the staleness pass changed no
		// mark): it is the pass's log from now on (Result.Log).
		*st.Log = *pr.aheadLog
	}
	if jp != nil {
		// The manifest holding the pass's record is written: a failure
		// here is completed by the next pass.
		if err := journal.Commit(root, jp); err != nil {
			res.Problems = append(res.Problems, "feedback not recorded yet (the next reconcile records it): "+err.Error())
		} else {
			res.Recorded = len(jp.Events)
		}
	}
	if settleDay {
		// The day's kept events are recorded: there were none. A stamp
		// that cannot be written leaves them due (the next session pass
		// runs in full).
		_ = journal.MarkKept(root, opts.Now)
	}
	cache := pr.cache
	switch {
	case cache != nil && opts.DeferCache && pr.dirty != nil:
		cache.EndPassDirty(pr.passStart, *pr.dirty)
	case cache != nil && opts.DeferCache:
		cache.EndPass(pr.passStart)
	case pr.cacheSaved:
		res.CacheErr = pr.cacheErr
	case cache != nil:
		// Disposable: a cache that cannot be written is rebuilt next time;
		// the caller hears of it (a full disk), the result stands.
		res.CacheErr = cache.Save(root)
	}
	if opts.Render {
		rr, wrote, err := renderAfter(ctx, st, p, opts)
		res.Rendered = rr
		res.Wrote = append(res.Wrote, wrote...)
		if err != nil {
			return res, err
		}
		if len(rr) > 0 || len(wrote) > 0 {
			return res, nil // render wrote files: the next pass reads them
		}
	}
	if cache != nil {
		// The files written are read back by Prove once the racy window
		// is over: their sums are compared, the state is not encoded
		// again.
		sums := map[string]uint64{}
		if pr.manifestW != nil && pr.manifestW.committed {
			sums[p.Manifest] = pr.manifestProof
		}
		if pr.logW != nil && pr.logW.committed {
			sums[p.Log] = pr.logProof
		}
		opts.Warm.capture(st, p, pr.prev, sums)
	}
	return res, nil
}

// write writes what the pass changed: it commits the log and the manifest
// (staged: nil when unchanged, not due), then writes the usage file.
func write(st *State, p manifest.Paths, logW, manifestW *staged, usageBefore int, res *Result) error {
	if logW != nil {
		if err := logW.commit(); err != nil {
			return err
		}
		res.Wrote = append(res.Wrote, p.Log)
	}
	if err := failpoint.Inject("reconcile:after-log"); err != nil {
		return err
	}
	if st.ManifestErr != nil {
		if err := keepCorrupt(p.Manifest, st.ManifestErr, "rebuilt from the knowledge files and the log", res); err != nil {
			return err
		}
	}
	if manifestW != nil {
		if err := manifestW.commit(); err != nil {
			return err
		}
		res.Wrote = append(res.Wrote, p.Manifest)
	}
	if err := failpoint.Inject("reconcile:after-manifest"); err != nil {
		return err
	}
	if st.UsageErr != nil {
		if err := keepCorrupt(p.Usage, st.UsageErr, "rebuilt from the manifest", res); err != nil {
			return err
		}
	}
	if st.UsageErr != nil || len(st.Usage.Entries) != usageBefore {
		if err := manifest.WriteUsage(p.Usage, st.Usage); err != nil {
			return err
		}
		res.Wrote = append(res.Wrote, p.Usage)
	}
	return nil
}

// stagedFile is a file written under a temporary name, waiting to replace
// its path (manifest.Staged, manifest.LogStage).
type stagedFile interface {
	Commit() error
	Abort()
	Release()
}

// staged is a file being staged on another goroutine: committed by
// commit, else removed by drop.
type staged struct {
	done      chan struct{}
	err       error
	file      stagedFile
	committed bool
}

// stage runs f, which stages a file, on another goroutine (the file is
// used only when f reports no error).
func stage(f func() (stagedFile, error)) *staged {
	s := &staged{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.file, s.err = f()
	}()
	return s
}

// commit waits for the file to be staged and replaces its path with it.
func (s *staged) commit() error {
	<-s.done
	if s.err != nil {
		return s.err
	}
	s.committed = true
	return s.file.Commit()
}

// drop waits for a staging that was not committed and removes its file
// (nil: nothing staged). It returns a committed one, whose replaced file
// the pass lets go (pass.drop).
func (s *staged) drop() stagedFile {
	if s == nil {
		return nil
	}
	<-s.done
	switch {
	case s.err != nil:
		return nil
	case s.committed:
		return s.file
	}
	s.file.Abort()
	return nil
}

// wait waits for the staging and returns its error (nil: nothing staged).
func (s *staged) wait() error {
	if s == nil {
		return nil
	}
	<-s.done
	return s.err
}

// manifestDue reports whether reconcile writes the manifest: it did not
// parse, or its entries changed (manifest.SameEntries: reflect.DeepEqual's
// answer without reflection, a nil slice unlike an empty one).
func manifestDue(st *State, manifestBefore []manifest.Entry) bool {
	changed := !manifest.SameEntries(manifestBefore, st.Manifest.Entries)
	return st.ManifestErr != nil || changed && (st.ManifestExists || len(st.Manifest.Entries) > 0)
}

// keepCorrupt copies a file that did not parse to <path>.corrupt-<time>
// before it is rebuilt: nothing is ever lost.
func keepCorrupt(path string, why error, how string, res *Result) error {
	// Only a regular file is ever backed up: safefs refuses a symlink, so
	// a link's target is never copied into the work tree.
	b, err := safefs.ReadFile(path, safefs.MaxState)
	if err != nil {
		return nil // gone meanwhile: nothing to keep
	}
	// Never overwrite an earlier backup holding other bytes (two corrupt
	// files within one second): number the name instead.
	stamp := fmt.Sprintf("%s.corrupt-%s", path, time.Now().UTC().Format("20060102T150405Z"))
	backup := stamp
	for n := 2; ; n++ {
		old, err := safefs.ReadFile(backup, safefs.MaxState)
		if errors.Is(err, os.ErrNotExist) {
			if err := manifest.WriteFile(backup, b, 0o644); err != nil {
				return err
			}
			break
		}
		if err == nil && bytes.Equal(old, b) {
			break // already kept (a reconcile killed after the backup)
		}
		backup = fmt.Sprintf("%s-%d", stamp, n)
	}
	res.Problems = append(res.Problems, fmt.Sprintf("%v: %s; the corrupt file is kept as %s", why, how, filepath.Base(backup)))
	return nil
}

// StrayTempAge is how old a temp file of an atomic write must be before
// reconcile removes it: a process killed mid-write leaves one behind.
const StrayTempAge = 10 * time.Minute

// removeStrayTemps deletes leftover ".<name>.tmp-<random>" files of killed
// atomic writes in the memory and knowledge directories. The caller holds
// the learning lock; the age bound keeps a concurrent knowledge writer's
// temp file (under the knowledge lock only) safe.
func removeStrayTemps(p manifest.Paths) {
	for _, dir := range []string{p.Memory, filepath.Dir(p.Decisions)} {
		manifest.RemoveStaleTemps(dir, StrayTempAge)
	}
}

// Summary is a one-line human summary of a result.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "deletions %d, edits %d, unchanged %d, healed %d", r.Deletions, r.Edits, r.Unchanged, r.Healed)
	for _, kv := range []struct {
		k string
		v int
	}{{"moved", r.Moved}, {"foreign", r.Foreign}, {"absent", r.Absent}, {"checked out", r.CheckedOut}, {"restored", r.Restored}, {"refused", r.Refused}, {"corrupt", r.Corrupt}, {"dropped", r.Dropped}, {"rebuilt", r.Rebuilt}, {"stale", r.Stale}, {"errors", r.Errors}} {
		if kv.v > 0 {
			fmt.Fprintf(&b, ", %s %d", kv.k, kv.v)
		}
	}
	return b.String()
}

// markStale runs the staleness pass on log under the lock and counts it
// in res; a learning log git tracks keeps its marks unless
// opts.MarkTracked. changed reports whether a line's marks are not what
// they were before it (a log staged before it is then not the one to
// write: stageAhead).
func markStale(ctx context.Context, root string, p manifest.Paths, opts Options, opening *openingChecker, log *manifest.Log, res *Result) (changed bool) {
	n, marked, in, cacheErr, err := stalePass(ctx, root, *opts.Staleness, opening, log)
	res.StaleCacheErr, res.StaleInputs = cacheErr, in
	// git is asked only when the pass changed a mark.
	if !opts.MarkTracked && len(marked) > 0 && Tracked(root, p.Log) {
		for _, m := range marked {
			m.Line.SetMarks(m.Marks)
		}
		res.Withheld = true
	}
	if err != nil {
		res.Problems = append(res.Problems, "staleness check: "+err.Error())
	}
	res.Stale = n
	for _, m := range marked {
		if m.Line.Marks() != m.Marks {
			return true
		}
	}
	return false
}

// StalePass runs the staleness pass alone under the lock, as Reconcile
// runs it after planning, and writes the log when a mark changed: the
// watcher records a burst's events first (a pass without Staleness) and
// marks when it is idle. The log comes from opts.Warm when it vouches for
// it, and the state is left there again.
func StalePass(ctx context.Context, root string, opts Options) (Result, error) {
	if opts.Staleness == nil {
		return Result{}, nil
	}
	p := manifest.PathsFor(root)
	if _, err := safefs.Lstat(p.Log); errors.Is(err, os.ErrNotExist) {
		opts.Warm.Forget()
		return Result{}, nil
	} else if err != nil {
		return Result{}, err
	}
	lock, drained, err := inbox.Lock(ctx, root, opts.LockTimeout)
	if err != nil {
		return Result{}, err
	}
	defer lock.Release()
	res := Result{Inbox: drained}
	if drained.Drained+drained.Completed > 0 {
		res.Wrote = append(res.Wrote, p.Log)
	}
	st := &State{Refused: map[string]error{}}
	lent := opts.Warm.usable(p, map[string]bool{})
	if lent {
		opts.Warm.lend(st)
		st.notes = st.prior // the manifest is not planned here: its notes stand
	} else {
		if st.Log, err = manifest.ReadLogChunked(p.Log); err != nil {
			opts.Warm.Forget()
			return res, err
		}
	}
	prev := opts.Warm.Forget()
	if !st.Log.Exists {
		return res, nil
	}
	markStale(ctx, root, p, opts, nil, st.Log, &res)
	if ctx.Err() != nil && !st.Log.Changed() {
		// Called off: the scan stopped before it marked anything (or it
		// had nothing to mark). The state is as it was; the caller runs
		// the pass again. Marks made before the call came are written.
		if lent {
			opts.Warm.capture(st, p, prev, nil)
		}
		return res, fmt.Errorf("staleness pass called off: %w", context.Cause(ctx))
	}
	var sums map[string]uint64
	if st.Log.Changed() {
		// Summed as it is written, for the proof of the state kept
		// (Warm.sums), as a pass's staged log is.
		h := proofHash()
		if err := manifest.WriteLogCopy(p.Log, st.Log, h); err != nil {
			return res, err
		}
		sums = map[string]uint64{p.Log: h.Sum64()}
		res.Wrote = append(res.Wrote, p.Log)
	}
	if lent {
		opts.Warm.capture(st, p, prev, sums)
	}
	return res, nil
}

// stalePass checks the knowledge files and the log's observations against
// HEAD (the working tree outside git), marks the stale observations in log
// and returns the number of stale references.
func stalePass(ctx context.Context, root string, cfg config.Staleness, opening *openingChecker, log *manifest.Log) (n int, marked []staleness.Marked, in staleness.Inputs, cacheErr, err error) {
	if opening == nil {
		opening = openStaleness(root, cfg)
	}
	c, err := opening.wait()
	if err != nil {
		return 0, nil, in, nil, err
	}
	c.UseParsed(opening.parsed)
	// Under the learning lock: the pass writes the staleness cache (a
	// cache that cannot be written is only a warning).
	m, cacheErr, err := staleness.MarkCached(ctx, root, c, cfg, log)
	if err != nil {
		return 0, nil, in, nil, err
	}
	return m.Stale, m.Marked, m.Inputs, cacheErr, nil
}

// fetched is what looking at one artifact path found (loadWarm): how it
// resolved, whether the stat cache vouches for its content (kept), or
// what reading it gave, with the stats around the read.
type fetched struct {
	abs, rel   string
	foreign    bool // written in another checkout (manifest.ResolveEntry)
	resolveErr error
	skip       bool // a file looked at otherwise (a knowledge file)
	kept       bool
	// ce is the cache entry vouching for the file (kept), or the one its
	// content read now gets (statted).
	ce            statcache.Entry
	before, after statcache.Stat
	statted       bool
	b             []byte
	err           error
}

// fetchShare is how many artifacts make another goroutine worth starting
// to look at them.
const fetchShare = 256

// openingChecker is the staleness pass's Checker being opened (the git
// index, HEAD and the staleness cache read: milliseconds at 10,000
// observations) on another goroutine while the pass reads and plans the
// memory, none of which it depends on.
type openingChecker struct {
	done chan struct{}
	c    *staleness.Checker
	err  error
	// parsed are the knowledge files the pass read and split, for the
	// Checker (staleness.Checker.UseParsed).
	parsed map[string]staleness.Parsed
}

// parsedKnowledge returns the knowledge files as loaded with their
// sections, by absolute path. Heal never changes them in memory; the
// Checker compares the bytes with the file all the same.
func (st *State) parsedKnowledge() map[string]staleness.Parsed {
	out := make(map[string]staleness.Parsed, len(st.Knowledge))
	for rel, src := range st.Knowledge {
		if secs, ok := st.Sections[rel]; ok {
			out[filepath.Join(st.Root, filepath.FromSlash(rel))] = staleness.Parsed{Src: src, Sections: secs}
		}
	}
	return out
}

// openStaleness starts opening the Checker of a reconcile's staleness
// pass (staleness.Auto, under the lock the caller holds).
func openStaleness(root string, cfg config.Staleness) *openingChecker {
	o := &openingChecker{done: make(chan struct{})}
	go func() {
		defer close(o.done)
		o.c, o.err = staleness.Open(root, staleness.Auto, cfg)
	}()
	return o
}

// largeLog reports whether the log at path is read in chunks
// (manifest.ReadsChunked): a memory whose pass holds it in parts.
func largeLog(path string) bool {
	fi, err := safefs.Lstat(path)
	return err == nil && manifest.ReadsChunked(fi.Size())
}

// wait returns the opened Checker.
func (o *openingChecker) wait() (*staleness.Checker, error) {
	<-o.done
	return o.c, o.err
}

// inputs lists the files the pass read or looked up (Result.Inputs).
func (st *State) inputs(p manifest.Paths) []string {
	seen := map[string]bool{p.Log: true, p.Manifest: true, p.Usage: true, p.Decisions: true, p.Pitfalls: true}
	for _, rel := range st.Rel {
		seen[filepath.Join(st.Root, filepath.FromSlash(rel))] = true
	}
	for path := range st.Refused {
		if !filepath.IsAbs(path) {
			path = filepath.Join(st.Root, filepath.FromSlash(path))
		}
		seen[path] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// verifiesAll reports whether a cached content matches every stored hash.
func verifiesAll(e statcache.Entry, stored []string) bool {
	for _, h := range stored {
		if !statcache.Verifies(e, h) {
			return false
		}
	}
	return len(stored) > 0
}
