package engine

// The pass replay: a reconcile whose inputs have not changed since a pass
// that changed nothing reports what that pass reported, from stats alone.
//
// A pass depends on files (the log, the manifest, the usage file, the
// knowledge files, every artifact present or missing, the staleness
// sources and ignore files, the git index), on the directories the
// staleness pass listed outside git, on the directories on the way to each
// of those files (a directory swapped for a symlink changes what a pass
// may read), on HEAD's commit, on the configuration and on what the pass
// was asked (the day's first session-start pass always runs). After a
// full pass that wrote nothing, the engine records all of that with the
// pass's report in .memory/.cache/pass.replay. The next pass stats every
// recorded path; when all of them are unchanged it returns the recorded
// report without reading a file.
//
// A record is only trusted once confirmed: a full pass whose inputs, stat'ed
// before it read anything, were still the same after it (so what it read
// is what the stats describe) and none of which had changed in the
// moments before it started (a file rewritten twice within one clock tick
// of the file system can keep its stat: git's "racily clean" problem).

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/citation"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/parallel"
	"github.com/learnwatch/learnwatch/staleness"
)

// ReplayFile is the pass replay's file in the cache directory.
const ReplayFile = "pass.replay"

// replayMagic starts the file; another version is ignored.
const replayMagic = "learnwatch pass replay 6\n"

// maxReplay bounds the file read.
const maxReplay = 64 << 20

// quiet is how long the inputs of a pass must have been left alone before
// it for its record to be confirmed: longer than the timestamp granularity
// of the file systems the default stat check is meant for (Linux file
// systems stamp with the kernel's coarse clock, a few milliseconds).
// check_stat: minimal, for file systems whose stats are less reliable, asks
// for two seconds (FAT's granularity).
func quiet(mode statcache.Mode) time.Duration {
	if mode == statcache.Minimal {
		return 2 * time.Second
	}
	return 100 * time.Millisecond
}

// depKind says how a recorded path is compared.
type depKind uint8

const (
	// depFile: size, mtime, ctime, inode and file type (missing counts).
	depFile depKind = iota
	// depWay: a directory on the way to an input: inode and type only.
	depWay
	// depList: a directory whose listing was read: like depFile.
	depList
	// depGit: a file of the repository that git's answers read (HEAD,
	// a reference, the index: heal.GitInputs): like depFile, but git
	// replaces it by a rename, so a change is a new inode and one made
	// just before the pass does not leave it unconfirmed.
	depGit
)

// depStat is a recorded path's state. Type is the file type bits
// (0 when missing). Names is, for a listed directory, the sum of its
// entries' names (manifest.ListDirSum: learnwatch's own locks and temp
// files left out): a lock taken and released changes the directory's
// mtime, not its listing.
type depStat struct {
	statcache.Stat
	Type  uint32
	Names [32]byte
}

// replayRecord is the file's content.
type replayRecord struct {
	Key       string
	Confirmed bool
	Paths     []string
	Kinds     []depKind
	Stats     []depStat
	Head      string // HEAD's commit when the pass was in a git repository
	Report    []byte // heal.Result, JSON
	Kept      []string
	// GitAsked: the pass asked git about an artifact (absent, checked
	// out): its answers follow HEAD and the references, so a pass after
	// git moved them is never answered from this record (Pass.AfterGit).
	GitAsked bool
	// MarkTracked is the recording pass's Pass.MarkTracked, and Withheld
	// heal.Result.Withheld: a record whose pass left changes for a
	// person's pass answers only passes that would leave them too.
	MarkTracked, Withheld bool
	// Index is git's index among Paths, and IndexID its identity when its
	// recorded stat was taken (staleness.IndexIdentity; indexID): an
	// index rewritten with new stat data only (`git status` refreshing
	// it), or for a pass that did not ask git with other blobs staged
	// under the same names, changes no answer of the pass
	// (indexRefreshed). Both "" when the pass did not depend on the index.
	Index, IndexID string
}

// replayable reports whether a pass p may be answered by a replay or
// recorded for one: passes with the watcher's grace window, render or a
// list of touched files, and passes without the stat cache, always run.
func replayable(p Pass) bool {
	return p.Confirm == nil && !p.Render && p.Touched == nil && !p.NoStatCache
}

