package main

// CLI tests of a cloned repository as untrusted input (real processes):
// terminal and prompt injection through repository text.

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/learnwatch/learnwatch/textsafe"
)

// assertPrintable fails when out carries a rune a terminal or an agent must
// not receive.
func assertPrintable(t *testing.T, what, out string) {
	t.Helper()
	if !utf8.ValidString(out) {
		t.Errorf("%s: invalid UTF-8 in output", what)
	}
	for _, r := range out {
		if r != '\n' && textsafe.Forbidden(r) {
			t.Errorf("%s: %U reaches the output:\n%q", what, r, out)
			return
		}
	}
}

func TestRepoTextNeverReachesTerminalRaw(t *testing.T) {
	root := t.TempDir()
	esc := "\x1b]0;owned\x07\x1b[2J\u202e\u200b\u009b31m"
	writeFile(t, filepath.Join(root, ".memory", "learning-log.jsonl"),
		readyLine("obs_clock", "pitfall", "Clock "+esc+" in tests", "area: sched"+esc+"; issue: wall clock"+esc)+
			readyLine("obs_$(touch${IFS}pwned)", "decision", "evil id"+esc, "")+
			`{"id":"obs_observing","type":"workflow","pattern":"Lint `+strings.ReplaceAll(esc, "\x1b", `\u001b`)+`","status":"observing","observations":1,"confidence":0.3,"evidence":[]}`+"\n")
	writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"),
		"# Architectural Decisions\n\n## ADR-001: Use SQLite "+esc+"\n\n- **Status**: Accepted"+esc+"\n- **Context**: see src/db.go\n")
	writeFile(t, filepath.Join(root, ".memory", "knowledge", "pitfalls.md"),
		"# Pitfalls\n\n## PF-001: Midnight "+esc+"\n\n- **Area**: "+esc+strings.Repeat("very long area ", 300)+"\n- **Status**: Active\n")
	for _, args := range [][]string{
		{"status"}, {"list"}, {"review"}, {"index"}, {"index", "--json"}, {"reconcile"},
	} {
		r := mustLW(t, root, "", args...)
		assertPrintable(t, strings.Join(args, " ")+" stdout", r.stdout)
		assertPrintable(t, strings.Join(args, " ")+" stderr", r.stderr)
	}
	r := mustLW(t, root, `{"cwd":"`+root+`"}`, "hook", "session-start")
	assertPrintable(t, "hook session-start", r.stdout+r.stderr)
	if !strings.Contains(r.stdout, "ADR-001: Use SQLite ]0;owned[2J31m") {
		t.Errorf("session-start index lacks the sanitised title:\n%s", r.stdout)
	}
	if strings.Contains(r.stdout, "very long area very long area very long area very long area") {
		t.Errorf("area not bounded:\n%s", r.stdout)
	}
	st := mustLW(t, root, "", "status")
	if !strings.Contains(st.stdout, "invalid observations: 1") {
		t.Errorf("the unsafe id is not counted as invalid:\n%s", st.stdout)
	}
}
