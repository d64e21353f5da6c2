package reliability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Bugs the harness found, each reduced to its smallest reproduction.

// TestReliabilityRenderCrashThenNewEvidence: render killed after writing a
// command file (before the log write), the workflow sighted again with new
// evidence, render again. The second render used to find "another file" at
// the slug's path (the content differs by the evidence list), render a
// second command rebase-first-2.md and leave the first one behind,
// unregistered: the same workflow twice in the agent's slash commands.
func TestReliabilityRenderCrashThenNewEvidence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ typ, details, file string }{
		{"workflow", "", ".claude/commands/self-learning/rebase-first.md"},
		{"procedural", "steps: fetch; rebase; push", ".claude/skills/rebase-first/SKILL.md"},
	} {
		t.Run(tc.typ, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			os.MkdirAll(filepath.Join(root, ".memory"), 0o755)
			in := func(ev string) string { return obsJSON("obs_rb", tc.typ, "Rebase first", tc.details, ev) + "\n" }
			for i := 0; i < 4; i++ {
				must(t, root, call{args: []string{"observe"}, stdin: in("session 1"), now: day(2 * i)})
			}
			if r := run(t, root, call{args: []string{"render"}, now: day(8), env: []string{"LEARNWATCH_FAILPOINT=render:after-artifact"}}); !r.killed {
				t.Fatalf("render not killed: %s", r)
			}
			backdateLocks(t, root)
			must(t, root, call{args: []string{"observe"}, stdin: in("session 2"), now: day(9)})
			must(t, root, call{args: []string{"render"}, now: day(9)})
			must(t, root, call{args: []string{"reconcile"}, now: day(9)})
			if files := artifactFiles(root); len(files) != 1 || files[0] != tc.file {
				t.Errorf("artifacts %v, want only %s", files, tc.file)
			}
			if b, _ := os.ReadFile(filepath.Join(root, tc.file)); !strings.Contains(string(b), "session 2") {
				t.Errorf("%s does not carry the new evidence:\n%s", tc.file, b)
			}
			if probs := verify(root, expect{obs: map[string]int{"obs_rb": 5}, killed: true, settled: true}); len(probs) > 0 {
				t.Errorf("invariants:\n  %s", strings.Join(probs, "\n  "))
			}
		})
	}
}

// TestReliabilityHeldAfterCrash: render killed after writing a command;
// meanwhile the policy starts holding workflows for approval. The command
// file is already there: the next render completes it (registers it) rather
// than holding it, which left a slash command the agent sees and learnwatch
// never tracks (found by seed 183699 of the randomised kill runs).
func TestReliabilityHeldAfterCrash(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".memory"), 0o755)
	in := obsJSON("obs_sq", "workflow", "Squash fixups", "", "session 1") + "\n"
	for i := 0; i < 4; i++ {
		must(t, root, call{args: []string{"observe"}, stdin: in, now: day(2 * i)})
	}
	if r := run(t, root, call{args: []string{"render"}, now: day(8), env: []string{"LEARNWATCH_FAILPOINT=render:after-artifact"}}); !r.killed {
		t.Fatalf("render not killed: %s", r)
	}
	backdateLocks(t, root)
	writeFile(t, filepath.Join(root, ".memory", "learning-policy.json"),
		`{"overlays":{"workflow":{"threshold_multiplier":1.4,"requires_approval":true,"reason":"test","reliability":0.2,"updated_at":"2026-01-05T00:00:00Z"}}}`+"\n")
	// A second ready workflow without a file is still held.
	for i := 0; i < 4; i++ {
		must(t, root, call{args: []string{"observe"}, stdin: obsJSON("obs_other", "workflow", "Other flow", "", "s") + "\n", now: day(9 + 2*i)})
	}
	r := must(t, root, call{args: []string{"render", "--json"}, now: day(20)})
	if !strings.Contains(r.stdout, `"id":"obs_sq"`) || !strings.Contains(r.stdout, "held by policy: run learnwatch approve obs_other") {
		t.Fatalf("want obs_sq completed and obs_other held: %s", r)
	}
	must(t, root, call{args: []string{"reconcile"}, now: day(20)})
	if files := artifactFiles(root); len(files) != 1 {
		t.Errorf("artifacts %v, want only the crashed render's", files)
	}
	if probs := verify(root, expect{obs: map[string]int{"obs_sq": 4, "obs_other": 4}, killed: true, settled: true}); len(probs) > 0 {
		t.Errorf("invariants:\n  %s", strings.Join(probs, "\n  "))
	}
}
