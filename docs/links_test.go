// Package docs holds the project's documentation; its test checks that the
// documentation stands alone: no Markdown file of the repository links to a
// file outside it, or to one that does not exist.
package docs

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

func TestMarkdownLinksStayInsideTheRepository(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	md := goldmark.New()
	checked := 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && (name == ".git" || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(name, ".md") {
			return nil
		}
		// examples/repo is a sample repository whose memory files
		// are data, not documentation.
		if rel, _ := filepath.Rel(root, p); strings.HasPrefix(rel, "examples"+string(filepath.Separator)+"repo") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		for _, word := range []string{"../shared", "DESIGN.md"} {
			if strings.Contains(string(src), word) {
				t.Errorf("%s mentions %q, which is not part of the repository", rel, word)
			}
		}
		doc := md.Parser().Parse(text.NewReader(src))
		ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
			if !entering {
				return ast.WalkContinue, nil
			}
			var dest string
			switch l := n.(type) {
			case *ast.Link:
				dest = string(l.Destination)
			case *ast.Image:
				dest = string(l.Destination)
			default:
				return ast.WalkContinue, nil
			}
			checked++
			if msg := outside(root, filepath.Dir(p), dest); msg != "" {
				t.Errorf("%s: link %q %s", rel, dest, msg)
			}
			return ast.WalkContinue, nil
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no links found: the walk did not read the documentation")
	}
}

// outside says what is wrong with a link from a file in dir, or "" when it
// is a web link, an anchor, or a file inside root that exists.
func outside(root, dir, dest string) string {
	u, err := url.Parse(dest)
	if err != nil {
		return "does not parse"
	}
	if u.Scheme == "http" || u.Scheme == "https" || u.Scheme == "mailto" {
		return ""
	}
	if u.Scheme != "" || u.Host != "" {
		return "is not a web link or a repository path"
	}
	if u.Path == "" { // #anchor in the same file
		return ""
	}
	if strings.HasPrefix(u.Path, "/") {
		return "is an absolute path"
	}
	target := filepath.Join(dir, filepath.FromSlash(u.Path))
	if r, err := filepath.Rel(root, target); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return "points outside the repository"
	}
	if _, err := os.Stat(target); err != nil {
		return "points at a file that does not exist"
	}
	return ""
}
