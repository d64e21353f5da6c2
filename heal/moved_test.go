package heal

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// renderedRepo writes log (n ready observations) and renders it; it
// returns the root with each observation's manifest path by id.
func renderedRepo(t *testing.T, log string, n int) (string, map[string]string) {
	t.Helper()
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl", log)
	runRender(t, root)
	m, _, err := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	if err != nil {
		t.Fatal(err)
	}
	arts := map[string]string{}
	for _, e := range m.Entries {
		arts[e.ObservationID] = e.Path
	}
	if len(arts) != n {
		t.Fatalf("rendered %v", arts)
	}
	return root, arts
}

// movedRepo renders two workflows and a procedural observation (a skill),
// reconciled once, and returns the root with each one's artifact
// (relative path) by id.
func movedRepo(t *testing.T) (string, map[string]string) {
	t.Helper()
	root, arts := renderedRepo(t,
		readyObs("obs_a", manifest.Workflow, "Run the release checklist", "Steps: tag, build, publish.")+
			readyObs("obs_b", manifest.Workflow, "Rotate the staging keys", "Steps: revoke, issue, deploy.")+
			readyObs("obs_c", manifest.Procedural, "Profile a slow handler", "Steps: pprof, flame graph."), 3)
	runReconcile(t, root)
	return root, arts
}

func move(t *testing.T, root, from, to string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(filepath.Join(root, to)), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(root, from), filepath.Join(root, to)); err != nil {
		t.Fatal(err)
	}
}

// entryPath is the manifest path of id's entry and whether it is penalised.
func entryPath(t *testing.T, root, id string) (string, bool) {
	t.Helper()
	m, _, err := manifest.ReadManifest(manifest.PathsFor(root).Manifest)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range m.Entries {
		if e.ObservationID == id {
			return e.Path, e.Deleted != nil
		}
	}
	t.Fatalf("no entry for %s", id)
	return "", false
}

// Edits made to a file while it moves (edit functions of a rendered
// artifact's bytes).
var (
	addStep  = func(b []byte) []byte { return append(b, "\nMy own step.\n"...) }
	newTitle = func(b []byte) []byte { return descTo(b, "Ship a release") }
	noMarker = func(b []byte) []byte { return addStep(markdown.WithoutMarker(b)) }
	reworded = func(b []byte) []byte { return []byte(strings.Replace(string(b), "Steps:", "Do:", 1)) }
	descTo   = func(b []byte, d string) []byte {
		lines := strings.Split(string(b), "\n")
		for i, l := range lines {
			if strings.HasPrefix(l, "description:") {
				lines[i] = "description: " + d
			}
		}
		return []byte(strings.Join(lines, "\n"))
	}
)

