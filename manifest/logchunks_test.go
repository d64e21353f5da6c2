package manifest

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// lineView is everything a pass reads of a line without decoding it.
func lineView(ln *Line) string {
	d, e, ok := ln.RawTexts()
	return fmt.Sprintf("%q err=%v invalid=%v parsed=%v id=%q type=%q status=%q artifact=%q marks=%+v texts=%q %q %v",
		ln.Raw(), ln.Err(), ln.Invalid(), ln.Parsed(), ln.ID(), ln.Type(), ln.Status(), ln.ArtifactPath(), ln.Marks(), d, e, ok)
}

// writeTemp writes data to a new file and returns its path.
func writeTemp(t testing.TB, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkChunked reads data whole (ParseLog) and in chunks of chunk bytes,
// one chunk kept in memory, and checks that both logs read alike, take the
// same random changes (marks set aside, lines decoded and changed, an
// observation appended) alike, and are written byte for byte alike, before
// and after a first write (write: else Bytes only, without a file's sync).
func checkChunked(t *testing.T, data []byte, chunk int, seed int64, write bool) {
	t.Helper()
	checkChunkedAt(t, writeTemp(t, data), data, chunk, seed, write)
}

// checkChunkedAt is checkChunked with data already written at path.
func checkChunkedAt(t *testing.T, path string, data []byte, chunk int, seed int64, write bool) {
	t.Helper()
	whole := ParseLog(bytes.Clone(data))
	ch, err := readLogChunked(path, 0, chunk, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) > 0 && ch.src == nil {
		t.Fatal("not read in chunks")
	}
	compare := func(when string) {
		t.Helper()
		if len(ch.Lines) != len(whole.Lines) {
			t.Fatalf("%s: %d lines in chunks, %d whole, of %q", when, len(ch.Lines), len(whole.Lines), data)
		}
		for i := range whole.Lines {
			if a, b := lineView(ch.Lines[i]), lineView(whole.Lines[i]); a != b {
				t.Fatalf("%s: line %d in chunks %s, whole %s", when, i, a, b)
			}
		}
	}
	compare("read")
	ra, rb := rand.New(rand.NewSource(seed)), rand.New(rand.NewSource(seed))
	for round := range 2 {
		for i := range whole.Lines {
			for _, x := range []struct {
				ln *Line
				r  *rand.Rand
			}{{ch.Lines[i], ra}, {whole.Lines[i], rb}} {
				switch x.r.Intn(5) {
				case 1:
					x.ln.SetMarks(Marks{MayBeStale: true, NeedsReview: x.r.Intn(2) == 0, StaleReason: pick(x.r, []string{"", "code-ref-missing:src/a.go", "é \"q\""})})
				case 2:
					if o := x.ln.Observation(); o != nil {
						change(x.r, o)
					}
				case 3:
					x.ln.Observation()
				}
			}
		}
		if round == 0 {
			ch.Append(&Observation{ID: "obs_new", Type: "workflow", Pattern: "p", Status: "observing"})
			whole.Append(&Observation{ID: "obs_new", Type: "workflow", Pattern: "p", Status: "observing"})
		}
		compare(fmt.Sprintf("round %d", round))
		a, errA := ch.Bytes()
		b, errB := whole.Bytes()
		if fmt.Sprint(errA) != fmt.Sprint(errB) || !bytes.Equal(a, b) {
			t.Fatalf("round %d: in chunks %q %v, whole %q %v", round, a, errA, b, errB)
		}
		if errA != nil || !write {
			continue
		}
		pathB := writeTemp(t, nil)
		if err := WriteLog(path, ch); err != nil {
			t.Fatal(err)
		}
		if err := WriteLog(pathB, whole); err != nil {
			t.Fatal(err)
		}
		fa, _ := os.ReadFile(path)
		fb, _ := os.ReadFile(pathB)
		if !bytes.Equal(fa, fb) || !bytes.Equal(fa, a) {
			t.Fatalf("round %d: written in chunks %q, whole %q, Bytes %q", round, fa, fb, a)
		}
		compare(fmt.Sprintf("after write %d", round))
	}
	if err := ch.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestReadLogChunkedMatchesWhole(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	for i := range 300 {
		var data []byte
		for range 1 + r.Intn(4) {
			if r.Intn(2) == 0 {
				data = append(data, genFullLog(r)...)
			} else {
				data = append(append(data, genLog(r)...), '\n')
			}
		}
		if r.Intn(4) == 0 {
			data = bytes.TrimSuffix(data, []byte("\n")) // no final newline
		}
		chunk := pick(r, []int{1, 7, 64, 300, 4096})
		t.Run(fmt.Sprint(i), func(t *testing.T) { checkChunked(t, data, chunk, int64(i), true) })
	}
}

func FuzzReadLogChunked(f *testing.F) {
	r := rand.New(rand.NewSource(3))
	for range 8 {
		f.Add(genFullLog(r), uint16(50), int64(1))
	}
	f.Add([]byte("\n\n{\"id\":\"obs_a\"}\r\n"), uint16(1), int64(2))
	f.Add([]byte("{\"id\":\"obs_a\",\"type\":\"workflow\",\"pattern\":\"p\"}"), uint16(3), int64(3))
	// One file per fuzzing process, rewritten for each input: a directory
	// made and removed per input cost most of an execution.
	path := filepath.Join(f.TempDir(), "learning-log.jsonl")
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16, seed int64) {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		checkChunkedAt(t, path, data, 1+int(chunk), seed, false)
	})
}

