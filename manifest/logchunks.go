package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/learnwatch/learnwatch/parallel"
	"github.com/learnwatch/learnwatch/safefs"
)

// A large learning log is not held whole (ReadLogChunked). It is read in
// chunks of whole lines; each chunk is scanned while its bytes are at
// hand, and its lines keep where they are in it (Line.Raw reads them back)
// with the chunk's CRC-32C. Only the last few chunks used stay in memory:
// a line read again later is read from the descriptor the log was opened
// with (the file as read, even after a rename replaced it), its chunk's
// checksum compared. A line decoded, patched or rewritten gets bytes of
// its own, so an observation never holds a chunk.
//
// A chunk whose bytes no longer match (another program rewrote the file in
// place while the pass ran, or the read failed) cannot be read back: the
// log records the error (Log.Err), its lines read as placeholder bytes of
// the same length that parse as nothing, and every write of the log fails
// with that error, so what was not read is never written.

// ChunkedFrom is the size from which ReadLogChunked reads a log in
// chunks; a smaller log is read whole, as ReadLog reads it.
const ChunkedFrom = 16 << 20

// chunkBytes is the size of a chunk (more when one line is longer), and
// chunksKept how many chunks read back stay in memory: the passes walk
// the log in order, on up to two cores. Chunks of 2 MiB held 5–12 MB at
// a full pass's peak at 100,000 observations (the kept ones and those a
// batch of the staleness pass's pending texts still pointed into); at
// 512 KiB the pass's live peak is about 5 MB lower in the same time
// (1.06–1.13 s and 0.67–0.75 s, alternated).
const (
	chunkBytes = 512 << 10
	chunksKept = 3
)

// castagnoli is the CRC-32C table a chunk's bytes are checked with when
// read back, made on first use (about 0.2 ms: most processes read no log
// in chunks).
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// logSource is the open log file a chunked log reads its lines back from.
type logSource struct {
	f    *os.File
	path string
	keep int

	mu       sync.Mutex
	resident []*logChunk // chunks in memory, oldest first
	err      error       // the first chunk that could not be read back
}

// logChunk is a stretch of whole lines of the file: where it is, its
// checksum, and its bytes while in memory.
type logChunk struct {
	src *logSource // nil for bytes held (heldChunk)
	off int64
	n   int
	sum uint32
	buf atomic.Pointer[[]byte]
	// held are the bytes of a chunk with no src: a log read whole, or
	// a line's own bytes.
	held []byte
}

// heldChunk is a chunk of bytes held in memory, never read back.
func heldChunk(b []byte) *logChunk { return &logChunk{n: len(b), held: b} }

// bytes returns the chunk's bytes, read back when they are not in memory.
// It never fails: bytes that cannot be read back are a placeholder of the
// same length (see the package comment) and the log's Err is set.
func (c *logChunk) bytes() []byte {
	if c.src == nil {
		return c.held
	}
	if p := c.buf.Load(); p != nil {
		return *p
	}
	return c.src.load(c)
}

// load reads c back from the file and keeps it among the resident
// chunks, letting the oldest go past s.keep.
func (s *logSource) load(c *logChunk) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p := c.buf.Load(); p != nil {
		return *p // read back meanwhile
	}
	b := make([]byte, c.n)
	n, err := s.f.ReadAt(b, c.off)
	switch {
	case err != nil && !(errors.Is(err, io.EOF) && n == c.n):
		err = fmt.Errorf("read %s back at byte %d: %w", s.path, c.off, err)
	case crc32.Checksum(b, castagnoli()) != c.sum:
		err = fmt.Errorf("%s changed while it was read (bytes %d to %d differ): another program rewrote it in place", s.path, c.off, c.off+int64(c.n))
	}
	if err != nil {
		if s.err == nil {
			s.err = err
		}
		// Lines that parse as nothing, every span of the scan in range.
		return bytes.Repeat([]byte{'?'}, c.n)
	}
	s.keepResident(c, b)
	return b
}

// keepResident makes b c's bytes in memory (s.mu held).
func (s *logSource) keepResident(c *logChunk, b []byte) {
	c.buf.Store(&b)
	s.resident = append(s.resident, c)
	for len(s.resident) > s.keep {
		s.resident[0].buf.Store(nil)
		s.resident[0] = nil
		s.resident = s.resident[1:]
	}
}

