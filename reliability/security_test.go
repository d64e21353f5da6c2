package reliability

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The security table: a cloned repository is untrusted input. Every fixed
// name learnwatch reads or writes is planted in a real git repository with
// the hooks installed — as a symlink to a file outside the repository that
// holds a secret, as a dangling symlink pointing outside, as a symlink to
// /dev/zero and as a symlink to a FIFO — and so are .memory and
// .memory/knowledge (symlinks to outside directories) and the agent's
// settings. Then every entry point runs: the agent's hooks, the git hooks
// through a real `git commit` and `git checkout`, the watcher, and the
// commands. Whatever the planted name, the outside stays byte-identical
// with nothing created there, no secret byte reaches the work tree or any
// output, every process ends within hookDeadline, hooks exit 0, and a
// command that fails names the refused path.

// secretMarker is in every outside file. The file is a JSON object so that
// it parses as a manifest, a usage file, a policy, a log line and YAML: a
// reader that followed the link would take it in, not just fail on it.
const secretMarker = "LW-SECRET-7f3a9c"

var secretJSON = `{"schemaVersion":1,"version":1,"entries":[],"private_key":"` + secretMarker + `"}` + "\n"

// hookDeadline bounds every process of the table.
const hookDeadline = 10 * time.Second

// plantedNames are the fixed names, relative to the root.
var plantedNames = []string{
	".memory/learning-log.jsonl",
	".memory/.learning-manifest.json",
	".memory/.knowledge-usage.json",
	".memory/learnwatch.yaml",
	".memory/feedback.jsonl",
	".memory/outcomes.jsonl",
	".memory/errors.jsonl",
	".memory/learning-policy.json",
	".memory/.kept-stamp.json",
	".memory/.citation-offsets.json",
	".memory/.citation-pass.json",
	".memory/.watch-state.json",
	".memory/.watch.pid",
	".memory/.learning.lock.owner",
	".memory/.knowledge.lock.owner",
	".memory/.notifications.json",
	".memory/knowledge/decisions.md",
	".memory/knowledge/pitfalls.md",
	".claude/settings.json",
}

// silentNames are refused without a message by design: a lock owner file
// only speeds up taking over a dead writer's lock, so a planted one is
// ignored (never read, written or removed) and the lock works without it.
var silentNames = map[string]bool{".memory/.learning.lock.owner": true, ".memory/.knowledge.lock.owner": true}

type securityCase struct {
	name   string // the planted name, relative to root
	kind   string // outside-file, dangling, dev-zero, fifo, outside-dir
	target string // filled in by plant
}

func securityCases() []securityCase {
	var cases []securityCase
	for _, n := range plantedNames {
		for _, k := range []string{"outside-file", "dangling", "dev-zero", "fifo"} {
			cases = append(cases, securityCase{name: n, kind: k})
		}
	}
	for _, d := range []string{".memory", ".memory/knowledge", ".claude"} {
		cases = append(cases, securityCase{name: d, kind: "outside-dir"})
	}
	return cases
}

func TestReliabilitySecurityTable(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	tmpl, _ := crashTemplate(t)
	for _, sc := range securityCases() {
		t.Run(strings.ReplaceAll(sc.name, "/", "_")+"/"+sc.kind, func(t *testing.T) {
			t.Parallel()
			securityRun(t, tmpl, sc)
		})
	}
}

