package main

// Custom testscript commands for the core_*.txtar scenarios, and the
// repository integrity check shared with core_test.go. Everything here is
// written independently of the code under test (its own djb2, its own
// section scan, its own JSON/YAML walking), so a bug in learnwatch cannot
// hide itself by being reused in the check.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/rogpeppe/go-internal/testscript"
	"go.yaml.in/yaml/v3"
)

func init() {
	for name, f := range map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"jsonget":    cmdJSONGet,
		"yamlfront":  cmdYAMLFront,
		"countlines": cmdCountLines,
		"snapshot":   cmdSnapshot,
		"changed":    cmdChanged,
		"djb2":       cmdDJB2,
		"sha256":     cmdSHA256,
		"envsubst":   cmdEnvsubst,
		"exitcode":   cmdExitCode,
		"checkrepo":  cmdCheckRepo,
		"genentries": cmdGenEntries,
		"backdate":   cmdBackdate,
		"mkfifo":     cmdMkfifo,
		"waitfile":   cmdWaitFile,
		"padfile":    cmdPadFile,
		"pokebyte":   cmdPokeByte,
	} {
		if _, dup := scriptCmds[name]; dup {
			panic("scriptCmds: command " + name + " registered twice (see scriptcmds_test.go)")
		}
		scriptCmds[name] = f
	}
}

// ---------------------------------------------------------------- JSON paths

// loadJSONish reads FILE ("stdout"/"stderr" for the last command's output)
// as one JSON value; a .jsonl file becomes an array with one element per
// non-blank line (a line that is not JSON becomes its raw text, a string).
func loadJSONish(ts *testscript.TestScript, file string) any {
	data := ts.ReadFile(file)
	if strings.HasSuffix(file, ".jsonl") {
		var out []any
		for _, line := range strings.Split(data, "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			v, err := decodeJSON([]byte(line))
			if err != nil {
				out = append(out, line)
				continue
			}
			out = append(out, v)
		}
		return out
	}
	v, err := decodeJSON([]byte(data))
	if err != nil {
		ts.Fatalf("%s is not JSON: %v\n%s", file, err, data)
	}
	return v
}

func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

const missing = "<missing>"

// walk follows a path of "/"-separated segments: an object key, an array
// index, "#" (length of an array, object or string), "key=value" (the one
// array element whose field key has that string value; several or none is an
// error) or "?key=value" (the array of all such elements).
func walk(v any, path string) (any, error) {
	if path == "" || path == "." {
		return v, nil
	}
	for _, seg := range strings.Split(path, "/") {
		switch {
		case seg == "#" || seg == "len":
			switch x := v.(type) {
			case []any:
				v = json.Number(strconv.Itoa(len(x)))
			case map[string]any:
				v = json.Number(strconv.Itoa(len(x)))
			case string:
				v = json.Number(strconv.Itoa(len(x)))
			default:
				return nil, fmt.Errorf("# of a %T", v)
			}
		case strings.Contains(seg, "=") && !strings.HasPrefix(seg, "="):
			all := strings.HasPrefix(seg, "?")
			k, want, _ := strings.Cut(strings.TrimPrefix(seg, "?"), "=")
			arr, ok := v.([]any)
			if !ok {
				return nil, fmt.Errorf("segment %q: not an array", seg)
			}
			var match []any
			for _, el := range arr {
				if m, ok := el.(map[string]any); ok && str(m[k]) == want {
					match = append(match, el)
				}
			}
			if all {
				if match == nil {
					match = []any{}
				}
				v = match
				continue
			}
			if len(match) != 1 {
				return nil, fmt.Errorf("segment %q: %d elements match, want exactly 1", seg, len(match))
			}
			v = match[0]
		default:
			switch x := v.(type) {
			case map[string]any:
				el, ok := x[seg]
				if !ok {
					return missing, nil
				}
				v = el
			case []any:
				i, err := strconv.Atoi(seg)
				if err != nil || i < 0 || i >= len(x) {
					return missing, nil
				}
				v = x[i]
			default:
				return missing, nil
			}
		}
	}
	return v, nil
}

