package markdown

import (
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// Fields returns every "- **Key**: value" bullet of one section's text
// (lowercase keys; the first bullet of each key wins), e.g. "issue" of a
// pitfall for the dedupe rule.
func Fields(section []byte) map[string]string {
	out := map[string]string{}
	doc := blockParser.Parse(text.NewReader(section))
	for n := doc.FirstChild(); n != nil; n = n.NextSibling() {
		l, ok := n.(*ast.List)
		if !ok || l.IsOrdered() {
			continue
		}
		for it := l.FirstChild(); it != nil; it = it.NextSibling() {
			first := it.FirstChild()
			if first == nil || first.Lines().Len() == 0 {
				continue
			}
			if k, v, ok := bulletField(section, first); ok {
				if _, seen := out[k]; !seen {
					out[k] = v
				}
			}
		}
	}
	return out
}
