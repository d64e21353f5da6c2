package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/engine/statcache"
)

// The pass replay's record and the log facts are read from files anyone
// with write access to the clone can plant: whatever the bytes, reading
// them never panics, and a record read back is consistent (as many kinds
// and stats as paths) or refused.
func FuzzReplayRecord(f *testing.F) {
	good := replayRecord{Key: "k", Confirmed: true, Paths: []string{"/r/a", "/r/b"}, Kinds: []depKind{depFile, depList},
		Stats:  []depStat{{Stat: statcache.Stat{Size: 1, Mtime: 2, Ctime: 3, Ino: 4}, Type: 1}, {Type: 1 | 1<<14, Names: [32]byte{9}}},
		Report: []byte(`{"deletions":0}`), Kept: []string{"obs_a"}}
	rec := encodeRecord(&good)
	f.Add(rec)
	f.Add([]byte(replayMagic + "garbage"))
	f.Add(rec[:len(rec)/2])
	f.Add(encodeLogFacts(&logFacts{IDs: []string{"obs_a", "obs_b"}, Confidence: []float64{0.5, 0.25}}))
	root := f.TempDir()
	if _, err := cachedir.Ensure(root); err != nil {
		f.Fatal(err)
	}
	log := filepath.Join(root, ".memory", "learning-log.jsonl")
	os.WriteFile(log, []byte("{}\n"), 0o644)
	f.Fuzz(func(t *testing.T, data []byte) {
		os.WriteFile(cachedir.Path(root, ReplayFile), data, 0o644)
		if r := readReplay(root); r != nil {
			if len(r.Kinds) != len(r.Paths) || len(r.Stats) != len(r.Paths) {
				t.Fatalf("inconsistent record: %d paths, %d kinds, %d stats", len(r.Paths), len(r.Kinds), len(r.Stats))
			}
			changedAt(r, statsNow(r), statcache.Default)
		}
		os.WriteFile(cachedir.Path(root, LogFactsFile), data, 0o644)
		if lf := readLogFacts(root, log); lf != nil {
			_ = logView{facts: lf}.confidence("obs_a")
		}
	})
}
