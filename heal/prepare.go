package heal

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/gitrepo"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// Prepared is a pass read, planned and staged ahead of the moment it may
// be recorded: the watcher prepares a burst's pass while its debounce
// runs, and the pass that calls the artifacts of a grace window deleted
// shortly before the window ends, so that when the moment comes only the
// commit is left (renames, the feedback record).
//
// Commit records it only if nothing it read can have changed: the memory
// files and the touched artifacts have the stats they had when it read
// them (the memory files not written within the racy window before; a
// touched artifact that was has its content compared too), git has not
// moved, and the artifacts it calls deleted are still missing. The caller
// vouches for the rest — no event on an artifact since the pass began
// (the watcher's events). A Prepared that cannot be committed is dropped
// and the caller runs the pass as usual.
//
// The pass works on a copy of the caller's kept state (Options.Warm),
// which stays as it was until the commit replaces it: a dropped Prepared
// costs the next pass nothing.
type Prepared struct {
	pr    *pass
	files []warmFile // the memory files as the pass read them
	// touched are the files of Options.Touched as the pass read them: a
	// pass prepared for a change (the watcher prepares a burst's pass
	// while its debounce runs) stands only while they keep those stats,
	// whatever the events say.
	touched []warmFile
	// racy holds, for the touched files written within the racy window
	// before the pass (an edit the watcher prepares for right after its
	// event), the sum of their content then: their stats cannot vouch
	// for them, so the commit reads them again and compares.
	racy map[string]uint64
	seed maphash.Seed
	at   int64 // ns, when their stats were taken
	done bool
}

// ErrNotPrepared is what Prepare returns when the memory files were written
// too recently for their stats to vouch for them until the commit (the
// racy window), or the inbox drain wrote the log: prepare again a little
// later.
var ErrNotPrepared = errors.New("memory files written too recently to prepare a pass")

// Prepare reads, plans and stages the pass opts describes as Reconcile
// would, at opts.Now, and holds it uncommitted (Commit, Drop). opts.Known
// is ignored. A nil Prepared with a nil error means there is nothing to
// record (no log). opts.Cache, when set, is in the pass until Commit or
// Drop: no other pass may use it meanwhile.
func Prepare(ctx context.Context, root string, opts Options) (*Prepared, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	p := manifest.PathsFor(root)
	lock, drained, err := inbox.LockLog(ctx, root, opts.LockTimeout)
	if err != nil || lock == nil {
		return nil, err
	}
	defer lock.Release()
	if drained.Drained+drained.Completed+drained.Feedback > 0 {
		// The drain wrote the log: a pass reads it at once, with it.
		opts.Warm.Forget()
		return nil, ErrNotPrepared
	}
	at := time.Now().UnixNano()
	files, ok := statFiles(p)
	if !ok || racy(files, at) {
		return nil, ErrNotPrepared
	}
	touched, err := statTouched(root, opts.Touched)
	if err != nil {
		return nil, err
	}
	seed := maphash.MakeSeed()
	racySums, ok := sumRacy(touched, at, seed)
	if !ok {
		return nil, ErrNotPrepared
	}
	opts.Known = nil
	opts.keepWarm = true
	pr, _, err := prepareLocked(ctx, root, p, opts)
	if err != nil || pr == nil {
		if opts.Cache != nil {
			opts.Cache.AbortPass()
		}
		return nil, err
	}
	// Under the lock nothing else writes them; a writer that does not
	// take it (an append) is seen here or at the commit.
	if after, ok := statFiles(p); !ok || !slices.Equal(files, after) {
		dropPass(pr)
		return nil, ErrNotPrepared
	}
	if pr.cache != nil && opts.DeferCache {
		dirty := pr.cache.Dirty()
		pr.dirty = &dirty
	}
	// What the commit would do first, done now: the manifest's sum (the
	// feedback record names it) while the files are staged, and the
	// staging itself finished (its sync is most of a pass's time).
	if pr.manifestBytes != nil {
		pr.manifestSum = journal.ManifestSum(pr.manifestBytes)
	}
	if err := errors.Join(pr.logW.wait(), pr.manifestW.wait()); err != nil {
		dropPass(pr)
		return nil, err
	}
	return &Prepared{pr: pr, files: files, touched: touched, racy: racySums, seed: seed, at: at}, nil
}

