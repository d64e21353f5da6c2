package markdown

import (
	"github.com/yuin/goldmark/ast"
)

// Fields returns the "- **Key**: value" bullets of one entry (typically SectionText of
// a Section) as a map with lower-case keys; the first bullet of each key wins. Only items
// of top-level bullet lists count ("-", "*" or "+"; "**Key:** value" and "__Key__: value"
// are accepted too), up to the second level-1/2 heading; a value that wraps over several
// lines is joined with single spaces.
func Fields(section []byte) map[string]string {
	out := map[string]string{}
	doc := blockParser.Parse(NewReader(section))
	n := doc.FirstChild()
	if h, ok := n.(*ast.Heading); ok && h.Level <= 2 {
		n = n.NextSibling()
	}
	eachField(section, n, len(section), func(key, val string) {
		if _, dup := out[key]; !dup {
			out[key] = val
		}
	})
	return out
}
