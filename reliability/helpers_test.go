package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The binary under test is built once per `go test` run (lazily, so that a
// fuzzing run of this package does not pay for it) into a temp directory
// TestMain removes.
var (
	workOnce  sync.Once
	work      string
	workErr   error
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if work != "" {
		os.RemoveAll(work)
	}
	os.Exit(code)
}

// workDir is a temp directory shared by the whole run (the binary, the
// crash template), removed by TestMain.
func workDir(t testing.TB) string {
	t.Helper()
	workOnce.Do(func() { work, workErr = os.MkdirTemp("", "learnwatch-reliability-") })
	if workErr != nil {
		t.Fatal(workErr)
	}
	return work
}

// binary returns the path of the learnwatch binary, building it on first
// use. LEARNWATCH_RELIABILITY_RACE=1 builds it with the race detector.
func binary(t testing.TB) string {
	t.Helper()
	dir := workDir(t)
	buildOnce.Do(func() {
		binPath = filepath.Join(dir, "learnwatch")
		args := []string{"build", "-o", binPath}
		if os.Getenv("LEARNWATCH_RELIABILITY_RACE") != "" {
			args = append(args, "-race")
		}
		args = append(args, "github.com/learnwatch/learnwatch/cmd/learnwatch")
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// full reports whether the long versions run (make check-reliability).
func full() bool { return os.Getenv("LEARNWATCH_RELIABILITY") == "full" }

// baseNow is the pinned clock of every command unless a call says otherwise.
var baseNow = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// call is one learnwatch process.
type call struct {
	args    []string
	stdin   string
	env     []string      // added to the environment (LEARNWATCH_FAILPOINT=…)
	now     time.Time     // LEARNWATCH_NOW; zero: baseNow
	timeout time.Duration // zero: 60 s
}

// result is how a learnwatch process ended.
type result struct {
	args           []string
	stdout, stderr string
	code           int  // exit code; -1 when killed or timed out
	killed         bool // ended by SIGKILL (a failpoint)
	timedOut       bool // did not finish within the call's timeout
	dur            time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("learnwatch %s: exit %d (killed %v, %s)\nstdout: %.2000s\nstderr: %.2000s",
		strings.Join(r.args, " "), r.code, r.killed, r.dur.Round(time.Millisecond), r.stdout, r.stderr)
}

// cleanEnv is the test process's environment without LEARNWATCH_*
// variables, so a developer's shell does not leak into the harness. The
// slice is full to capacity: appending to it always copies, so concurrent
// callers never share the new elements.
var cleanEnv = sync.OnceValue(func() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LEARNWATCH_") {
			env = append(env, kv)
		}
	}
	return env[:len(env):len(env)]
})

// run starts learnwatch with c against root and waits for it. It never
// fails the test: callers decide what an exit means.
func run(t testing.TB, root string, c call) result {
	t.Helper()
	timeout := c.timeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	now := c.now
	if now.IsZero() {
		now = baseNow
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	args := append(append([]string(nil), c.args...), "--root", root)
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Env = append(append(cleanEnv(), "LEARNWATCH_NOW="+now.UTC().Format(time.RFC3339)), c.env...)
	cmd.Stdin = strings.NewReader(c.stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := result{args: c.args, stdout: out.String(), stderr: errb.String(), dur: time.Since(start)}
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Fatalf("learnwatch %v: %v", c.args, err)
		}
		r.code = ee.ExitCode()
		if ctx.Err() != nil {
			r.timedOut = true
		} else if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			r.killed = true
		}
	}
	return r
}

// must runs learnwatch and fails the test unless it exits 0.
func must(t testing.TB, root string, c call) result {
	t.Helper()
	r := run(t, root, c)
	if r.code != 0 {
		t.Fatalf("unexpected failure: %s", r)
	}
	return r
}

// args is a shorthand for a call with only arguments.
func args(a ...string) call { return call{args: a} }

// jsonObj decodes a command's --json output.
func jsonObj(t testing.TB, r result) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(r.stdout), &m); err != nil {
		t.Fatalf("stdout of %v is not one JSON object: %v\n%s", r.args, err, r.stdout)
	}
	return m
}

// backdateLocks makes the lock directories a killed process left behind
// older than the 60 s takeover limit, as if a minute had passed.
func backdateLocks(t testing.TB, root string) {
	t.Helper()
	old := time.Now().Add(-2 * time.Minute)
	for _, l := range []string{".learning.lock", ".knowledge.lock"} {
		p := filepath.Join(root, ".memory", l)
		if _, err := os.Stat(p); err == nil {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// copyTree copies src to dst (regular files, directories and symlinks).
func copyTree(t testing.TB, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(l, target)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, fi.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func appendFile(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// obsJSON is one observation as an extractor sends it to observe.
func obsJSON(id, typ, pattern, details string, evidence ...string) string {
	o := map[string]any{"id": id, "type": typ, "pattern": pattern, "details": details, "quality_ok": true}
	if len(evidence) > 0 {
		o["evidence"] = evidence
	}
	b, _ := json.Marshal(o)
	return string(b)
}

// day returns baseNow plus n days.
func day(n int) time.Time { return baseNow.Add(time.Duration(n) * 24 * time.Hour) }

// snapshot maps every regular file under root (relative path) to its bytes,
// leaving out the disposable caches (.memory/.cache/): they are not memory
// state, any command may refresh them, and a run without them gives the
// same results.
func snapshot(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	cache := filepath.Join(root, ".memory", ".cache")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p == cache {
			return filepath.SkipDir
		}
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			out[filepath.ToSlash(rel)] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// diffSnapshots lists files added, removed or changed between a and b.
func diffSnapshots(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		w, ok := b[k]
		switch {
		case !ok:
			out = append(out, "removed "+k)
		case v != w:
			out = append(out, "changed "+k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, "added "+k)
		}
	}
	return out
}
