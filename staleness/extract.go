package staleness

import (
	"net/url"
	"path"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/parser"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/markdown"
)

// Ref is one file reference found in text: Path is relative to the
// repository root with "/" separators and no "./" or ".." elements; Line is
// the referenced line (0 when the reference names no line); Raw is the
// reference as written (after trimming surrounding punctuation).
type Ref struct {
	Path string
	Line int
	Raw  string
	// Rooted is set when the reference is written from the root — a link
	// destination starting with "/", "./" or "../", or text starting with
	// "./" — and must resolve exactly. Otherwise a path with a directory
	// may also be a path suffix of a tracked file or relative to Dir, and a
	// bare file name may name a tracked file in any directory.
	Rooted bool
	// Dir is the directory of the document the reference was written in,
	// relative to the root ("" for the root or for free text).
	Dir string
}

// Options control what counts as a file reference.
type Options struct {
	// Extensions are the source extensions that make a token a reference
	// (without the dot, matched case-insensitively). Empty means
	// config.DefaultExtensions.
	Extensions []string
	// Ignore lists path.Match globs, or directory prefixes ending in "/",
	// whose references are dropped. A glob without "/" also matches the
	// base name (so "Node.js" or "*.md" work anywhere).
	Ignore []string
	// LinkBase is the directory of the Markdown file being read, relative
	// to the root ("" for the root). Link destinations that start with "./"
	// or "../" are resolved against it, the way a Markdown viewer resolves
	// them; every other reference is relative to the root.
	LinkBase string
	// Explain asks Scan for the resolution of every reference
	// (Report.Refs).
	Explain bool
	// Sources are the configured globs of read-only Markdown files checked
	// besides the knowledge base (see Sources).
	Sources []string
	// NoPresets turns the automatically detected sources off.
	NoPresets bool
}

// OptionsFor returns the extraction options of a configuration.
func OptionsFor(cfg config.Staleness) Options {
	return Options{Extensions: cfg.Extensions, Ignore: cfg.Ignore, Sources: cfg.Sources, NoPresets: cfg.NoPresets}
}

// ExtractText returns the file references in free text (an observation's
// details or one evidence string), deduplicated by path and line, in order
// of appearance.
func ExtractText(s string, opts Options) []Ref {
	var refs []Ref
	seen := map[refKey]bool{}
	scanTokens(s, func(tok string) {
		if r, ok := parseRef(tok, opts, false); ok {
			refs = addRef(refs, seen, r)
		}
	})
	return refs
}

// ExtractTextIn is ExtractText for text written in a file of directory
// dir: partial paths may also be relative to it.
func ExtractTextIn(s, dir string, opts Options) []Ref {
	opts.LinkBase = dir
	return ExtractText(s, opts)
}

// ExtractMarkdown returns the file references in one knowledge section (or
// any Markdown document): in paragraphs, headings, list items and block
// quotes (plain text and inline code spans alike), in HTML blocks, and in
// link and image destinations (including reference definitions).
// References inside fenced or indented code blocks do not count: code
// blocks hold examples (imports relative to some other file, #include
// <stdio.h>, member accesses such as p.h) far more often than pointers into
// the repository. Results are deduplicated by path and line, in order of
// appearance.
func ExtractMarkdown(src []byte, opts Options) []Ref {
	var refs []Ref
	seen := map[refKey]bool{}
	pc := parser.NewContext()
	doc := mdParser.Parse(markdown.NewReader(src), parser.WithContext(pc))
	_ = ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch n := n.(type) {
		case *ast.FencedCodeBlock, *ast.CodeBlock:
			return ast.WalkSkipChildren, nil
		case *ast.Paragraph, *ast.TextBlock, *ast.Heading, *ast.HTMLBlock:
			// The raw lines, not the inline text nodes: emphasis parsing
			// would split pkg/__init__.py. Link destinations are read
			// from the link nodes (they resolve differently), so their
			// text is skipped here.
			dests := linkDestinations(n)
			lines := n.Lines()
			for i := 0; i < lines.Len(); i++ {
				seg := lines.At(i)
				scanTokens(unescapeMarkdown(string(seg.Value(src))), func(tok string) {
					if dests[tok] {
						return
					}
					if r, ok := parseRef(tok, opts, false); ok {
						refs = addRef(refs, seen, r)
					}
				})
			}
			if h, ok := n.(*ast.HTMLBlock); ok && h.HasClosure() {
				scanTokens(string(h.ClosureLine.Value(src)), func(tok string) {
					if r, ok := parseRef(tok, opts, false); ok {
						refs = addRef(refs, seen, r)
					}
				})
			}
		case *ast.Link:
			if r, ok := linkRef(string(n.Destination), opts); ok {
				refs = addRef(refs, seen, r)
			}
		case *ast.Image:
			if r, ok := linkRef(string(n.Destination), opts); ok {
				refs = addRef(refs, seen, r)
			}
		}
		return ast.WalkContinue, nil
	})
	// Reference definitions ([x]: path) leave no node of their own when
	// unused; take their destinations from the parser context.
	defs := pc.References()
	sort.Slice(defs, func(i, j int) bool { return string(defs[i].Label()) < string(defs[j].Label()) })
	for _, d := range defs {
		if r, ok := linkRef(string(d.Destination()), opts); ok {
			refs = addRef(refs, seen, r)
		}
	}
	return refs
}

