package reliability

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// obsLine is a valid log line for hostile setups.
func obsLine(id, typ, pattern, status string, extra ...string) string {
	o := map[string]any{"id": id, "type": typ, "pattern": pattern, "confidence": 0.95, "observations": 2,
		"first_seen": "2026-01-01T00:00:00Z", "last_seen": "2026-01-02T00:00:00Z", "status": status,
		"evidence": []string{}, "details": "", "quality_ok": true}
	for i := 0; i+1 < len(extra); i += 2 {
		o[extra[i]] = extra[i+1]
	}
	b, _ := json.Marshal(o)
	return string(b)
}

const (
	validA = `{"id":"obs_a","type":"decision","pattern":"Alpha rule","confidence":0.33,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"","quality_ok":true}`
	validB = `{"id":"obs_b","type":"pitfall","pattern":"Beta trap","confidence":0.33,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"area: beta; issue: trap","quality_ok":true}`
)

// hostileCase is one row of the hostile-input table: a repository set up
// with something malicious or broken, one command, and what must happen.
type hostileCase struct {
	name  string
	setup func(t *testing.T, root string)
	c     call
	code  int
	// stderr must match (a clear message naming what is wrong).
	stderr string
	// stdout, when set, must match.
	stdout string
	// same lists files (relative to root) that must be byte-identical
	// after the command; "*" means the whole tree.
	same []string
	// check adds case-specific checks.
	check func(t *testing.T, root string, r result)
	// within bounds the command's wall time (default 30 s).
	within time.Duration
}

