package engine

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"syscall"

	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/staleness"
)

// StaleResult is what the stale pass found and did.
type StaleResult struct {
	Report staleness.Report
	// Marked counts the observations whose staleness marks changed (and
	// were written); ReadOnly is set when .memory could not be written:
	// the report stands, nothing is marked.
	Marked   int
	ReadOnly bool
	// Inbox is what the drain of the inbox did when the lock was taken.
	Inbox inbox.Result
}

// Stale runs the staleness check of `learnwatch stale` as a pass: under
// the learning lock it scans, marks the stale observations in the log and
// writes it when a mark changed. Without a .memory directory nothing is
// marked or created. A read-only .memory (the lock cannot be taken, or the
// log cannot be written) still gets the report.
func (e *Engine) Stale(ctx context.Context, chk *staleness.Checker, explain bool) (StaleResult, error) {
	var out StaleResult
	paths := manifest.PathsFor(e.root)
	opts := staleness.OptionsFor(e.cfg.Staleness)
	opts.Explain = explain
	if fi, err := os.Stat(paths.Memory); err != nil || !fi.IsDir() {
		rep, err := staleness.Scan(e.root, chk, nil, opts)
		out.Report = rep
		return out, err
	}
	lock, drained, err := inbox.Lock(ctx, e.root, e.cfg.Lock.Timeout.Duration)
	if err == nil {
		out.Inbox = drained
		err = func() error {
			defer lock.Release()
			log, err := manifest.ReadLog(paths.Log)
			if err != nil {
				return err
			}
			if out.Report, err = staleness.Scan(e.root, chk, log, opts); err != nil {
				return err
			}
			if err := chk.SaveCache(); err != nil {
				// A disposable cache: the next run computes it again.
				e.log.Debug("staleness cache not written", "err", err)
			}
			out.Marked = len(staleness.Mark(log, out.Report.Stale))
			if log.Changed() {
				if err := manifest.WriteLog(paths.Log, log); err != nil {
					if !readOnly(err) {
						return err
					}
					out.ReadOnly, out.Marked = true, 0
				}
			}
			return nil
		}()
	}
	if err != nil && readOnly(err) {
		// No lock without write access: a check reads, it does not mark.
		log, lerr := manifest.ReadLog(paths.Log)
		if lerr != nil {
			return StaleResult{}, lerr
		}
		rep, err := staleness.Scan(e.root, chk, log, opts)
		return StaleResult{Report: rep, ReadOnly: true}, err
	}
	if err != nil {
		return StaleResult{Report: out.Report, Inbox: out.Inbox}, err
	}
	return out, nil
}

// PreCommit is the pre-commit hook's check: the stale references of what
// the staged commit deletes or renames, judged (blocking or warning). It
// writes nothing: the log may be part of the commit.
//
// Most commits delete and rename nothing: the staged tree is compared with
// HEAD first (the index's cached trees skip the directories it leaves
// alone), and such a commit is answered without reading the log or the
// knowledge files (Report.Checked is then 0: no reference needed
// checking).
func (e *Engine) PreCommit(ctx context.Context) (staleness.Report, staleness.Verdict, error) {
	c, err := staleness.Open(e.root, staleness.PreCommit, e.cfg.Staleness)
	if err != nil {
		return staleness.Report{}, staleness.Verdict{}, err
	}
	if c.DeletesNothing() {
		return staleness.Report{Stale: []staleness.Finding{}}, staleness.Judge(nil, nil), nil
	}
	log, err := manifest.ReadLog(manifest.PathsFor(e.root).Log)
	if err != nil {
		return staleness.Report{}, staleness.Verdict{}, err
	}
	rep, err := staleness.Scan(e.root, c.WithContext(ctx), log, staleness.OptionsFor(e.cfg.Staleness))
	if err != nil {
		return rep, staleness.Verdict{}, err
	}
	return rep, staleness.Judge(rep.Stale, log), nil
}

// readOnly reports an error of a read-only .memory.
func readOnly(err error) bool {
	return errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)
}
