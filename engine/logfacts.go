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
	"maps"
	"slices"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/codec"
	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/manifest"
)

// LogFactsFile is the log facts' file in the cache directory.
const LogFactsFile = "log.facts"

// logFactsMagic starts the file; another version is ignored.
const logFactsMagic = "learnwatch log facts 2\n"

// logFacts is the file's content: the log's stat and type bits when read,
// and the confidence of each observation (the first valid line of an id,
// as manifest.Log.Find answers): IDs sorted, Confidence[i] the
// confidence of IDs[i].
//
// The file is a sealed cache file (codec.Encoder; gob before
// 2026-11-28, which decoded the 10,000 confidences of the 10k fixture
// into a map in about 2 ms of every session start): the stat (size,
// mtime and ctime as varints, inode and type as uvarints), the ids (a
// string list), then their confidences (a float64 each). Ids out of
// order or repeated are refused.
type logFacts struct {
	Stat       statcache.Stat
	Type       uint32
	IDs        []string
	Confidence []float64
}

// readLogFacts returns the facts of the log at path when its stat is the
// one they were taken with; nil otherwise.
func readLogFacts(root, path string) *logFacts {
	body, ok := cachedir.ReadSealed(root, LogFactsFile, logFactsMagic, maxReplay)
	if !ok {
		return nil
	}
	f, ok := decodeLogFacts(body)
	if !ok {
		return nil
	}
	st, typ := statcache.LstatRaw(path)
	if typ == 0 || typ != f.Type || st != f.Stat {
		return nil
	}
	return f
}

// saveLogFacts records the facts of log, which has stat st (and type
// bits typ) on disk: the caller, the pass replay's confirming pass, knows
// the log did not change while the pass read it, nor just before. The
// error is for a warning; a read-only memory is not one.
func saveLogFacts(root string, log *manifest.Log, st statcache.Stat, typ uint32) error {
	if typ == 0 || log == nil || !log.Exists {
		return nil
	}
	conf := log.Confidences()
	f := logFacts{Stat: st, Type: typ, IDs: slices.Sorted(maps.Keys(conf))}
	f.Confidence = make([]float64, len(f.IDs))
	for i, id := range f.IDs {
		f.Confidence[i] = conf[id]
	}
	if err := cachedir.WriteSealed(root, LogFactsFile, encodeLogFacts(&f)); err != nil {
		return fmt.Errorf("log facts not written (the next session start reads the log): %w", err)
	}
	return nil
}

// encodeLogFacts is the file of f.
func encodeLogFacts(f *logFacts) []byte {
	size := 32 + 8*len(f.Confidence)
	for _, id := range f.IDs {
		size += len(id) + 2
	}
	e := codec.NewEncoder(logFactsMagic, size)
	f.Stat.Encode(e)
	e.Uint32(f.Type)
	e.Strings(f.IDs)
	for _, c := range f.Confidence {
		e.Float64(c)
	}
	return e.Sealed()
}

// decodeLogFacts reads what encodeLogFacts wrote (the body, unsealed).
func decodeLogFacts(body []byte) (*logFacts, bool) {
	d := codec.NewDecoder(body)
	f := &logFacts{}
	f.Stat = statcache.DecodeStat(d)
	f.Type = d.Uint32()
	f.IDs = d.Strings()
	if d.Failed() || len(f.IDs) > len(body)/8 {
		return nil, false
	}
	for i := 1; i < len(f.IDs); i++ {
		if f.IDs[i-1] >= f.IDs[i] {
			return nil, false
		}
	}
	f.Confidence = make([]float64, len(f.IDs))
	for i := range f.Confidence {
		f.Confidence[i] = d.Float64()
	}
	if !d.OK() {
		return nil, false
	}
	return f, true
}

// confidence is the confidence of the observation id (0 when the facts
// have none).
func (f *logFacts) confidence(id string) float64 {
	if i, ok := slices.BinarySearch(f.IDs, id); ok {
		return f.Confidence[i]
	}
	return 0
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
		return v.facts.confidence(id)
	}
	if o := v.log.Find(id); o != nil {
		return o.Confidence
	}
	return 0
}