// failed returns the error of a chunk that could not be read back, or nil.
func (s *logSource) failed() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Held reports whether every line of the log is in memory (a log read
// whole, or none), none read back from its file in chunks
// (ReadLogChunked): a Clone of it can then be written on another
// goroutine while the log itself is used.
func (l *Log) Held() bool { return l != nil && l.src == nil }

// Err returns why a line of a chunked log could not be read back (the
// file rewritten in place, a failed read), or nil: a log with an error is
// never written, and what its lines said is not to be trusted.
func (l *Log) Err() error {
	if l == nil {
		return nil
	}
	return l.src.failed()
}

// ReadLogChunked reads the log at path as ReadLog does, in chunks when it
// is ChunkedFrom bytes or more (where the platform lets a file open for
// reading be replaced: not on Windows). The log keeps the file open until
// it is garbage: a long-running caller that keeps it holds a descriptor.
func ReadLogChunked(path string) (*Log, error) {
	if runtime.GOOS == "windows" {
		return ReadLog(path)
	}
	return readLogChunked(path, ChunkedFrom, chunkBytes, chunksKept)
}

// ReadsChunked reports whether ReadLogChunked reads a log of size bytes
// in chunks (the rest of it is not held).
func ReadsChunked(size int64) bool {
	return size >= ChunkedFrom && runtime.GOOS != "windows"
}

// ReadLogChunks reads the log at path in chunks of about chunk bytes
// whatever its size, as ReadLogChunked reads a large one: for tests of
// what reads a log to compare both ways.
func ReadLogChunks(path string, chunk int) (*Log, error) {
	return readLogChunked(path, 0, max(chunk, 1), chunksKept)
}

// readLogChunked is ReadLogChunked with its sizes: a log of from bytes or
// more is read chunk bytes at a time, keep chunks staying in memory; a
// smaller one is read whole (ReadLog).
func readLogChunked(path string, from int64, chunk, keep int) (*Log, error) {
	f, err := safefs.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return &Log{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if fi.Size() < from {
		data, err := safefs.ReadOpen(f, path, safefs.MaxJournal)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		return ParseLog(data), nil
	}
	if fi.Size() > safefs.MaxJournal {
		f.Close()
		return nil, safefs.TooLarge(path, fi.Size(), safefs.MaxJournal)
	}
	src := &logSource{f: f, path: path, keep: keep}
	l := &Log{Exists: true, src: src}
	l.Lines = make([]*Line, 0, int(fi.Size()/256)+1)
	var off int64
	var carry []byte // the start of a line the last read cut
	for {
		buf := make([]byte, max(chunk, len(carry)*2))
		n := copy(buf, carry)
		m, rerr := io.ReadFull(f, buf[n:])
		buf = buf[:n+m]
		eof := errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF)
		if rerr != nil && !eof {
			f.Close()
			return nil, fmt.Errorf("read %s: %w", path, rerr)
		}
		if off+int64(len(buf)) > safefs.MaxJournal {
			f.Close()
			return nil, safefs.GrewTooLarge(path, safefs.MaxJournal)
		}
		end := len(buf)
		if !eof {
			i := bytes.LastIndexByte(buf, '\n')
			if i < 0 {
				carry = buf // one line longer than a chunk: read on
				continue
			}
			end = i + 1
		}
		carry = bytes.Clone(buf[end:])
		if end > 0 {
			l.addChunk(src, buf[:end:end], off, eof)
			off += int64(end)
		}
		if eof {
			break
		}
	}
	return l, nil
}

// addChunk scans the lines of b, the stretch of the file at off (whole
// lines: only the file's last may lack its newline, last set when it is
// the file's end), and keeps b as a resident chunk.
func (l *Log) addChunk(src *logSource, b []byte, off int64, last bool) {
	c := &logChunk{src: src, off: off, n: len(b), sum: crc32.Checksum(b, castagnoli())}
	if last && b[len(b)-1] != '\n' {
		l.noFinalNewline = true
	}
	from := len(l.Lines)
	l.addLines(c, b)
	// Resident first: the newest chunk stays while its lines are scanned.
	src.mu.Lock()
	src.keepResident(c, b)
	src.mu.Unlock()
	parseLines(l.Lines[from:], parallel.Workers(len(b), parseShare))
}
