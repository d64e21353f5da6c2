package manifest

import (
	"path/filepath"
	"strings"
	"testing"
)

// A manifest path is untrusted input: whatever it is, a path ForeignRel
// rebases is relative, starts at an artifact location and stays inside any
// root it is joined to; ResolveEntry never returns a path outside the root.
func FuzzForeignRel(f *testing.F) {
	for _, s := range []string{
		"/home/alice/proj/.claude/commands/self-learning/x.md",
		"/a/.claude/skills/s/SKILL.md",
		"/x/.memory/knowledge/decisions.md",
		"/etc/passwd",
		"/../../.claude/commands/../../../etc/x",
		"/a/.claude/commands/",
		".claude/commands/x.md",
	} {
		f.Add(s)
	}
	root := f.TempDir()
	r := NewResolver(root)
	f.Fuzz(func(t *testing.T, p string) {
		rel, ok := ForeignRel(p)
		if ok {
			s := filepath.ToSlash(rel)
			if filepath.IsAbs(rel) || s == ".." || strings.HasPrefix(s, "../") || strings.Contains(s, "/../") {
				t.Fatalf("ForeignRel(%q) = %q leaves the root", p, rel)
			}
			if !strings.HasPrefix(s, ".claude/commands/") && !strings.HasPrefix(s, ".claude/skills/") && !strings.HasPrefix(s, ".memory/knowledge/") {
				t.Fatalf("ForeignRel(%q) = %q is no artifact location", p, rel)
			}
		}
		abs, rl, _, err := r.ResolveEntry(p)
		if err != nil {
			return
		}
		if _, in := Within(root, abs); !in {
			t.Fatalf("ResolveEntry(%q) = %q, outside %s", p, abs, root)
		}
		if filepath.Join(root, filepath.FromSlash(rl)) != abs {
			t.Fatalf("ResolveEntry(%q): abs %q and rel %q disagree", p, abs, rl)
		}
	})
}
