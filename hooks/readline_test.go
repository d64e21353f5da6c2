package hooks

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readLine returns each line with its newline and the bytes consumed; a
// line longer than max is consumed whole and returned as nil, so the
// offset still moves past it.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("a\nbb\n\nccc"), 2)
	f.Add([]byte(strings.Repeat("x", 300)+"\nshort\n"), 16)
	f.Add([]byte{}, 1)
	f.Fuzz(func(t *testing.T, data []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		br := bufio.NewReaderSize(bytes.NewReader(data), 16)
		var got int64
		for _, want := range bytes.SplitAfter(data, []byte{'\n'}) {
			if len(want) == 0 {
				continue
			}
			line, n, err := readLine(br, max)
			if err != nil && err != io.EOF {
				t.Fatal(err)
			}
			if n != int64(len(want)) {
				t.Fatalf("consumed %d, want %d", n, len(want))
			}
			if len(want) > max && line != nil || len(want) <= max && !bytes.Equal(line, want) {
				t.Fatalf("line %q, want %q (max %d)", line, want, max)
			}
			got += n
		}
		if got != int64(len(data)) {
			t.Fatalf("consumed %d of %d bytes", got, len(data))
		}
	})
}

// A transcript line over MaxTranscriptLine is skipped, not parsed, and the
// citations around it still count.
func TestScanSkipsOverlongLine(t *testing.T) {
	long := `{"role":"assistant","content":"ADR-009 ` + strings.Repeat("x", MaxTranscriptLine) + `"}` + "\n"
	in := `{"role":"assistant","content":"see ADR-001"}` + "\n" + long + `{"role":"assistant","content":"and PF-002"}` + "\n"
	counts := map[string]int{}
	n, err := scan(strings.NewReader(in), counts, false)
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(in)) {
		t.Errorf("consumed %d of %d bytes", n, len(in))
	}
	if counts["ADR-001"] != 1 || counts["PF-002"] != 1 || counts["ADR-009"] != 0 {
		t.Errorf("counts %v, want ADR-001 and PF-002 once, ADR-009 never", counts)
	}
}

// A transcript path that is a FIFO, a symlink or /dev/zero is refused at
// once: the Stop hook never hangs on it or reads without end.
func TestRecordTranscriptRefusesSpecialFiles(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	os.MkdirAll(filepath.Join(root, ".memory"), 0o755)
	real := filepath.Join(base, "t.jsonl")
	os.WriteFile(real, []byte(`{"role":"assistant","content":"ADR-001"}`+"\n"), 0o600)
	fifo := filepath.Join(base, "fifo")
	if err := mkfifo(fifo, 0o600); err != nil {
		t.Skip(err)
	}
	link := filepath.Join(base, "link")
	os.Symlink(real, link)
	zero := filepath.Join(base, "zero")
	os.Symlink("/dev/zero", zero)
	for _, p := range []string{fifo, link, zero, "/dev/zero"} {
		done := make(chan error, 1)
		go func() {
			_, err := RecordTranscript(t.Context(), root, "s", p, time.Now(), time.Second, false)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), p) {
				t.Errorf("%s: %v, want a refusal naming it", p, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: RecordTranscript hangs", p)
		}
	}
	rec, err := RecordTranscript(t.Context(), root, "s", real, time.Now(), time.Second, false)
	if counts := rec.Counts; err != nil || counts["ADR-001"] != 1 {
		t.Fatalf("a regular transcript: %v %v", counts, err)
	}
}