// gitEnv isolates git from the machine's configuration.
func gitEnv() []string {
	return append(cleanEnv(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=learnwatch", "GIT_AUTHOR_EMAIL=dev@learnwatch.invalid",
		"GIT_COMMITTER_NAME=learnwatch", "GIT_COMMITTER_EMAIL=dev@learnwatch.invalid",
		"LEARNWATCH_NOW="+day(30).Format(time.RFC3339))
}

// gitRun runs git in root within hookDeadline (twice that before it is
// killed) and returns how it ended.
func gitRun(t *testing.T, root string, a ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*hookDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", root}, a...)...)
	cmd.Env = gitEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{args: append([]string{"git"}, a...), stdout: out.String(), stderr: errb.String(), dur: time.Since(start)}
	if err != nil {
		r.code = -1
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		r.timedOut = ctx.Err() != nil
	}
	return r
}

// plant replaces sc.name under root with what sc.kind says, pointing into
// outside.
func (sc *securityCase) plant(t *testing.T, root, outside string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(sc.name))
	if err := os.RemoveAll(p); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Dir(p), 0o755)
	switch sc.kind {
	case "outside-file":
		sc.target = filepath.Join(outside, "secret.json")
	case "dangling":
		sc.target = filepath.Join(outside, "created-through-"+filepath.Base(sc.name))
	case "dev-zero":
		sc.target = "/dev/zero"
	case "fifo":
		sc.target = filepath.Join(outside, "fifo")
	case "outside-dir":
		sc.target = filepath.Join(outside, "dir-"+filepath.Base(sc.name))
	}
	if err := os.Symlink(sc.target, p); err != nil {
		t.Fatal(err)
	}
}

// outsideWorld creates the directory the planted links lead into: the
// secret, a FIFO, and directories standing in for another repository's
// memory (with an old stray temp file that a cleanup must not touch).
func outsideWorld(t *testing.T, outside, tmpl string) {
	t.Helper()
	writeFile(t, filepath.Join(outside, "secret.json"), secretJSON)
	if err := mkfifo(filepath.Join(outside, "fifo"), 0o644); err != nil {
		t.Skipf("no named pipes: %v", err)
	}
	copyTree(t, filepath.Join(tmpl, ".memory"), filepath.Join(outside, "dir-.memory"))
	copyTree(t, filepath.Join(tmpl, ".memory", "knowledge"), filepath.Join(outside, "dir-knowledge"))
	writeFile(t, filepath.Join(outside, "dir-.claude", "settings.json"), secretJSON)
	old := time.Now().Add(-time.Hour)
	for _, d := range []string{"dir-.memory", "dir-knowledge", filepath.Join("dir-.memory", "knowledge")} {
		writeFile(t, filepath.Join(outside, d, "secret.json"), secretJSON)
		tmp := filepath.Join(outside, d, ".learning-log.jsonl.tmp-0a1b2c")
		writeFile(t, tmp, secretJSON)
		os.Chtimes(tmp, old, old)
	}
}

// treeState maps every entry under dir (not following symlinks) to its
// type and, for regular files, its bytes; symlinks to their target.
func treeState(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			out[rel] = "link " + l
		case d.Type().IsRegular():
			b, _ := os.ReadFile(p)
			out[rel] = "file " + string(b)
		default:
			out[rel] = d.Type().String()
		}
		return nil
	})
	return out
}

// secretsIn lists the regular files under root (not following symlinks,
// .git left out) that hold the secret marker.
func secretsIn(root string) []string {
	var found []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(secretMarker)) {
				rel, _ := filepath.Rel(root, p)
				found = append(found, rel)
			}
		}
		return nil
	})
	return found
}

// watchBriefly runs the watcher for a moment, touches a knowledge file so
// it has something to do, and stops it with SIGTERM.
func watchBriefly(t *testing.T, root string) result {
	t.Helper()
	cmd := exec.Command(binary(t), "watch", "--debounce", "20ms", "--root", root)
	cmd.Env = append(cleanEnv(), "LEARNWATCH_NOW="+day(30).Format(time.RFC3339))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	r := result{args: []string{"watch"}}
	finish := func(err error) result {
		r.dur, r.stdout, r.stderr = time.Since(start), out.String(), errb.String()
		if ee, ok := err.(*exec.ExitError); ok {
			r.code = ee.ExitCode()
		}
		return r
	}
	select {
	case err := <-done: // refused at start
		return finish(err)
	case <-time.After(400 * time.Millisecond):
	}
	os.WriteFile(filepath.Join(root, "notes.txt"), []byte("an edit while watching\n"), 0o644)
	select {
	case err := <-done:
		return finish(err)
	case <-time.After(300 * time.Millisecond):
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-done:
		return finish(err)
	case <-time.After(hookDeadline):
		cmd.Process.Kill()
		<-done
		r = finish(nil)
		r.timedOut, r.code = true, -1
		return r
	}
}

