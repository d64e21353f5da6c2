package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stale is a check: on a read-only .memory (a read-only checkout, a CI
// cache) it still reports, exits 0 and marks nothing. As root chmod does
// not stop writes, so the test then mounts .memory read-only in a private
// mount namespace (unshare -m), and skips, saying why, when it cannot.
func TestStaleReadOnlyMemory(t *testing.T) {
	for _, tool := range []string{"git", "learnwatch"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not on PATH: %v", tool, err)
		}
	}
	dir := t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	write := func(name, content string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("src/gone.go", "package src\n")
	write("src/keep.go", "package src\n")
	write(".memory/knowledge/decisions.md", "# Architectural Decisions\n\n## ADR-001: Gone\n\n- **Status**: Accepted\n- **Context**: `src/gone.go` and `keep.go`\n")
	logLine := `{"id":"obs_a","type":"workflow","pattern":"p","confidence":0.5,"observations":1,"first_seen":"2024-01-01T00:00:00Z","last_seen":"2024-01-01T00:00:00Z","status":"observing","evidence":["src/gone.go"],"details":"d","quality_ok":true}` + "\n"
	write(".memory/learning-log.jsonl", logLine)
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "init")
	git("rm", "-q", "src/gone.go")
	git("commit", "-q", "-m", "drop gone")

	mem := filepath.Join(dir, ".memory")
	for _, p := range []string{filepath.Join(mem, "learning-log.jsonl"), filepath.Join(mem, "knowledge", "decisions.md")} {
		if err := os.Chmod(p, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(mem, "knowledge"), mem} {
		if err := os.Chmod(p, 0o555); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = os.Chmod(mem, 0o755)
		_ = os.Chmod(filepath.Join(mem, "knowledge"), 0o755)
	})

	stale := func(args ...string) *exec.Cmd {
		return exec.Command("learnwatch", append([]string{"--root", dir, "stale"}, args...)...)
	}
	probe := filepath.Join(mem, "probe")
	if err := os.WriteFile(probe, nil, 0o644); err == nil {
		// Root: chmod is no barrier.
		_ = os.Remove(probe)
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("running as root, where chmod does not stop writes, and no unshare to mount .memory read-only")
		}
		ro := func(args ...string) *exec.Cmd {
			script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 97; shift; exec learnwatch "$@"`
			return exec.Command("unshare", append([]string{"-m", "sh", "-c", script, "sh", mem, "--root", dir, "stale"}, args...)...)
		}
		probeRO := exec.Command("unshare", "-m", "sh", "-c",
			`mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" || exit 97; touch "$1/probe" 2>/dev/null && exit 98; exit 0`, "sh", mem)
		if out, err := probeRO.CombinedOutput(); err != nil {
			t.Skipf("running as root and cannot mount .memory read-only (%v): %s", err, bytes.TrimSpace(out))
		}
		stale = ro
	}

	var out, errOut bytes.Buffer
	cmd := stale("--json")
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("stale --json on a read-only .memory: %v\n%s%s", err, out.String(), errOut.String())
	}
	var rep struct {
		Stale []struct{ ID, Ref, Reason string }
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v: %s", err, out.String())
	}
	if len(rep.Stale) != 2 || rep.Stale[0].ID != "ADR-001" || rep.Stale[1].ID != "obs_a" {
		t.Errorf("report: %+v", rep.Stale)
	}

	out.Reset()
	errOut.Reset()
	cmd = stale()
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("stale on a read-only .memory: %v\n%s%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{"ADR-001", "src/gone.go", "2 stale of", ".memory is read-only: observations not marked"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// Nothing was written.
	b, err := os.ReadFile(filepath.Join(mem, "learning-log.jsonl"))
	if err != nil || string(b) != logLine {
		t.Errorf("log changed: %v %q", err, b)
	}
	if _, err := os.Stat(probe); err == nil {
		t.Error("probe left behind")
	}
}
