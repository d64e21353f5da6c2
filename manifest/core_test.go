package manifest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// refDJB2 is an independent djb2 over UTF-16 code units (64-bit arithmetic
// reduced mod 2^32), to check DJB2 against.
func refDJB2(s string) string {
	var h uint64 = 5381
	for _, u := range utf16.Encode([]rune(s)) {
		h = (h*33 ^ uint64(u)) % (1 << 32)
	}
	return strconv.FormatUint(h, 16)
}

// djb2Over hashes with another unit sequence (to show a regression to
// bytes or code points would be caught).
func djb2Over(units []uint32) string {
	h := uint32(5381)
	for _, u := range units {
		h = h*33 ^ u
	}
	return strconv.FormatUint(uint64(h), 16)
}

func TestDJB2(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", "1505"},   // 5381
		{"a", "2b5c4"}, // 5381*33 ^ 97
		{"é", refDJB2("é")},
		{"😀", refDJB2("😀")},
		{"Café ☕ for everyone 😀\nNaïve façade, 😀😀.\n", refDJB2("Café ☕ for everyone 😀\nNaïve façade, 😀😀.\n")},
		{strings.Repeat("long text overflowing 32 bits many times ", 50), refDJB2(strings.Repeat("long text overflowing 32 bits many times ", 50))},
	} {
		if got := DJB2([]byte(tc.in)); got != tc.want {
			t.Errorf("DJB2(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	// The astral character is two UTF-16 units: hashing UTF-8 bytes or code
	// points gives something else, so the tests above pin the unit choice.
	s := "x😀é"
	var bytesU, runesU []uint32
	for _, b := range []byte(s) {
		bytesU = append(bytesU, uint32(b))
	}
	for _, r := range s {
		runesU = append(runesU, uint32(r))
	}
	if d := DJB2([]byte(s)); d == djb2Over(bytesU) || d == djb2Over(runesU) {
		t.Errorf("DJB2(%q) = %s equals a byte- or rune-wise djb2", s, d)
	}
	if got := DJB2([]byte("A")); got != strings.ToLower(got) {
		t.Errorf("DJB2 must print lowercase hex, got %s", got)
	}
}

func TestHashAndUnchanged(t *testing.T) {
	if got := Hash([]byte("abc")); got != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("Hash(abc) = %s", got)
	}
	cur, legacy := []byte("current text"), []byte("legacy text")
	for _, tc := range []struct {
		stored string
		want   bool
	}{
		{Hash(cur), true},
		{Hash(legacy), false},
		{refDJB2("legacy text"), true},
		{strings.ToUpper(refDJB2("legacy text")), true}, // hex case does not matter
		{refDJB2("current text"), false},                // legacy hashes cover the legacy bytes
		{"", false},
	} {
		if got := Unchanged(tc.stored, cur, legacy); got != tc.want {
			t.Errorf("Unchanged(%q) = %v, want %v", tc.stored, got, tc.want)
		}
	}
}

// Line ends are not content: CRLF content is unchanged against the hash of
// its LF form (git's checkout under core.autocrlf), never the other way
// round, and a lone CR or any other difference is still a change.
func TestUnchangedAcrossLineEnds(t *testing.T) {
	lf := "# Lint\n\nRun the linter.\n"
	for _, tc := range []struct {
		stored, content string
		want            bool
	}{
		{Hash([]byte(lf)), "# Lint\r\n\r\nRun the linter.\r\n", true},
		{Hash([]byte(lf)), "# Lint\r\n\nRun the linter.\r\n", true}, // mixed
		{refDJB2(lf), "# Lint\r\n\r\nRun the linter.\r\n", true},
		{Hash([]byte(lf)), "# Lint\r\n\r\nRun the linter twice.\r\n", false},
		{Hash([]byte(lf)), "# Lint\r\rRun the linter.\r", false}, // lone CRs are content
		{Hash([]byte(lf)), "# Lint\n\nRun the linter.\r\n\r\n", false},
		{Hash([]byte("# Lint\r\n")), "# Lint\n", false}, // LF is not CRLF's
		{refDJB2("# Lint\r\n"), "# Lint\n", false},
	} {
		b := []byte(tc.content)
		if got := Unchanged(tc.stored, b, b); got != tc.want {
			t.Errorf("Unchanged(%q, %q) = %v, want %v", tc.stored, tc.content, got, tc.want)
		}
	}
	if b := []byte("no crlf\r here\n"); &LF(b)[0] != &b[0] {
		t.Error("LF copied content without a CRLF")
	}
}

func TestResolve(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "repo")
	for _, d := range []string{"repo/.memory/knowledge", "repo/inside", "outside"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "out")))
	must(os.Symlink("inside", filepath.Join(root, "in")))
	must(os.Symlink(filepath.Join(base, "outside", "nothing"), filepath.Join(root, "dangling")))
	must(os.WriteFile(filepath.Join(base, "outside", "f.md"), []byte("x"), 0o644))
	must(os.Symlink(filepath.Join(base, "outside", "f.md"), filepath.Join(root, "inside", "file-out.md")))
	// The root reached through a symlink (like /tmp → /private/tmp).
	alias := filepath.Join(base, "alias")
	must(os.Symlink(root, alias))

	for _, tc := range []struct {
		root, p string
		rel     string // "" = refused
	}{
		{root, ".memory/learning-log.jsonl", ".memory/learning-log.jsonl"},
		{root, ".claude/commands/self-learning/new.md", ".claude/commands/self-learning/new.md"}, // need not exist
		{root, filepath.Join(root, ".memory", "knowledge", "decisions.md"), ".memory/knowledge/decisions.md"},
		{root, "inside/../.memory/x", ".memory/x"},
		{root, "in/a.md", "in/a.md"},
		{alias, filepath.Join(root, "inside", "a.md"), "inside/a.md"},
		{root, filepath.Join(alias, "inside", "a.md"), "inside/a.md"},
		{root, "../outside/f.md", ""},
		{root, "inside/../../outside/f.md", ""},
		{root, "/etc/passwd", ""},
		{root, filepath.Join(base, "outside", "f.md"), ""},
		{root, filepath.Join(root, "..", "outside", "f.md"), ""},
		{root, "out/f.md", ""},
		{root, "out", ""},
		{root, "dangling", ""},
		{root, "inside/file-out.md", ""},
		{root, "", ""},
		{root, ".", ""},
		{root, "a\x00b", ""},
	} {
		_, rel, err := Resolve(tc.root, tc.p)
		if tc.rel == "" {
			if err == nil || !IsRefused(err) {
				t.Errorf("Resolve(%q) = %q, %v; want refused", tc.p, rel, err)
			}
			continue
		}
		if err != nil || rel != tc.rel {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.p, rel, err, tc.rel)
		}
	}
	// A relative root: the components are checked below it all the same.
	t.Chdir(root)
	r := NewResolver(".")
	for p, want := range map[string]string{"in/a.md": "in/a.md", "inside/x/y.md": "inside/x/y.md", "out/f.md": "", "inside/file-out.md": "", "dangling": ""} {
		_, rel, err := r.Resolve(p)
		if want == "" && (err == nil || !IsRefused(err)) || want != "" && (err != nil || rel != want) {
			t.Errorf("relative root: Resolve(%q) = %q, %v; want %q", p, rel, err, want)
		}
	}
}

