package heal

import (
	"bytes"
	"errors"
	"hash/maphash"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/safefs"
)

// Warm is what a pass leaves for the next pass of the same process (the
// watcher's engine): the log, manifest, usage and knowledge files parsed
// as the pass wrote or read them, what it found of every artifact (its
// relative path; read, verified by the stat cache, missing, unreadable or
// refused) and of the lost observations, and the stat of each of those
// files taken under the lock once the pass had written. A later pass with
// Options.Touched takes them instead of reading and parsing the files
// again, and looks at the touched artifacts only, when every file still
// has its stat (Warm.usable); a file with another stat is another file,
// and the pass reads everything as usual.
//
// A stat proves nothing about a file written within the same clock tick
// it was taken in (git's racily clean entries): until Prove compared the
// contents after that tick, a file whose mtime is that recent makes the
// state unusable. The watcher proves a warm state while it is idle, off
// the path of the next event.
//
// A Warm is not safe for concurrent use; the zero value (or nil) vouches
// for nothing.
type Warm struct {
	valid bool
	st    State // the parsed files and the per-artifact maps of the pass
	files []warmFile
	// sure[i] is set when files[i] needs no proof: absent, or proved
	// before and not written since (its stat unchanged); sums holds the
	// proofSeed sum of what the pass wrote to a file, taken as it was
	// staged (the log, the manifest): Prove compares the file's sum with
	// it instead of rendering the state again.
	sure   []bool
	sums   map[string]uint64
	at     int64 // ns, when the stats were taken
	proved bool
}

// proofSeed seeds the sums a warm state keeps of the files its pass
// wrote (Warm.sums): they are compared within this process only.
var proofSeed = maphash.MakeSeed()

// proofHash is a hash to sum a file with as it is written (Warm.sums).
func proofHash() *maphash.Hash {
	h := new(maphash.Hash)
	h.SetSeed(proofSeed)
	return h
}

// warmFile is one file a warm state stands for: its stat then, or absent.
type warmFile struct {
	path   string
	absent bool
	stat   statcache.Stat
}

// racyWindow is how recent a file's mtime may be, against the time its
// stat was taken, before the stat stops proving anything: more than the
// coarsest file-time tick of a common kernel (10 ms at HZ=100).
const racyWindow = 50 * time.Millisecond

// Forget drops the warm state: the next pass reads every file. It
// returns what the state vouched for, for capture to carry a proof over
// files the pass did not write.
func (w *Warm) Forget() (was Warm) {
	if w != nil {
		was, *w = *w, Warm{}
	}
	return was
}

// Valid reports whether w holds a state (proved or not).
func (w *Warm) Valid() bool { return w != nil && w.valid }

// Log is the learning log w holds (nil when it holds none): a pass that
// took the state hands this one on (Result.Log).
func (w *Warm) Log() *manifest.Log {
	if w == nil || !w.valid {
		return nil
	}
	return w.st.Log
}

// ManifestPaths returns the paths of the manifest w holds, when the
// manifest file still has the stat w recorded (the watcher's watch set,
// right after the pass that wrote it: no 14 MB read). The racy window is
// not asked: a rewrite of the same size in the same tick would be another
// writer's, whose event brings another pass and another look.
func (w *Warm) ManifestPaths(p manifest.Paths) (iter.Seq[string], bool) {
	if w == nil || !w.valid || w.st.Manifest == nil {
		return nil, false
	}
	for _, f := range w.files {
		if f.path != p.Manifest {
			continue
		}
		if now, ok := statFile(f.path); !ok || now != f || f.absent {
			return nil, false
		}
		entries := w.st.Manifest.Entries
		return func(yield func(string) bool) {
			for i := range entries {
				if !yield(entries[i].Path) {
					return
				}
			}
		}, true
	}
	return nil, false
}

// warmPaths are the files a warm state stands for.
func warmPaths(p manifest.Paths) []string {
	return []string{p.Log, p.Manifest, p.Usage, p.Decisions, p.Pitfalls}
}

