package hooks

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWithBlock(t *testing.T) {
	block := attributesBlock()
	tests := []struct{ name, before, installed string }{
		{"empty", "", block},
		{"lines without final newline", "*.png binary", "*.png binary\n\n" + block},
		{"lines and a blank line", "*.png binary\n\n", "*.png binary\n\n" + block},
		{"block already there", "a b\n\n" + block + "c d\n", "a b\n\n" + block + "c d\n"},
		{"stale block replaced", "a b\n" + attrBegin + "\n/old merge=x\n" + attrEnd + "\n", "a b\n" + block},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := string(withBlock([]byte(tt.before), block))
			if got != tt.installed {
				t.Fatalf("install:\n%q\nwant\n%q", got, tt.installed)
			}
			if again := string(withBlock([]byte(got), block)); again != got {
				t.Fatalf("second install changed it:\n%q", again)
			}
			removed := string(withBlock([]byte(got), ""))
			if strings.Contains(removed, "learnwatch") || strings.Contains(removed, "merge=learnwatch") {
				t.Fatalf("uninstall left lines:\n%q", removed)
			}
			for _, l := range strings.Split(tt.before, "\n") {
				if l != "" && !strings.Contains(block, l) && !strings.Contains(l, "merge=x") && !strings.Contains(l, "learnwatch") && !strings.Contains(removed, l) {
					t.Fatalf("uninstall lost %q:\n%q", l, removed)
				}
			}
		})
	}
}

// The driver command runs the binary at its absolute path, quoted for the
// shell git runs it with, and falls back to learnwatch on PATH.
func TestDriverCommandRunsThroughAShell(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "it's here", "learnwatch")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := strings.NewReplacer("%O", "'o f'", "%A", "a", "%B", "b", "%P", "p").Replace(DriverCommand(bin, "log"))
	out, err := exec.Command("sh", "-c", cmd).Output()
	if err != nil || string(out) != "merge-driver log o f a b p\n" {
		t.Fatalf("%q: %q %v", cmd, out, err)
	}
}

// Operation names what git leaves in the worktree's git directory while an
// operation waits for the person; nothing else counts.
func TestOperation(t *testing.T) {
	for _, c := range []struct {
		entry string
		dir   bool
		want  string
	}{
		{"", false, ""},
		{"rebase-merge", true, "rebase"},
		{"rebase-apply", true, "rebase"},
		{"MERGE_HEAD", false, "merge"},
		{"CHERRY_PICK_HEAD", false, "cherry-pick"},
		{"REVERT_HEAD", false, "revert"},
		{"ORIG_HEAD", false, ""},
		{"FETCH_HEAD", false, ""},
	} {
		dir := t.TempDir()
		if c.entry != "" {
			p := filepath.Join(dir, c.entry)
			var err error
			if c.dir {
				err = os.Mkdir(p, 0o755)
			} else {
				err = os.WriteFile(p, []byte("0123\n"), 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if got := Operation(dir); got != c.want {
			t.Errorf("%s: Operation = %q, want %q", c.entry, got, c.want)
		}
	}
	if got := Operation(""); got != "" {
		t.Errorf("outside git: %q", got)
	}
}