// logSeeds are real-looking learning logs, byte-exact round trip material.
var logSeeds = []string{
	"",
	"\n",
	`{"id":"obs_a","type":"decision","pattern":"Use SQLite","confidence":0.50,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"","quality_ok":false}` + "\n",
	`{"id":"obs_b","type":"workflow","pattern":"Lint","confidence":0.95,"observations":3,"first_seen":"2026-01-01T00:00:00.000Z","last_seen":"2026-01-04T00:00:00.000Z","status":"created","evidence":["a","b"],"details":"x","quality_ok":true,"artifact_path":".claude/commands/self-learning/lint.md","x_tool":{"n":[1,2.50]}}`,
	"{\"id\":\"obs_c\",\"type\":\"pitfall\",\"pattern\":\"CRLF\",\"evidence\":null}\r\n{\"id\":\"obs_d\",\"type\":\"decision\",\"pattern\":\"d\"}\r\n",
	"{\"id\":\"obs_e\", \"type\" : \"decision\" ,\"pattern\":\"spaces\"}\n\n   \n{\"id\":\"obs_broken\",\"type\":\n not json\n{\"observations\":\"many\"}\n",
	"{\"x_first\":1,\"id\":\"obs_f\",\"type\":\"decision\",\"pattern\":\"p\",\"x_last\":\"\\u00e9<>&\"}\n[1,2,3]\nnull\n{\"id\":\"bad_id\",\"type\":\"decision\",\"pattern\":\"p\"}\n",
	"\xef\xbb\xbf{\"id\":\"obs_bom\",\"type\":\"decision\",\"pattern\":\"p\"}\n{\"id\":\"obs_g\",\"type\":\"lesson\",\"pattern\":\"p\"}",
}

