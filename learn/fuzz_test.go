package learn

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzCleanRunError: an error's details are either refused (naming a field)
// or come out valid UTF-8, one line (the stack: its lines), free of control
// characters, within their bounds, with a non-empty message.
func FuzzCleanRunError(f *testing.F) {
	f.Add("Type error in src/auth.ts", "typecheck", "After adding OAuth types", "at a\nat b")
	f.Add("\x00", "\x1b[31mred", "line\r\nbreak", "\t\xff\xfe")
	f.Add("  ", "", "", "")
	f.Fuzz(func(t *testing.T, msg, tool, ctx, stack string) {
		e, err := CleanRunError(RunError{Message: msg, Tool: tool, Context: ctx, Stack: stack})
		if err != nil {
			if _, ok := err.(*FieldError); !ok {
				t.Fatalf("error %v is not a FieldError", err)
			}
			return
		}
		if e.Message == "" {
			t.Fatal("empty message accepted")
		}
		for name, v := range map[string]string{"message": e.Message, "tool": e.Tool, "context": e.Context, "stack": e.Stack} {
			if !utf8.ValidString(v) {
				t.Fatalf("%s not UTF-8: %q", name, v)
			}
			for _, r := range v {
				if unicode.IsControl(r) && !(name == "stack" && (r == '\n' || r == '\t')) {
					t.Fatalf("%s keeps control %U: %q", name, r, v)
				}
			}
		}
		if utf8.RuneCountInString(e.Stack) > MaxErrorStack || utf8.RuneCountInString(e.Tool) > MaxErrorTool ||
			utf8.RuneCountInString(e.Message) > MaxErrorMessage || utf8.RuneCountInString(e.Context) > MaxErrorContext {
			t.Fatal("over a bound")
		}
		if strings.Contains(e.Message+e.Tool+e.Context, "\n") {
			t.Fatal("a line break in a one-line field")
		}
	})
}

// FuzzDecodeVerdictFiles: an accepted verdict's files are one-line paths,
// and VerdictEvents over them never panics and never both reinforces and
// ages one entry.
func FuzzDecodeVerdictFiles(f *testing.F) {
	f.Add([]byte(`{"run_id":"r","verdict":"PASS","evidence_level":1,"files":["src/auth/login.go","./x/"]}`))
	f.Add([]byte(`{"run_id":"r","verdict":"PASS","evidence_level":2,"files":["a\nb"]}`))
	f.Add([]byte(`{"run_id":"r","verdict":"PASS","evidence_level":2,"files":[":1","\\\\"],"cited":["ADR-001"]}`))
	entries := []Candidate{{ID: "ADR-001", Refs: []string{"src/auth/login.go:3"}}, {ID: "PF-001", Area: "auth, x"}, {ID: "obs_a"}}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := DecodeVerdict(data)
		if err != nil {
			return
		}
		for _, p := range v.Files {
			if strings.ContainsAny(p, "\n\r\x00") {
				t.Fatalf("accepted a multi-line path %q", p)
			}
		}
		evs, _ := VerdictEvents(v, entries, []string{"sentinel"}, t0)
		kinds := map[string]map[string]bool{}
		for _, e := range evs {
			if kinds[e.Target] == nil {
				kinds[e.Target] = map[string]bool{}
			}
			kinds[e.Target][e.Kind] = true
		}
		for id, k := range kinds {
			if k[KindAged] && (k[KindCited] || k[KindFalsePositive]) {
				t.Fatalf("%s both aged and reinforced/flagged: %v", id, k)
			}
		}
	})
}
