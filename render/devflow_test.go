package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/learnwatch/learnwatch/capacity"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// devflowFrontmatter and devflowMarker reimplement how devflow's cleanup
// finds self-learning artifacts: the frontmatter block at the top of the
// file, and in it a line starting with the marker — within the first 10
// lines of the file, as devflow's skill cleanup reads only those.
var (
	devflowFrontmatter = regexp.MustCompile(`^---\r?\n([\s\S]*?)\r?\n---`)
	devflowMarker      = regexp.MustCompile(`(?m)^# devflow-learning: auto-generated`)
)

// devflowScan lists the commands and skills under root that devflow's
// cleanup would take for its own, relative to root.
func devflowScan(t *testing.T, root string) []string {
	t.Helper()
	var candidates []string
	cmds, _ := filepath.Glob(filepath.Join(root, ".claude", "commands", "self-learning", "*.md"))
	skills, _ := filepath.Glob(filepath.Join(root, ".claude", "skills", "*", "SKILL.md"))
	candidates = append(cmds, skills...)
	var found []string
	for _, p := range candidates {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		head := b
		if lines := bytes.SplitAfterN(b, []byte("\n"), 11); len(lines) == 11 {
			head = bytes.Join(lines[:10], nil)
		}
		m := devflowFrontmatter.FindSubmatch(b)
		if m != nil && devflowMarker.Match(m[1]) && devflowMarker.Match(head) {
			rel, _ := filepath.Rel(root, p)
			found = append(found, filepath.ToSlash(rel))
		}
	}
	sort.Strings(found)
	return found
}

func obsLine(id, typ, pattern, details string, confidence float64, n int, qualityOK bool) string {
	b, _ := json.Marshal(map[string]any{"id": id, "type": typ, "pattern": pattern, "confidence": confidence, "observations": n,
		"first_seen": "2025-12-01T00:00:00Z", "last_seen": "2025-12-10T00:00:00Z", "status": "ready",
		"evidence": []string{"cmd/server/main.go"}, "details": details, "quality_ok": qualityOK})
	return string(b) + "\n"
}

// A rendered command and skill carry the marker as the last frontmatter
// line; the frontmatter still decodes with the YAML decoder; devflow's
// marker scan finds both and not a human's command beside them.
func TestMarkerFoundByDevflowScan(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".claude/commands/self-learning/deploy-notes.md", "---\ndescription: my own notes\n---\n\n# Deploy notes\n")
	putFile(t, root, ".memory/learning-log.jsonl",
		obsLine("obs_wf", manifest.Workflow, `Run "make check": before pushing`, "The CI runs the same target.", 0.95, 4, true)+
			obsLine("obs_pr", manifest.Procedural, "Bisect flaky tests with -count=50", "steps: go test -run X -count=50; bisect the commits", 0.8, 3, true)+
			// An extractor's pattern over several lines: still one frontmatter
			// line, so the marker stays within the first ten.
			obsLine("obs_ml", manifest.Procedural, "Regenerate mocks\nafter\nevery\nchange\nto\nan\ninterface\nin pkg/store", "", 0.75, 2, true))
	res := run(t, root)
	if len(res.Rendered) != 3 {
		t.Fatalf("rendered %+v", res)
	}
	want := map[string]string{
		".claude/commands/self-learning/run-make-check-before-pushing.md":            "# devflow-learning: auto-generated (2026-01-05, confidence: 0.95, obs: 4)",
		".claude/skills/bisect-flaky-tests-with-count-50/SKILL.md":                   "# devflow-learning: auto-generated (2026-01-05, confidence: 0.8, obs: 3)",
		".claude/skills/regenerate-mocks-after-every-change-to-an-interfac/SKILL.md": "# devflow-learning: auto-generated (2026-01-05, confidence: 0.75, obs: 2)",
	}
	for rel, marker := range want {
		b := []byte(read(t, root, rel))
		m := devflowFrontmatter.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no frontmatter\n%s", rel, b)
		}
		lines := strings.Split(string(m[1]), "\n")
		if last := lines[len(lines)-1]; last != marker {
			t.Errorf("%s: last frontmatter line %q, want %q", rel, last, marker)
		}
		var fm map[string]any
		if err := yaml.Unmarshal(m[1], &fm); err != nil {
			t.Fatalf("%s: frontmatter does not decode: %v", rel, err)
		}
		if _, ok := fm["description"].(string); !ok || len(fm) == 0 {
			t.Errorf("%s: frontmatter %v", rel, fm)
		}
		for k := range fm {
			if strings.Contains(k, "devflow") {
				t.Errorf("%s: the marker decoded as a key %q", rel, k)
			}
		}
	}
	if fm, _, _ := markdown.Frontmatter([]byte(read(t, root, ".claude/commands/self-learning/run-make-check-before-pushing.md"))); fm["description"] != `Run "make check": before pushing` {
		t.Errorf("command description = %v", fm["description"])
	}
	got := devflowScan(t, root)
	if strings.Join(got, " ") != ".claude/commands/self-learning/run-make-check-before-pushing.md .claude/skills/bisect-flaky-tests-with-count-50/SKILL.md .claude/skills/regenerate-mocks-after-every-change-to-an-interfac/SKILL.md" {
		t.Errorf("devflow scan found %q", got)
	}
}