func TestParseLogRoundTrip(t *testing.T) {
	for i, in := range logSeeds {
		l := ParseLog([]byte(in))
		if l.Changed() {
			t.Errorf("seed %d: an unmodified log counts as changed", i)
		}
		out, err := l.Bytes()
		if err != nil {
			t.Fatalf("seed %d: %v", i, err)
		}
		if !bytes.Equal(out, []byte(in)) {
			t.Errorf("seed %d: Bytes() of an unmodified log differs:\n in: %q\nout: %q", i, in, out)
		}
	}
}

func TestParseLogCounts(t *testing.T) {
	l := ParseLog([]byte(logSeeds[5]))
	if got := l.Corrupt(); got != 3 {
		t.Errorf("Corrupt() = %d, want 3 (cut-off object, not json, wrong field type)", got)
	}
	if got := len(l.Observations()); got != 1 {
		t.Errorf("%d valid observations, want 1", got)
	}
	l = ParseLog([]byte(logSeeds[6]))
	if got, inv := l.Corrupt(), l.InvalidCount(); got != 2 || inv != 1 {
		t.Errorf("Corrupt() = %d, InvalidCount() = %d; want 2 (array, null) and 1 (bad id)", got, inv)
	}
}

// A changed observation is re-encoded with its unknown fields, in its key
// order; every other line stays byte for byte, corrupt ones in place.
func TestLogRewrite(t *testing.T) {
	in := "{\"x_first\":true,\"id\":\"obs_a\",\"type\":\"decision\",\"pattern\":\"p\",\"confidence\":0.50,\"observations\":1,\"status\":\"observing\",\"evidence\":[],\"x_nested\":{\"k\":[1,2.50]},\"quality_ok\":false}\n" +
		"{\"id\":\"obs_cut\",\"type\":\n" +
		"{\"id\":\"obs_b\",\"type\":\"workflow\",\"pattern\":\"q\",\"confidence\":0.50}"
	l := ParseLog([]byte(in))
	o := l.Find("obs_a")
	o.Status = Ready
	o.Observations = 2
	l.Append(&Observation{ID: "obs_new", Type: Decision, Pattern: "n", Evidence: []string{}})
	out, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(out), "\n")
	if len(lines) != 5 || lines[4] != "" {
		t.Fatalf("rewritten log has lines %q", lines)
	}
	if lines[1] != "{\"id\":\"obs_cut\",\"type\":" || lines[2] != "{\"id\":\"obs_b\",\"type\":\"workflow\",\"pattern\":\"q\",\"confidence\":0.50}" {
		t.Errorf("untouched lines changed: %q", lines[1:3])
	}
	if !strings.HasPrefix(lines[0], `{"x_first":true,"id":"obs_a",`) {
		t.Errorf("key order lost: %s", lines[0])
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(lines[0]), &m); err != nil {
		t.Fatal(err)
	}
	if string(m["x_nested"]) != `{"k":[1,2.50]}` || string(m["status"]) != `"ready"` || string(m["observations"]) != "2" {
		t.Errorf("rewritten line: %s", lines[0])
	}
	if !strings.Contains(lines[3], `"id":"obs_new"`) {
		t.Errorf("appended line: %s", lines[3])
	}
	// After WriteLog the log is unchanged again and re-reads identically.
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	if err := WriteLog(path, l); err != nil {
		t.Fatal(err)
	}
	if l.Changed() {
		t.Error("log counts as changed right after WriteLog")
	}
	back, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := back.Bytes(); !bytes.Equal(b, out) || back.Changed() {
		t.Errorf("re-read log differs or counts as changed")
	}
}

func TestReadLogMissing(t *testing.T) {
	l, err := ReadLog(filepath.Join(t.TempDir(), "none.jsonl"))
	if err != nil || l.Exists || len(l.Lines) != 0 {
		t.Fatalf("ReadLog(missing) = %+v, %v", l, err)
	}
}