func securityRun(t *testing.T, tmpl string, sc securityCase) {
	base := t.TempDir()
	root, outside := filepath.Join(base, "repo"), filepath.Join(base, "outside")
	copyTree(t, tmpl, root)
	outsideWorld(t, outside, tmpl)
	transcript := filepath.Join(base, "agent", "transcript.jsonl")
	writeFile(t, transcript, `{"type":"assistant","message":{"id":"m1","role":"assistant","content":"As ADR-001 says, and PF-001."}}`+"\n")

	// The user's repository with learnwatch's git hooks; then the
	// attacker's commit arrives with the planted name.
	for _, g := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "base"}} {
		if r := gitRun(t, root, g...); r.code != 0 {
			t.Fatalf("setup: %s", r)
		}
	}
	must(t, root, args("hooks", "install"))
	for _, h := range []string{"pre-commit", "post-checkout"} {
		// The hooks call this binary by its path: the git entry points
		// below really run it.
		if b, err := os.ReadFile(filepath.Join(root, ".git", "hooks", h)); err != nil || !strings.Contains(string(b), binary(t)) {
			t.Fatalf("the %s hook does not call %s: %v\n%s", h, binary(t), err, b)
		}
	}
	sc.plant(t, root, outside)
	for _, g := range [][]string{{"add", "-A"}, {"commit", "-q", "--no-verify", "-m", "planted"}} {
		if r := gitRun(t, root, g...); r.code != 0 {
			t.Fatalf("setup: %s", r)
		}
	}
	outsideBefore := treeState(t, outside)
	planted := filepath.Join(root, filepath.FromSlash(sc.name))

	type entry struct {
		hook bool
		do   func() result
	}
	lw := func(c call) func() result {
		return func() result { c.timeout = 2 * hookDeadline; return run(t, root, c) }
	}
	entries := []entry{
		{true, lw(call{args: []string{"hook", "session-start"}, stdin: sessionStdin(root), now: day(30)})},
		{true, lw(call{args: []string{"hook", "stop"}, now: day(30),
			stdin: fmt.Sprintf(`{"hook_event_name":"Stop","session_id":"s1","transcript_path":%q,"cwd":%q}`, transcript, root)})},
		{false, lw(call{args: []string{"observe"}, stdin: batch(sight("obs_o_de"), sight("obs_o_pf")), now: day(30)})},
		{false, lw(call{args: []string{"render"}, now: day(30)})},
		{false, lw(call{args: []string{"reconcile"}, now: day(30)})},
		{false, lw(call{args: []string{"stale"}, now: day(30)})},
		{false, lw(call{args: []string{"report", "--format", "json"}, now: day(30)})},
		{false, lw(call{args: []string{"outcome", "errors", "--run", "r1"}, now: day(30)})},
		{false, lw(call{args: []string{"hooks", "install", "--claude"}, now: day(30)})},
		{true, func() result { // pre-commit, through a real commit
			os.WriteFile(filepath.Join(root, "change.txt"), []byte("a change\n"), 0o644)
			if r := gitRun(t, root, "add", "change.txt"); r.code != 0 {
				return r
			}
			return gitRun(t, root, "commit", "-q", "-m", "a change")
		}},
		{true, func() result { return gitRun(t, root, "checkout", "-q", "-b", "side") }}, // post-checkout
		{false, func() result { return watchBriefly(t, root) }},
	}
	named := false
	for _, e := range entries {
		r := e.do()
		out := r.stdout + r.stderr
		switch {
		case r.timedOut || r.dur > hookDeadline:
			t.Errorf("did not finish within %s: %s", hookDeadline, r)
		case e.hook && r.code != 0:
			t.Errorf("a hook failed closed: %s", r)
		case r.code != 0 && !strings.Contains(out, sc.name) && !strings.Contains(out, filepath.Base(sc.name)):
			t.Errorf("failed without naming the refused %s: %s", sc.name, r)
		}
		if strings.Contains(out, "binary not found") {
			t.Errorf("the git hook did not run learnwatch: %s", r)
		}
		if strings.Contains(out, secretMarker) {
			t.Errorf("the secret reached the output: %s", r)
		}
		if strings.Contains(out, sc.name) || strings.Contains(out, filepath.Base(sc.name)) && strings.Contains(out, "refused") {
			named = true
		}
	}

	if diff := diffStates(outsideBefore, treeState(t, outside)); len(diff) > 0 {
		t.Errorf("outside the repository: %s", strings.Join(diff, "; "))
	}
	if found := secretsIn(root); len(found) > 0 {
		t.Errorf("the secret was copied into the work tree: %v", found)
	}
	if l, err := os.Readlink(planted); err != nil || l != sc.target {
		t.Errorf("the planted %s was removed or replaced: %q %v", sc.name, l, err)
	}
	if !named && !silentNames[sc.name] {
		t.Errorf("no entry point said it refused %s", sc.name)
	}
}

