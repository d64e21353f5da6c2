package staleness

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/learnwatch/learnwatch/bench/stalegen/fixture"
	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// benchSpec is the fixture of DESIGN's pre-commit requirement: 50,000
// tracked files, 500 knowledge references.
var benchSpec = fixture.Spec{Files: 50000, Refs: 500, Commits: 20, Seed: 1}

var (
	benchOnce sync.Once
	benchDir  string
	benchErr  error
)

// benchRepo generates the fixture once per test binary run (removed by
// TestMain).
func benchRepo(b *testing.B) string {
	b.Helper()
	if testing.Short() {
		b.Skip("generates a 50,000-file repository; skipped with -short")
	}
	benchOnce.Do(func() {
		var tmp string
		if tmp, benchErr = os.MkdirTemp("", "stalebench-"); benchErr == nil {
			benchDir = filepath.Join(tmp, "repo")
			_, benchErr = fixture.Generate(benchDir, benchSpec)
		}
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	return benchDir
}

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(filepath.Dir(benchDir))
	}
	os.Exit(code)
}

func benchScan(b *testing.B, mode Mode) { benchScanCache(b, mode, false) }

// benchScanCache runs the scan; with cached, a run first writes the
// staleness cache and every timed run reads it (what a second `stale`
// on unchanged trees does); without, no cache exists.
func benchScanCache(b *testing.B, mode Mode, cached bool) {
	dir := benchRepo(b)
	cfg := config.Default().Staleness
	file := cachedir.Path(dir, CacheName)
	os.Remove(file)
	defer os.Remove(file)
	if cached {
		c, err := Open(dir, mode, cfg)
		if err != nil {
			b.Fatal(err)
		}
		log, err := manifest.ReadLog(manifest.PathsFor(dir).Log)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Scan(dir, c, log, OptionsFor(cfg)); err != nil {
			b.Fatal(err)
		}
		if err := c.SaveCache(); err != nil {
			b.Fatal(err)
		}
	}
	stale := 0
	for b.Loop() {
		c, err := Open(dir, mode, cfg)
		if err != nil {
			b.Fatal(err)
		}
		log, err := manifest.ReadLog(manifest.PathsFor(dir).Log)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Scan(dir, c, log, OptionsFor(cfg))
		if err != nil {
			b.Fatal(err)
		}
		stale = len(rep.Stale)
	}
	b.ReportMetric(float64(stale), "stale")
}

// BenchmarkStaleStaged is `stale --staged` without the process: open the
// index, scan 500 references, follow renames through 20 commits.
func BenchmarkStaleStaged(b *testing.B) { benchScan(b, Staged) }

// BenchmarkStaleStagedCached is `stale --staged` a second time on the same
// index: the staleness cache holds every outcome, the index is not read.
func BenchmarkStaleStagedCached(b *testing.B) { benchScanCache(b, Staged, true) }

// BenchmarkStaleHeadCached is `stale` a second time on the same HEAD.
func BenchmarkStaleHeadCached(b *testing.B) { benchScanCache(b, Auto, true) }

// BenchmarkStaleHead is `stale` (HEAD).
func BenchmarkStaleHead(b *testing.B) { benchScan(b, Auto) }

// BenchmarkPreCommit is the pre-commit hook's check.
func BenchmarkPreCommit(b *testing.B) { benchScan(b, PreCommit) }

// BenchmarkGoGitIndexDecode is the floor of `stale --staged` right after
// the index changed: go-git decoding the fixture's 50,000-entry index (what
// readIndex does), nothing else. Compare with `git ls-files` on the same
// repository (bench/stalegen/ratio.sh).
func BenchmarkGoGitIndexDecode(b *testing.B) {
	dir := benchRepo(b)
	c, err := Open(dir, Staged, config.Default().Staleness)
	if err != nil {
		b.Fatal(err)
	}
	entries := 0
	for b.Loop() {
		idx, err := readIndex(c.repo)
		if err != nil {
			b.Fatal(err)
		}
		entries = len(idx.Entries)
	}
	b.ReportMetric(float64(entries), "entries")
}
