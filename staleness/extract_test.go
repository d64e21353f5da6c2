package staleness

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"
)

// refStrings renders refs as "path" or "path:line" for comparison.
func refStrings(refs []Ref) []string {
	out := []string{}
	for _, r := range refs {
		if r.Line > 0 {
			out = append(out, fmt.Sprintf("%s:%d", r.Path, r.Line))
		} else {
			out = append(out, r.Path)
		}
	}
	return out
}

func TestExtractText(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"plain path", "Check src/hooks.ts for hook definitions", []string{"src/hooks.ts"}},
		{"bare file name", "see main.go", []string{"main.go"}},
		{"line", "panics at src/a.go:42", []string{"src/a.go:42"}},
		{"line and column", "src/a.go:42:7: undefined: x", []string{"src/a.go:42"}},
		{"line range checks the end", "see src/a.go:10-20", []string{"src/a.go:20"}},
		{"github fragment", "src/a.go#L12-L30", []string{"src/a.go:30"}},
		{"section fragment dropped", "docs/guide.md#setup", []string{"docs/guide.md"}},
		{"trailing comma", "src/a.go, src/b.go and src/c.go.", []string{"src/a.go", "src/b.go", "src/c.go"}},
		{"parentheses", "(see src/a.go)", []string{"src/a.go"}},
		{"trailing colon", "src/a.go: broken", []string{"src/a.go"}},
		{"line then period", "at src/a.go:12.", []string{"src/a.go:12"}},
		{"backticks", "run `go test ./staleness/check.go` now", []string{"staleness/check.go"}},
		{"quotes", `"src/a.go" and 'src/b.py'`, []string{"src/a.go", "src/b.py"}},
		{"unicode quotes and ellipsis", "“src/a.go” src/b.go…", []string{"src/a.go", "src/b.go"}},
		{"emphasis", "**src/a.go** and _src/b.go_", []string{"src/a.go", "src/b.go"}},
		{"dunder file keeps underscores", "pkg/__init__.py", []string{"pkg/__init__.py"}},
		{"dot slash", "./src/a.go", []string{"src/a.go"}},
		{"inner dotdot", "src/x/../a.go", []string{"src/a.go"}},
		{"dot file", ".github/workflows/ci.sh", []string{".github/workflows/ci.sh"}},
		{"windows separators", `src\auth\login.ts`, []string{"src/auth/login.ts"}},
		{"dedupe", "src/a.go src/a.go ./src/a.go", []string{"src/a.go"}},
		{"same path two lines", "src/a.go:1 src/a.go:2 src/a.go", []string{"src/a.go:1", "src/a.go:2", "src/a.go"}},
		{"option syntax", "--file=src/a.go", []string{"src/a.go"}},
		{"extension case-insensitive", "README.MD", []string{"README.MD"}},
		{"multi-dot", "src/a.test.ts types/x.d.ts", []string{"src/a.test.ts", "types/x.d.ts"}},
		{"scoped package", "@scope/pkg/index.js", []string{"@scope/pkg/index.js"}},

		{"url", "https://github.com/o/r/blob/main/src/a.go", nil},
		{"url with line", "see http://example.com/a.go:12.", nil},
		{"file url", "file:///home/u/a.go", nil},
		{"host without scheme", "github.com/o/r/a.go www.example.org/x.js", nil},
		{"glob star", "src/**/*.ts and *.go", nil},
		{"glob class and brace", "src/[ab].go src/{a,b}.ts a?.go", nil},
		{"absolute", "/etc/x.sh /home/u/a.go", nil},
		{"home", "~/bin/x.sh", nil},
		{"dotdot escape", "../other/a.go a/../../b.go", nil},
		{"windows absolute", `C:\src\a.go C:/src/a.go \\server\share\a.go`, nil},
		{"variables", "$HOME/a.go ${ROOT}/b.go %APPDATA%\\c.go", nil},
		{"unknown extension", "go.mod a.txt Makefile", nil},
		{"config files", "package.json tsconfig.json ci.yml cfg.yaml Cargo.toml", []string{"package.json", "tsconfig.json", "ci.yml", "cfg.yaml", "Cargo.toml"}},
		{"no stem", ".go file", nil},
		{"not a line suffix", "src/a.go:abc mailto:x@y.md", nil},
		{"absurd line", "src/a.go:12345678901", nil},
		{"version-ish", "v1.2.3 1.5", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := refStrings(ExtractText(tt.in, Options{}))
			want := tt.want
			if want == nil {
				want = []string{}
			}
			if strings.Join(got, "|") != strings.Join(want, "|") {
				t.Errorf("ExtractText(%q) = %q, want %q", tt.in, got, want)
			}
		})
	}
}

