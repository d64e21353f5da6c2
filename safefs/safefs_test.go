package safefs

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

const secret = "SECRET-MARKER-do-not-copy"

// plant builds root/.memory with one planted name and an outside file
// holding the secret. kind is what the name is: "file", "symlink",
// "dangling", "devzero", "fifo" or "dir".
func plant(t *testing.T, kind string) (mem, name, outside string) {
	t.Helper()
	base := t.TempDir()
	mem = filepath.Join(base, "repo", MemoryDirName)
	if err := os.MkdirAll(mem, 0o755); err != nil {
		t.Fatal(err)
	}
	outside = filepath.Join(base, "outside.txt")
	if err := os.WriteFile(outside, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	name = filepath.Join(mem, "feedback.jsonl")
	var err error
	switch kind {
	case "file":
		err = os.WriteFile(name, []byte("{}\n"), 0o644)
	case "symlink":
		err = os.Symlink(outside, name)
	case "dangling":
		err = os.Symlink(filepath.Join(base, "nothing-here"), name)
	case "devzero":
		err = os.Symlink("/dev/zero", name)
	case "fifo":
		err = mkfifo(name, 0o644)
	case "dir":
		err = os.Mkdir(name, 0o755)
	}
	if err != nil {
		t.Skipf("cannot plant a %s here: %v", kind, err)
	}
	return mem, name, outside
}

// Every operation refuses every planted kind quickly, and the outside file
// keeps its bytes; a regular file is accepted.
func TestRefusesPlantedNames(t *testing.T) {
	ops := map[string]func(path string) error{
		"ReadFile": func(p string) error { _, err := ReadFile(p, MaxConfig); return err },
		"Open": func(p string) error {
			f, err := Open(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"OpenAppend": func(p string) error {
			f, err := OpenAppend(p)
			if err == nil {
				_, err = f.Write([]byte("appended\n"))
				f.Close()
			}
			return err
		},
		"OpenLockFile": func(p string) error {
			f, err := OpenLockFile(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"OpenOwned": func(p string) error {
			f, err := OpenOwned(p)
			if err == nil {
				f.Close()
			}
			return err
		},
		"Remove":       Remove,
		"CheckRegular": CheckRegular,
	}
	for _, kind := range []string{"file", "symlink", "dangling", "devzero", "fifo", "dir"} {
		for opName, op := range ops {
			t.Run(kind+"/"+opName, func(t *testing.T) {
				_, name, outside := plant(t, kind)
				done := make(chan error, 1)
				go func() { done <- op(name) }()
				var err error
				select {
				case err = <-done:
				case <-time.After(5 * time.Second):
					t.Fatalf("%s on a %s did not return", opName, kind)
				}
				if kind == "file" {
					if err != nil {
						t.Fatalf("%s on a regular file: %v", opName, err)
					}
				} else if !IsRefused(err) {
					t.Fatalf("%s on a %s: got %v, want a refusal", opName, kind, err)
				}
				if kind != "file" && err != nil && !bytes.Contains([]byte(err.Error()), []byte(name)) {
					t.Errorf("the refusal does not name the path: %v", err)
				}
				if b, _ := os.ReadFile(outside); string(b) != secret {
					t.Errorf("the outside file changed: %q", b)
				}
				if _, err := os.Lstat(filepath.Join(filepath.Dir(outside), "nothing-here")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("a dangling link's target was created")
				}
			})
		}
	}
}

// CreateExclusive refuses any existing name, a dangling link included, and
// never creates the link's target.
func TestCreateExclusive(t *testing.T) {
	for _, kind := range []string{"file", "symlink", "dangling", "fifo"} {
		_, name, outside := plant(t, kind)
		if err := CreateExclusive(name, []byte("1 host 2\n"), 0o644); err == nil {
			t.Errorf("%s: created over an existing name", kind)
		}
		if b, _ := os.ReadFile(outside); string(b) != secret {
			t.Errorf("%s: the outside file changed", kind)
		}
		if _, err := os.Lstat(filepath.Join(filepath.Dir(outside), "nothing-here")); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: a dangling link's target was created", kind)
		}
	}
	mem, _, _ := plant(t, "file")
	p := filepath.Join(mem, "new.owner")
	if err := CreateExclusive(p, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "x" {
		t.Errorf("created %q", b)
	}
}

// A symlinked .memory or .memory/knowledge (or a file where a directory
// should be) is refused for every path below it, existing or not.
func TestRefusesSymlinkedDirectories(t *testing.T) {
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(filepath.Join(outside, "knowledge"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(outside, "learning-log.jsonl"), []byte(secret), 0o644)
	os.WriteFile(filepath.Join(outside, "knowledge", "decisions.md"), []byte(secret), 0o644)

	linkedMem := filepath.Join(base, "a", MemoryDirName)
	os.MkdirAll(filepath.Dir(linkedMem), 0o755)
	if err := os.Symlink(outside, linkedMem); err != nil {
		t.Fatal(err)
	}
	linkedKn := filepath.Join(base, "b", MemoryDirName)
	os.MkdirAll(linkedKn, 0o755)
	os.Symlink(filepath.Join(outside, "knowledge"), filepath.Join(linkedKn, "knowledge"))
	fileKn := filepath.Join(base, "c", MemoryDirName)
	os.MkdirAll(fileKn, 0o755)
	os.WriteFile(filepath.Join(fileKn, "knowledge"), nil, 0o644)

	for _, path := range []string{
		filepath.Join(linkedMem, "learning-log.jsonl"),
		filepath.Join(linkedMem, "missing.jsonl"),
		filepath.Join(linkedKn, "knowledge", "decisions.md"),
		filepath.Join(linkedKn, "knowledge", "pitfalls.md"),
		filepath.Join(fileKn, "knowledge", "decisions.md"),
	} {
		if _, err := ReadFile(path, MaxKnowledge); !IsRefused(err) {
			t.Errorf("ReadFile %s: %v, want a refusal", path, err)
		}
		if f, err := OpenAppend(path); !IsRefused(err) {
			if f != nil {
				f.Close()
			}
			t.Errorf("OpenAppend %s: %v, want a refusal", path, err)
		}
		if err := MkdirAll(filepath.Dir(path)); !IsRefused(err) {
			t.Errorf("MkdirAll %s: %v, want a refusal", filepath.Dir(path), err)
		}
	}
	for _, p := range []string{filepath.Join(outside, "learning-log.jsonl"), filepath.Join(outside, "knowledge", "decisions.md")} {
		if b, _ := os.ReadFile(p); string(b) != secret {
			t.Errorf("%s changed: %q", p, b)
		}
	}
	if _, err := os.Lstat(filepath.Join(outside, "missing.jsonl")); err == nil {
		t.Error("a file was created through the symlinked .memory")
	}
	// A missing .memory is created, and a path below it works.
	fresh := filepath.Join(base, "d", MemoryDirName, "knowledge")
	if err := MkdirAll(fresh); err != nil {
		t.Fatal(err)
	}
	f, err := OpenAppend(filepath.Join(fresh, "x"))
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// Reads stop at their cap: a file one byte over is refused, one at the
// cap is read whole.
func TestReadCap(t *testing.T) {
	mem, _, _ := plant(t, "file")
	p := filepath.Join(mem, "learnwatch.yaml")
	os.WriteFile(p, bytes.Repeat([]byte("a"), 100), 0o644)
	if b, err := ReadFile(p, 100); err != nil || len(b) != 100 {
		t.Fatalf("at the cap: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFile(p, 99); !IsRefused(err) {
		t.Fatalf("over the cap: %v, want a refusal", err)
	}
	if _, err := ReadFile(filepath.Join(mem, "missing"), 10); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing: %v, want ErrNotExist", err)
	}
}

// Appends add to a regular file and create a missing one; a concurrent
// creator is joined rather than failed.
func TestOpenAppendCreates(t *testing.T) {
	mem, _, _ := plant(t, "file")
	p := filepath.Join(mem, "errors.jsonl")
	for i := 0; i < 2; i++ {
		f, err := OpenAppend(p)
		if err != nil {
			t.Fatal(err)
		}
		f.Write([]byte("line\n"))
		f.Close()
	}
	if b, _ := os.ReadFile(p); string(b) != "line\nline\n" {
		t.Fatalf("got %q", b)
	}
}

// ReadFollowing follows a symlink to a regular file (git reads a symlinked
// .git file) and refuses, without blocking, what is not a regular file once
// open: a FIFO, a device, a directory, or a link to one; it refuses a file
// over the cap and reports a missing one (a dangling link) as missing.
func TestReadFollowing(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		want    string // the bytes read; "" when refused or missing
		missing bool
	}{
		{kind: "file", want: "{}\n"},
		{kind: "symlink", want: secret},
		{kind: "dangling", missing: true},
		{kind: "devzero"},
		{kind: "fifo"},
		{kind: "dir"},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			_, name, _ := plant(t, tc.kind)
			type result struct {
				b   []byte
				err error
			}
			done := make(chan result, 1)
			go func() { b, err := ReadFollowing(name, MaxConfig); done <- result{b, err} }()
			var r result
			select {
			case r = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("ReadFollowing on a %s did not return", tc.kind)
			}
			switch {
			case tc.missing:
				if !errors.Is(r.err, fs.ErrNotExist) {
					t.Fatalf("got %q, %v; want ErrNotExist", r.b, r.err)
				}
			case tc.want != "":
				if r.err != nil || string(r.b) != tc.want {
					t.Fatalf("got %q, %v; want %q", r.b, r.err, tc.want)
				}
			default:
				if !IsRefused(r.err) || !bytes.Contains([]byte(r.err.Error()), []byte(name)) {
					t.Fatalf("got %q, %v; want a refusal naming %s", r.b, r.err, name)
				}
			}
		})
	}
	mem, _, _ := plant(t, "file")
	p := filepath.Join(mem, "big")
	os.WriteFile(p, bytes.Repeat([]byte("a"), 100), 0o644)
	if b, err := ReadFollowing(p, 100); err != nil || len(b) != 100 {
		t.Fatalf("at the cap: %d bytes, %v", len(b), err)
	}
	if _, err := ReadFollowing(p, 99); !IsRefused(err) {
		t.Fatalf("over the cap: %v, want a refusal", err)
	}
}
