package scaffold

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"
)

func TestMissingIgnoreLines(t *testing.T) {
	all := func() []string {
		var p []string
		for _, f := range LocalState {
			p = append(p, f.Pattern)
		}
		return p
	}()
	for _, tc := range []struct {
		name, gitignore string
		want            []string
	}{
		{"empty", "", all},
		{"unrelated rules", "node_modules/\n*.log\n", all},
		{"the whole memory ignored", ".memory/\n", nil},
		{"the whole memory ignored without slash", ".memory\n", nil},
		{"already has every line", strings.Join(all, "\n") + "\n", nil},
		{"a broader rule covers the pid", "*.pid\n", slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == ".memory/.watch.pid" })},
		{"a commented-out rule does not count", "# .memory/\n", all},
		{"negated again", ".memory/\n!.memory/.watch.pid\n", []string{".memory/.watch.pid"}},
		{"CRLF", ".memory/\r\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := MissingIgnoreLines([]byte(tc.gitignore))
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v\nwant %v", got, tc.want)
			}
		})
	}
}

// Each pattern covers its example, and no pattern covers the shared files
// that are meant to be committed.
func TestLocalStatePatterns(t *testing.T) {
	var ps []gitignore.Pattern
	for _, f := range LocalState {
		p := gitignore.ParsePattern(f.Pattern, nil)
		if p.Match(strings.Split(f.Example, "/"), false) != gitignore.Exclude {
			t.Errorf("%s does not match its example %s", f.Pattern, f.Example)
		}
		ps = append(ps, p)
	}
	m := gitignore.NewMatcher(ps)
	for _, shared := range []string{".memory/learning-log.jsonl", ".memory/.learning-manifest.json", ".memory/.knowledge-usage.json", ".memory/knowledge/decisions.md", ".memory/knowledge/pitfalls.md", ".memory/feedback.jsonl", ".memory/outcomes.jsonl", ".memory/learnwatch.yaml"} {
		if m.Match(strings.Split(shared, "/"), false) {
			t.Errorf("%s is shared state but the local patterns ignore it", shared)
		}
	}
}

func TestApplyIdempotent(t *testing.T) {
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, ".gitignore"), []byte("node_modules/"), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := Apply(root)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{".memory/", ".memory/knowledge/", ".memory/learnwatch.yaml"}; !slices.Equal(res.Created, want) {
		t.Errorf("created %v, want %v", res.Created, want)
	}
	if len(res.Gitignore) != len(LocalState) {
		t.Errorf("appended %v", res.Gitignore)
	}
	gi, _ := os.ReadFile(filepath.Join(root, ".gitignore"))
	if !strings.HasPrefix(string(gi), "node_modules/\n\n# learnwatch") {
		t.Errorf(".gitignore:\n%s", gi)
	}
	again, err := Apply(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(again.Created) != 0 || len(again.Gitignore) != 0 {
		t.Errorf("second run changed %+v", again)
	}
	gi2, _ := os.ReadFile(filepath.Join(root, ".gitignore"))
	if string(gi2) != string(gi) {
		t.Errorf("second run rewrote .gitignore")
	}
}

func TestApplyRefusesSymlinks(t *testing.T) {
	outside := t.TempDir()
	for _, tc := range []struct{ name, link string }{
		{"memory", ".memory"},
		{"knowledge", ".memory/knowledge"},
		{"gitignore", ".gitignore"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
				t.Fatal(err)
			}
			if tc.link == ".memory" {
				os.Remove(filepath.Join(root, ".memory"))
			}
			target := filepath.Join(outside, tc.name)
			if err := os.Symlink(target, filepath.Join(root, tc.link)); err != nil {
				t.Fatal(err)
			}
			if _, err := Apply(root); err == nil {
				t.Fatalf("Apply followed the %s symlink", tc.link)
			}
			if _, err := os.Lstat(target); err == nil {
				t.Errorf("something was created outside the root at %s", target)
			}
		})
	}
}

// The .gitignore snippets in the documentation list exactly the patterns
// init appends, so the docs cannot drift from what init does.
func TestDocsListTheLocalState(t *testing.T) {
	var want []string
	for _, f := range LocalState {
		want = append(want, f.Pattern)
	}
	for _, doc := range []string{"../docs/overview.md", "../docs/team.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(data), "```gitignore\n")
		if !ok {
			t.Fatalf("%s has no gitignore block", doc)
		}
		block, _, _ := strings.Cut(rest, "```")
		var got []string
		for _, l := range strings.Split(block, "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
				got = append(got, l)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s lists\n%v\ninit appends\n%v", doc, got, want)
		}
	}
}