func TestManifestUnknownFieldsAndCorrupt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, ".learning-manifest.json")
	m, exists, err := ReadManifest(path)
	if err != nil || exists || m.SchemaVersion != 1 {
		t.Fatalf("missing manifest: %+v %v %v", m, exists, err)
	}
	in := `{"schemaVersion":1,"x_top":{"a":1},"entries":[{"observationId":"obs_a","type":"workflow","path":"/abs/legacy.md","contentHash":"1a2b","renderedAt":"2025-01-01T00:00:00.000Z","x_entry":[1,"two"]}]}`
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	m, exists, err = ReadManifest(path)
	if err != nil || !exists || len(m.Entries) != 1 || m.Entries[0].Path != "/abs/legacy.md" || m.Entries[0].ContentHash != "1a2b" {
		t.Fatalf("ReadManifest: %+v %v %v", m, exists, err)
	}
	m.Entries = append(m.Entries, Entry{ObservationID: "obs_b", Type: Decision, Path: "x.md", AnchorID: "ADR-001", ContentHash: "sha256:00"})
	if err := WriteManifest(path, m); err != nil {
		t.Fatal(err)
	}
	var back struct {
		XTop    json.RawMessage              `json:"x_top"`
		Entries []map[string]json.RawMessage `json:"entries"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if compact(back.XTop) != `{"a":1}` || compact(back.Entries[0]["x_entry"]) != `[1,"two"]` {
		t.Errorf("unknown fields lost:\n%s", b)
	}
	if _, ok := back.Entries[0]["anchorId"]; ok {
		t.Errorf("empty anchorId written for a file entry:\n%s", b)
	}
	for _, bad := range []string{"{not json", "[]", `{"entries":"x"}`, ""} {
		if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		m, exists, err := ReadManifest(path)
		if !errors.Is(err, ErrCorruptManifest) || !exists || m == nil || len(m.Entries) != 0 {
			t.Errorf("ReadManifest(%q) = %+v, %v, %v; want an empty manifest and ErrCorruptManifest", bad, m, exists, err)
		}
	}
}

func compact(b []byte) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

func TestUsage(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".knowledge-usage.json")
	if err := os.WriteFile(path, []byte(`{"version":1,"x_gen":"devflow","entries":{"ADR-001":{"cites":3,"last_cited":"2025-01-01T00:00:00Z","created":"2024-12-01T00:00:00Z","x_e":true}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := ReadUsage(path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	if u.Register("ADR-001", now) {
		t.Error("Register replaced an existing entry")
	}
	if !u.Register("PF-002", now) {
		t.Error("Register did not add PF-002")
	}
	if err := WriteUsage(path, u); err != nil {
		t.Fatal(err)
	}
	var back struct {
		Version int                                   `json:"version"`
		XGen    string                                `json:"x_gen"`
		Entries map[string]map[string]json.RawMessage `json:"entries"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	pf := back.Entries["PF-002"]
	if back.Version != 1 || back.XGen != "devflow" || string(back.Entries["ADR-001"]["cites"]) != "3" || string(back.Entries["ADR-001"]["x_e"]) != "true" ||
		string(pf["cites"]) != "0" || string(pf["last_cited"]) != "null" || string(pf["created"]) != `"2026-01-05T00:00:00Z"` {
		t.Errorf("usage file after Register:\n%s", b)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "f.json")
	for _, content := range []string{"one", "two, longer", ""} {
		if err := WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(path); string(b) != content {
			t.Errorf("content %q, want %q", b, content)
		}
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("directory holds %d files, want only f.json (no temp files left)", len(ents))
	}
}

func TestLockStaleTakeoverAndTimeout(t *testing.T) {
	dir := t.TempDir()
	lockPath := filepath.Join(dir, LearningLock)
	if err := os.Mkdir(lockPath, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fresh lock held by someone else: time out.
	start := time.Now()
	_, err := AcquireLock(context.Background(), lockPath, 150*time.Millisecond)
	if !errors.Is(err, ErrLockTimeout) {
		t.Fatalf("AcquireLock on a fresh foreign lock: %v, want ErrLockTimeout", err)
	}
	if d := time.Since(start); d < 150*time.Millisecond || d > 5*time.Second {
		t.Errorf("timed out after %v", d)
	}
	// Older than 60 s: taken over.
	old := time.Now().Add(-2 * time.Minute)
	if err := os.Chtimes(lockPath, old, old); err != nil {
		t.Fatal(err)
	}
	l, err := AcquireLock(context.Background(), lockPath, time.Second)
	if err != nil {
		t.Fatalf("AcquireLock on a stale lock: %v", err)
	}
	if fi, err := os.Stat(lockPath); err != nil || time.Since(fi.ModTime()) > time.Minute {
		t.Errorf("lock not re-created fresh: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(lockPath); !os.IsNotExist(err) {
		t.Errorf("lock directory left after Release: %v", err)
	}
	if m, _ := filepath.Glob(lockPath + ".stale-*"); len(m) > 0 {
		t.Errorf("stale lock moved aside but not removed: %v", m)
	}
	// A foreign holder that releases within the timeout: we get it.
	if err := os.Mkdir(lockPath, 0o755); err != nil {
		t.Fatal(err)
	}
	go func() { time.Sleep(200 * time.Millisecond); os.Remove(lockPath) }()
	l, err = AcquireLock(context.Background(), lockPath, 5*time.Second)
	if err != nil {
		t.Fatalf("AcquireLock while a foreign holder releases: %v", err)
	}
	l.Release()
}

// Goroutines doing read-modify-write of the log under the learning lock (the
// way observe does) while another "tool" holds the mkdir lock for a while:
// no update is lost. Run with -race.
func TestLockedReadModifyWrite(t *testing.T) {
	dir := t.TempDir()
	p := PathsFor(dir)
	const workers, rounds = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds+1)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for r := 0; r < rounds; r++ {
				err := func() error {
					l, err := AcquireLock(context.Background(), p.LearningLock, 10*time.Second)
					if err != nil {
						return err
					}
					defer l.Release()
					log, err := ReadLog(p.Log)
					if err != nil {
						return err
					}
					id := fmt.Sprintf("obs_w%d", w)
					if o := log.Find(id); o != nil {
						o.Observations++
					} else {
						log.Append(&Observation{ID: id, Type: Decision, Pattern: id, Observations: 1, Evidence: []string{}})
					}
					return WriteLog(p.Log, log)
				}()
				if err != nil {
					errs <- err
				}
			}
		}(w)
	}
	wg.Add(1)
	go func() { // the other tool
		defer wg.Done()
		time.Sleep(20 * time.Millisecond)
		for os.Mkdir(p.LearningLock, 0o755) != nil {
			time.Sleep(time.Millisecond)
		}
		f, err := os.OpenFile(p.Log, os.O_APPEND|os.O_WRONLY|os.O_CREATE, 0o644)
		if err == nil {
			_, err = f.WriteString(`{"id":"obs_foreign","type":"decision","pattern":"f","observations":1}` + "\n")
			f.Close()
		}
		if err != nil {
			errs <- err
		}
		time.Sleep(300 * time.Millisecond)
		os.Remove(p.LearningLock)
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	log, err := ReadLog(p.Log)
	if err != nil {
		t.Fatal(err)
	}
	if len(log.Observations()) != workers+1 || log.Find("obs_foreign") == nil {
		t.Fatalf("log has %d observations, want %d with obs_foreign", len(log.Observations()), workers+1)
	}
	for w := 0; w < workers; w++ {
		if o := log.Find(fmt.Sprintf("obs_w%d", w)); o == nil || o.Observations != rounds {
			t.Errorf("obs_w%d: %+v, want %d observations", w, o, rounds)
		}
	}
	if _, err := os.Stat(p.LearningLock); !os.IsNotExist(err) {
		t.Errorf("lock directory left behind")
	}
}

// FuzzParseLog: ParseLog never panics, and the bytes of an unmodified log
// are the input, byte for byte, whatever the input.
func FuzzParseLog(f *testing.F) {
	for _, s := range logSeeds {
		f.Add([]byte(s))
	}
	f.Add([]byte("{\"id\":\"obs_a\",\"id\":\"obs_b\",\"type\":\"decision\",\"pattern\":\"dup keys\"}\n"))
	f.Add([]byte("{\"id\":\"obs_a\",\"ID\":\"obs_b\",\"Type\":\"decision\",\"pattern\":\"case\"}\n"))
	f.Add([]byte("{\"id\":\"obs_a\",\"type\":\"decision\",\"pattern\":\"\xff\xfe bad utf8\"}\n"))
	f.Add([]byte("{\"id\":\"obs_n\",\"type\":\"decision\",\"pattern\":\"n\",\"confidence\":1e400}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := append([]byte(nil), data...)
		l := ParseLog(data)
		if !bytes.Equal(data, in) {
			t.Fatal("ParseLog modified its input")
		}
		out, err := l.Bytes()
		if err != nil {
			t.Fatalf("Bytes: %v", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("unmodified log does not round-trip:\n in: %q\nout: %q", in, out)
		}
		if l.Changed() {
			t.Fatal("unmodified log counts as changed")
		}
		n := 0
		for _, ln := range l.Lines {
			if ln.Err() != nil && ln.Observation() != nil {
				t.Fatal("a line is both corrupt and parsed")
			}
			if ln.Observation() != nil {
				n++
			}
		}
		// A rewrite of every parsed observation still parses to the same
		// number of observations, with corrupt lines kept.
		for _, o := range l.Observations() {
			o.Observations++
		}
		out, err = l.Bytes()
		if err != nil {
			t.Fatalf("Bytes after a change: %v", err)
		}
		back := ParseLog(out)
		if back.Corrupt() != l.Corrupt() {
			t.Fatalf("corrupt lines %d → %d after a rewrite:\n%q", l.Corrupt(), back.Corrupt(), out)
		}
		if len(back.Observations()) != len(l.Observations()) {
			t.Fatalf("valid observations %d → %d after a rewrite:\n%q", len(l.Observations()), len(back.Observations()), out)
		}
		_ = n
	})
}

// A staged file is invisible until Commit: the path keeps its content
// while staged and after Abort (with no temp file left); several files
// staged at once are committed in the caller's order.
func TestStageCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	for _, p := range []string{a, b} {
		if err := WriteFile(p, []byte("old"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sa, err := StageFile(a, []byte("new a"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := StageFile(b, []byte("new b"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{a, b} {
		if got, _ := os.ReadFile(p); string(got) != "old" {
			t.Fatalf("%s while staged: %q", p, got)
		}
	}
	if err := sa.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(a); string(got) != "new a" {
		t.Fatalf("a after Commit: %q", got)
	}
	sb.Abort()
	if got, _ := os.ReadFile(b); string(got) != "old" {
		t.Fatalf("b after Abort: %q", got)
	}
	sa.Release() // the a.json it replaced
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("directory holds %d files, want a.json and b.json only", len(ents))
	}
	var none *Staged
	none.Abort() // nothing staged: nothing to do
}

// A staged log leaves the file and the Log as they were until Commit, and
// Abort drops it: the Log still has its change to write. Committed, the
// file holds what WriteLog writes, and the one it replaced is kept until
// Release.
func TestStageLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	data := benchLog(50)
	if err := WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Find("obs_g3").Pattern = "staged"
	want, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	s, err := StageLog(path, l, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) {
		t.Fatal("the log changed while staged")
	}
	s.Abort()
	if got, _ := os.ReadFile(path); !bytes.Equal(got, data) || !l.Changed() {
		t.Fatalf("after Abort: file changed %v, Log changed %v", !bytes.Equal(got, data), l.Changed())
	}
	if s, err = StageLog(path, l, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, want) || l.Changed() {
		t.Fatalf("after Commit: bytes equal %v, Log changed %v", bytes.Equal(got, want), l.Changed())
	}
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 2 {
		t.Fatalf("directory holds %d files, want the log and the one it replaced", len(ents))
	}
	s.Release()
	if ents, _ := os.ReadDir(filepath.Dir(path)); len(ents) != 1 {
		t.Fatalf("directory holds %d files after Release, want the log only", len(ents))
	}
}

// A staged file's commit keeps the file it replaced under a temporary
// name until Release (nothing when there was none); WriteFile keeps none.
func TestCommitKeepsReplacedUntilRelease(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.json")
	temps := func() []string {
		m, _ := filepath.Glob(filepath.Join(dir, ".*"+TempInfix+"*"))
		return m
	}
	s, err := StageFile(path, []byte("first"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := temps(); len(got) != 0 || s.replaced != "" {
		t.Fatalf("a first write kept %v", got)
	}
	s, err = StageFile(path, []byte("second"), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	kept := temps()
	if len(kept) != 1 {
		t.Fatalf("kept %v, want the replaced file", kept)
	}
	if b, _ := os.ReadFile(kept[0]); string(b) != "first" {
		t.Fatalf("the kept file holds %q", b)
	}
	if b, _ := os.ReadFile(path); string(b) != "second" {
		t.Fatalf("the file holds %q", b)
	}
	s.Release()
	s.Release()
	if got := temps(); len(got) != 0 {
		t.Fatalf("left after Release: %v", got)
	}
	if err := WriteFile(path, []byte("third"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := temps(); len(got) != 0 {
		t.Fatalf("WriteFile kept %v", got)
	}
	// One a crash leaves behind is a stray temporary file.
	if s, err = StageFile(path, []byte("fourth"), 0o644); err != nil || s.Commit() != nil {
		t.Fatal(err)
	}
	if len(temps()) != 1 {
		t.Fatal("the replaced file is not kept")
	}
	RemoveStaleTemps(dir, 0)
	if got := temps(); len(got) != 0 {
		t.Fatalf("RemoveStaleTemps left %v", got)
	}
}
