package heal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

// foreignRepo renders a workflow, a skill and a decision, then rewrites
// the manifest (and the log's artifact_path) the way devflow writes them
// in another checkout: absolute paths under /home/alice/proj. It returns
// the root and each entry's relative path by id.
func foreignRepo(t *testing.T) (string, map[string]string) {
	t.Helper()
	root, rels := renderedRepo(t,
		readyObs("obs_a", manifest.Workflow, "Run the release checklist", "Steps: tag, build, publish.")+
			readyObs("obs_c", manifest.Procedural, "Profile a slow handler", "Steps: pprof, flame graph.")+
			readyObs("obs_d", manifest.Decision, "Use SQLite for the cache", "One file, no server."), 3)
	p := manifest.PathsFor(root)
	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range m.Entries {
		m.Entries[i].Path = "/home/alice/proj/" + e.Path
	}
	if err := manifest.WriteManifest(p.Manifest, m); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p.Log)
	s := string(b)
	for _, rel := range rels {
		s = strings.ReplaceAll(s, `"artifact_path":"`+rel, `"artifact_path":"/home/alice/proj/`+rel)
	}
	os.WriteFile(p.Log, []byte(s), 0o644)
	return root, rels
}

// A manifest written in another checkout (devflow's absolute paths, the
// repository since moved or cloned elsewhere) is rebased, not refused: an
// artifact found here is taken as it is (path made relative, no learning
// signal), one not here is absent until it appears; from then on the usual
// rules hold (a deletion is a deletion).
func TestForeignEntriesRebased(t *testing.T) {
	root, rels := foreignRepo(t)
	a := filepath.Join(root, rels["obs_a"])
	ab, _ := os.ReadFile(a)
	os.Remove(a)
	// obs_c's skill differs from what the other checkout recorded.
	c := filepath.Join(root, rels["obs_c"])
	cb, _ := os.ReadFile(c)
	os.WriteFile(c, append(cb, "\nThis checkout's line.\n"...), 0o644)

	res := runReconcile(t, root)
	if res.Foreign != 2 || res.Absent != 1 || res.Deletions+res.Edits+res.Refused != 0 || len(res.Events) != 0 {
		t.Fatalf("first contact: %+v", res)
	}
	for id, want := range map[string]string{"obs_a": "/home/alice/proj/" + rels["obs_a"], "obs_c": rels["obs_c"], "obs_d": rels["obs_d"]} {
		if got, penalised := entryPath(t, root, id); got != want || penalised {
			t.Errorf("%s: entry %s (penalised %v), want %s", id, got, penalised, want)
		}
	}
	log, _ := os.ReadFile(manifest.PathsFor(root).Log)
	if !strings.Contains(string(log), `"artifact_path":"`+rels["obs_c"]+`"`) || !strings.Contains(string(log), `"artifact_path":"`+rels["obs_d"]+`#ADR-001"`) {
		t.Errorf("the observations' artifact_path do not follow:\n%s", log)
	}
	if _, err := os.Stat(filepath.Join(root, ".memory", "feedback.jsonl")); err == nil {
		t.Error("first contact with a foreign manifest recorded feedback")
	}

	if again := runReconcile(t, root); again.Unchanged != 2 || again.Absent != 1 || again.Foreign+again.Deletions+again.Edits != 0 {
		t.Fatalf("the pass after: %+v", again)
	}
	// The absent one appears: taken as it is; then deleted: a deletion.
	os.WriteFile(a, ab, 0o644)
	if back := runReconcile(t, root); back.Foreign != 1 || back.Unchanged != 2 || back.Deletions != 0 {
		t.Fatalf("the absent artifact appears: %+v", back)
	}
	os.Remove(a)
	if gone := runReconcile(t, root); gone.Deletions != 1 || gone.Deleted[0] != "obs_a" {
		t.Fatalf("deleted once rebased: %+v", gone)
	}
}

// A foreign path is rebased at its last artifact location only, and the
// rebased path is checked like any other: one through a symlink that
// leaves the repository is refused, and an absolute path that names no
// artifact location stays refused.
func TestForeignEntriesRefused(t *testing.T) {
	for _, c := range []struct{ path, want string }{
		{"/home/alice/proj/.claude/commands/self-learning/x.md", ".claude/commands/self-learning/x.md"},
		{"/home/alice/.claude/commands/old/proj/.claude/skills/s/SKILL.md", ".claude/skills/s/SKILL.md"},
		{"/srv/p/.memory/knowledge/decisions.md", ".memory/knowledge/decisions.md"},
		{"/etc/passwd", ""},
		{"/home/alice/proj/docs/x.md", ""},
		{".claude/commands/x.md", ""},
	} {
		got, ok := manifest.ForeignRel(c.path)
		if got != filepath.FromSlash(c.want) || ok != (c.want != "") {
			t.Errorf("ForeignRel(%q) = %q %v, want %q", c.path, got, ok, c.want)
		}
	}

	root := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(filepath.Join(outside, "commands"), 0o755)
	os.WriteFile(filepath.Join(outside, "commands", "x.md"), []byte("secret\n"), 0o644)
	if err := os.Symlink(outside, filepath.Join(root, ".claude")); err != nil {
		t.Fatal(err)
	}
	r := manifest.NewResolver(root)
	if _, _, foreign, err := r.ResolveEntry("/home/alice/proj/.claude/commands/x.md"); err == nil || foreign {
		t.Errorf("a foreign path rebased through a symlink out of the root: foreign %v, err %v", foreign, err)
	}
	if _, _, _, err := r.ResolveEntry("/etc/passwd"); err == nil {
		t.Error("an absolute path outside the root that names no artifact location was not refused")
	}
}