func TestExtractTextRaw(t *testing.T) {
	refs := ExtractText("see (./src/a.go:12).", Options{})
	if len(refs) != 1 || refs[0].Raw != "./src/a.go:12" || refs[0].Path != "src/a.go" || refs[0].Line != 12 {
		t.Fatalf("got %+v", refs)
	}
}

func TestExtractOptions(t *testing.T) {
	in := "src/a.go lib/b.rb vendor/x/c.go Node.js docs/d.md web/e.vue"
	tests := []struct {
		name string
		opts Options
		want string
	}{
		{"defaults", Options{}, "src/a.go|lib/b.rb|vendor/x/c.go|Node.js|docs/d.md"},
		{"extensions", Options{Extensions: []string{"vue", ".go"}}, "src/a.go|vendor/x/c.go|web/e.vue"},
		{"ignore dir prefix", Options{Ignore: []string{"vendor/"}}, "src/a.go|lib/b.rb|Node.js|docs/d.md"},
		{"ignore glob", Options{Ignore: []string{"docs/*.md", "lib/*"}}, "src/a.go|vendor/x/c.go|Node.js"},
		{"ignore base name", Options{Ignore: []string{"Node.js", "*.rb"}}, "src/a.go|vendor/x/c.go|docs/d.md"},
		{"bad pattern ignored", Options{Ignore: []string{"[", ""}}, "src/a.go|lib/b.rb|vendor/x/c.go|Node.js|docs/d.md"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := strings.Join(refStrings(ExtractText(in, tt.opts)), "|"); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestExtractMarkdown(t *testing.T) {
	src := "## ADR-001: Keep auth in `src/auth/login.ts`\n\n" +
		"- **Status**: Accepted\n" +
		"- **Context**: the handler in src/api/handler.go:30 grew; see [the guide](docs/guide.md#auth)\n" +
		"  and [ref link][r], ![diagram](img/arch.png), <https://example.com/x.go>\n" +
		"- **Decision**: move pkg/__init__.py and src/util\\_x.py\n" +
		"- **Links**: [up](../../src/up.go), [root](/src/rooted.go), [web](https://x.org/a.go)\n\n" +
		"```sh\n" +
		"go run ./cmd/in_fence.go\n" +
		"```\n\n" +
		"    indented/in_block.go\n\n" +
		"<!-- old: src/in_comment.go -->\n\n" +
		"[r]: src/refdef.go \"title\"\n" +
		"[unused]: src/unused_def.go\n"
	got := strings.Join(refStrings(ExtractMarkdown([]byte(src), Options{LinkBase: ".memory/knowledge"})), "|")
	want := strings.Join([]string{
		"src/auth/login.ts", "src/api/handler.go:30", "docs/guide.md", "src/refdef.go",
		"pkg/__init__.py", "src/util_x.py", "src/up.go", "src/rooted.go", "src/in_comment.go", "src/unused_def.go",
	}, "|")
	if got != want {
		t.Errorf("ExtractMarkdown:\n got %s\nwant %s", got, want)
	}
}

// TestExtractMarkdownFencedCode pins the documented choice: references in
// fenced and indented code blocks do not count, the same path in prose or
// an inline code span does.
func TestExtractMarkdownFencedCode(t *testing.T) {
	fenced := "## PF-001: x\n\n```go\nimport \"./src/a.go\"\n// src/b.go:3\n```\n\n~~~\nsrc/c.go\n~~~\n\n    src/d.go\n"
	if refs := ExtractMarkdown([]byte(fenced), Options{}); len(refs) != 0 {
		t.Errorf("refs in code blocks counted: %+v", refs)
	}
	inline := "## PF-001: x\n\nSee `src/a.go` and src/b.go:3.\n"
	if got := strings.Join(refStrings(ExtractMarkdown([]byte(inline), Options{})), "|"); got != "src/a.go|src/b.go:3" {
		t.Errorf("inline refs = %q", got)
	}
	// A heading-looking line inside a fence is code, not prose.
	if refs := ExtractMarkdown([]byte("```\n## src/e.go\n```\n"), Options{}); len(refs) != 0 {
		t.Errorf("fenced heading counted: %+v", refs)
	}
}

func TestExtractMarkdownLinkBase(t *testing.T) {
	src := []byte("[a](./a.go) [b](../b.go) [c](c.go) [d](../../../d.go) [e](<my file.go>) [f](my%20other.go?raw=1#L3)")
	got := strings.Join(refStrings(ExtractMarkdown(src, Options{LinkBase: "docs/sub"})), "|")
	if want := "docs/sub/a.go|docs/b.go|c.go|my file.go|my other.go:3"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got = strings.Join(refStrings(ExtractMarkdown(src, Options{})), "|")
	if want := "a.go|c.go|my file.go|my other.go:3"; got != want {
		t.Errorf("no base: got %q, want %q", got, want)
	}
}

func FuzzExtractText(f *testing.F) {
	for _, s := range []string{
		"src/a.go:12", "(src/a.go).", "https://x/a.go", "src/**/*.ts", `C:\a.go`, "../a.go",
		"**a.go**", "a.go#L1-L2", "src/a.go:1:2", "“a.go”", "\x00a.go", "a.go:999999999",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range ExtractText(s, Options{Ignore: []string{"vendor/"}}) {
			checkRef(t, s, r)
			if strings.ContainsAny(r.Path, " \t") {
				t.Fatalf("%q: space in a text ref %+v", s, r)
			}
		}
	})
}

func FuzzExtractMarkdown(f *testing.F) {
	for _, s := range []string{
		"## ADR-001: x\n\n- see `src/a.go:3`\n", "[x](../a.go)", "```\nsrc/a.go\n```", "[r]: a.go\n[x][r]",
		"<a href=\"src/a.go\">", "* _a.go_ **b.go**",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range ExtractMarkdown([]byte(s), Options{LinkBase: ".memory/knowledge"}) {
			checkRef(t, s, r)
		}
	})
}

// checkRef asserts the invariants every extracted reference holds.
func checkRef(t *testing.T, in string, r Ref) {
	t.Helper()
	switch {
	case r.Path == "" || r.Raw == "":
		t.Fatalf("%q: empty ref %+v", in, r)
	case strings.HasPrefix(r.Path, "/") || r.Path == ".." || strings.HasPrefix(r.Path, "../"):
		t.Fatalf("%q: ref outside the root %+v", in, r)
	case strings.ContainsAny(r.Path, "*?[]{}:\\$%\x00\t\n"):
		t.Fatalf("%q: ref with a forbidden character %+v", in, r)
	case strings.Contains(r.Path, "//") || strings.HasSuffix(r.Path, "/"):
		t.Fatalf("%q: unclean path %+v", in, r)
	case r.Line < 0:
		t.Fatalf("%q: negative line %+v", in, r)
	case strings.HasPrefix(r.Path, "vendor/"):
		t.Fatalf("%q: ignored path returned %+v", in, r)
	case !hasExtension(r.Path, nil):
		t.Fatalf("%q: no known extension %+v", in, r)
	}
}

// TestSeparatorTable checks the ASCII table against the rule for every
// rune, and the rule for the runes it singles out.
func TestSeparatorTable(t *testing.T) {
	for r := rune(-1); r <= unicode.MaxRune+1; r++ {
		if got, want := isSeparator(r), separatorRune(r); got != want {
			t.Fatalf("isSeparator(%U) = %v, the rule says %v", r, got, want)
		}
	}
	for _, c := range []struct {
		r    rune
		want bool
	}{{' ', true}, {'\t', true}, {'`', true}, {'=', true}, {'/', false}, {'.', false}, {'_', false}, {'a', false}, {'\u00a0', true}, {'«', true}, {'é', false}, {utf8.RuneError, true}} {
		if got := isSeparator(c.r); got != c.want {
			t.Errorf("isSeparator(%q) = %v, want %v", c.r, got, c.want)
		}
	}
}

// The shared parser is safe for concurrent use: extractions on several
// goroutines at once (under -race) give what one gives.
func TestExtractMarkdownConcurrent(t *testing.T) {
	docs := []string{decisions, pitfalls,
		"# T\n\nSee [a](./x/a.go) and *emph* `src/b.go`, <span>c.ts</span>\n\n[ref]: docs/d.md\n\n> quote e.py\n\n- item **f.rs**\n",
		"Setext\n===\n\n| table | g.go |\n|---|---|\n\n```\nfenced.go\n```\n\n![img](assets/h.png) ~~strike i.go~~\n"}
	want := make([]string, len(docs))
	for i, d := range docs {
		want[i] = strings.Join(refStrings(ExtractMarkdown([]byte(d), Options{})), " ")
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				i := (g + n) % len(docs)
				if got := strings.Join(refStrings(ExtractMarkdown([]byte(docs[i]), Options{})), " "); got != want[i] {
					t.Errorf("doc %d on goroutine %d: %s, want %s", i, g, got, want[i])
					return
				}
				SplitSections([]byte(docs[i]), false)
			}
		})
	}
	wg.Wait()
}

// Extraction and splitting never write past what they were given (goldmark
// appends a newline to a code block's last line in place: markdown.NewReader).
func TestExtractLeavesTheBytesAfterAlone(t *testing.T) {
	buf := []byte("See src/a.go.\n\n    run()  and the rest")
	ExtractMarkdown(buf[:25], Options{})
	SplitSections(buf[:25], false)
	if string(buf) != "See src/a.go.\n\n    run()  and the rest" {
		t.Errorf("parsing a window wrote past it: %q", buf)
	}
}