// mdParser is goldmark's default parser, built once: building one per
// section was a tenth of what a first pass at 100,000 observations
// allocated. Its per-parse state is in the parser.Context of each call;
// like the markdown package's, it is safe for concurrent use.
var mdParser = goldmark.DefaultParser()

// linkDestinations returns the tokens of the destinations of the links
// and images inside a block.
func linkDestinations(n ast.Node) map[string]bool {
	var dests map[string]bool
	_ = ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		var d []byte
		switch c := c.(type) {
		case *ast.Link:
			d = c.Destination
		case *ast.Image:
			d = c.Destination
		default:
			return ast.WalkContinue, nil
		}
		if dests == nil {
			dests = map[string]bool{}
		}
		// As the raw text splits it: "<my file.go>" is "my", "file.go".
		scanTokens(string(d), func(tok string) { dests[tok] = true })
		return ast.WalkContinue, nil
	})
	return dests
}

type refKey struct {
	path string
	line int
}

func addRef(refs []Ref, seen map[refKey]bool, r Ref) []Ref {
	k := refKey{r.Path, r.Line}
	if seen[k] {
		return refs
	}
	seen[k] = true
	return append(refs, r)
}

// isSeparator reports runes that end a token: white space, quotes,
// brackets of every kind, and the punctuation that separates paths in
// prose, lists and option syntax.
func isSeparator(r rune) bool {
	if r >= 0 && r < utf8.RuneSelf {
		return asciiSeparators[r]
	}
	return separatorRune(r)
}

// asciiSeparators is separatorRune of every ASCII rune, computed once:
// most of what extraction scans is ASCII, and the unicode table lookups
// were a sixth of a cold pass's extraction.
var asciiSeparators = func() (t [utf8.RuneSelf]bool) {
	for r := range t {
		t[r] = separatorRune(rune(r))
	}
	return t
}()

// separatorRune is the rule isSeparator applies.
func separatorRune(r rune) bool {
	switch r {
	case '`', '\'', '"', '(', ')', '[', ']', '{', '}', '<', '>', '|', ';', ',', '=':
		return true
	}
	return unicode.IsSpace(r) || unicode.IsControl(r) ||
		unicode.In(r, unicode.Ps, unicode.Pe, unicode.Pi, unicode.Pf) ||
		r == utf8.RuneError
}

// scanTokens calls f with every maximal run of non-separator runes, except
// the tail of a template placeholder: a run glued to a closing '>' or '}'
// that does not start with a letter or digit ("<dir>/x.md", "{name}.md",
// "${root}/a.go" leave "/x.md", ".md", "/a.go", which are not paths).
func scanTokens(s string, f func(string)) {
	start := -1
	var before rune // the separator before the current run
	for i, r := range s {
		if isSeparator(r) {
			if start >= 0 {
				emitToken(s[start:i], before, f)
				start = -1
			}
			before = r
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		emitToken(s[start:], before, f)
	}
}

func emitToken(tok string, before rune, f func(string)) {
	if before == '>' || before == '}' {
		r, _ := utf8.DecodeRuneInString(tok)
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			return
		}
	}
	f(tok)
}