func TestMovedArtifactFollowed(t *testing.T) {
	cases := []struct {
		name   string
		id     string
		to     func(from string) string
		edit   func([]byte) []byte
		moved  bool
		edited bool
	}{
		{"renamed in its directory", "obs_a", func(string) string { return ".claude/commands/self-learning/release.md" }, nil, true, false},
		{"promoted to the project's commands", "obs_a", func(string) string { return ".claude/commands/release.md" }, nil, true, false},
		{"into a namespace directory", "obs_b", func(string) string { return ".claude/commands/ops/keys.md" }, nil, true, false},
		{"a skill's directory renamed", "obs_c", func(string) string { return ".claude/skills/profiling/SKILL.md" }, nil, true, false},
		{"moved aside (.bak): no longer a command", "obs_a", func(f string) string { return f + ".bak" }, nil, false, false},
		{"moved out of the commands", "obs_a", func(string) string { return "docs/release.md" }, nil, false, false},
		{"a skill moved among the commands: another kind", "obs_c", func(string) string { return ".claude/commands/profiling.md" }, nil, false, false},
		{"moved and edited at once: a step added", "obs_a", func(string) string { return ".claude/commands/release.md" }, addStep, true, true},
		{"moved and edited at once: the details reworded", "obs_b", func(string) string { return ".claude/commands/ops/keys.md" }, reworded, true, true},
		{"a skill moved and edited at once", "obs_c", func(string) string { return ".claude/skills/profiling/SKILL.md" }, addStep, true, true},
		{"moved with a new description: another command", "obs_a", func(string) string { return ".claude/commands/release.md" }, newTitle, false, false},
		{"moved and edited without the marker: the person's own", "obs_a", func(string) string { return ".claude/commands/release.md" }, noMarker, false, false},
		{"edited and moved aside (.bak)", "obs_a", func(f string) string { return f + ".bak" }, addStep, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root, arts := movedRepo(t)
			from, to := arts[c.id], c.to(arts[c.id])
			move(t, root, from, to)
			if c.edit != nil {
				b, err := os.ReadFile(filepath.Join(root, to))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(root, to), c.edit(b), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			res := runReconcile(t, root)
			path, penalised := entryPath(t, root, c.id)
			if !c.moved {
				if res.Moved != 0 || res.Deletions != 1 || !penalised || path != from {
					t.Fatalf("moved %d deletions %d, entry %s penalised %v: want a deletion of %s", res.Moved, res.Deletions, path, penalised, from)
				}
				return
			}
			events := 0 // a pass outside a session leaves kept events out
			if c.edited {
				events++
			}
			if res.Moved != 1 || res.Deletions != 0 || penalised || path != to || len(res.Events) != events {
				t.Fatalf("moved %d deletions %d events %d, entry %s penalised %v: want it at %s", res.Moved, res.Deletions, len(res.Events), path, penalised, to)
			}
			if c.edited != (res.Edits == 1) || c.edited && res.Edited[0] != c.id {
				t.Fatalf("edits %d %v: want the edit recorded %v", res.Edits, res.Edited, c.edited)
			}
			if want := c.id + ": " + from + " -> " + to; len(res.MovedTo) != 1 || res.MovedTo[0] != want {
				t.Errorf("moved_to %q, want %q", res.MovedTo, want)
			}
			log, _ := os.ReadFile(manifest.PathsFor(root).Log)
			if !strings.Contains(string(log), `"artifact_path":"`+to+`"`) {
				t.Errorf("the observation's artifact_path does not follow:\n%s", log)
			}
			// Settled: unchanged at its new path; deleted there, a deletion.
			if again := runReconcile(t, root); again.Moved != 0 || again.Deletions != 0 || again.Edits != 0 || again.Unchanged != 3 || len(again.Wrote) != 0 {
				t.Fatalf("the pass after the move: %+v", again)
			}
			os.Remove(filepath.Join(root, to))
			if gone := runReconcile(t, root); gone.Deletions != 1 || gone.Deleted[0] != c.id {
				t.Fatalf("deleting the moved file: %+v", gone)
			}
		})
	}
}