// replayKey is what a recorded report was asked with: the binary, the
// root, the configuration and the pass's own options. The session-start
// pass shares the key of a plain pass: once the day's kept events are
// recorded it is one (tryReplay checks). So do the reconcile command's
// pass (MarkTracked) and a hook's: a record of one answers the other
// unless the pass left changes for a person's pass (replayRecord.Withheld),
// and how long a pass waits for the lock (the hooks wait less) changes
// nothing it reports. "" (the binary cannot be named) means no replay.
func (e *Engine) replayKey(p Pass) string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	fi, err := os.Stat(exe)
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%d\x00", exe, fi.Size(), fi.ModTime().UnixNano())
	c := e.cfg
	c.Lock = config.Lock{}
	cfg, _ := json.Marshal(c)
	fmt.Fprintf(h, "%s\x00%s\x00%t\x00%s\x00%s\x00", e.root, cfg, p.NoFeedback,
		os.Getenv("GIT_INDEX_FILE"), os.Getenv("GIT_DIR"))
	return hex.EncodeToString(h.Sum(nil))
}

// lstatDep returns the state of path now (lstat: a symlink is not
// followed). Thousands of these are a replay's whole cost: no FileInfo is
// allocated (statcache.LstatRaw).
func lstatDep(path string) depStat {
	st, typ := statcache.LstatRaw(path)
	return depStat{Stat: st, Type: typ}
}

// same compares a recorded state with the state now under kind and mode
// (for a listed directory, now.Names must be filled: see namesFor).
func same(k depKind, was, now depStat, mode statcache.Mode) bool {
	if was.Type != now.Type {
		return false
	}
	if was.Type == 0 {
		return true // missing then and now
	}
	switch k {
	case depWay:
		return mode == statcache.Minimal || was.Ino == now.Ino
	case depList:
		return (mode == statcache.Minimal || was.Ino == now.Ino) && was.Names == now.Names
	default:
		return statcache.Same(statcache.Entry{Stat: was.Stat}, now.Stat, mode)
	}
}

// The record is a sealed cache file (codec.Encoder; gob before
// 2026-11-28, whose decoder build was a millisecond of every replay):
//
//	the key, confirmed, the paths (a string list), their kinds (a byte
//	each), per path its stat (size, mtime and ctime as varints, inode
//	and type as uvarints), the listing sums (a count, then per listed
//	directory its path's place and the 32 bytes), HEAD, the report, the
//	kept ids (a string list), GitAsked, MarkTracked, Withheld, the
//	index's path and identity.
//
// A record whose kinds or listing places do not fit its paths is refused.

// encodeRecord is the file of r.
func encodeRecord(r *replayRecord) []byte {
	size := len(r.Key) + len(r.Report) + len(r.Head) + len(r.Index) + len(r.IndexID) + 32
	for _, p := range r.Paths {
		size += len(p) + 24
	}
	e := codec.NewEncoder(replayMagic, size)
	e.String(r.Key)
	e.Bool(r.Confirmed)
	e.Strings(r.Paths)
	kinds := make([]byte, len(r.Kinds))
	for i, k := range r.Kinds {
		kinds[i] = byte(k)
	}
	e.Fixed(kinds)
	named := 0
	for _, s := range r.Stats {
		s.Stat.Encode(e)
		e.Uint32(s.Type)
		if s.Names != ([32]byte{}) {
			named++
		}
	}
	e.Uvarint(uint64(named))
	for i, s := range r.Stats {
		if s.Names != ([32]byte{}) {
			e.Uvarint(uint64(i))
			e.Fixed(s.Names[:])
		}
	}
	e.String(r.Head)
	e.Bytes(r.Report)
	e.Strings(r.Kept)
	e.Bool(r.GitAsked)
	e.Bool(r.MarkTracked)
	e.Bool(r.Withheld)
	e.String(r.Index)
	e.String(r.IndexID)
	return e.Sealed()
}

