package render

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

var testNow = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

func putFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readyObs(id, typ, pattern, details string) string {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "pattern": pattern, "confidence": 0.95, "observations": 4,
		"first_seen": "2025-12-01T00:00:00Z", "last_seen": "2025-12-10T00:00:00Z", "status": "ready",
		"evidence": []string{"src/x.go"}, "details": details, "quality_ok": true})
	return string(b) + "\n"
}

func run(t *testing.T, root string) Result {
	t.Helper()
	res, err := Run(context.Background(), root, Options{Now: testNow, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func read(t *testing.T, root, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A section that already carries the observation's Source marker (a render
// killed before its log write) is adopted, not appended a second time.
func TestAdoptsSectionOfACrashedRender(t *testing.T) {
	root := t.TempDir()
	e := markdown.Entry{ObservationID: "obs_d", Pattern: "Use SQLite", Date: testNow}
	file := markdown.Append(nil, markdown.ADR, markdown.RenderDecision("ADR-001", e))
	putFile(t, root, ".memory/knowledge/decisions.md", string(file))
	putFile(t, root, ".memory/learning-log.jsonl", readyObs("obs_d", manifest.Decision, "Use SQLite", ""))
	res := run(t, root)
	if len(res.Rendered) != 1 || res.Rendered[0].Anchor != "ADR-001" {
		t.Fatalf("rendered %+v, want obs_d adopted as ADR-001", res.Rendered)
	}
	if got := read(t, root, ".memory/knowledge/decisions.md"); got != string(file) {
		t.Errorf("decisions.md changed:\n%s", got)
	}
	m, _, _ := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	if len(m.Entries) != 1 || m.Entries[0].AnchorID != "ADR-001" {
		t.Errorf("manifest %+v", m.Entries)
	}
}

// A command file with exactly the rendered content (a crash after the
// artifact write) is adopted; a file with other content at the slug's path
// (a human's) is left alone and a numbered name is used.
func TestArtifactNames(t *testing.T) {
	root := t.TempDir()
	content, err := markdown.RenderCommand(markdown.Entry{ObservationID: "obs_a", Pattern: "Run the linter", Evidence: []string{"src/x.go"}, Date: testNow})
	if err != nil {
		t.Fatal(err)
	}
	putFile(t, root, ".claude/commands/self-learning/run-the-linter.md", string(content))
	putFile(t, root, ".claude/commands/self-learning/rebase-first.md", "a human's own command\n")
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_a", manifest.Workflow, "Run the linter", "")+readyObs("obs_b", manifest.Workflow, "Rebase first", ""))
	res := run(t, root)
	got := map[string]string{}
	for _, r := range res.Rendered {
		got[r.ID] = r.Path
	}
	if got["obs_a"] != ".claude/commands/self-learning/run-the-linter.md" || got["obs_b"] != ".claude/commands/self-learning/rebase-first-2.md" {
		t.Errorf("paths %v", got)
	}
	if read(t, root, ".claude/commands/self-learning/rebase-first.md") != "a human's own command\n" {
		t.Error("a human's file was overwritten")
	}
}

func TestNumberingCapacityDedupe(t *testing.T) {
	root := t.TempDir()
	var b strings.Builder
	b.WriteString("# Pitfalls\n")
	for _, n := range []string{"001", "004"} {
		b.WriteString("\n## PF-" + n + ": Hand written " + n + "\n\n- **Area**: area " + n + "\n- **Issue**: issue " + n + "\n- **Status**: Active\n")
	}
	putFile(t, root, ".memory/knowledge/pitfalls.md", b.String())
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_dup", manifest.Pitfall, "Dup", "area: Area 004!; issue: ISSUE 004")+
			readyObs("obs_new", manifest.Pitfall, "New", "area: new; issue: new"))
	res := run(t, root)
	if len(res.Rendered) != 1 || res.Rendered[0].ID != "obs_new" || res.Rendered[0].Anchor != "PF-005" || res.Skipped != 1 {
		t.Errorf("render %+v", res)
	}
	if txt := read(t, root, ".memory/knowledge/pitfalls.md"); !strings.HasPrefix(txt, "<!-- TL;DR: 3 pitfalls. Key: PF-001, PF-004, PF-005 -->\n") {
		t.Errorf("TL;DR line: %q", strings.SplitN(txt, "\n", 2)[0])
	}
}