// str prints a value for comparison: strings as they are, everything else as
// compact JSON (numbers keep their literal text).
func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	if v == nil {
		return "null"
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

func checkValue(ts *testscript.TestScript, neg bool, what, path string, v any, want string) {
	if f, ok := strings.CutPrefix(want, "@file:"); ok {
		// The wanted value is the content of a file (one final newline
		// removed): for values with newlines, which script args cannot hold.
		want = strings.TrimSuffix(ts.ReadFile(f), "\n")
	}
	got, err := walk(v, path)
	if err != nil {
		if neg {
			return
		}
		ts.Fatalf("%s %s: %v", what, path, err)
	}
	g := str(got)
	if neg && g == want {
		ts.Fatalf("%s %s = %q, want anything else", what, path, g)
	}
	if !neg && g != want {
		ts.Fatalf("%s %s = %q, want %q", what, path, g, want)
	}
}

// jsonget FILE PATH WANT: the value at PATH (see walk) of the JSON in FILE
// is WANT (strings compared as they are, other values as compact JSON;
// "<missing>" for an absent key; "@file:F" for the content of file F).
func cmdJSONGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonget FILE PATH WANT")
	}
	checkValue(ts, neg, args[0], args[1], loadJSONish(ts, args[0]), args[2])
}

// frontmatter returns the YAML between a first "---" line and the next one.
func frontmatter(src string) (string, error) {
	if !strings.HasPrefix(src, "---\n") {
		return "", errors.New("no frontmatter: the file does not start with a --- line")
	}
	rest := src[4:]
	end := strings.Index(rest, "\n---\n")
	if end < 0 {
		return "", errors.New("frontmatter never closed")
	}
	return rest[:end+1], nil
}

// parseFrontmatter decodes the frontmatter strictly as a YAML mapping and
// converts it to JSON-compatible values.
func parseFrontmatter(src string) (map[string]any, error) {
	fm, err := frontmatter(src)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal([]byte(fm), &m); err != nil {
		return nil, fmt.Errorf("frontmatter is not valid YAML: %v\n%s", err, fm)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	v, err := decodeJSON(b)
	if err != nil {
		return nil, err
	}
	return v.(map[string]any), nil
}

// yamlfront FILE PATH WANT: the frontmatter of a Markdown file parses as YAML
// and has that value ("." and "#" work as in jsonget).
func cmdYAMLFront(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: yamlfront FILE PATH WANT")
	}
	m, err := parseFrontmatter(ts.ReadFile(args[0]))
	if err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	checkValue(ts, neg, args[0]+" frontmatter", args[1], m, args[2])
}

// countlines FILE N: the file has N lines (N "\n"-terminated or final lines).
func cmdCountLines(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: countlines FILE N")
	}
	data := ts.ReadFile(args[0])
	n := strings.Count(data, "\n")
	if data != "" && !strings.HasSuffix(data, "\n") {
		n++
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	if (n == want) == neg {
		ts.Fatalf("%s has %d lines, want %s%d", args[0], n, map[bool]string{true: "not ", false: ""}[neg], want)
	}
}

// ---------------------------------------------------------------- snapshots

type fileState struct {
	Hash  string
	MTime int64
	Ino   uint64
}

// snapshotTree records every regular file below dir (by relative path).
func snapshotTree(dir string) (map[string]fileState, error) {
	out := map[string]fileState{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.Type().IsRegular() || strings.HasSuffix(d.Name(), ".lock.owner") {
			return nil // lock owner files come and go with the locks
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		sum := sha256.Sum256(b)
		st := fileState{Hash: hex.EncodeToString(sum[:]), MTime: fi.ModTime().UnixNano()}
		st.Ino = inodeOf(fi)
		out[filepath.ToSlash(rel)] = st
		return nil
	})
	return out, err
}

