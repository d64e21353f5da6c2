package staleness

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSelectSources(t *testing.T) {
	paths := []string{
		".memory/knowledge/KNOWLEDGE.md",
		"README.md",
		"doc/adr/0001-record-architecture-decisions.md",
		"doc/adr/README.md",
		"docs/adr/0002-use-sqlite.md",
		"docs/adr/template.md",
		"docs/decisions/0007-madr.md",
		"docs/decisions/adr-0008.md",
		"docs/guide/setup.md",
		"docs/guide/setup.txt",
		"pkg/auth/KNOWLEDGE.md",
		"src/KNOWLEDGE.md.bak",
		"vendor/x/docs/adr/0001-x.md",
		"evil/\x1b[2J/KNOWLEDGE.md",
	}
	var got []string
	for _, s := range SelectSources(paths, nil, false) {
		got = append(got, s.Path+map[bool]string{true: " whole", false: ""}[s.Whole])
	}
	want := []string{
		"doc/adr/0001-record-architecture-decisions.md whole",
		"docs/adr/0002-use-sqlite.md whole",
		"docs/decisions/0007-madr.md whole",
		"pkg/auth/KNOWLEDGE.md",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("presets:\n got %q\nwant %q", got, want)
	}
	got = nil
	for _, s := range SelectSources(paths, []string{"docs/**/*.md", "/README.md", "# comment", ""}, true) {
		got = append(got, s.Path)
	}
	want = []string{"README.md", "docs/adr/0002-use-sqlite.md", "docs/adr/template.md", "docs/decisions/0007-madr.md", "docs/decisions/adr-0008.md", "docs/guide/setup.md"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("globs without presets:\n got %q\nwant %q", got, want)
	}
}

func TestSplitSections(t *testing.T) {
	src := "intro src/a.go\n\n# Title\n\ntext\n\n## Part one\n\nsee b.go\n\n```\n# not a heading\n```\n\nPart two\n--------\n\nc.go\n"
	var got []string
	for _, s := range SplitSections([]byte(src), false) {
		got = append(got, s.Heading+"|"+strings.TrimSpace(string(s.Text)))
	}
	want := []string{
		"|intro src/a.go",
		"Title|# Title\n\ntext",
		"Part one|## Part one\n\nsee b.go\n\n```\n# not a heading\n```",
		"Part two|Part two\n--------\n\nc.go",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	whole := SplitSections([]byte(src), true)
	if len(whole) != 1 || whole[0].Heading != "Title" || string(whole[0].Text) != src {
		t.Errorf("whole: %+v", whole)
	}
}

// FuzzSplitSections: the sections partition the document, in order, and
// a heading is one line of text.
func FuzzSplitSections(f *testing.F) {
	f.Add([]byte("# a\nx\n## b\ny\n"), false)
	f.Add([]byte("t\n===\n\n#\n\n   ## c ##\n```\n# d\n```\n"), false)
	f.Add([]byte("> # quoted\n- # listed\n<h1>x</h1>\n"), true)
	f.Fuzz(func(t *testing.T, src []byte, whole bool) {
		secs := SplitSections(src, whole)
		var joined []byte
		for _, s := range secs {
			joined = append(joined, s.Text...)
			if strings.ContainsFunc(s.Heading, unicode.IsControl) || len(s.Heading) > 200 || !utf8.ValidString(s.Heading) {
				t.Fatalf("heading %q", s.Heading)
			}
		}
		if !bytes.Equal(joined, src) {
			t.Fatalf("sections do not partition the document:\n%q\n%q", joined, src)
		}
		if utf8.Valid(src) {
			for _, s := range secs {
				if !utf8.Valid(s.Text) {
					t.Fatalf("section cut inside a rune: %q", s.Text)
				}
			}
		}
	})
}

// FuzzSelectSources: any glob is accepted; only .md files outside .memory
// are selected, each once, sorted.
func FuzzSelectSources(f *testing.F) {
	f.Add("docs/adr/0001-x.md\nREADME.md\na/KNOWLEDGE.md", "docs/**/*.md")
	f.Add(".memory/x.md\n[x].md", "[")
	f.Add("a/b.md", "!a/b.md")
	f.Fuzz(func(t *testing.T, list, glob string) {
		paths := strings.Split(list, "\n")
		got := SelectSources(paths, []string{glob}, false)
		for i, s := range got {
			if !strings.EqualFold(s.Path[max(len(s.Path)-3, 0):], ".md") || strings.HasPrefix(s.Path, ".memory/") {
				t.Fatalf("selected %q", s.Path)
			}
			if i > 0 && got[i-1].Path > s.Path {
				t.Fatalf("not sorted: %v", got)
			}
		}
	})
}