// A command or skill rendered on another day at another confidence (a
// render that crashed before its log write, run again later) is adopted,
// not duplicated under a numbered name, and carries today's marker.
func TestAdoptsArtifactRenderedOnAnotherDay(t *testing.T) {
	root := t.TempDir()
	earlier := testNow.AddDate(0, 0, -3)
	for _, o := range []struct{ id, typ, pattern string }{
		{"obs_wf", manifest.Workflow, "Run the linter before committing"},
		{"obs_pr", manifest.Procedural, "Regenerate mocks after interface changes"},
	} {
		rel, content, err := Artifact(o.typ, markdown.Slug(o.pattern), markdown.Entry{ObservationID: o.id, Pattern: o.pattern,
			Evidence: []string{"cmd/server/main.go"}, Date: earlier, Confidence: 0.7, Observations: 2})
		if err != nil {
			t.Fatal(err)
		}
		putFile(t, root, rel, string(content))
		putFile(t, root, ".memory/learning-log.jsonl", readOr(root, ".memory/learning-log.jsonl")+obsLine(o.id, o.typ, o.pattern, "", 0.95, 5, true))
	}
	res := run(t, root)
	paths := map[string]string{}
	for _, r := range res.Rendered {
		paths[r.ID] = r.Path
	}
	if paths["obs_wf"] != ".claude/commands/self-learning/run-the-linter-before-committing.md" ||
		paths["obs_pr"] != ".claude/skills/regenerate-mocks-after-interface-changes/SKILL.md" {
		t.Fatalf("paths %v: not adopted", paths)
	}
	for _, rel := range paths {
		b := read(t, root, rel)
		if !strings.Contains(b, "\n# devflow-learning: auto-generated (2026-01-05, confidence: 0.95, obs: 5)\n---\n") {
			t.Errorf("%s: marker not brought up to date\n%s", rel, b)
		}
	}
	if extra, _ := filepath.Glob(filepath.Join(root, ".claude", "commands", "self-learning", "*-2.md")); len(extra) > 0 {
		t.Errorf("duplicate rendered: %v", extra)
	}
	m, _, _ := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	for _, e := range m.Entries {
		b, _ := os.ReadFile(filepath.Join(root, e.Path))
		if e.ContentHash != manifest.Hash(b) {
			t.Errorf("%s: manifest hash is not the file's", e.Path)
		}
	}
}

func readOr(root, rel string) string {
	b, _ := os.ReadFile(filepath.Join(root, rel))
	return string(b)
}