// diffTrees returns the relative paths created, removed or touched (bytes,
// mtime or inode) between two snapshots, sorted.
func diffTrees(a, b map[string]fileState) []string {
	var out []string
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			out = append(out, k)
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

var (
	snapMu sync.Mutex
	snaps  = map[*testscript.TestScript]map[string]map[string]fileState{}
)

// snapshot NAME DIR: remember every file below DIR.
func cmdSnapshot(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: snapshot NAME DIR")
	}
	s, err := snapshotTree(ts.MkAbs(args[1]))
	ts.Check(err)
	snapMu.Lock()
	defer snapMu.Unlock()
	if snaps[ts] == nil {
		snaps[ts] = map[string]map[string]fileState{}
		ts.Defer(func() { snapMu.Lock(); delete(snaps, ts); snapMu.Unlock() })
	}
	snaps[ts][args[0]] = s
}

// changed NAME DIR [PATH...]: exactly the listed files (relative to DIR) were
// created, removed, rewritten or touched since snapshot NAME; with no PATH,
// nothing was. A PATH written "?PATH" may or may not have changed (files of
// other subsystems, such as the learning engine's feedback journal).
func cmdChanged(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: changed NAME DIR [PATH...]")
	}
	snapMu.Lock()
	before, ok := snaps[ts][args[0]]
	snapMu.Unlock()
	if !ok {
		ts.Fatalf("no snapshot %s", args[0])
	}
	after, err := snapshotTree(ts.MkAbs(args[1]))
	ts.Check(err)
	var got, want []string
	maybe := map[string]bool{}
	for _, p := range args[2:] {
		if q, ok := strings.CutPrefix(p, "?"); ok {
			maybe[q] = true
		} else {
			want = append(want, p)
		}
	}
	for _, p := range diffTrees(before, after) {
		// The disposable caches (.memory/.cache) are the engine's, rebuilt
		// at will: the engine's own tests hold them to "nothing changed
		// writes nothing".
		if !maybe[p] && !strings.HasPrefix(p, ".memory/.cache/") {
			got = append(got, p)
		}
	}
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		ts.Fatalf("files changed since snapshot %s: %q, want %q", args[0], got, want)
	}
}

// ---------------------------------------------------------------- hashes

// djb2Units is an independent legacy hash: h=5381; h=((h*33) XOR unit) mod
// 2^32 over the UTF-16 code units of the text, lowercase hex.
func djb2Units(s string) string {
	var h uint64 = 5381
	for _, u := range utf16.Encode([]rune(s)) {
		h = ((h * 33) ^ uint64(u)) % (1 << 32)
	}
	return strconv.FormatUint(h, 16)
}

// legacySection returns the text the legacy tool hashed for entry anchor:
// from the "## " of its heading up to, not including, the newline before the
// next "## ADR-"/"## PF-" heading, or to the end of the file with trailing
// whitespace removed. (A plain line scan: the fixtures have no code fences.)
func legacySection(src, anchor string) (string, error) {
	lines := strings.SplitAfter(src, "\n")
	off, start := 0, -1
	for _, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		if start < 0 {
			if t == "## "+anchor || strings.HasPrefix(t, "## "+anchor+":") || strings.HasPrefix(t, "## "+anchor+" ") {
				start = off
			}
		} else if strings.HasPrefix(t, "## ADR-") || strings.HasPrefix(t, "## PF-") {
			return src[start : off-1], nil
		}
		off += len(l)
	}
	if start < 0 {
		return "", fmt.Errorf("no section %s", anchor)
	}
	return strings.TrimRight(src[start:], " \t\r\n"), nil
}

