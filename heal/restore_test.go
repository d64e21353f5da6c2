package heal

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

// TestFreedAnchorIsNotARestore: PF-001 is deleted (obs_a penalised); the
// next render gives the freed id to another observation. That section is
// not obs_a's coming back: obs_a stays penalised, obs_b is tracked.
func TestFreedAnchorIsNotARestore(t *testing.T) {
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl", readyObs("obs_a", manifest.Pitfall, "Fixtures assume UTC", "area: tests; issue: utc"))
	runRender(t, root)
	pf := filepath.Join(root, ".memory/knowledge/pitfalls.md")
	b, _ := os.ReadFile(pf)
	os.WriteFile(pf, regexp.MustCompile(`(?s)## PF-001.*`).ReplaceAll(b, nil), 0o644)
	if res := runReconcile(t, root); res.Deletions != 1 {
		t.Fatalf("PF-001 removed: %+v", res)
	}
	log, _ := os.ReadFile(filepath.Join(root, ".memory/learning-log.jsonl"))
	putFile(t, root, ".memory/learning-log.jsonl", string(log)+readyObs("obs_b", manifest.Pitfall, "Retries are not idempotent", "area: queue; issue: retries"))
	runRender(t, root)
	if b, _ := os.ReadFile(pf); !regexp.MustCompile(`## PF-001: Retries`).Match(b) {
		t.Fatalf("render did not reuse PF-001 (the case this test is about):\n%s", b)
	}
	res := runReconcile(t, root)
	if res.Restored != 0 || res.Deletions != 0 || res.Unchanged != 1 {
		t.Fatalf("after PF-001 went to obs_b: %+v", res)
	}
	l, _ := manifest.ReadLog(filepath.Join(root, ".memory/learning-log.jsonl"))
	if o := l.Find("obs_a"); o.Status != manifest.Deprecated {
		t.Errorf("obs_a restored by another observation's section: %+v", o)
	}
	if o := l.Find("obs_b"); o.Status != manifest.Created {
		t.Errorf("obs_b: %+v", o)
	}
	// restore by hand: obs_a's section is gone (PF-001 is obs_b's), so it
	// goes back to ready rather than claiming obs_b's section.
	st, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	u, err := Undo(st, "obs_a", testNow)
	if err != nil || u.Tracked || u.Status != manifest.Ready || u.Confidence != 0.95 {
		t.Fatalf("undo: %+v %v", u, err)
	}
	if _, err := Undo(st, "obs_b", testNow); err == nil {
		t.Fatal("undo of an observation with no penalty accepted")
	}
}