// A ready observation without quality_ok: true is counted in skipped with
// its reason, and stays ready.
func TestSkipsReadyWithoutQuality(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		obsLine("obs_noq", manifest.Decision, "Use UTC everywhere", "context: logs; decision: UTC", 0.95, 3, false)+
			obsLine("obs_ok", manifest.Decision, "Vendor nothing", "context: deps; decision: modules", 0.95, 3, true))
	res := run(t, root)
	if len(res.Rendered) != 1 || res.Rendered[0].ID != "obs_ok" || res.Skipped != 1 ||
		len(res.Skips) != 1 || res.Skips[0] != (Skip{ID: "obs_noq", Reason: SkipQuality}) {
		t.Fatalf("render %+v", res)
	}
	log, _ := manifest.ReadLog(manifest.PathsFor(root).Log)
	if o := log.Find("obs_noq"); o.Status != manifest.Ready || o.ArtifactPath != "" {
		t.Errorf("obs_noq %+v", o)
	}
	if strings.Contains(read(t, root, ".memory/knowledge/decisions.md"), "Use UTC") {
		t.Error("rendered without quality_ok")
	}
}

// decisionsWith writes a decisions.md with n active entries (hand-written,
// no Source marker).
func decisionsWith(t *testing.T, root string, n int) {
	var src []byte
	for i := 1; i <= n; i++ {
		sec := fmt.Sprintf("## ADR-%03d: Decision %d\n\n- **Date**: 2025-06-01\n- **Status**: Accepted\n- **Context**: c%d\n", i, i, i)
		src = markdown.Append(src, markdown.ADR, []byte(sec))
	}
	putFile(t, root, ".memory/knowledge/decisions.md", string(src))
}

// The notifications sequence through real renders: 49 → 50 → 69 → 70 →
// (dismissed) → 90 → 100, then a refused append at the ceiling. Keys other
// tools wrote are kept.
func TestCapacityNotificationsThroughRenders(t *testing.T) {
	root := t.TempDir()
	decisionsWith(t, root, 48)
	p := manifest.PathsFor(root)
	putFile(t, root, ".memory/.notifications.json", "{\n  \"update-available\": {\n    \"version\": \"2.1.0\"\n  }\n}\n")
	next := 0
	appendDecisions := func(k int) Result {
		var b strings.Builder
		for i := 0; i < k; i++ {
			next++
			b.WriteString(obsLine(fmt.Sprintf("obs_d%03d", next), manifest.Decision, fmt.Sprintf("Decision number %d", next),
				fmt.Sprintf("context: c%d; decision: d%d", next, next), 0.95, 3, true))
		}
		putFile(t, root, ".memory/learning-log.jsonl", readOr(root, ".memory/learning-log.jsonl")+b.String())
		return run(t, root)
	}
	notice := func() (manifest.Notification, bool) {
		n, err := manifest.ReadNotifications(p.Notifications())
		if err != nil {
			t.Fatal(err)
		}
		if keys := n.Keys(); keys[0] != "update-available" {
			t.Fatalf("keys %v: the other tool's key moved or went", keys)
		}
		return n.Get(capacity.KeyDecisions)
	}
	appendDecisions(1) // 49
	if _, ok := notice(); ok {
		t.Fatal("a notification at 49")
	}
	count := 49
	for _, s := range []struct {
		add, threshold int
		severity       string
		dismissFirst   bool
	}{{1, 50, "dim", false}, {19, 60, "dim", false}, {1, 70, "warning", false}, {20, 90, "error", true}, {10, 100, "error", false}} {
		if s.dismissFirst { // the user dismisses the warning in devflow's HUD
			n, _ := manifest.ReadNotifications(p.Notifications())
			v, _ := n.Get(capacity.KeyDecisions)
			v.Active, v.DismissedAtThreshold = false, &v.Threshold
			n.Set(capacity.KeyDecisions, v)
			if err := manifest.WriteNotifications(p.Notifications(), n); err != nil {
				t.Fatal(err)
			}
		}
		res := appendDecisions(s.add)
		if len(res.Rendered) != s.add {
			t.Fatalf("rendered %d of %d", len(res.Rendered), s.add)
		}
		count += s.add
		// Appends fire one by one, as in devflow: the notification holds the
		// count at which its threshold was crossed (60, not 69).
		v, ok := notice()
		if !ok || !v.Active || v.Threshold != s.threshold || v.Severity != s.severity || v.Count != s.threshold || v.Ceiling != 100 || v.DismissedAtThreshold != nil {
			t.Fatalf("at %d: %+v", count, v)
		}
		if v.CreatedAt != "2026-01-05T00:00:00.000Z" {
			t.Errorf("created_at %q", v.CreatedAt)
		}
	}
	// Full: the next one is refused and the notification says so.
	res := appendDecisions(1)
	if res.Skipped != 1 || !strings.HasPrefix(res.Skips[0].Reason, "capacity") {
		t.Fatalf("at the ceiling: %+v", res)
	}
	if v, _ := notice(); v.Count != 100 || v.Severity != "error" || v.Threshold != 100 {
		t.Errorf("ceiling notification %+v", v)
	}
}