// currentSection is the text learnwatch's sha256 covers: from the heading to
// the next level-1/2 heading, trailing whitespace removed.
func currentSection(src, anchor string) (string, error) {
	lines := strings.SplitAfter(src, "\n")
	off, start := 0, -1
	for _, l := range lines {
		t := strings.TrimRight(l, "\r\n")
		if start < 0 {
			if t == "## "+anchor || strings.HasPrefix(t, "## "+anchor+":") || strings.HasPrefix(t, "## "+anchor+" ") {
				start = off
			}
		} else if strings.HasPrefix(t, "# ") || strings.HasPrefix(t, "## ") {
			return strings.TrimRight(src[start:off], " \t\r\n"), nil
		}
		off += len(l)
	}
	if start < 0 {
		return "", fmt.Errorf("no section %s", anchor)
	}
	return strings.TrimRight(src[start:], " \t\r\n"), nil
}

// djb2 FILE [ANCHOR] VAR: set VAR to the legacy hash of FILE (or of its
// legacy section ANCHOR).
func cmdDJB2(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 || neg {
		ts.Fatalf("usage: djb2 FILE [ANCHOR] VAR")
	}
	text := ts.ReadFile(args[0])
	if len(args) == 3 {
		var err error
		text, err = legacySection(text, args[1])
		ts.Check(err)
	}
	ts.Setenv(args[len(args)-1], djb2Units(text))
}

// sha256 FILE [ANCHOR] VAR: set VAR to "sha256:<hex>" of FILE (or of the
// section ANCHOR as learnwatch hashes it).
func cmdSHA256(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || len(args) > 3 || neg {
		ts.Fatalf("usage: sha256 FILE [ANCHOR] VAR")
	}
	text := ts.ReadFile(args[0])
	if len(args) == 3 {
		var err error
		text, err = currentSection(text, args[1])
		ts.Check(err)
	}
	sum := sha256.Sum256([]byte(text))
	ts.Setenv(args[len(args)-1], "sha256:"+hex.EncodeToString(sum[:]))
}

// envsubst FILE: replace ${VAR} in FILE with the script's environment.
func cmdEnvsubst(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: envsubst FILE")
	}
	p := ts.MkAbs(args[0])
	b, err := os.ReadFile(p)
	ts.Check(err)
	out := os.Expand(string(b), func(k string) string { return ts.Getenv(k) })
	ts.Check(os.WriteFile(p, []byte(out), 0o644))
}

// exitcode N PROG [ARG...]: run PROG (stdin from a preceding stdin command)
// and require exit status N; stdout/stderr are then available as usual.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 2 || neg {
		ts.Fatalf("usage: exitcode N PROG [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee interface{ ExitCode() int }
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}

// checkrepo DIR: the integrity check of checkRepo (no stray locks either).
func cmdCheckRepo(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: checkrepo DIR")
	}
	if probs := checkRepo(ts.MkAbs(args[0]), true); len(probs) > 0 {
		ts.Fatalf("repository %s is inconsistent:\n  %s", args[0], strings.Join(probs, "\n  "))
	}
}

// genentries FILE ADR|PF N [STATUS]: write a hand-made knowledge file with N
// entries numbered 1..N (Status Accepted/Active unless given).
func cmdGenEntries(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 3 || len(args) > 4 || neg {
		ts.Fatalf("usage: genentries FILE ADR|PF N [STATUS]")
	}
	kind := args[1]
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	status := "Accepted"
	title := "# Architectural Decisions"
	if kind == "PF" {
		status, title = "Active", "# Known Pitfalls"
	}
	if len(args) == 4 {
		status = args[3]
	}
	var b strings.Builder
	b.WriteString(title + "\n\nHand-written entries.\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "\n## %s-%03d: Hand-written entry number %d\n\n- **Area**: area %d\n- **Issue**: issue %d\n- **Status**: %s\n", kind, i, i, i, i, status)
	}
	p := ts.MkAbs(args[0])
	ts.Check(os.MkdirAll(filepath.Dir(p), 0o755))
	ts.Check(os.WriteFile(p, []byte(b.String()), 0o644))
}

