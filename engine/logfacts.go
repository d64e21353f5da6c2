package engine

// The log facts: what the session index reads from the learning log — the
// confidence of the observation each knowledge entry was rendered from —
// kept in .memory/.cache/log.facts with the stat the log had when they
// were read. A session start whose log has that stat takes the facts (a
// few hundred kilobytes of numbers) instead of scanning the log
// (megabytes of JSON). The facts are disposable: any doubt (another stat,
// a log changed just before the facts were taken, an unreadable file, an
// inverted observation the index must name) means the log is read.

import (
	"fmt"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/manifest"
)

// LogFactsFile is the log facts' file in the cache directory.
const LogFactsFile = "log.facts"

// logFactsMagic starts the file; another version is ignored.
const logFactsMagic = "learnwatch log facts 1\n"

// logFacts is the file's content: the log's stat and type bits when read,
// and the confidence of each observation (the first valid line of an id,
// as manifest.Log.Find answers).
type logFacts struct {
	Stat       statcache.Stat
	Type       uint32
	Confidence map[string]float64
}

// readLogFacts returns the facts of the log at path when its stat is the
// one they were taken with; nil otherwise.
func readLogFacts(root, path string) *logFacts {
	var f logFacts
	if !cachedir.ReadGob(root, LogFactsFile, logFactsMagic, maxReplay, &f) {
		return nil
	}
	st, typ := statcache.LstatRaw(path)
	if typ == 0 || typ != f.Type || st != f.Stat {
		return nil
	}
	return &f
}

// saveLogFacts records the facts of log, which has stat st (and type
// bits typ) on disk: the caller, the pass replay's confirming pass, knows
// the log did not change while the pass read it, nor just before. The
// error is for a warning; a read-only memory is not one.
func saveLogFacts(root string, log *manifest.Log, st statcache.Stat, typ uint32) error {
	if typ == 0 || log == nil || !log.Exists {
		return nil
	}
	f := logFacts{Stat: st, Type: typ, Confidence: log.Confidences()}
	if err := cachedir.WriteGob(root, LogFactsFile, logFactsMagic, &f); err != nil {
		return fmt.Errorf("log facts not written (the next session start reads the log): %w", err)
	}
	return nil
}

// logView is the learning log as the index sees it: the parsed log, or
// (log nil) the facts standing in for it.
type logView struct {
	log   *manifest.Log
	facts *logFacts
}

// loadLogView returns the log's facts when they are current, else reads
// the log (its stat taken before the read).
func loadLogView(root string) logView {
	path := manifest.PathsFor(root).Log
	if f := readLogFacts(root, path); f != nil {
		return logView{facts: f}
	}
	return readLogView(path)
}

// readLogView reads the log at path.
func readLogView(path string) logView {
	log, _ := manifest.ReadLog(path)
	if log == nil {
		log = &manifest.Log{}
	}
	return logView{log: log}
}

// confidence is the confidence of the observation id (0 when the log has
// none).
func (v logView) confidence(id string) float64 {
	if v.log == nil {
		return v.facts.Confidence[id]
	}
	if o := v.log.Find(id); o != nil {
		return o.Confidence
	}
	return 0
}