// A file another entry names, a symlink, or one file for two missing
// entries with the same content: never taken twice, never followed.
func TestMovedArtifactCandidates(t *testing.T) {
	root, arts := movedRepo(t)
	a, b := arts["obs_a"], arts["obs_b"]
	ab, _ := os.ReadFile(filepath.Join(root, a))
	// b gets a's content (an edit, recorded), then both go and one copy
	// of the content appears elsewhere: one entry follows, one is deleted.
	os.WriteFile(filepath.Join(root, b), ab, 0o644)
	if r := runReconcile(t, root); r.Edits != 1 {
		t.Fatalf("the edit: %+v", r)
	}
	move(t, root, a, ".claude/commands/one.md")
	os.Remove(filepath.Join(root, b))
	res := runReconcile(t, root)
	if res.Moved != 1 || res.Deletions != 1 || !strings.HasPrefix(res.MovedTo[0], "obs_a: ") {
		t.Fatalf("two entries, one copy: %+v", res)
	}

	root, arts = movedRepo(t)
	a = arts["obs_a"]
	target := filepath.Join(t.TempDir(), "outside.md")
	os.Rename(filepath.Join(root, a), target)
	if err := os.Symlink(target, filepath.Join(root, ".claude/commands/linked.md")); err != nil {
		t.Fatal(err)
	}
	if res := runReconcile(t, root); res.Moved != 0 || res.Deletions != 1 {
		t.Fatalf("a symlink to the content out of the repository: %+v", res)
	}

	// Moved and edited, but in two copies: which one is the command is
	// not the pass's to guess (a deletion).
	root, arts = movedRepo(t)
	a = arts["obs_a"]
	ab, _ = os.ReadFile(filepath.Join(root, a))
	os.Remove(filepath.Join(root, a))
	putFile(t, root, ".claude/commands/one.md", string(addStep(ab)))
	putFile(t, root, ".claude/commands/two.md", string(reworded(ab)))
	if res := runReconcile(t, root); res.Moved != 0 || res.Deletions != 1 {
		t.Fatalf("two edited copies: %+v", res)
	}

	// Two missing entries with one pattern (obs_b's description becomes
	// obs_a's pattern, an edit recorded) and one edited file that names
	// it: ambiguous, both deletions.
	root, arts = movedRepo(t)
	a, b = arts["obs_a"], arts["obs_b"]
	bb, _ := os.ReadFile(filepath.Join(root, b))
	os.WriteFile(filepath.Join(root, b), descTo(bb, "Run the release checklist"), 0o644)
	if r := runReconcile(t, root); r.Edits != 1 {
		t.Fatalf("the edit: %+v", r)
	}
	rewrite(t, root, "obs_b", "Run the release checklist")
	ab, _ = os.ReadFile(filepath.Join(root, a))
	os.Remove(filepath.Join(root, a))
	os.Remove(filepath.Join(root, b))
	putFile(t, root, ".claude/commands/one.md", string(addStep(ab)))
	if res := runReconcile(t, root); res.Moved != 0 || res.Deletions != 2 {
		t.Fatalf("two entries with one pattern, one edited file: %+v", res)
	}
}

// rewrite sets the pattern of id's line in the log (another tool's
// write).
func rewrite(t *testing.T, root, id, pattern string) {
	t.Helper()
	p := manifest.PathsFor(root).Log
	l, err := manifest.ReadLog(p)
	if err != nil {
		t.Fatal(err)
	}
	l.Find(id).Pattern = pattern
	if err := manifest.WriteLog(p, l); err != nil {
		t.Fatal(err)
	}
}

// A legacy manifest spells paths absolute: the moved entry's path is
// spelled the same way.
func TestMovedArtifactLegacyAbsolute(t *testing.T) {
	root, arts := movedRepo(t)
	p := manifest.PathsFor(root).Manifest
	m, _, _ := manifest.ReadManifest(p)
	for i := range m.Entries {
		m.Entries[i].Path = filepath.Join(root, filepath.FromSlash(m.Entries[i].Path))
		// devflow's hash: djb2 of the content.
		b, _ := os.ReadFile(m.Entries[i].Path)
		m.Entries[i].ContentHash = manifest.DJB2(b)
	}
	b, _ := m.Encode()
	os.WriteFile(p, b, 0o644)
	if r := runReconcile(t, root); r.Unchanged != 3 {
		t.Fatalf("absolute paths: %+v", r)
	}
	move(t, root, arts["obs_b"], ".claude/commands/keys.md")
	res := runReconcile(t, root)
	path, _ := entryPath(t, root, "obs_b")
	if res.Moved != 1 || path != filepath.Join(root, ".claude", "commands", "keys.md") {
		t.Fatalf("moved %d, path %s", res.Moved, path)
	}
}

// Moved and given CRLF line ends on the way (a checkout under autocrlf):
// line ends are not content, it moved.
func TestMovedArtifactCRLF(t *testing.T) {
	root, arts := movedRepo(t)
	b, _ := os.ReadFile(filepath.Join(root, arts["obs_a"]))
	os.Remove(filepath.Join(root, arts["obs_a"]))
	putFile(t, root, ".claude/commands/release.md", strings.ReplaceAll(string(b), "\n", "\r\n"))
	if res := runReconcile(t, root); res.Moved != 1 || res.Deletions != 0 {
		t.Fatalf("moved with CRLF ends: %+v", res)
	}
}