// sumRacy sums the content of the touched files written within the racy
// window before at (a pass prepared right after an edit's event): the
// commit compares them again (Prepared.racy). ok is false when one cannot
// be read.
func sumRacy(touched []warmFile, at int64, seed maphash.Seed) (sums map[string]uint64, ok bool) {
	for _, f := range touched {
		if !f.racy(at) {
			continue
		}
		b, err := safefs.ReadFile(f.path, safefs.MaxKnowledge)
		if err != nil {
			return nil, false
		}
		if sums == nil {
			sums = map[string]uint64{}
		}
		sums[f.path] = maphash.Bytes(seed, b)
	}
	return sums, true
}

// statTouched stats the touched files (relative paths) for Prepare: an
// error when one is neither a regular file nor absent (a directory where
// an artifact was: its pass runs when it is due).
func statTouched(root string, touched map[string]bool) ([]warmFile, error) {
	out := make([]warmFile, 0, len(touched))
	for _, rel := range slices.Sorted(maps.Keys(touched)) {
		f, ok := statFile(filepath.Join(root, filepath.FromSlash(rel)))
		if !ok {
			return nil, fmt.Errorf("not prepared: %s is not a regular file", rel)
		}
		out = append(out, f)
	}
	return out, nil
}

// Now is the pass's clock.
func (x *Prepared) Now() time.Time { return x.pr.opts.Now }

// Commit records the prepared pass under the lock if nothing it read
// changed (see Prepared); ok is false, with nothing written and x
// dropped, when something did. On success the state the pass leaves is in
// its Options.Warm, as Reconcile leaves it. A Prepared is committed or
// dropped once.
func (x *Prepared) Commit(ctx context.Context) (res Result, ok bool, err error) {
	if x == nil || x.done {
		return Result{}, false, nil
	}
	pr := x.pr
	lock, drained, err := inbox.LockLog(ctx, pr.root, pr.opts.LockTimeout)
	if err != nil || lock == nil {
		x.Drop()
		return Result{}, false, err
	}
	defer lock.Release()
	if drained.Drained+drained.Completed+drained.Feedback > 0 || !x.holds() {
		x.Drop()
		return Result{}, false, nil
	}
	x.done = true
	defer pr.drop()
	res, err = pr.commitLocked(ctx)
	if errors.Is(err, ErrGitMoved) {
		if pr.cache != nil {
			pr.cache.AbortPass()
		}
		return Result{}, false, nil
	}
	if err != nil {
		// Some of it may be written: the kept state no longer stands.
		pr.opts.Warm.Forget()
	}
	return res, true, err
}

// holds reports whether what the pass read is still what is there.
func (x *Prepared) holds() bool {
	pr := x.pr
	now, ok := statFiles(pr.p)
	if !ok || !slices.Equal(x.files, now) || racy(x.files, x.at) {
		return false
	}
	if touched, err := statTouched(pr.root, pr.opts.Touched); err != nil || !slices.Equal(x.touched, touched) {
		return false
	}
	for path, sum := range x.racy {
		// The same stat may hide a rewrite within its tick: the content
		// must be what it was before the pass read it.
		if b, err := safefs.ReadFile(path, safefs.MaxKnowledge); err != nil || maphash.Bytes(x.seed, b) != sum {
			return false
		}
	}
	if gitrepo.StampOf(pr.gitDir) != pr.stamp {
		return false
	}
	for key := range pr.opts.Confirm {
		if strings.Contains(key, "#") {
			continue // a knowledge anchor: its file's stat stands for it
		}
		if _, err := os.Lstat(filepath.Join(pr.root, filepath.FromSlash(key))); !errors.Is(err, fs.ErrNotExist) {
			return false
		}
	}
	return true
}

// Drop removes what the pass staged; nil or done: nothing.
func (x *Prepared) Drop() {
	if x == nil || x.done {
		return
	}
	x.done = true
	dropPass(x.pr)
}

// dropPass removes what pr staged and ends its stat cache pass unsaved.
func dropPass(pr *pass) {
	pr.drop()
	if pr.cache != nil {
		pr.cache.AbortPass()
	}
}