// usable reports whether the files of w still are what it parsed: a
// touched pass (the watcher's: touched not nil), the memory directory the
// same directory, every file with its recorded stat (or still absent),
// and either proved or none of them written within the racy window.
func (w *Warm) usable(p manifest.Paths, touched map[string]bool) bool {
	if w == nil || !w.valid || touched == nil {
		return false
	}
	for rel := range touched {
		// An event on one of the state's own files: read them all.
		if abs := filepath.Join(p.Root, filepath.FromSlash(rel)); isWarmPath(p, abs) {
			return false
		}
	}
	if !w.sameStats() {
		return false
	}
	return w.proved || !racy(w.files, w.at)
}

func isWarmPath(p manifest.Paths, abs string) bool {
	for _, q := range warmPaths(p) {
		if abs == q {
			return true
		}
	}
	return false
}

// sameStats reports whether every file still has its recorded stat.
func (w *Warm) sameStats() bool {
	for _, f := range w.files {
		if now, ok := statFile(f.path); !ok || now != f {
			return false
		}
	}
	return true
}

// lend fills st from w: the parsed files and what the last pass found of
// each artifact (read, verified by the stat cache, missing, unreadable,
// refused, resolved), and returns the stat cache entries behind the
// verified ones. The objects are shared: the pass edits them in place,
// and a failed pass must Forget w.
func (w *Warm) lend(st *State) (vouched map[string]statcache.Entry) {
	st.Log, st.Manifest, st.ManifestExists = w.st.Log, w.st.Manifest, w.st.ManifestExists
	st.Usage, st.Knowledge, st.Sections = w.st.Usage, w.st.Knowledge, w.st.Sections
	st.Files, st.Verified, st.Missing = w.st.Files, w.st.Verified, w.st.Missing
	st.Unreadable, st.Refused, st.Rel, st.Foreign = w.st.Unreadable, w.st.Refused, w.st.Rel, w.st.Foreign
	st.vouched, st.lost, st.prior = w.st.vouched, w.st.lost, w.st.notes
	return w.st.vouched
}

// lendCopy fills st as lend does, from a copy of what w holds (its
// objects cloned): a pass that edits it leaves w as it was, so w still
// stands for the files when the pass is dropped unwritten (a prepared
// pass: Prepare). At 50,000 artifacts the copy takes about 20 ms, off the
// path of the event the pass is prepared for.
func (w *Warm) lendCopy(st *State) (vouched map[string]statcache.Entry) {
	c := Warm{st: w.st.keptCopy()}
	return c.lend(st)
}

// keptCopy is a copy of what a warm state keeps of s (capture): the log's
// lines, the manifest's entries, the usage file and the per-artifact maps
// cloned, the lost observations the copy's own.
func (s *State) keptCopy() State {
	c := State{ManifestExists: s.ManifestExists, Manifest: s.Manifest.Clone(), Usage: s.Usage.Clone(),
		Knowledge: maps.Clone(s.Knowledge), Sections: maps.Clone(s.Sections),
		Files: maps.Clone(s.Files), Verified: maps.Clone(s.Verified), Missing: maps.Clone(s.Missing),
		Unreadable: maps.Clone(s.Unreadable), Refused: maps.Clone(s.Refused), Rel: maps.Clone(s.Rel),
		Foreign: maps.Clone(s.Foreign), vouched: maps.Clone(s.vouched), notes: slices.Clone(s.notes)}
	var obs func(*manifest.Observation) *manifest.Observation
	c.Log, obs = s.Log.Clone()
	c.lost = make([]*manifest.Observation, len(s.lost))
	for i, o := range s.lost {
		c.lost[i] = obs(o)
	}
	return c
}