// unescapeMarkdown removes the backslash of a Markdown escape (a backslash
// before ASCII punctuation); other backslashes stay (Windows separators).
func unescapeMarkdown(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) && isASCIIPunct(s[i+1]) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isASCIIPunct(c byte) bool {
	return c >= '!' && c <= '/' || c >= ':' && c <= '@' || c >= '[' && c <= '`' || c >= '{' && c <= '~'
}

// linkRef parses a link destination: percent-decoded, query dropped, a
// leading "/" meaning the repository root, "./" and "../" resolved against
// opts.LinkBase.
func linkRef(dest string, opts Options) (Ref, bool) {
	raw := dest
	rooted := false
	if strings.Contains(dest, "://") || strings.HasPrefix(strings.ToLower(dest), "mailto:") {
		return Ref{}, false
	}
	if i := strings.IndexByte(dest, '?'); i >= 0 {
		frag := ""
		if j := strings.IndexByte(dest, '#'); j > i {
			frag = dest[j:]
		}
		dest = dest[:i] + frag
	}
	if u, err := url.PathUnescape(dest); err == nil {
		dest = u
	}
	switch {
	case strings.HasPrefix(dest, "/") && !strings.HasPrefix(dest, "//"):
		dest = dest[1:]
		rooted = true
	case strings.HasPrefix(dest, "./") || strings.HasPrefix(dest, "../"):
		rooted = true
		if opts.LinkBase != "" {
			dest = path.Join(opts.LinkBase, dest)
			if dest == ".." || strings.HasPrefix(dest, "../") {
				return Ref{}, false
			}
		}
	}
	r, ok := parseRef(dest, opts, true)
	if ok {
		r.Raw = raw
		r.Rooted = rooted
	}
	return r, ok
}