// A long line crosses chunks whole; the last line may lack its newline;
// blank lines and CRLF endings stay as they were.
func TestReadLogChunkedShapes(t *testing.T) {
	long := `{"id":"obs_long","type":"workflow","pattern":"` + strings.Repeat("x", 5000) + `","status":"observing"}`
	for _, data := range []string{
		long + "\n",
		"\n\n" + long + "\n\n",
		long,
		`{"id":"obs_a"}` + "\r\n" + long + "\r\n",
		"not json\n" + long + "\nnot json",
	} {
		for _, chunk := range []int{1, 16, 4999, 5000, 5100, 1 << 20} {
			checkChunked(t, []byte(data), chunk, 1, true)
		}
	}
}

// Below the size, a log is read whole.
func TestReadLogChunkedSmallIsWhole(t *testing.T) {
	path := writeTemp(t, genFullLog(rand.New(rand.NewSource(1))))
	l, err := readLogChunked(path, 1<<20, 64, 1)
	if err != nil || l.src != nil || !l.Exists {
		t.Fatalf("%v, src %v", err, l.src)
	}
	l, err = readLogChunked(filepath.Join(t.TempDir(), "none"), 0, 64, 1)
	if err != nil || l.Exists || len(l.Lines) != 0 {
		t.Fatalf("a missing log: %v %+v", err, l)
	}
}