// capture records st, as the pass wrote it, in w; it stats the files
// under the lock. A state that did not parse cleanly (a corrupt manifest
// or usage file, no log) is not kept. sums are the proofSeed sums of the
// files the pass wrote whose bytes it had (by path; nil for none).
func (w *Warm) capture(st *State, p manifest.Paths, prev Warm, sums map[string]uint64) {
	if w == nil {
		return
	}
	*w = Warm{}
	if st.Log == nil || !st.Log.Exists || st.ManifestErr != nil || st.UsageErr != nil {
		return
	}
	for _, path := range []string{p.Decisions, p.Pitfalls} {
		if rel, err := filepath.Rel(p.Root, path); err != nil || st.Refused[filepath.ToSlash(rel)] != nil {
			return // a refused knowledge file (a link on its way): read it every time
		}
	}
	w.at = time.Now().UnixNano()
	files, ok := statFiles(p)
	if !ok {
		return // not a regular file (refused): nothing to vouch for
	}
	w.files = files
	manifestExists := slices.ContainsFunc(files, func(f warmFile) bool { return f.path == p.Manifest && !f.absent })
	w.st = State{Log: st.Log, Manifest: st.Manifest, ManifestExists: manifestExists,
		Usage: st.Usage, Knowledge: st.Knowledge, Sections: st.Sections,
		Files: st.Files, Verified: st.Verified, Missing: st.Missing, Unreadable: st.Unreadable,
		Refused: st.Refused, Rel: st.Rel, Foreign: st.Foreign, vouched: st.vouched, lost: st.lost, notes: st.notes}
	if w.st.vouched == nil {
		w.st.vouched = map[string]statcache.Entry{}
	}
	if w.st.Sections == nil {
		w.st.Sections = map[string][]markdown.Section{}
		for rel, src := range st.Knowledge {
			w.st.Sections[rel] = markdown.Sections(src)
		}
	}
	w.valid = true
	// A proof holds for files the pass did not write: the same stats as
	// in the state it was lent, where they were proved. A pass that wrote
	// the manifest alone (an edit) leaves the log proved: only the
	// manifest is read again.
	w.sure = make([]bool, len(files))
	w.proved = true
	for i, f := range files {
		w.sure[i] = f.absent || prev.sureOf(f)
		w.proved = w.proved && w.sure[i]
	}
	w.sums = sums
}

// sureOf reports whether w, valid, proved the file f stands for with f's
// very stat.
func (w *Warm) sureOf(f warmFile) bool {
	if !w.valid {
		return false
	}
	for i, g := range w.files {
		if g.path == f.path {
			return g == f && (w.proved || w.sure[i])
		}
	}
	return false
}

// Prove compares each file of w with what w parsed, once the racy window
// of the stats is over: a file rewritten with the same size within the
// tick its stat was taken in has other content. Equal contents make w
// usable whatever the file times; anything else forgets w. It reads
// without the lock (a writer in the middle of a write gives other
// content: w is forgotten). It reports whether w is proved; false also
// when it is too early (call again later).
func (w *Warm) Prove(p manifest.Paths) bool {
	if w == nil || !w.valid {
		return false
	}
	if w.proved {
		return true
	}
	if time.Now().UnixNano() < w.at+int64(racyWindow) {
		return false
	}
	if !w.sameStats() {
		w.Forget()
		return false
	}
	seed := maphash.MakeSeed()
	for i, f := range w.files {
		if w.sure[i] {
			continue
		}
		b, err := safefs.ReadFile(f.path, safefs.MaxJournal)
		if err != nil || !w.holds(p, f.path, b, seed) {
			w.Forget()
			return false
		}
	}
	if !w.sameStats() {
		w.Forget()
		return false
	}
	w.proved = true
	w.st.Log.Settle() // the next pass's change checks compare fields
	w.vouch()
	return true
}

