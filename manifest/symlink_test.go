package manifest

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/safefs"
)

// Planted lock owner files, a planted stale temp and planted state files
// are never written, truncated, removed or backed up through: the outside
// file keeps its bytes, and a dangling link's target is never created.
func TestLockAndWritesNeverFollowSymlinks(t *testing.T) {
	const secret = "SECRET-MARKER\n"
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	p := PathsFor(root)
	os.MkdirAll(p.Memory, 0o755)
	outside := filepath.Join(base, "outside")
	os.WriteFile(outside, []byte(secret), 0o600)
	dangling := filepath.Join(base, "created-through-link")
	os.Symlink(outside, p.LearningLock+".owner")
	os.Symlink(dangling, p.KnowledgeLock+".owner")
	os.Symlink(outside, p.Manifest)
	os.Symlink(dangling, p.Usage)

	for _, lockPath := range []string{p.LearningLock, p.KnowledgeLock} {
		l, err := AcquireLock(context.Background(), lockPath, time.Second)
		if err != nil {
			t.Fatalf("lock with a planted owner file: %v", err)
		}
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := ReadManifest(p.Manifest); !safefs.IsRefused(err) {
		t.Errorf("ReadManifest through a symlink: %v, want a refusal", err)
	}
	if err := WriteManifest(p.Manifest, &Manifest{SchemaVersion: 1}); !safefs.IsRefused(err) {
		t.Errorf("WriteManifest over a symlink: %v, want a refusal", err)
	}
	if err := WriteUsage(p.Usage, NewUsage()); !safefs.IsRefused(err) {
		t.Errorf("WriteUsage over a dangling symlink: %v, want a refusal", err)
	}
	if err := AppendLine(p.Usage, []byte("x")); !safefs.IsRefused(err) {
		t.Errorf("AppendLine through a dangling symlink: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(outside); string(b) != secret {
		t.Errorf("the outside file changed: %q", b)
	}
	if _, err := os.Lstat(dangling); err == nil {
		t.Error("a file was created through a dangling symlink")
	}
	for _, l := range []string{p.LearningLock + ".owner", p.KnowledgeLock + ".owner", p.Manifest, p.Usage} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the planted link was replaced or removed", l)
		}
	}
}

// A lock directory name planted as a symlink is refused, not followed or
// taken over; a symlinked .memory is refused for the lock and for stray
// temp cleanup.
func TestLockRefusesSymlinks(t *testing.T) {
	base := t.TempDir()
	other := filepath.Join(base, "other")
	os.MkdirAll(other, 0o755)
	old := time.Now().Add(-time.Hour)
	tmp := filepath.Join(other, ".x.tmp-abc")
	os.WriteFile(tmp, nil, 0o644)
	os.Chtimes(tmp, old, old)
	os.Chtimes(other, old, old)

	root := filepath.Join(base, "repo")
	p := PathsFor(root)
	os.MkdirAll(p.Memory, 0o755)
	os.Symlink(other, p.LearningLock)
	if _, err := AcquireLock(context.Background(), p.LearningLock, 200*time.Millisecond); !safefs.IsRefused(err) {
		t.Errorf("a symlink as the lock: %v, want a refusal", err)
	}

	root2 := filepath.Join(base, "repo2")
	os.MkdirAll(root2, 0o755)
	os.Symlink(other, filepath.Join(root2, ".memory"))
	p2 := PathsFor(root2)
	if _, err := AcquireLock(context.Background(), p2.LearningLock, 200*time.Millisecond); !safefs.IsRefused(err) {
		t.Errorf("a lock in a symlinked .memory: %v, want a refusal", err)
	}
	RemoveStaleTemps(p2.Memory, time.Minute)
	if _, err := os.Stat(tmp); err != nil {
		t.Error("stray-temp cleanup deleted a file through a symlinked .memory")
	}
	if ents, _ := os.ReadDir(other); len(ents) != 1 {
		t.Errorf("the other directory changed: %v", ents)
	}
}

// Trust spares the stats a caller took a moment before; a path it did not
// see is checked as ever (a symlink out of the root refused).
func TestResolverSeen(t *testing.T) {
	root, out := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".claude", "commands"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(out, filepath.Join(root, ".claude", "skills")); err != nil {
		t.Skip("no symlinks")
	}
	r := NewResolver(root)
	r.Trust(seenPaths{
		filepath.Join(root, ".claude"):                     true,
		filepath.Join(root, ".claude", "commands"):         true,
		filepath.Join(root, ".claude", "commands", "a.md"): false,
	})
	if _, rel, err := r.Resolve(".claude/commands/a.md"); err != nil || rel != ".claude/commands/a.md" {
		t.Errorf("seen path: %q %v", rel, err)
	}
	if _, _, err := r.Resolve(".claude/skills/x/SKILL.md"); err == nil {
		t.Error("a symlink out of the root not seen by the caller was followed")
	}
}

// seenPaths is a Seen: true a directory, false a regular file.
type seenPaths map[string]bool

func (s seenPaths) SeenDir(p string) bool { d, ok := s[p]; return ok && d }

func (s seenPaths) SeenFile(p string) bool { d, ok := s[p]; return ok && !d }