// bigLog returns a log of n observations.
func bigLog(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"id":"obs_%d","type":"workflow","pattern":"p %d","confidence":0.5,"observations":1,"first_seen":"2026-01-01","last_seen":"2026-01-01","status":"observing","evidence":["e"],"details":"see src/a%d.go"}`+"\n", i, i, i)
	}
	return b.Bytes()
}

// rewriteInPlace writes over path, which holds data, as a program
// rewriting a file in place does (the same file, the same size: line 3's
// pattern changed), and returns what it holds then.
func rewriteInPlace(t *testing.T, path string, data []byte) []byte {
	t.Helper()
	theirs := bytes.Replace(data, []byte(`"p 3"`), []byte(`"q 3"`), 1)
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(theirs, 0); err != nil {
		t.Fatal(err)
	}
	return theirs
}

// Another program rewriting the file in place while a pass holds it: a
// line read back from a chunk whose bytes changed is not trusted, the log
// says why (Err), and no write of it happens — the file keeps what that
// program wrote.
func TestReadLogChunkedRewrittenInPlace(t *testing.T) {
	data := bigLog(200)
	path := writeTemp(t, data)
	l, err := readLogChunked(path, 0, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	theirs := rewriteInPlace(t, path, data)
	l.Lines[len(l.Lines)-1].SetMarks(Marks{MayBeStale: true, StaleReason: "x"})
	err = WriteLog(path, l)
	if err == nil || !strings.Contains(err.Error(), "changed while it was read") || !strings.Contains(err.Error(), path) {
		t.Fatalf("write of a log rewritten in place: %v", err)
	}
	if l.Err() == nil {
		t.Fatal("no Err")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, theirs) {
		t.Fatal("the file is not what the other program wrote")
	}
	if _, err := l.Bytes(); err == nil {
		t.Fatal("Bytes of a log that cannot be read back")
	}
	// The line whose chunk changed reads as nothing, not as their bytes.
	if ln := l.Lines[3]; ln.Err() != nil || bytes.Contains(ln.Raw(), []byte("q 3")) {
		t.Fatalf("line 3 read back as %q", ln.Raw())
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*"))
	if len(matches) != 1 {
		t.Fatalf("left behind: %v", matches)
	}
}

// A file cut short in place fails the same way.
func TestReadLogChunkedTruncated(t *testing.T) {
	data := bigLog(200)
	path := writeTemp(t, data)
	l, err := readLogChunked(path, 0, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(len(data)/2)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Bytes(); err == nil || l.Err() == nil {
		t.Fatalf("Bytes of a log cut short: %v", err)
	}
}

// A log replaced by a rename (another tool's atomic write, or this one's
// own) is read back from the file as it was read: the descriptor stays on
// it.
func TestReadLogChunkedReplacedByRename(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("not read in chunks on Windows")
	}
	data := bigLog(200)
	path := writeTemp(t, data)
	l, err := readLogChunked(path, 0, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(filepath.Dir(path), "other")
	if err := os.WriteFile(other, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(other, path); err != nil {
		t.Fatal(err)
	}
	b, err := l.Bytes()
	if err != nil || !bytes.Equal(b, data) {
		t.Fatalf("read back after a rename: %v, equal %v", err, bytes.Equal(b, data))
	}
	// Its own write replaces the file, and the lines still read.
	l.Lines[5].SetMarks(Marks{MayBeStale: true, NeedsReview: true, StaleReason: "code-ref-missing:src/a5.go"})
	if err := WriteLog(path, l); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if b, err := l.Bytes(); err != nil || !bytes.Equal(b, got) {
		t.Fatalf("after its own write: %v", err)
	}
	if o := l.Lines[5].Observation(); o == nil || !o.MayBeStale || o.ID != "obs_5" {
		t.Fatalf("line 5 after the write: %+v", o)
	}
}

// A decoded line holds bytes of its own, not its chunk's.
func TestReadLogChunkedDecodedOwnsItsBytes(t *testing.T) {
	path := writeTemp(t, bigLog(100))
	l, err := readLogChunked(path, 0, 256, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range l.Lines {
		ln.Observation()
		if ln.chunked() {
			t.Fatalf("decoded line %q still reads its chunk", ln.Raw())
		}
	}
	if n := len(l.src.resident); n > 1 {
		t.Fatalf("%d chunks in memory, keep 1", n)
	}
}

// A log read back wrong after it was staged is not committed, and its
// temporary file goes.
func TestReadLogChunkedStagedThenRewritten(t *testing.T) {
	data := bigLog(200)
	path := writeTemp(t, data)
	l, err := readLogChunked(path, 0, 512, 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Lines[10].SetMarks(Marks{MayBeStale: true, StaleReason: "x"})
	s, err := StageLog(path, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	theirs := rewriteInPlace(t, path, data)
	l.Lines[3].Raw() // read back: its chunk differs now
	if err := s.Commit(); err == nil {
		t.Fatal("committed a log read back wrong")
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, theirs) {
		t.Fatal("the file is not what the other program wrote")
	}
	if matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*")); len(matches) != 1 {
		t.Fatalf("left behind: %v", matches)
	}
}