// decodeRecord reads what encodeRecord wrote (the body, unsealed).
func decodeRecord(body []byte) (*replayRecord, bool) {
	d := codec.NewDecoder(body)
	r := &replayRecord{Key: d.String(), Confirmed: d.Bool(), Paths: d.Strings()}
	n := len(r.Paths)
	kinds := d.Fixed(n)
	// A stat is at least five bytes: no count of paths the bytes left
	// cannot hold is allocated for.
	if d.Failed() || n > len(body)/5 {
		return nil, false
	}
	if n > 0 {
		r.Kinds, r.Stats = make([]depKind, n), make([]depStat, n)
	}
	for i, k := range kinds {
		if depKind(k) > depGit {
			return nil, false
		}
		r.Kinds[i] = depKind(k)
	}
	for i := range r.Stats {
		s := &r.Stats[i]
		s.Stat, s.Type = statcache.DecodeStat(d), d.Uint32()
	}
	for range d.Count(33) {
		i := d.Uvarint()
		names := d.Fixed(32)
		if d.Failed() || i >= uint64(n) {
			return nil, false
		}
		copy(r.Stats[i].Names[:], names)
	}
	r.Head = d.String()
	r.Report = d.Bytes()
	r.Kept = d.Strings()
	r.GitAsked, r.MarkTracked, r.Withheld = d.Bool(), d.Bool(), d.Bool()
	r.Index, r.IndexID = d.String(), d.String()
	if !d.OK() {
		return nil, false
	}
	return r, true
}

// readReplay reads the record of root; nil when there is none usable.
func readReplay(root string) *replayRecord {
	body, ok := cachedir.ReadSealed(root, ReplayFile, replayMagic, maxReplay)
	if !ok {
		return nil
	}
	r, ok := decodeRecord(body)
	if !ok {
		return nil
	}
	return r
}

// statsNow stats every path of r, on two goroutines for a long list (git's
// core.preloadIndex does the same: the calls wait on the kernel, not on
// each other).
func statsNow(r *replayRecord) []depStat {
	out := make([]depStat, len(r.Paths))
	parallel.Ranges(len(r.Paths), parallel.Workers(len(r.Paths), 512), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			out[i] = lstatDep(r.Paths[i])
		}
	})
	return out
}

// changedAt lists the indexes of the recorded paths whose state changed,
// in order (none: nothing did). It fills now's listing hashes: the
// recorded one when the directory's stat is unchanged, else the directory
// is listed.
func changedAt(r *replayRecord, now []depStat, mode statcache.Mode) []int {
	var changed []int
	for i := range r.Paths {
		if r.Kinds[i] == depList {
			if statcache.Same(statcache.Entry{Stat: r.Stats[i].Stat}, now[i].Stat, mode) {
				now[i].Names = r.Stats[i].Names
			} else if now[i].Type != 0 {
				now[i].Names = manifest.ListDirSum(r.Paths[i])
			}
		}
		if !same(r.Kinds[i], r.Stats[i], now[i], mode) {
			changed = append(changed, i)
		}
	}
	return changed
}

// gitsOwn reports whether every changed path (indexes into paths) is a
// file below gitDir, the worktree's git directory: git's state (the
// index), not a file of the memory or the worktree.
func gitsOwn(paths []string, changed []int, gitDir string) bool {
	if gitDir == "" {
		return false
	}
	for _, i := range changed {
		if _, ok := manifest.Within(gitDir, paths[i]); !ok {
			return false
		}
	}
	return true
}

// headNow is HEAD's commit of the repository at root ("" when there is
// none), read with go-git.
func headNow(root string) string {
	repo, err := gitrepo.Open(root, gitrepo.Options{Up: true})
	if err != nil {
		return ""
	}
	ref, err := repo.Head()
	if err != nil {
		return ""
	}
	return ref.Hash().String()
}

// replayStart is what the replay check learnt before a full pass: the
// record it found (with the same key) and its paths' stats, taken before
// the pass read anything.
type replayStart struct {
	at    time.Time
	rec   *replayRecord
	stats []depStat
	// gitOnly: the pass (Pass.AfterGit) was answered from the record
	// though HEAD or git's own files changed since.
	gitOnly bool
	// recIndex is the stat the record held for git's index (rec.Index),
	// kept when the record's stats are let go (letGoRecorded); nil when
	// it held none.
	recIndex *depStat
}

// letGoRecorded lets go of the stats the record held, once the check has
// compared them, before the full pass: the confirmation after it compares
// the stats taken now (stats) and the record's paths, and noteIndex the
// index's recorded stat, kept. At 100,000 observations they were 2 MB
// held through the pass.
func (s *replayStart) letGoRecorded() {
	if s == nil || s.rec == nil {
		return
	}
	r := *s.rec
	if st := r.indexStat(); st != nil {
		c := *st
		s.recIndex = &c
	}
	r.Stats = nil
	s.rec = &r
}