// diffStates lists entries added, removed or changed between a and b.
func diffStates(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok {
			out = append(out, "removed "+k)
		} else if v != w {
			out = append(out, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "created "+k)
		}
	}
	return out
}

// The agent names the transcript: a FIFO, /dev/zero, a directory or a
// symlink there never hangs or feeds the Stop hook (or cite --transcript);
// the hook exits 0 at once with a message naming the path, cite exits 2.
func TestReliabilitySecurityTranscript(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	writeFile(t, filepath.Join(root, ".memory", "learning-log.jsonl"), validA+"\n")
	secret := filepath.Join(base, "secret.jsonl")
	writeFile(t, secret, `{"role":"assistant","content":"ADR-001 `+secretMarker+`"}`+"\n")
	fifo := filepath.Join(base, "fifo")
	if err := mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no named pipes: %v", err)
	}
	link := filepath.Join(base, "link.jsonl")
	os.Symlink(secret, link)
	zeroLink := filepath.Join(base, "zero.jsonl")
	os.Symlink("/dev/zero", zeroLink)
	for _, tr := range []string{fifo, "/dev/zero", zeroLink, link, base} {
		stdin := fmt.Sprintf(`{"hook_event_name":"Stop","session_id":"s1","transcript_path":%q,"cwd":%q}`, tr, root)
		for _, c := range []call{
			{args: []string{"hook", "stop"}, stdin: stdin, timeout: 2 * hookDeadline},
			{args: []string{"cite", "--transcript", tr}, timeout: 2 * hookDeadline},
		} {
			r := run(t, root, c)
			hook := c.args[0] == "hook"
			switch {
			case r.timedOut || r.dur > hookDeadline:
				t.Errorf("%s: did not finish within %s: %s", tr, hookDeadline, r)
			case hook && r.code != 0:
				t.Errorf("%s: the Stop hook must exit 0: %s", tr, r)
			case !hook && r.code != 2:
				t.Errorf("%s: cite must exit 2: %s", tr, r)
			case !strings.Contains(r.stderr, tr):
				t.Errorf("%s: the message does not name the transcript: %s", tr, r)
			}
			if strings.Contains(r.stdout+r.stderr, secretMarker) {
				t.Errorf("%s: the secret reached the output: %s", tr, r)
			}
		}
	}
	if found := secretsIn(root); len(found) > 0 {
		t.Errorf("the secret was copied into the work tree: %v", found)
	}
	if b, err := os.ReadFile(filepath.Join(root, ".memory", ".knowledge-usage.json")); err == nil && strings.Contains(string(b), "ADR-001") {
		t.Errorf("a refused transcript was counted: %s", b)
	}
}
