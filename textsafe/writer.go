package textsafe

import (
	"io"
	"sync"
	"unicode/utf8"
)

// Writer passes text to an underlying writer without the runes a terminal
// must not receive: the forbidden runes of Line are dropped except '\n'
// (a tab becomes a space) and invalid UTF-8 becomes U+FFFD. A rune split
// across writes is held until it is whole. JSON stays valid through it:
// learnwatch's JSON encoder escapes every control inside strings, and
// dropping a format character inside a string leaves a valid string. Safe
// for concurrent use.
type Writer struct {
	mu     sync.Mutex
	w      io.Writer
	part   []byte // an incomplete rune from the previous write
	buf    []byte
	closed bool
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write filters p and writes the result; it reports len(p) when the
// underlying write succeeded.
func (sw *Writer) Write(p []byte) (int, error) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.closed {
		return len(p), nil
	}
	in := p
	if len(sw.part) > 0 {
		in = append(append([]byte(nil), sw.part...), p...)
		sw.part = sw.part[:0]
	}
	out := sw.buf[:0]
	for i := 0; i < len(in); {
		if !utf8.FullRune(in[i:]) {
			sw.part = append(sw.part, in[i:]...)
			break
		}
		r, size := utf8.DecodeRune(in[i:])
		i += size
		switch {
		case r == '\n':
		case r == '\t':
			r = ' '
		case Forbidden(r):
			continue
		}
		out = utf8.AppendRune(out, r)
	}
	sw.buf = out
	if _, err := sw.w.Write(out); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Close waits for a write in progress and discards every later one, so
// that output abandoned half-way (a hook past its deadline) is either whole
// or absent. The underlying writer is not closed.
func (sw *Writer) Close() error {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	sw.closed = true
	return nil
}
