package render

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// TestSameAsDevflowRenderReady runs devflow's own render-ready (node, its
// scripts/hooks/json-helper.cjs, named by LEARNWATCH_DEVFLOW_HELPER) and
// learnwatch's render on copies of one repository, and compares what a
// devflow user's tooling reads: the notifications file (created_at aside)
// and the marker line of every command. Skipped unless the variable is set
// and node is installed.
func TestSameAsDevflowRenderReady(t *testing.T) {
	helper := os.Getenv("LEARNWATCH_DEVFLOW_HELPER")
	if helper == "" {
		// A development checkout may have devflow's helper beside it
		// (../shared/anchor); a plain clone does not, and skips.
		if p, err := filepath.Abs(filepath.Join("..", "..", "shared", "anchor", "devflow-json-helper.cjs")); err == nil {
			if _, err := os.Stat(p); err == nil {
				helper = p
			}
		}
	}
	node, err := exec.LookPath("node")
	if helper == "" || err != nil {
		t.Skip("set LEARNWATCH_DEVFLOW_HELPER to devflow's json-helper.cjs (and install node) to compare with devflow")
	}
	setup := func(root string) {
		decisionsWith(t, root, 69)
		var pf strings.Builder
		pf.WriteString("# Known Pitfalls\n")
		for i := 1; i <= 99; i++ {
			fmt.Fprintf(&pf, "\n## PF-%03d: Pitfall %d\n\n- **Area**: area %d\n- **Issue**: issue %d\n- **Status**: Active\n", i, i, i, i)
		}
		putFile(t, root, ".memory/knowledge/pitfalls.md", pf.String())
		putFile(t, root, ".memory/.notifications.json", "{\n  \"other\": {\n    \"x\": 1\n  }\n}\n")
		putFile(t, root, ".memory/learning-log.jsonl",
			obsLine("obs_d", manifest.Decision, "Keep migrations reversible", "context: rollbacks; decision: down steps; rationale: one command", 0.95, 3, true)+
				obsLine("obs_p", manifest.Pitfall, "Retries hide timeouts", "area: client; issue: retries hide timeouts; impact: slow; resolution: budget", 0.95, 3, true)+
				obsLine("obs_w", manifest.Workflow, "Run make check before pushing", "steps", 0.95, 4, true)+
				obsLine("obs_q", manifest.Workflow, "Unvouched", "", 0.95, 4, false))
	}
	lw, df := t.TempDir(), t.TempDir()
	setup(lw)
	setup(df)
	res, err := Run(t.Context(), lw, Options{Now: time.Now(), LockTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, helper, "render-ready", filepath.Join(df, ".memory", "learning-log.jsonl"), df)
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("devflow render-ready: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), `"skipped":1`) || res.Skipped != 1 {
		t.Errorf("skipped: devflow %s, learnwatch %d", out.String(), res.Skipped)
	}
	created := regexp.MustCompile(`"created_at": "[^"]*"`)
	norm := func(root string) string {
		b, err := os.ReadFile(filepath.Join(root, ".memory", ".notifications.json"))
		if err != nil {
			t.Fatal(err)
		}
		return created.ReplaceAllString(string(b), `"created_at": "…"`)
	}
	a, b := norm(lw), norm(df)
	if a != b {
		t.Errorf("notifications differ:\nlearnwatch\n%s\ndevflow\n%s", a, b)
	}
	for _, want := range []string{`"other": {`, `"threshold": 70,`, `"severity": "warning"`, `"threshold": 100,`, `"severity": "error"`} {
		if !strings.Contains(a, want) {
			t.Errorf("notifications lack %s:\n%s", want, a)
		}
	}
	marker := regexp.MustCompile(`(?m)^# devflow-learning: .*$`)
	ma := marker.Find([]byte(read(t, lw, ".claude/commands/self-learning/run-make-check-before-pushing.md")))
	mb := marker.Find([]byte(read(t, df, ".claude/commands/self-learning/run-make-check-before-pushing.md")))
	if ma == nil || !bytes.Equal(ma, mb) {
		t.Errorf("marker: learnwatch %q, devflow %q", ma, mb)
	}
}
