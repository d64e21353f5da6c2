package markdown

import "testing"

// Parsing never writes past what it was given. goldmark appends a newline
// to a code block's last line in place: a section whose text ends in an
// indented code block had the byte after it in its file's bytes turned
// into "\n" by Fields (here the space that trails `run()`, and a CRLF
// file's "\r").
func TestParseLeavesTheBytesAfterAlone(t *testing.T) {
	for _, file := range []string{
		"## ADR-001: Run it\n\n- **Status**: Accepted\n\n    run()  \n\n## ADR-002: Next\n",
		"## ADR-001: Run it\r\n\r\n    run()\r\n\r\n## ADR-002: Next\r\n",
		"## PF-001: Code last\n\n    make test\u00a0\n",
	} {
		src := []byte(file)
		for _, s := range Sections(src) {
			Fields(SectionText(src, s))
		}
		TLDR(src, ADR)
		if string(src) != file {
			t.Errorf("parsing changed the file:\n%q\n%q", file, src)
		}
	}
	// A window of a larger buffer that ends in a code block.
	buf := []byte("    0 and the rest")
	Sections(buf[:5])
	Fields(buf[:5])
	if string(buf) != "    0 and the rest" {
		t.Errorf("parsing a window wrote past it: %q", buf)
	}
}