// indexStat is the stat r holds for git's index (r.Index), nil when it
// names none or holds no stats.
func (r *replayRecord) indexStat() *depStat {
	if r.Index == "" {
		return nil
	}
	if i, ok := slices.BinarySearch(r.Paths, r.Index); ok && i < len(r.Stats) {
		return &r.Stats[i]
	}
	return nil
}

// known hands what the replay check stat'ed to the full pass that runs
// when it could not replay (heal.Options.Known): every input of the last
// pass, stat'ed a moment ago, is not stat'ed again.
func (s *replayStart) known() statcache.Known {
	if s == nil || s.rec == nil || len(s.stats) != len(s.rec.Paths) {
		return statcache.Known{}
	}
	stats := make([]statcache.KnownStat, len(s.stats))
	for i := range s.stats {
		stats[i] = statcache.KnownStat{Stat: s.stats[i].Stat, Type: s.stats[i].Type}
	}
	return statcache.NewKnown(s.rec.Paths, stats) // the record's paths are sorted
}

// tryReplay answers p from the record when nothing it depends on changed.
// It returns what it stat'ed for the full pass's confirmation.
func (e *Engine) tryReplay(p Pass, key string) (heal.Result, bool, *replayStart) {
	// The check allocates a few megabytes at most (the record, the stats)
	// and is over in milliseconds: a collection in the middle costs more
	// than the memory it would free.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	start := &replayStart{at: time.Now()}
	if key == "" {
		return heal.Result{}, false, start
	}
	rec := readReplay(e.root)
	if rec == nil {
		return heal.Result{}, false, start
	}
	if rec.Key != key {
		// Another kind of pass recorded it (the reconcile command, a
		// hook): never replayed here, but its paths stat'ed now let the
		// full pass confirm its own record and skip those stats.
		start.rec, start.stats = rec, statsNow(rec)
		changedAt(rec, start.stats, statcache.ModeOf(e.cfg.Engine.CheckStat)) // the listings' hashes
		return heal.Result{}, false, start
	}
	// The day's first session pass records kept events: never a replay
	// (its stats are taken all the same, for the record).
	keptDue := p.Session && !p.NoFeedback && journal.KeptDue(e.root, p.Now)
	if p.Session && !keptDue {
		// The session index reads the log next: read it while the
		// stats are taken (dropped if the pass is not replayed).
		e.prefetchLog()
	}
	start.rec, start.stats = rec, statsNow(rec)
	changed := changedAt(rec, start.stats, statcache.ModeOf(e.cfg.Engine.CheckStat))
	// A git hook's pass is not run when only git's own files moved,
	// unless the record's answers came from git.
	afterGit := p.AfterGit && !rec.GitAsked
	// git status (and any git command that refreshes the index) rewrites
	// the index with new stat data when files were touched: when that is
	// the only change, what the pass read of the index is compared (a git
	// hook's pass that is not run anyway does not read it). The record is not
	// written again, nor the identity kept (a replay writes nothing): the
	// session index right after a replay keeps it with the index's
	// checksum (staleness.IndexDigestFile), as every full pass does, and
	// the next check reads that instead of decoding the index.
	refreshed := len(changed) == 1 && !afterGit && indexRefreshed(e.root, rec, changed[0], start.stats[changed[0]])
	if refreshed {
		changed = nil
	}
	if len(changed) > 0 && !afterGit {
		e.log.Debug("pass replay: input changed", "path", rec.Paths[changed[0]])
		return heal.Result{}, false, start
	}
	if len(changed) > 0 {
		gitDir, _ := gitrepo.GitDir(e.root)
		if !gitsOwn(rec.Paths, changed, gitDir) {
			e.log.Debug("pass replay: input changed", "path", rec.Paths[changed[0]])
			return heal.Result{}, false, start
		}
	}
	if keptDue {
		return heal.Result{}, false, start
	}
	if !rec.Confirmed {
		e.log.Debug("pass replay: record not confirmed yet")
		return heal.Result{}, false, start
	}
	if rec.Withheld && rec.MarkTracked != p.MarkTracked {
		e.log.Debug("pass replay: the recording pass left changes for a person's pass")
		return heal.Result{}, false, start
	}
	if len(changed) > 0 {
		start.gitOnly = true
	} else if want := strings.TrimPrefix(rec.Head, "none"); rec.Head != "" && headNow(e.root) != want {
		if !afterGit {
			return heal.Result{}, false, start
		}
		start.gitOnly = true
	}
	var res heal.Result
	if json.Unmarshal(rec.Report, &res) != nil {
		return heal.Result{}, false, start
	}
	res.Kept = rec.Kept
	if refreshed {
		e.log.Debug("pass replayed: git's index was rewritten, nothing the pass read of it changed")
	}
	return res, true, start
}

