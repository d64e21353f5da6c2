package heal

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/fixture"
	"github.com/learnwatch/learnwatch/manifest"
)

// TestLoadParallelMatchesSerial loads a memory of 600 artifacts — some
// deleted, edited, swapped for a directory or a symlink out of the root,
// named twice (relative and absolute spelling), the rest vouched for by
// the stat cache — on one goroutine and on several, and requires the same
// state and the same stat cache entries.
func TestLoadParallelMatchesSerial(t *testing.T) {
	root := t.TempDir()
	if err := fixture.Generate(root, fixture.Spec{Observations: 700, Artifacts: 600, Entries: 40, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	p := manifest.PathsFor(root)
	// A first pass fills the stat cache; then the files change under it.
	c := statcache.Load(root, statcache.Default)
	if _, err := loadWith(root, c, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Save(root); err != nil {
		t.Fatal(err)
	}
	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		t.Fatal(err)
	}
	var arts []string
	for _, e := range m.Entries {
		if e.AnchorID == "" {
			arts = append(arts, e.Path)
		}
	}
	sort.Strings(arts)
	if len(arts) < 500 {
		t.Fatalf("only %d artifacts", len(arts))
	}
	abs := func(rel string) string { return filepath.Join(root, filepath.FromSlash(rel)) }
	outside := t.TempDir()
	os.WriteFile(filepath.Join(outside, "secret.md"), []byte("not yours\n"), 0o644)
	for i, rel := range arts {
		switch i % 50 {
		case 1:
			os.Remove(abs(rel))
		case 2:
			os.WriteFile(abs(rel), []byte("edited by a person\n"), 0o644)
		case 3:
			os.Remove(abs(rel))
			os.Mkdir(abs(rel), 0o755)
		case 4:
			os.Remove(abs(rel))
			if err := os.Symlink(filepath.Join(outside, "secret.md"), abs(rel)); err != nil {
				t.Fatal(err)
			}
		case 5:
			// The same file under its absolute spelling too.
			m.Entries = append(m.Entries, manifest.Entry{ObservationID: fmt.Sprintf("obs_abs_%d", i), Path: abs(rel), ContentHash: "sha256:0"})
		}
	}
	m.Entries = append(m.Entries, manifest.Entry{ObservationID: "obs_out", Path: "../escape.md", ContentHash: "sha256:0"})
	b, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p.Manifest, b, 0o644); err != nil {
		t.Fatal(err)
	}

	cacheFile := filepath.Join(root, ".memory", ".cache", "stat.cache")
	cached, err := os.ReadFile(cacheFile)
	if err != nil {
		t.Fatal(err)
	}
	// load returns the state as text and the stat cache a save writes
	// after it, each run from the same cache file.
	load := func(procs int) (string, string) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		if err := os.WriteFile(cacheFile, cached, 0o644); err != nil {
			t.Fatal(err)
		}
		c := statcache.Load(root, statcache.Default)
		st, err := loadWith(root, c, nil)
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		keys := func(m map[string]bool) []string {
			var ks []string
			for k, v := range m {
				if v {
					ks = append(ks, k)
				}
			}
			sort.Strings(ks)
			return ks
		}
		files := map[string]bool{}
		for rel, b := range st.Files {
			files[fmt.Sprintf("%s=%d", rel, len(b))] = true
		}
		fmt.Fprintf(&out, "files %v\nverified %v\nmissing %v\n", keys(files), keys(st.Verified), keys(st.Missing))
		for _, m := range []map[string]error{st.Refused, st.Unreadable} {
			errs := map[string]bool{}
			for k, err := range m {
				errs[k+": "+err.Error()] = true
			}
			fmt.Fprintf(&out, "%v\n", keys(errs))
		}
		rels := map[string]bool{}
		for p, rel := range st.Rel {
			rels[p+" -> "+rel] = true
		}
		fmt.Fprintf(&out, "rel %v\n", keys(rels))
		if err := c.Save(root); err != nil {
			t.Fatal(err)
		}
		saved, err := os.ReadFile(cacheFile)
		if err != nil {
			t.Fatal(err)
		}
		return out.String(), string(saved)
	}
	want, wantCache := load(1)
	for _, s := range []string{"missing [", "outside the repository root", "leads outside"} {
		if !strings.Contains(want, s) {
			t.Errorf("the serial load shows no %q: the fixture does not exercise it", s)
		}
	}
	for _, procs := range []int{2, 4} {
		got, gotCache := load(procs)
		if got != want {
			t.Fatalf("GOMAXPROCS %d: the state differs:\n%s\none goroutine:\n%s", procs, got, want)
		}
		if gotCache != wantCache {
			t.Fatalf("GOMAXPROCS %d: the stat cache entries differ", procs)
		}
	}
}