// backdate PATH SECONDS: set the mtime of PATH SECONDS into the past (to
// stand for a lock left by a process that died that long ago).
func cmdBackdate(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 || neg {
		ts.Fatalf("usage: backdate PATH SECONDS")
	}
	s, err := strconv.Atoi(args[1])
	ts.Check(err)
	t := time.Now().Add(-time.Duration(s) * time.Second)
	ts.Check(os.Chtimes(ts.MkAbs(args[0]), t, t))
}

// mkfifo PATH: a named pipe; opening it for reading would block forever,
// so a command that finishes has not opened it.
func cmdMkfifo(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: mkfifo PATH")
	}
	ts.Check(mkfifo(ts.MkAbs(args[0]), 0o644))
}

// waitfile PATH: waits (at most 30 s) until PATH exists, e.g. the
// ".paused" file a command in the background stopped at a pause failpoint
// creates (failpoint.Pause).
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 || neg {
		ts.Fatalf("usage: waitfile PATH")
	}
	for end := time.Now().Add(30 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil {
			return
		}
	}
	ts.Fatalf("%s did not appear in 30s", args[0])
}

// padfile FILE LINES BYTES: appends LINES lines of "# " and BYTES x's (a
// log made large with lines that are no observation).
func cmdPadFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || neg {
		ts.Fatalf("usage: padfile FILE LINES BYTES")
	}
	lines, err := strconv.Atoi(args[1])
	ts.Check(err)
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_APPEND|os.O_WRONLY, 0)
	ts.Check(err)
	line := "# " + strings.Repeat("x", n) + "\n"
	for range lines {
		_, err = f.WriteString(line)
		ts.Check(err)
	}
	ts.Check(f.Close())
}

// pokebyte FILE OFFSET CHAR: writes CHAR over the byte at OFFSET in place
// (the same file, the same size), as a program rewriting a file in place
// does.
func cmdPokeByte(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 || neg || len(args[2]) != 1 {
		ts.Fatalf("usage: pokebyte FILE OFFSET CHAR")
	}
	off, err := strconv.ParseInt(args[1], 10, 64)
	ts.Check(err)
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY, 0)
	ts.Check(err)
	_, err = f.WriteAt([]byte(args[2]), off)
	ts.Check(err)
	ts.Check(f.Close())
}

// ---------------------------------------------------------------- integrity

// section is one ADR/PF heading found by a plain line scan outside fences.
type section struct {
	ID, Title, Source string
	Text              string
}

// scanSections finds "## ADR-NNN"/"## PF-NNN" headings outside fenced code
// blocks and the Source bullet of each.
func scanSections(src string) []section {
	var out []section
	fence := ""
	var cur *section
	var body strings.Builder
	flush := func() {
		if cur != nil {
			cur.Text = strings.TrimRight(body.String(), " \t\r\n")
			out = append(out, *cur)
			cur = nil
		}
		body.Reset()
	}
	for _, l := range strings.SplitAfter(src, "\n") {
		t := strings.TrimRight(l, "\r\n")
		trim := strings.TrimLeft(t, " ")
		if fence != "" {
			if strings.HasPrefix(trim, fence) {
				fence = ""
			}
			body.WriteString(l)
			continue
		}
		if strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~") {
			fence = trim[:3]
			body.WriteString(l)
			continue
		}
		if strings.HasPrefix(t, "# ") || strings.HasPrefix(t, "## ") {
			flush()
			h := strings.TrimPrefix(t, "## ")
			if strings.HasPrefix(t, "## ") && (strings.HasPrefix(h, "ADR-") || strings.HasPrefix(h, "PF-")) {
				id, title, _ := strings.Cut(h, ":")
				cur = &section{ID: strings.TrimSpace(id), Title: strings.TrimSpace(title)}
			}
		}
		if cur != nil {
			if v, ok := strings.CutPrefix(t, "- **Source**: self-learning:"); ok {
				cur.Source = strings.TrimSpace(v)
			}
		}
		body.WriteString(l)
	}
	flush()
	return out
}