// deps lists what the full pass res depended on: its inputs, the
// staleness pass's, the inbox, an interrupted feedback or citation record and the kept
// stamp, the directories on the way to each, the directories listed, and
// outside git the .git a repository would add.
func deps(root string, res heal.Result) (paths []string, kinds []depKind) {
	kind := map[string]depKind{}
	add := func(p string, k depKind) {
		if old, ok := kind[p]; !ok || old == depWay {
			kind[p] = k
		}
	}
	files := slices.Concat(res.Inputs, res.StaleInputs.Files, []string{
		filepath.Join(root, ".memory", inbox.Dir),
		journal.Path(root, journal.PassFile),
		journal.Path(root, journal.KeptFile),
		filepath.Join(root, filepath.FromSlash(citation.PassFile)),
	})
	for _, f := range files {
		add(f, depFile)
	}
	for _, d := range res.StaleInputs.Dirs {
		add(d, depList)
	}
	if res.GitAsked {
		for _, f := range res.Git.Files {
			add(f, depGit)
		}
		for _, d := range res.Git.Dirs {
			add(d, depList)
		}
		files = append(files, res.Git.Files...) // their way is an input too
	}
	// Every directory from the root down to each input's parent: one
	// swapped for a symlink would change what the pass may read.
	add(root, depWay)
	walked := map[string]bool{} // directories whose way up is added
	clean := filepath.Clean(root)
	prefix := clean + string(filepath.Separator)
	for _, f := range files {
		if !strings.HasPrefix(f, prefix) || filepath.Clean(f) != f {
			rel, ok := manifest.Within(clean, f)
			if !ok {
				continue
			}
			f = filepath.Join(clean, rel)
		}
		// Each parent below the root, as a prefix of f (f is clean):
		// no path is built, and a directory met before ends the walk.
		for i := strings.LastIndexByte(f, filepath.Separator); i > len(clean); i = strings.LastIndexByte(f[:i], filepath.Separator) {
			p := f[:i]
			if walked[p] {
				break // and every directory above it
			}
			walked[p] = true
			add(p, depWay)
		}
	}
	if !res.StaleInputs.Git {
		// A repository created here (or above) would change the check.
		for d := root; ; d = filepath.Dir(d) {
			add(filepath.Join(d, ".git"), depFile)
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	paths = make([]string, 0, len(kind))
	for p := range kind {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	kinds = make([]depKind, len(paths))
	for i, p := range paths {
		kinds[i] = kind[p]
	}
	return paths, kinds
}

// recordable reports whether a full pass left the memory as it found it,
// so that its report is what any pass on the same inputs reports.
func recordable(res heal.Result) bool {
	in := res.Inbox
	// No Inputs: there was no learning log, nothing was looked at (and no
	// .memory to put a record in).
	return len(res.Inputs) > 0 && len(res.Wrote) == 0 && res.Recorded == 0 &&
		in.Drained+in.Completed+in.Observations+in.Events+in.Citations+in.Feedback == 0 &&
		len(in.Rejected) == 0 && in.Skipped == "" && in.Deferred == "" && !in.CitationPass &&
		(!res.GitAsked || res.Git.Complete) && res.CacheErr == nil && res.StaleCacheErr == nil
}

// recordReplay writes the record of a full pass res (or removes a record
// that no longer describes the memory). start is what tryReplay stat'ed.
// The record is disposable: an error writing it (a full disk) is returned
// for a warning, a read-only memory directory is not one; so are the log
// facts a confirming pass writes (factsErr).
func (e *Engine) recordReplay(key string, p Pass, res heal.Result, start *replayStart) (recErr, factsErr error) {
	path := cachedir.Path(e.root, ReplayFile)
	if !recordable(res) {
		if len(res.Inputs) == 0 {
			if start.rec != nil {
				_ = os.Remove(path)
			}
			return nil, nil
		}
		// A pass that wrote leaves no report to replay, only what it
		// depended on, unconfirmed and with no stats: the next pass stats
		// those paths before it reads anything (tryReplay), so its own
		// record is confirmed at once instead of one full pass later.
		rec := replayRecord{Key: key}
		rec.Paths, rec.Kinds = deps(e.root, res)
		rec.Stats = make([]depStat, len(rec.Paths))
		// Never replayed, so not synced: a power cut costs one more pass.
		return cachedir.WriteSealedUnsynced(e.root, ReplayFile, encodeRecord(&rec)), nil
	}
	paths, kinds := deps(e.root, res)
	rec := replayRecord{Key: key, Paths: paths, Kinds: kinds, Kept: res.Kept}
	rec.Stats = statsNow(&rec)
	for i, k := range rec.Kinds {
		if k == depList && rec.Stats[i].Type != 0 {
			rec.Stats[i].Names = manifest.ListDirSum(rec.Paths[i])
		}
	}
	if res.StaleInputs.Git || res.GitAsked { // recordable: its inputs complete
		head := res.Git.Head
		if res.StaleInputs.Git {
			head = res.StaleInputs.Head
		}
		if rec.Head = head; rec.Head == "" {
			rec.Head = "none"
		}
	}
	rec.GitAsked = res.GitAsked
	rec.MarkTracked, rec.Withheld = p.MarkTracked, res.Withheld
	noteIndex(e.root, &rec, start.rec, start.recIndex)
	mode := statcache.ModeOf(e.cfg.Engine.CheckStat)
	wait := quiet(mode)
	if e.replayQuiet > 0 {
		wait = e.replayQuiet
	}
	why := unconfirmed(e.root, start, &rec, mode, wait)
	rec.Confirmed = why == ""
	e.log.Debug("pass replay recorded", "paths", len(rec.Paths), "confirmed", rec.Confirmed, "why_not", why)
	if rec.Confirmed {
		// The log did not change while this pass read it, nor just
		// before: what the session index needs of it can stand in for it
		// while its stat stays (logfacts.go). Not written, the index
		// reads the log: a warning, and the record is written all the same.
		if i, ok := slices.BinarySearch(rec.Paths, manifest.PathsFor(e.root).Log); ok {
			factsErr = saveLogFacts(e.root, res.Log, rec.Stats[i].Stat, rec.Stats[i].Type)
		}
	}
	report, err := json.Marshal(res)
	if err != nil {
		return err, factsErr
	}
	rec.Report = report
	return cachedir.WriteSealed(e.root, ReplayFile, encodeRecord(&rec)), factsErr
}

// unconfirmed says why rec, the record of a full pass, cannot be trusted
// yet ("" when it can): its inputs were not stat'ed before the pass (no
// record, or one with other paths), one changed during the pass, or one
// changed less than wait before it (only files: listed directories are
// compared by their names, the directories on the way by their inode).
func unconfirmed(root string, start *replayStart, rec *replayRecord, mode statcache.Mode, wait time.Duration) string {
	if start.rec == nil {
		return "first record"
	}
	// Every input of this pass must have been stat'ed before it: the last
	// record's paths hold them all (both lists are sorted). It may hold
	// more: the pass that wrote it asked git, and this one did not.
	at := make([]int, len(rec.Paths))
	j := 0
	for i, p := range rec.Paths {
		for j < len(start.rec.Paths) && start.rec.Paths[j] < p {
			j++
		}
		if j == len(start.rec.Paths) || start.rec.Paths[j] != p || start.rec.Kinds[j] != rec.Kinds[i] {
			return "other inputs than the last record"
		}
		at[i] = j
	}
	ns := start.at.Add(-wait).UnixNano()
	// The memory directory and the cache directory change while a pass
	// holds the lock (the lock directory, the caches' atomic writes): their
	// names are compared. Any other listed directory must not have changed
	// at all: a file created and removed while the pass listed it leaves
	// the same names, not the same mtime.
	lockDirs := map[string]bool{filepath.Join(root, ".memory"): true, cachedir.Dir(root): true}
	// Git never rewrites its index in place: it writes index.lock and
	// renames it over the index, so a new index always has another inode
	// than the one it replaced and a stat taken just after a checkout
	// proves what it describes. Without this every git hook's pass, which
	// runs right after git wrote the index, left a record it could not
	// confirm, and the next one ran in full again.
	var index string
	if gitDir, err := gitrepo.GitDir(root); err == nil {
		index = filepath.Join(gitDir, "index")
	}
	for i, k := range rec.Kinds {
		was := start.stats[at[i]]
		if !same(k, was, rec.Stats[i], mode) ||
			k == depList && !lockDirs[rec.Paths[i]] && !statcache.Same(statcache.Entry{Stat: was.Stat}, rec.Stats[i].Stat, mode) {
			return "changed during the pass: " + rec.Paths[i]
		}
		// A file git replaced by a rename has a new inode: one it wrote
		// just before the pass proves what it is (under check_stat:
		// minimal the inode is not compared, and the wait stands).
		racy := k == depFile || k == depGit && mode == statcache.Minimal
		if s := rec.Stats[i]; racy && recent(s.Stat, ns, mode) && rec.Paths[i] != index {
			return "changed just before the pass: " + rec.Paths[i]
		}
	}
	return ""
}

// recent reports whether a file with stat s may have changed at ns or
// after. Every write to a file sets its ctime to the kernel's clock, and
// nothing else can set it: where ctime is trusted (check_stat: default, a
// platform that has one) it alone says when the file last changed. Its
// mtime can be anything (touch -d, an archive unpacked with the dates of
// a machine whose clock ran fast): a file dated ahead of the clock would
// otherwise keep every record unconfirmed, and every pass full, until its
// date came. Under check_stat: minimal the mtime is all there is.
func recent(s statcache.Stat, ns int64, mode statcache.Mode) bool {
	if mode != statcache.Minimal && s.Ctime != 0 {
		return s.Ctime >= ns
	}
	return s.Mtime >= ns || s.Ctime >= ns
}

// indexPath is the index file of the worktree at root, the one a pass's
// git answers and its staleness pass read: "" outside git, or when
// GIT_INDEX_FILE names another (a commit's temporary index, whose record
// is never compared with a later index).
func indexPath(root string) string {
	if os.Getenv("GIT_INDEX_FILE") != "" {
		return ""
	}
	gitDir, err := gitrepo.GitDir(root)
	if err != nil || gitDir == "" {
		return ""
	}
	return filepath.Join(gitDir, "index")
}

// noteIndex sets rec.Index and rec.IndexID, rec's stats and GitAsked being
// taken: the identity (indexID) of the index file whose stat is the one
// recorded, taken from last (the record the pass started from) when it
// recorded the same stat for a pass of the same kind: lastIndex, or
// last's own stats when it still holds them (letGoRecorded).
// An index that is not among rec's paths, or was replaced since its stat
// was taken, leaves both "": a change of its stat then runs a full pass.
func noteIndex(root string, rec, last *replayRecord, lastIndex *depStat) {
	path := indexPath(root)
	i, ok := slices.BinarySearch(rec.Paths, path)
	if path == "" || !ok || rec.Kinds[i] == depList || rec.Kinds[i] == depWay || rec.Stats[i].Type == 0 {
		return
	}
	if last != nil && last.Index == path && last.IndexID != "" && last.GitAsked == rec.GitAsked {
		if lastIndex == nil {
			lastIndex = last.indexStat() // last.Index is path
		}
		if lastIndex != nil && *lastIndex == rec.Stats[i] {
			rec.Index, rec.IndexID = path, last.IndexID
			return
		}
	}
	if id, fi := staleness.IndexIdentity(root, path, true); rec.indexID(id) != "" && fi != nil && statcache.StatOf(fi) == rec.Stats[i].Stat {
		rec.Index, rec.IndexID = path, rec.indexID(id)
	}
}

// indexID is the part of an index's identity rec's pass depended on: a
// pass that asked git about an artifact read the index's blobs and flags
// (is a deleted file still staged, which sections does its staged version
// hold); any other read at most the names it holds (the staleness pass
// against HEAD lists the tracked files from it, and whether the log or
// the manifest is tracked decides what a hook's pass withholds).
func (rec *replayRecord) indexID(id staleness.IndexID) string {
	if rec.GitAsked {
		return id.Staged
	}
	return id.Names
}

// indexRefreshed reports whether the changed path at i of rec is its index
// (noteIndex) rewritten with nothing changed that rec's pass read of it:
// the file whose stat is now (the stat the replay check compared) has the
// recorded identity. Git writes the index by a rename, never in place: the file
// read is the one whose stat was taken, or the stats differ.
func indexRefreshed(root string, rec *replayRecord, i int, now depStat) bool {
	if rec.IndexID == "" || rec.Paths[i] != rec.Index || now.Type == 0 {
		return false
	}
	id, fi := staleness.IndexIdentity(root, rec.Index, false) // a replay writes nothing
	return fi != nil && statcache.StatOf(fi) == now.Stat && rec.indexID(id) == rec.IndexID
}