// A notifications file that does not parse is left as it is; the render
// goes on and says why the notification was not updated.
func TestCorruptNotificationsLeftAlone(t *testing.T) {
	root := t.TempDir()
	decisionsWith(t, root, 59)
	putFile(t, root, ".memory/.notifications.json", "{ half written")
	putFile(t, root, ".memory/learning-log.jsonl", obsLine("obs_d", manifest.Decision, "Sixtieth", "context: c; decision: d", 0.95, 3, true))
	res, err := Run(t.Context(), root, Options{Now: testNow, LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rendered) != 1 || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "not a JSON object") {
		t.Fatalf("render %+v", res)
	}
	if got := read(t, root, ".memory/.notifications.json"); got != "{ half written" {
		t.Errorf("corrupt file rewritten: %q", got)
	}
	if !bytes.Contains([]byte(read(t, root, ".memory/knowledge/decisions.md")), []byte("## ADR-060: Sixtieth")) {
		t.Error("entry not appended")
	}
}

// A command devflow's render-ready wrote for the same pattern (its
// template, its marker) and crashed before its log write is adopted and
// rewritten; a marked file for another pattern, and an unmarked file with
// the same description (a human's), are left alone.
func TestAdoptsDevflowRenderedCommand(t *testing.T) {
	devflowCommand := func(pattern string) string {
		return "---\ndescription: \"" + strings.ReplaceAll(pattern, `"`, `\"`) + "\"\n" +
			"# devflow-learning: auto-generated (2025-12-30, confidence: 0.7, obs: 2)\n---\n\n# " + pattern + "\n\n\n\n## Evidence\n- old session\n"
	}
	root := t.TempDir()
	putFile(t, root, ".claude/commands/self-learning/squash-fixups-before-pushing.md", devflowCommand(`Squash "fixups" before pushing`))
	putFile(t, root, ".claude/commands/self-learning/tag-releases-from-main.md", devflowCommand("Tag releases from main, always"))
	human := "---\ndescription: Run go generate after editing enums\n---\n\n# My notes\n"
	putFile(t, root, ".claude/commands/self-learning/run-go-generate-after-editing-enums.md", human)
	putFile(t, root, ".memory/learning-log.jsonl",
		obsLine("obs_sq", manifest.Workflow, `Squash "fixups" before pushing`, "", 0.9, 3, true)+
			obsLine("obs_tag", manifest.Workflow, "Tag releases from main", "", 0.9, 3, true)+
			obsLine("obs_gen", manifest.Workflow, "Run go generate after editing enums", "", 0.9, 3, true))
	res := run(t, root)
	paths := map[string]string{}
	for _, r := range res.Rendered {
		paths[r.ID] = r.Path
	}
	want := map[string]string{
		"obs_sq":  ".claude/commands/self-learning/squash-fixups-before-pushing.md",
		"obs_tag": ".claude/commands/self-learning/tag-releases-from-main-2.md",
		"obs_gen": ".claude/commands/self-learning/run-go-generate-after-editing-enums-2.md",
	}
	for id, p := range want {
		if paths[id] != p {
			t.Errorf("%s rendered to %q, want %q", id, paths[id], p)
		}
	}
	if b := read(t, root, want["obs_sq"]); !strings.Contains(b, "confidence: 0.9, obs: 3)") || strings.Contains(b, "old session") {
		t.Errorf("adopted file not rewritten:\n%s", b)
	}
	if read(t, root, ".claude/commands/self-learning/run-go-generate-after-editing-enums.md") != human {
		t.Error("a human's file was overwritten")
	}
	if read(t, root, ".claude/commands/self-learning/tag-releases-from-main.md") != devflowCommand("Tag releases from main, always") {
		t.Error("another pattern's artifact was overwritten")
	}
}