// parseRef decides whether one token is a file reference. link is set for
// link destinations, which are never trimmed of emphasis or punctuation and
// may hold spaces (written %20 or in <…>).
func parseRef(tok string, opts Options, link bool) (Ref, bool) {
	if !link {
		tok = trimToken(tok)
	}
	if tok == "" || strings.Contains(tok, "://") {
		return Ref{}, false
	}
	raw := tok
	body, line, ok := splitLine(tok)
	if !ok {
		return Ref{}, false
	}
	p := strings.ReplaceAll(body, `\`, "/")
	if p == "" || p[0] == '/' || p[0] == '~' {
		return Ref{}, false // absolute, UNC or home: outside the repository
	}
	for _, r := range p {
		if !pathRune(r) && !(link && r == ' ') {
			return Ref{}, false // globs, variables, drive letters, URLs' other parts
		}
	}
	p = path.Clean(p)
	if p == "." || p == ".." || strings.HasPrefix(p, "../") {
		return Ref{}, false
	}
	if !hasExtension(p, opts.Extensions) || looksLikeHost(p) || ignored(p, opts.Ignore) {
		return Ref{}, false
	}
	rooted := strings.HasPrefix(body, "./") || strings.HasPrefix(body, `.\`)
	return Ref{Path: p, Line: line, Raw: raw, Rooted: rooted, Dir: opts.LinkBase}, true
}

// pathRune reports the runes a path may hold: letters, digits, marks and
// _ - . / @ + ~. Glob metacharacters, $ and % (variables) and ':' (drive
// letters, schemes) are not among them.
func pathRune(r rune) bool {
	switch r {
	case '_', '-', '.', '/', '@', '+', '~':
		return true
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// trimToken strips what surrounds a path in prose: trailing sentence
// punctuation (foo.go, foo.go. foo.go: foo.go…), leading dashes and
// bullets, and balanced Markdown emphasis (**x.go**, _x.go_, ~~x.go~~).
func trimToken(tok string) string {
	for {
		before := tok
		tok = strings.TrimRightFunc(tok, trailingJunk)
		tok = strings.TrimLeftFunc(tok, leadingJunk)
		lead := len(tok) - len(strings.TrimLeft(tok, "*_~"))
		trail := len(tok) - len(strings.TrimRight(tok, "*_~"))
		if n := min(lead, trail); n > 0 && n < len(tok) {
			tok = tok[n : len(tok)-n]
		}
		if tok == before {
			return tok
		}
	}
}

func trailingJunk(r rune) bool {
	return (unicode.IsPunct(r) || unicode.IsSymbol(r)) && !strings.ContainsRune(`_*~/@\%$`, r)
}

// leadingJunk keeps what can start a path or mark it as not one: "./",
// dot files, "~", "$VAR", "%VAR%", "\\server", emphasis.
func leadingJunk(r rune) bool {
	return unicode.IsPunct(r) && !strings.ContainsRune(`._/~@*%\`, r)
}

// splitLine separates a line suffix from a token: ":LINE", ":LINE:COL",
// ":START-END", or a fragment "#LLINE", "#LSTART-LEND" (GitHub style); any
// other fragment (#section) is dropped. The line is the last line referred
// to. ok is false when the token has a ':' that is not a line suffix.
func splitLine(tok string) (body string, line int, ok bool) {
	body = tok
	if i := strings.IndexByte(body, '#'); i >= 0 {
		frag := body[i+1:]
		body = body[:i]
		if strings.HasPrefix(frag, "L") {
			line = fragmentLine(frag)
		}
	}
	i := strings.IndexByte(body, ':')
	if i < 0 {
		return body, line, true
	}
	suffix := body[i+1:]
	body = body[:i]
	start, rest := leadingNumber(suffix)
	if start < 0 {
		return "", 0, false
	}
	line = start
	switch {
	case rest == "":
	case rest[0] == ':':
		if col, r := leadingNumber(rest[1:]); col < 0 || r != "" {
			return "", 0, false
		}
	case rest[0] == '-':
		end, r := leadingNumber(rest[1:])
		if end < 0 || r != "" {
			return "", 0, false
		}
		line = max(start, end)
	default:
		return "", 0, false
	}
	return body, line, true
}

// fragmentLine reads "L12", "L12C3", "L12-L20", "L12-20" and returns the
// last line, or 0.
func fragmentLine(frag string) int {
	start, rest := leadingNumber(frag[1:])
	if start < 0 {
		return 0
	}
	if strings.HasPrefix(rest, "C") {
		_, rest = leadingNumber(rest[1:])
	}
	if !strings.HasPrefix(rest, "-") {
		return start
	}
	rest = strings.TrimPrefix(rest[1:], "L")
	if end, _ := leadingNumber(rest); end > start {
		return end
	}
	return start
}

// leadingNumber parses the decimal digits at the start of s (at most nine,
// so that absurd numbers are not references) and returns the rest, or -1.
func leadingNumber(s string) (int, string) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 || n > 9 {
		return -1, s
	}
	v, _ := strconv.Atoi(s[:n])
	return v, s[n:]
}

// hasExtension reports whether p's base name is "<stem>.<ext>" with a
// non-empty stem and ext among exts (case-insensitive).
func hasExtension(p string, exts []string) bool {
	base := path.Base(p)
	i := strings.LastIndexByte(base, '.')
	if i <= 0 || i == len(base)-1 {
		return false
	}
	ext := base[i+1:]
	if len(exts) == 0 {
		exts = config.DefaultExtensions
	}
	for _, e := range exts {
		if strings.EqualFold(strings.TrimPrefix(e, "."), ext) {
			return true
		}
	}
	return false
}

// hostTLDs are the last labels that make a first path element a host name:
// "github.com/org/repo/x.go" written without a scheme is a URL.
var hostTLDs = map[string]bool{
	"com": true, "org": true, "net": true, "io": true, "dev": true, "co": true, "edu": true,
	"gov": true, "app": true, "ai": true, "me": true, "info": true, "cloud": true, "page": true,
}

func looksLikeHost(p string) bool {
	first, _, ok := strings.Cut(p, "/")
	if !ok {
		return false
	}
	if strings.HasPrefix(first, "www.") {
		return true
	}
	i := strings.LastIndexByte(first, '.')
	return i > 0 && hostTLDs[strings.ToLower(first[i+1:])]
}

// ignored reports whether p matches an ignore pattern.
func ignored(p string, patterns []string) bool {
	for _, pat := range patterns {
		pat = strings.TrimPrefix(strings.ReplaceAll(pat, `\`, "/"), "./")
		if pat == "" {
			continue
		}
		if strings.HasSuffix(pat, "/") {
			if strings.HasPrefix(p+"/", pat) {
				return true
			}
			continue
		}
		if ok, _ := path.Match(pat, p); ok {
			return true
		}
		if !strings.Contains(pat, "/") {
			if ok, _ := path.Match(pat, path.Base(p)); ok {
				return true
			}
		}
	}
	return false
}
