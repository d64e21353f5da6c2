package textsafe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestLine(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		max      int
		want     string
	}{
		{"plain title", "Use SQLite for the cache", 0, "Use SQLite for the cache"},
		{"csi colour and clear screen", "Use \x1b[31mSQLite\x1b[0m\x1b[2J", 0, "Use [31mSQLite[0m[2J"},
		{"osc title set", "x\x1b]0;pwned\x07y", 0, "x]0;pwnedy"},
		{"c1 csi", "a\u009b31mb", 0, "a31mb"},
		{"tabs and newlines become spaces", "a\tb\nc\r\nd", 0, "a b c  d"},
		{"bidi override", "ADR \u202eevil\u202c done", 0, "ADR evil done"},
		{"bidi isolates and marks", "\u2066a\u2067b\u2068c\u2069\u200ed\u200fe\u061cf", 0, "abcdef"},
		{"zero width", "ze\u200bro\u200c\u200d\u2060\ufeffwidth", 0, "zerowidth"},
		{"soft hyphen (Cf)", "soft\u00adhyphen", 0, "softhyphen"},
		{"line separators", "a\u2028b\u2029c", 0, "a b c"},
		{"invalid utf8", "a\xffb", 0, "a\ufffdb"},
		{"cut with ellipsis", "abcdefgh", 5, "abcd…"},
		{"exactly max is not cut", "abcde", 5, "abcde"},
		{"cut never splits a rune", "日本語のテキスト", 4, "日本語…"},
		{"cut counts only kept runes", "a\x1bb\x1bc\x1bd", 3, "ab…"},
		{"max 1", "abc", 1, "…"},
		{"emoji kept", "deploy 🚀 friday", 0, "deploy 🚀 friday"},
		{"accents kept", "café naïve", 0, "café naïve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in, tc.max); got != tc.want {
				t.Errorf("Line(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
		})
	}
}

func TestBlock(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"line one\nline two", 0, "line one\nline two"},
		{"crlf\r\nand cr\rend", 0, "crlf\nand cr\nend"},
		{"tab\there\x1b[1m\n", 0, "tab here[1m\n"},
		{"a\nb\nc\nd", 4, "a\nb…"},
	} {
		if got := Block(tc.in, tc.max); got != tc.want {
			t.Errorf("Block(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("obs_$(rm -rf ~)\x1b[2J\u202e", 10); got != `"obs_$(rm …"` {
		t.Errorf("Quote = %s", got)
	}
}

// check asserts the sanitiser's contract on one input.
func check(t *testing.T, in string, max int, multiline bool) {
	f := Line
	if multiline {
		f = Block
	}
	out := f(in, max)
	if !utf8.ValidString(out) {
		t.Fatalf("invalid UTF-8 out of %q: %q", in, out)
	}
	for _, r := range out {
		if Forbidden(r) && !(multiline && r == '\n') {
			t.Fatalf("forbidden rune %U out of %q: %q", r, in, out)
		}
	}
	if max > 0 && utf8.RuneCountInString(out) > max {
		t.Fatalf("%d runes out of %q, bound %d: %q", utf8.RuneCountInString(out), in, max, out)
	}
	if again := f(out, max); again != out {
		t.Fatalf("not idempotent on %q: %q then %q", in, out, again)
	}
	if max <= 0 && !multiline && !strings.ContainsAny(in, "\t\n\r\u2028\u2029") && Safe(in) && out != in {
		t.Fatalf("safe input changed: %q → %q", in, out)
	}
}

func FuzzSanitise(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[31mred", "\u202eevil", "a\u200bb", "\xff\xfe", "日本語", "a\r\nb", "\u0085next line"} {
		f.Add(s, 0, false)
		f.Add(s, 3, true)
	}
	f.Fuzz(func(t *testing.T, in string, max int, multiline bool) {
		check(t, in, max%200, multiline)
	})
}

func TestWriter(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	in := "ok \x1b[2J\u202eevil\u200b\tline\n日本" // the last rune arrives split
	raw := []byte(in)
	w.Write(raw[:len(raw)-2])
	w.Write(raw[len(raw)-2:])
	w.Write([]byte("\xff end\r\n"))
	if got, want := b.String(), "ok [2Jevil line\n日本\ufffd end\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestWriterClose(t *testing.T) {
	var b strings.Builder
	w := NewWriter(&b)
	w.Write([]byte("before\n"))
	w.Close()
	if n, err := w.Write([]byte("after\n")); n != 6 || err != nil {
		t.Fatalf("%d %v", n, err)
	}
	if b.String() != "before\n" {
		t.Fatalf("%q", b.String())
	}
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte("a\x1b[1mb\u202e\nc"), 3)
	f.Fuzz(func(t *testing.T, p []byte, cut int) {
		var b strings.Builder
		w := NewWriter(&b)
		if cut < 0 {
			cut = -cut
		}
		cut %= len(p) + 1
		w.Write(p[:cut])
		w.Write(p[cut:])
		out := b.String()
		if !utf8.ValidString(out) {
			t.Fatalf("invalid UTF-8 %q", out)
		}
		for _, r := range out {
			if r != '\n' && Forbidden(r) {
				t.Fatalf("forbidden %U in %q", r, out)
			}
		}
		var whole strings.Builder
		NewWriter(&whole).Write(p)
		if whole.String() != out {
			t.Fatalf("split write %q differs from whole %q", out, whole.String())
		}
	})
}