// TestReliabilityHostileInput feeds learnwatch corrupt, truncated, huge and
// malicious input and a full disk. Each gets a clear message, the exit code
// of DESIGN.md §7 (0 when learnwatch copes, 2 bad input, 3 I/O or lock
// failure; hooks always 0) and no data loss: the files it must not change
// are byte-identical afterwards.
func TestReliabilityHostileInput(t *testing.T) {
	t.Parallel()
	mem := func(root string, name string) string { return filepath.Join(root, ".memory", name) }
	writeLog := func(t *testing.T, root, content string) { writeFile(t, mem(root, "learning-log.jsonl"), content) }
	tenMB := strings.Repeat("x", 10<<20)
	outsideFifo := func(t *testing.T, root string) string {
		// A named pipe outside the root: opening it for reading would block,
		// so a command that finishes never opened it.
		dir := filepath.Join(filepath.Dir(root), "outside")
		os.MkdirAll(dir, 0o755)
		p := filepath.Join(dir, "x.md")
		if _, err := os.Stat(p); err != nil {
			if err := mkfifo(p, 0o644); err != nil {
				t.Skipf("no named pipes: %v", err)
			}
		}
		return p
	}
	refusedRepo := func(path string) func(t *testing.T, root string) {
		return func(t *testing.T, root string) {
			p := path
			switch path {
			case "fifo-up":
				outsideFifo(t, root)
				p = "../outside/x.md"
			case "fifo-link":
				f := outsideFifo(t, root)
				os.Symlink(filepath.Dir(f), filepath.Join(root, "linkout"))
				p = "linkout/x.md"
			}
			writeLog(t, root, obsLine("obs_r", "workflow", "Refused one", "created", "artifact_path", p)+"\n")
			m, _ := json.Marshal(map[string]any{"schemaVersion": 1, "entries": []map[string]string{{"observationId": "obs_r", "type": "workflow",
				"path": p, "contentHash": "sha256:00", "renderedAt": "2026-01-01T00:00:00Z"}}})
			writeFile(t, mem(root, ".learning-manifest.json"), string(m)+"\n")
		}
	}
	tenThousand := func(t *testing.T, root string) {
		var b strings.Builder
		b.WriteString("# Architectural Decisions\n")
		for i := 1; i <= 10000; i++ {
			fmt.Fprintf(&b, "\n## ADR-%03d: Decision number %d\n\n- **Status**: Accepted\n- **Context**: context %d\n", i, i, i)
		}
		writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"), b.String())
		writeLog(t, root, obsLine("obs_n", "decision", "One more decision", "ready")+"\n")
	}
	fenced := "# Architectural Decisions\n\n## ADR-001: Real one\n\n- **Status**: Accepted\n\n```markdown\n## ADR-007: Inside a fence\n\n- **Source**: self-learning:obs_f\n```\n\n## ADR-002: Second\n\n- **Status**: Accepted\n"
	dupAnchors := "# Architectural Decisions\n\n## ADR-001: One\n\n- **Status**: Accepted\n\n## ADR-002: Duplicate A\n\n- **Status**: Accepted\n- **Source**: self-learning:obs_d\n\n## ADR-002: Duplicate B\n\n- **Status**: Accepted\n"
	full := func(t *testing.T, root string) {
		// A repository with rendered artifacts and pending work, for the
		// disk-full rows.
		tmpl, _ := crashTemplate(t)
		copyTree(t, tmpl, root)
	}

	cases := []hostileCase{
		{name: "log/corrupt-line", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n"+`{"id":"obs_c","type":"dec`+"\n"+validB+"\n")
		}, c: args("reconcile", "--json"), stdout: `"corrupt":1`, same: []string{"*"}},
		{name: "log/corrupt-line-kept-in-place-by-observe", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n"+`{"id":"obs_c","type":"dec`+"\n"+validB+"\n")
		}, c: call{args: []string{"observe"}, stdin: obsJSON("obs_new", "decision", "New rule", "")}, check: func(t *testing.T, root string, _ result) {
			lines := strings.Split(string(readFile(t, mem(root, "learning-log.jsonl"))), "\n")
			if len(lines) != 5 || lines[0] != validA || lines[1] != `{"id":"obs_c","type":"dec` || lines[2] != validB || !strings.Contains(lines[3], "obs_new") {
				t.Errorf("log after observe:\n%s", strings.Join(lines, "\n"))
			}
		}},
		{name: "log/truncated-last-line", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n"+`{"id":"obs_c","type":"decision","patt`)
		}, c: call{args: []string{"observe"}, stdin: obsJSON("obs_new", "decision", "New rule", "")}, check: func(t *testing.T, root string, _ result) {
			lines := strings.Split(string(readFile(t, mem(root, "learning-log.jsonl"))), "\n")
			if len(lines) != 4 || lines[1] != `{"id":"obs_c","type":"decision","patt` || !json.Valid([]byte(lines[2])) || lines[3] != "" {
				t.Errorf("the new line was glued to the torn one or the torn one changed:\n%q", lines)
			}
		}},
		{name: "log/nul-byte", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n"+`{"id":"obs_z","type":"decision","pattern":"Z`+"\x00"+`"}`+"\n"+validB+"\n")
		}, c: args("status", "--json"), stdout: `"corrupt":1`, same: []string{"*"}},
		{name: "log/nul-byte-reconcile", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n\x00\x00\x00\n"+validB+"\n")
		}, c: args("reconcile", "--json"), stdout: `"corrupt":1`, same: []string{"*"}},
		{name: "log/invalid-utf8", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n"+strings.Replace(validB, "Beta trap", "Beta \xff\xfe trap", 1)+"\n")
		}, c: call{args: []string{"observe"}, stdin: obsJSON("obs_a", "decision", "Alpha rule", "")}, check: func(t *testing.T, root string, _ result) {
			// obs_a was rewritten; the line with invalid UTF-8 is kept byte for byte.
			if !strings.Contains(string(readFile(t, mem(root, "learning-log.jsonl"))), "Beta \xff\xfe trap") {
				t.Error("the line with invalid UTF-8 was rewritten")
			}
		}},
		{name: "log/10MB-garbage-line", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n"+tenMB+"\n"+validB+"\n")
		}, c: args("reconcile", "--json"), stdout: `"corrupt":1`, same: []string{"*"}},
		{name: "log/10MB-observation", setup: func(t *testing.T, root string) {
			writeLog(t, root, obsLine("obs_big", "decision", "Big one", "observing", "details", tenMB)+"\n"+validA+"\n")
		}, c: call{args: []string{"observe"}, stdin: obsJSON("obs_a", "decision", "Alpha rule", "")}, check: func(t *testing.T, root string, _ result) {
			if !strings.HasPrefix(string(readFile(t, mem(root, "learning-log.jsonl"))), obsLine("obs_big", "decision", "Big one", "observing", "details", tenMB)+"\n") {
				t.Error("the 10 MB line was changed")
			}
		}},
		{name: "stdin/truncated-jsonl", setup: func(t *testing.T, root string) { writeLog(t, root, validA+"\n") },
			c:    call{args: []string{"observe"}, stdin: obsJSON("obs_x", "decision", "X", "") + "\n" + `{"id":"obs_y","type":`},
			code: 2, stderr: `stdin: line 2: .*JSON`, same: []string{"*"}},
		{name: "stdin/corrupt-line", setup: func(t *testing.T, root string) { writeLog(t, root, validA+"\n") },
			c:    call{args: []string{"observe"}, stdin: obsJSON("obs_x", "decision", "X", "") + "\n\n" + `{"id":"obs_y",,}` + "\n"},
			code: 2, stderr: `stdin: line 3: .*JSON`, same: []string{"*"}},
		{name: "stdin/nul-byte", setup: func(t *testing.T, root string) { writeLog(t, root, validA+"\n") },
			c:    call{args: []string{"observe"}, stdin: `{"id":"obs_x","type":"decision","pattern":"X` + "\x00" + `"}`},
			code: 2, stderr: `stdin: line 1: .*\\x00`, same: []string{"*"}},
		{name: "stdin/not-json", setup: func(t *testing.T, root string) { writeLog(t, root, validA+"\n") },
			c: call{args: []string{"observe"}, stdin: "hello\n"}, code: 2, stderr: `stdin: line 1`, same: []string{"*"}},
		{name: "stdin/wrong-field-type", setup: func(t *testing.T, root string) { writeLog(t, root, validA+"\n") },
			c:    call{args: []string{"observe", "--json"}, stdin: `{"id":"obs_x","type":"decision","pattern":"X","confidence":"high"}`},
			code: 2, stderr: `obs_x: field confidence`, stdout: `"skipped":1`, same: []string{"*"}}, // every observation skipped: exit 2
		// A 10 MB details text is over the bound edit puts on a field: the
		// sighting is named and skipped, nothing written (a 10 MB line
		// already in the log is read: "log/10MB-observation").
		{name: "stdin/10MB-line", setup: func(t *testing.T, root string) { writeLog(t, root, validA+"\n") },
			c:    call{args: []string{"observe", "--json"}, stdin: obsJSON("obs_big", "decision", "Big", tenMB)},
			code: 2, stdout: `"skipped":1`, stderr: `obs_big: field details: 10485760 bytes, more than 65536`, same: []string{"*"}},
		{name: "manifest/not-json/render", setup: func(t *testing.T, root string) {
			writeLog(t, root, obsLine("obs_r", "decision", "Ready one", "ready")+"\n")
			writeFile(t, mem(root, ".learning-manifest.json"), "this is not JSON {\n")
		}, c: args("render"), code: 2, stderr: `learning-manifest.json: manifest is not valid JSON.*reconcile`, same: []string{"*"}},
		{name: "manifest/not-json/reconcile", setup: func(t *testing.T, root string) {
			writeLog(t, root, obsLine("obs_r", "decision", "Ready one", "ready")+"\n")
			writeFile(t, mem(root, ".learning-manifest.json"), "this is not JSON {\n")
		}, c: args("reconcile"), stderr: `manifest is not valid JSON.*kept as \.learning-manifest\.json\.corrupt-`,
			same: []string{".memory/learning-log.jsonl"}, check: func(t *testing.T, root string, _ result) {
				m, _ := filepath.Glob(mem(root, ".learning-manifest.json.corrupt-*"))
				if len(m) != 1 || string(readFile(t, m[0])) != "this is not JSON {\n" {
					t.Errorf("the corrupt manifest was not kept byte for byte: %v", m)
				}
				if _, _, err := manifest.ReadManifest(mem(root, ".learning-manifest.json")); err != nil {
					t.Errorf("the manifest was not rebuilt: %v", err)
				}
			}},
		{name: "manifest/etc-passwd", setup: refusedRepo("/etc/passwd"), c: args("reconcile", "--json"),
			stdout: `"refused":1`, stderr: `refused path "/etc/passwd": outside the repository root`, same: []string{"*"}},
		{name: "manifest/dot-dot-outside", setup: refusedRepo("fifo-up"), c: args("reconcile", "--json"),
			stdout: `"refused":1`, stderr: `refused path "\.\./outside/x\.md": outside the repository root`, same: []string{"*"}},
		{name: "manifest/dot-dot-dot-dot", setup: refusedRepo("../../outside"), c: args("reconcile", "--json"),
			stdout: `"refused":1`, stderr: `refused path "\.\./\.\./outside"`, same: []string{"*"}},
		{name: "manifest/symlink-out", setup: refusedRepo("fifo-link"), c: args("reconcile", "--json"),
			stdout: `"refused":1`, stderr: `symlink .*linkout leads outside the repository root`, same: []string{"*"}},
		{name: "manifest/symlink-out/watch-status", setup: refusedRepo("fifo-link"), c: args("status"), same: []string{"*"}},
		{name: "usage/not-json/render", setup: func(t *testing.T, root string) {
			writeLog(t, root, obsLine("obs_r", "decision", "Ready one", "ready")+"\n")
			writeFile(t, mem(root, ".knowledge-usage.json"), "{not json\n")
		}, c: args("render"), code: 2, stderr: `knowledge-usage.json`, same: []string{"*"}},
		{name: "usage/not-json/reconcile", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, ".knowledge-usage.json"), "{not json\n")
		}, c: args("reconcile"), stderr: `knowledge-usage.json.*kept as`, check: func(t *testing.T, root string, _ result) {
			m, _ := filepath.Glob(mem(root, ".knowledge-usage.json.corrupt-*"))
			if len(m) != 1 || string(readFile(t, m[0])) != "{not json\n" {
				t.Errorf("the corrupt usage file was not kept byte for byte: %v", m)
			}
		}},
		{name: "usage/null-entry/cite", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, ".knowledge-usage.json"), `{"version":1,"entries":{"ADR-001":null}}`+"\n")
		}, c: call{args: []string{"cite"}, stdin: "We followed ADR-001 here.\n"}, stdout: `ADR-001`, check: func(t *testing.T, root string, _ result) {
			u, err := manifest.ReadUsage(mem(root, ".knowledge-usage.json"))
			if n, _ := u.Cites("ADR-001"); err != nil || n != 1 {
				t.Errorf("ADR-001 cites %d (%v), want 1", n, err)
			}
		}},
		{name: "config/bad-yaml", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock: [\n")
		}, c: args("reconcile"), code: 2, stderr: `learnwatch\.yaml: yaml: line \d`, same: []string{"*"}},
		{name: "config/bad-yaml/hook-fails-open", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock: [\n")
		}, c: call{args: []string{"hook", "session-start"}}, stderr: `learnwatch\.yaml.*using defaults`, stdout: `"hookEventName":"SessionStart"`},
		{name: "knowledge/10000-sections/render", setup: tenThousand, c: args("render", "--json"),
			stdout: `capacity`, same: []string{".memory/knowledge/decisions.md"}, within: 20 * time.Second},
		{name: "knowledge/10000-sections/reconcile", setup: tenThousand, c: args("reconcile", "--json"),
			stdout: `"corrupt":0`, same: []string{"*"}, within: 20 * time.Second},
		{name: "knowledge/10000-sections/session-start", setup: tenThousand, c: call{args: []string{"hook", "session-start"}},
			stdout: `ADR-10000`, within: 20 * time.Second},
		{name: "knowledge/heading-in-code-fence", setup: func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"), fenced)
			writeLog(t, root, obsLine("obs_f", "decision", "Inside a fence", "ready")+"\n")
		}, c: args("render", "--json"), stdout: `"anchor":"ADR-003"`, check: func(t *testing.T, root string, _ result) {
			b := string(readFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md")))
			if !strings.Contains(b, fenced[strings.Index(fenced, "## ADR-001"):]) {
				t.Error("the existing entries (and the fenced block) changed")
			}
			if probs := verify(root, expect{obs: map[string]int{"obs_f": 2}, settled: true}); len(probs) > 0 {
				t.Errorf("invariants: %v", probs)
			}
		}},
		{name: "knowledge/heading-in-code-fence/not-healed", setup: func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"), fenced)
			writeLog(t, root, obsLine("obs_f", "decision", "Inside a fence", "ready")+"\n")
		}, c: args("reconcile", "--json"), stdout: `"healed":0`, same: []string{"*"}},
		{name: "knowledge/duplicate-anchors", setup: func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"), dupAnchors)
			writeLog(t, root, validA+"\n")
		}, c: args("reconcile"), stderr: `decisions\.md: ADR-002 appears twice \(lines 7 and 12\)`, same: []string{"*"}},
		{name: "knowledge/duplicate-anchors/render", setup: func(t *testing.T, root string) {
			writeFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"), dupAnchors)
			writeLog(t, root, obsLine("obs_n", "decision", "Next one", "ready")+"\n")
		}, c: args("render", "--json"), stdout: `"anchor":"ADR-003"`, check: func(t *testing.T, root string, _ result) {
			if b := string(readFile(t, filepath.Join(root, ".memory", "knowledge", "decisions.md"))); !strings.Contains(b, dupAnchors[strings.Index(dupAnchors, "## ADR-001"):]) {
				t.Error("the existing entries changed")
			}
		}},
		{name: "lock/held-by-another-tool", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock:\n  timeout: 500ms\n")
			os.Mkdir(mem(root, ".learning.lock"), 0o755)
		}, c: call{args: []string{"observe"}, stdin: obsJSON("obs_x", "decision", "X", "")},
			// Not turned away: queued in the inbox, the log untouched.
			stdout: `queued 1 observation\(s\) as item-`, same: []string{".memory/learning-log.jsonl"},
			check: func(t *testing.T, root string, _ result) {
				items, _ := filepath.Glob(mem(root, "inbox/item-*.json"))
				if len(items) != 1 {
					t.Fatalf("inbox holds %v, want one item", items)
				}
				if b := string(readFile(t, items[0])); !strings.Contains(b, `"obs_x"`) {
					t.Errorf("the item lacks the observation: %s", b)
				}
			}},
		{name: "lock/held-by-another-tool/outcome", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock:\n  timeout: 500ms\n")
			os.Mkdir(mem(root, ".learning.lock"), 0o755)
		}, c: call{args: []string{"outcome", "record"}, stdin: `{"run_id":"r1","success":true,"duration_ms":1000,"retry_count":0}`},
			stdout: `Queued run r1 as item-`, same: []string{".memory/learning-log.jsonl"},
			check: func(t *testing.T, root string, _ result) {
				if _, err := os.Stat(mem(root, "outcomes.jsonl")); err == nil {
					t.Error("outcomes.jsonl written though the lock was held")
				}
				if items, _ := filepath.Glob(mem(root, "inbox/item-*.json")); len(items) != 1 {
					t.Errorf("inbox holds %v, want one item", items)
				}
			}},
		{name: "lock/held-by-another-tool/cite", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock:\n  timeout: 500ms\n")
			os.Mkdir(mem(root, ".learning.lock"), 0o755)
		}, c: call{args: []string{"cite", "--json"}, stdin: "Per ADR-001 and PF-002.\nADR-001 again.\n"},
			stdout: `"queued":true,"item":"item-`, same: []string{".memory/learning-log.jsonl"},
			check: func(t *testing.T, root string, _ result) {
				if _, err := os.Stat(mem(root, ".knowledge-usage.json")); err == nil {
					t.Error("the usage file was written though the lock was held")
				}
				items, _ := filepath.Glob(mem(root, "inbox/item-*.json"))
				if len(items) != 1 {
					t.Fatalf("inbox holds %v, want one item", items)
				}
				if b := string(readFile(t, items[0])); !strings.Contains(b, `"cites":{"ADR-001":2,"PF-002":1}`) {
					t.Errorf("the item lacks the counts: %s", b)
				}
			}},
		{name: "lock/held-by-another-tool/purge", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock:\n  timeout: 500ms\n")
			os.Mkdir(mem(root, ".learning.lock"), 0o755)
		}, c: args("purge"), code: 3, stderr: `learning\.lock: timed out waiting for lock`, same: []string{"*"}},
		{name: "lock/held-by-another-tool/hook-fails-open", setup: func(t *testing.T, root string) {
			writeLog(t, root, validA+"\n")
			writeFile(t, mem(root, "learnwatch.yaml"), "lock:\n  timeout: 500ms\n")
			os.Mkdir(mem(root, ".learning.lock"), 0o755)
		}, c: call{args: []string{"hook", "session-start"}}, stderr: `reconcile skipped: .*timed out waiting for lock`, stdout: `SessionStart`, same: []string{"*"}},
	}
	for _, cmd := range []call{
		{args: []string{"observe"}, stdin: batch(sight("obs_o_de"), obsJSON("obs_new", "decision", "New", ""))},
		args("render"), args("reconcile"), args("purge"), args("clear", "--yes"),
		{args: []string{"outcome", "record"}, stdin: `{"run_id":"r1","success":true,"duration_ms":1000,"retry_count":0,"cited":["ADR-001"]}`},
	} {
		cases = append(cases, hostileCase{name: "disk-full/" + cmd.args[0], setup: full,
			c:    call{args: cmd.args, stdin: cmd.stdin, env: []string{"LEARNWATCH_FAILPOINT=*=enospc"}},
			code: 3, stderr: `no space left on device`, same: []string{"*"}})
	}
	cases = append(cases, hostileCase{name: "disk-full/hook-session-start", setup: full,
		c:    call{args: []string{"hook", "session-start"}, env: []string{"LEARNWATCH_FAILPOINT=*=enospc"}},
		code: 0, stderr: `no space left on device`, stdout: `SessionStart`, same: []string{"*"}})

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			root := filepath.Join(t.TempDir(), "repo")
			os.MkdirAll(filepath.Join(root, ".memory"), 0o755)
			tc.setup(t, root)
			before := snapshot(t, root)
			c := tc.c
			if len(c.args) > 1 && c.args[0] == "hook" && c.stdin == "" {
				c.stdin = sessionStdin(root)
			}
			within := tc.within
			if within == 0 {
				within = 30 * time.Second
			}
			c.timeout = within + 30*time.Second
			r := run(t, root, c)
			if r.timedOut {
				t.Fatalf("did not finish (a blocking open of a refused path?): %s", r)
			}
			if r.code != tc.code {
				t.Errorf("exit %d, want %d: %s", r.code, tc.code, r)
			}
			if r.dur > within {
				t.Errorf("took %s, bound %s", r.dur, within)
			}
			if tc.stderr != "" && !regexp.MustCompile(tc.stderr).MatchString(r.stderr) {
				t.Errorf("stderr does not match %q:\n%.3000s", tc.stderr, r.stderr)
			}
			if tc.stdout != "" && !regexp.MustCompile(tc.stdout).MatchString(r.stdout) {
				t.Errorf("stdout does not match %q:\n%.3000s", tc.stdout, r.stdout)
			}
			if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
				t.Errorf("crashed:\n%s", r.stderr)
			}
			after := snapshot(t, root)
			for _, f := range tc.same {
				if f == "*" {
					if d := diffSnapshots(before, after); len(d) > 0 {
						t.Errorf("files changed though nothing should: %v", d)
					}
					continue
				}
				if before[f] != after[f] {
					t.Errorf("%s changed", f)
				}
			}
			if tc.check != nil {
				tc.check(t, root, r)
			}
		})
	}
}
