package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkLog measures what a pass does to the learning log — parse, find
// one observation, patch it, encode the log (Bytes) — with the lazy log
// ("new") and the old eager one ("old") side by side at 10k and 100k
// lines. Beside time and allocations it reports live-MiB: the heap the
// parsed log holds after the Find (after a GC), on top of the file's bytes
// it was read from. The "write" runs replace Bytes with the file write a
// pass does (new: WriteLog, streamed; old: Bytes then WriteFile): their
// B/op is every byte allocated, the file's content included.
func BenchmarkLog(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		id := fmt.Sprintf("obs_g%d", n/2)
		path := filepath.Join(b.TempDir(), "learning-log.jsonl")
		for _, write := range []bool{false, true} {
			suffix := ""
			if write {
				suffix = "-write"
			}
			b.Run(fmt.Sprintf("new%s/%dk", suffix, n/1000), func(b *testing.B) {
				data := benchData(n)
				defer peakRSS(b)()
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				var live float64
				for i := 0; i < b.N; i++ {
					var base float64
					if i == 0 {
						base = liveMiB(nil)
					}
					l := ParseLog(data)
					o := l.Find(id)
					o.Observations++
					o.Status = Ready
					if i == 0 {
						live = liveMiB(l) - base
					}
					var err error
					if write {
						err = WriteLog(path, l)
					} else {
						_, err = l.Bytes()
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(live, "live-MiB")
			})
			b.Run(fmt.Sprintf("old%s/%dk", suffix, n/1000), func(b *testing.B) {
				data := benchData(n)
				defer peakRSS(b)()
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				var live float64
				for i := 0; i < b.N; i++ {
					var base float64
					if i == 0 {
						base = liveMiB(nil)
					}
					l := oldParseLog(data)
					o := l.Find(id)
					o.Observations++
					o.Status = Ready
					if i == 0 {
						live = liveMiB(l) - base
					}
					out, err := l.Bytes()
					if err == nil && write {
						err = WriteFile(path, out, 0o644)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(live, "live-MiB")
			})
		}
	}
}

// BenchmarkLogWalkAll: a pass that walks every observation (Observations)
// decodes them all; the cost of laziness for such a caller.
func BenchmarkLogWalkAll(b *testing.B) {
	data := benchLog(10_000)
	b.Run("new/10k", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(ParseLog(data).Observations()) != 10_000 {
				b.Fatal("lost observations")
			}
		}
	})
	b.Run("old/10k", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if len(oldParseLog(data).Observations()) != 10_000 {
				b.Fatal("lost observations")
			}
		}
	})
}

var benchDataCache = map[int][]byte{}

// benchData returns benchLog(n) in a slice of its own size, generated once.
func benchData(n int) []byte {
	if d, ok := benchDataCache[n]; ok {
		return d
	}
	d := append([]byte(nil), benchLog(n)...)
	benchDataCache[n] = d
	return d
}

// peakRSS resets the process's peak RSS (Linux: /proc/self/clear_refs)
// after returning memory to the OS, and returns a func that reports the
// peak since as peakRSS-MiB: the whole process, the log's bytes included.
// Elsewhere it reports nothing.
func peakRSS(b *testing.B) func() {
	runtime.GC()
	debug.FreeOSMemory()
	if os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) != nil {
		return func() {}
	}
	return func() {
		status, err := os.ReadFile("/proc/self/status")
		if err != nil {
			return
		}
		for _, line := range strings.Split(string(status), "\n") {
			if f := strings.Fields(line); len(f) == 3 && f[0] == "VmHWM:" {
				if kb, err := strconv.Atoi(f[1]); err == nil {
					b.ReportMetric(float64(kb)/1024, "peakRSS-MiB")
				}
			}
		}
	}
}

// liveMiB is the heap still in use with keep alive, after a GC.
func liveMiB(keep any) float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	runtime.KeepAlive(keep)
	return float64(m.HeapAlloc) / (1 << 20)
}
