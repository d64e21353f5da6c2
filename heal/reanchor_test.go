package heal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// A merge renumbered obs_b's ADR-002 to ADR-003 because the other branch
// had its own ADR-002: reconcile follows the Source marker, and the
// renumbering alone is neither an edit nor a deletion.
func TestReanchorAfterRenumbering(t *testing.T) {
	for _, tc := range []struct {
		name      string
		edit      bool // the renumbered entry was also edited
		wantEdits int
	}{{"renumbered only", false, 0}, {"renumbered and edited", true, 1}} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			putFile(t, root, ".memory/learning-log.jsonl",
				readyObs("obs_a", manifest.Decision, "Use SQLite", "")+readyObs("obs_b", manifest.Decision, "Wrap errors", ""))
			runRender(t, root)
			dec := filepath.Join(root, ".memory/knowledge/decisions.md")
			b, _ := os.ReadFile(dec)
			secs := markdown.Sections(b)
			mine := string(markdown.SectionText(b, secs[1]))
			moved := strings.Replace(mine, "## ADR-002:", "## ADR-003:", 1)
			if tc.edit {
				moved = strings.Replace(moved, "- **Status**: Accepted", "- **Status**: Accepted (reviewed)", 1)
			}
			theirs := "## ADR-002: Keep handlers thin\n\n- **Status**: Accepted\n- **Source**: self-learning:obs_other\n"
			putFile(t, root, ".memory/knowledge/decisions.md", string(b[:secs[1].Start])+theirs+"\n"+moved+"\n")

			res := runReconcile(t, root)
			if len(res.Reanchored) != 1 || res.Reanchored[0] != "obs_b: ADR-002 -> ADR-003" {
				t.Fatalf("reanchored %v", res.Reanchored)
			}
			if res.Deletions != 0 || res.Edits != tc.wantEdits || res.Unchanged != 2-tc.wantEdits {
				t.Fatalf("counts %+v", res)
			}
			m, _, _ := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
			e := m.Entries[m.Find("obs_b")]
			nb, _ := os.ReadFile(dec)
			var sec markdown.Section
			for _, s := range markdown.Sections(nb) {
				if s.ID == "ADR-003" {
					sec = s
				}
			}
			if e.AnchorID != "ADR-003" || e.ContentHash != manifest.Hash(markdown.SectionText(nb, sec)) {
				t.Fatalf("manifest entry %+v", e)
			}
			log, _ := manifest.ReadLog(manifest.PathsFor(root).Log)
			if o := log.Find("obs_b"); o.ArtifactPath != ".memory/knowledge/decisions.md#ADR-003" || o.Status != manifest.Created {
				t.Fatalf("obs_b %+v", o)
			}
			if res := runReconcile(t, root); len(res.Reanchored)+res.Edits+res.Deletions != 0 || len(res.Wrote) != 0 {
				t.Fatalf("second reconcile %+v", res)
			}
		})
	}
}

// An anchor whose section lost its Source marker (a person rewrote it) is
// not moved, even when another section names the observation.
func TestReanchorLeavesUnmarkedAnchor(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl", readyObs("obs_b", manifest.Decision, "Wrap errors", ""))
	runRender(t, root)
	dec := filepath.Join(root, ".memory/knowledge/decisions.md")
	b, _ := os.ReadFile(dec)
	s := string(b)
	s = strings.Replace(s, "- **Source**: self-learning:obs_b\n", "", 1)
	s += "\n## ADR-002: Copy\n\n- **Source**: self-learning:obs_b\n"
	putFile(t, root, ".memory/knowledge/decisions.md", s)
	if res := runReconcile(t, root); len(res.Reanchored) != 0 || res.Edits != 1 {
		t.Fatalf("%+v", res)
	}
}