// vouch turns the artifacts the last pass read and found unchanged into
// verified ones, as if the stat cache had vouched for them: the next pass
// compares their hash instead of hashing their bytes again (and the bytes
// are let go). A file some entry does not match stays as it is.
//
// After a watcher's pass a file or two is held among tens of thousands:
// the held files are found first, then the manifest paths resolving to
// them (one walk of Rel) and their entries (one walk of the manifest),
// each compared as a string, where a lookup of every entry's path in
// three maps took 20–60 ms at 50,000 artifacts (on the way of the
// preparation of the watcher's next pass: Prove).
func (w *Warm) vouch() {
	st := &w.st
	held := map[string]bool{}
	for rel, b := range st.Files {
		if len(b) > 0 && !st.Verified[rel] {
			held[rel] = true
		}
	}
	if len(held) == 0 {
		return
	}
	isHeld := touchedTest(held)
	naming := map[string]bool{} // the manifest paths resolving to a held file
	for path, rel := range st.Rel {
		if isHeld(rel) {
			naming[path] = true
		}
	}
	names := touchedTest(naming)
	byRel := map[string][]manifest.Entry{}
	for _, e := range st.Manifest.Entries {
		if names(e.Path) {
			rel := st.Rel[e.Path]
			byRel[rel] = append(byRel[rel], e)
		}
	}
	for rel, es := range byRel {
		b := st.Files[rel]
		ce := statcache.Entry{SHA: manifest.Hash(b)}
		ok := true
		for _, e := range es {
			if manifest.IsLegacyHash(e.ContentHash) && ce.DJB2 == "" {
				ce.DJB2 = manifest.DJB2(b)
			}
			if e.AnchorID != "" || e.Deleted != nil || !manifest.Unchanged(e.ContentHash, b, b) || !statcache.Verifies(ce, e.ContentHash) {
				ok = false
				break
			}
		}
		if ok {
			st.Verified[rel], st.Files[rel], st.vouched[rel] = true, []byte{}, ce
		}
	}
}

// holds reports whether b, the content of path, is what w parsed from it:
// the sum of what the pass wrote there when it kept one (Warm.sums), else
// the state rendered again.
func (w *Warm) holds(p manifest.Paths, path string, b []byte, seed maphash.Seed) bool {
	if sum, ok := w.sums[path]; ok {
		return maphash.Bytes(proofSeed, b) == sum
	}
	switch path {
	case p.Log:
		var h maphash.Hash
		h.SetSeed(seed)
		if _, err := w.st.Log.WriteTo(&h); err != nil {
			return false
		}
		return h.Sum64() == maphash.Bytes(seed, b)
	case p.Manifest:
		enc, err := w.st.Manifest.Encode()
		return err == nil && bytes.Equal(enc, b)
	case p.Usage:
		enc, err := w.st.Usage.Encode()
		return err == nil && bytes.Equal(enc, b)
	}
	rel, _ := filepath.Rel(p.Root, path)
	k, ok := w.st.Knowledge[filepath.ToSlash(rel)]
	return ok && bytes.Equal(k, b)
}

// statFiles stats the memory files a state stands for (warmPaths); ok is
// false when one is not a regular file.
func statFiles(p manifest.Paths) ([]warmFile, bool) {
	var out []warmFile
	for _, path := range warmPaths(p) {
		f, ok := statFile(path)
		if !ok {
			return nil, false
		}
		out = append(out, f)
	}
	return out, true
}

// statFile stats one of them: its stat, absent, or ok false when it is
// something else than a regular file.
func statFile(path string) (warmFile, bool) {
	if s, ok := statcache.Lstat(path); ok {
		return warmFile{path: path, stat: s}, true
	}
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		return warmFile{}, false
	}
	return warmFile{path: path, absent: true}, true
}

// racy reports whether a file of files was modified within the racy
// window before at, when the stats were taken: a rewrite of the same size
// in the same clock tick would keep its stat.
func racy(files []warmFile, at int64) bool {
	return slices.ContainsFunc(files, func(f warmFile) bool { return f.racy(at) })
}

// racy reports whether f, present, was written within the racy window
// before at.
func (f warmFile) racy(at int64) bool {
	return !f.absent && f.stat.Mtime >= at-int64(racyWindow)
}