// checkRepo verifies the invariants every learnwatch run must leave behind:
// the log parses (no corrupt line, every id once), the manifest and usage
// files parse, every manifest entry points at an existing file/anchor inside
// the root for an observation of the log, every created observation is
// registered under its artifact_path, every registered anchor has a usage
// entry, no ADR/PF id or Source marker appears twice, every rendered command/skill has YAML frontmatter, and (with
// noLocks) no lock directory is left behind. Temp files of an atomic write
// killed before its rename are tolerated (DESIGN: at most a stray temp file).
func checkRepo(root string, noLocks bool) []string {
	var probs []string
	bad := func(f string, a ...any) { probs = append(probs, fmt.Sprintf(f, a...)) }
	mem := filepath.Join(root, ".memory")

	type obs struct {
		ID, Type, Status, ArtifactPath string
		Observations                   int
	}
	byID := map[string]obs{}
	if data, err := os.ReadFile(filepath.Join(mem, "learning-log.jsonl")); err == nil {
		for i, line := range strings.Split(string(data), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var o struct {
				ID           string `json:"id"`
				Type         string `json:"type"`
				Status       string `json:"status"`
				ArtifactPath string `json:"artifact_path"`
				Observations int    `json:"observations"`
			}
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				bad("log line %d does not parse: %v", i+1, err)
				continue
			}
			if _, dup := byID[o.ID]; dup {
				bad("observation %s appears twice in the log", o.ID)
			}
			byID[o.ID] = obs{o.ID, o.Type, o.Status, o.ArtifactPath, o.Observations}
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			bad("log does not end with a newline")
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		bad("read log: %v", err)
	}

	knowledge := map[string][]section{}
	for _, rel := range []string{".memory/knowledge/decisions.md", ".memory/knowledge/pitfalls.md"} {
		data, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			continue
		}
		secs := scanSections(string(data))
		knowledge[rel] = secs
		ids, sources := map[string]bool{}, map[string]bool{}
		for _, s := range secs {
			if ids[s.ID] {
				bad("%s: %s appears twice", rel, s.ID)
			}
			ids[s.ID] = true
			if s.Source != "" {
				if sources[s.Source] {
					bad("%s: two entries carry Source self-learning:%s", rel, s.Source)
				}
				sources[s.Source] = true
			}
		}
	}

	type entry struct {
		ObservationID string `json:"observationId"`
		Type          string `json:"type"`
		Path          string `json:"path"`
		ContentHash   string `json:"contentHash"`
		AnchorID      string `json:"anchorId"`
		Deleted       *struct {
			Status     string  `json:"status"`
			Confidence float64 `json:"confidence"`
		} `json:"deleted"`
	}
	registered := map[string]entry{}
	if data, err := os.ReadFile(filepath.Join(mem, ".learning-manifest.json")); err == nil {
		var m struct {
			SchemaVersion int     `json:"schemaVersion"`
			Entries       []entry `json:"entries"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			bad("manifest does not parse: %v", err)
		}
		anchors := map[string]bool{}
		for _, e := range m.Entries {
			if _, dup := registered[e.ObservationID]; dup {
				bad("manifest: %s registered twice", e.ObservationID)
			}
			registered[e.ObservationID] = e
			o, ok := byID[e.ObservationID]
			if !ok {
				bad("manifest: entry for %s, which is not in the log", e.ObservationID)
			} else if e.Deleted != nil {
				// A penalised artifact: kept to undo the penalty if it
				// comes back; the observation is deprecated.
				if o.Status != "deprecated" {
					bad("manifest: deleted entry for %s, whose status is %s", e.ObservationID, o.Status)
				}
				continue
			} else if o.Status != "created" {
				bad("manifest: entry for %s, whose status is %s", e.ObservationID, o.Status)
			}
			if filepath.IsAbs(e.Path) || strings.Contains(e.Path, "..") || strings.Contains(e.Path, `\`) {
				bad("manifest: %s has a path learnwatch should not write: %q", e.ObservationID, e.Path)
				continue
			}
			if !strings.HasPrefix(e.ContentHash, "sha256:") {
				bad("manifest: %s content hash %q is not sha256", e.ObservationID, e.ContentHash)
			}
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e.Path)))
			if err != nil {
				bad("manifest: %s: %v", e.ObservationID, err)
				continue
			}
			if e.AnchorID == "" {
				if sum := sha256.Sum256(b); e.ContentHash != "sha256:"+hex.EncodeToString(sum[:]) {
					bad("manifest: %s: content hash does not match %s", e.ObservationID, e.Path)
				}
				continue
			}
			key := e.Path + "#" + e.AnchorID
			if anchors[key] {
				bad("manifest: anchor %s registered twice", key)
			}
			anchors[key] = true
			n := 0
			for _, s := range knowledge[e.Path] {
				if s.ID == e.AnchorID {
					n++
					if sum := sha256.Sum256([]byte(s.Text)); e.ContentHash != "sha256:"+hex.EncodeToString(sum[:]) {
						bad("manifest: %s: content hash does not match section %s", e.ObservationID, key)
					}
				}
			}
			if n != 1 {
				bad("manifest: %s: anchor %s found %d times", e.ObservationID, key, n)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		bad("read manifest: %v", err)
	}

	for id, o := range byID {
		if o.Status != "created" {
			continue
		}
		e, ok := registered[id]
		if !ok {
			bad("observation %s is created (%s) but not in the manifest", id, o.ArtifactPath)
			continue
		}
		want := e.Path
		if e.AnchorID != "" {
			want += "#" + e.AnchorID
		}
		if o.ArtifactPath != want {
			bad("observation %s: artifact_path %q, manifest says %q", id, o.ArtifactPath, want)
		}
	}
	for rel, secs := range knowledge {
		for _, s := range secs {
			if s.Source == "" {
				continue
			}
			if o, ok := byID[s.Source]; ok && o.Status == "created" {
				if e := registered[s.Source]; e.Path != rel || e.AnchorID != s.ID {
					bad("%s#%s carries Source %s but the manifest registers %s#%s", rel, s.ID, s.Source, e.Path, e.AnchorID)
				}
			}
		}
	}

	var usage struct {
		Version int                        `json:"version"`
		Entries map[string]json.RawMessage `json:"entries"`
	}
	if data, err := os.ReadFile(filepath.Join(mem, ".knowledge-usage.json")); err == nil {
		if err := json.Unmarshal(data, &usage); err != nil {
			bad("usage file does not parse: %v", err)
		}
	}
	for id, e := range registered {
		if _, ok := usage.Entries[e.AnchorID]; e.AnchorID != "" && !ok {
			bad("usage file has no entry for %s (registered for %s)", e.AnchorID, id)
		}
	}

	for _, dir := range []string{filepath.Join(root, ".claude", "commands", "self-learning"), filepath.Join(root, ".claude", "skills")} {
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") || strings.Contains(d.Name(), ".tmp-") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				bad("%s: %v", p, err)
				return nil
			}
			if m, err := parseFrontmatter(string(b)); err != nil {
				bad("%s: %v", p, err)
			} else if _, ok := m["description"]; !ok {
				bad("%s: frontmatter has no description", p)
			}
			return nil
		})
	}
	if noLocks {
		for _, l := range []string{".learning.lock", ".knowledge.lock"} {
			if _, err := os.Stat(filepath.Join(mem, l)); err == nil {
				bad("lock directory %s left behind", l)
			}
		}
	}
	sort.Strings(probs)
	return probs
}
