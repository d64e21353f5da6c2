package staleness

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
)

// copyCorpus copies testdata/corpus into dir; a path element starting with
// "_" starts with "." in the copy (_memory → .memory, _gitignore →
// .gitignore), so the corpus does not act on this repository.
func copyCorpus(t *testing.T, dir string) {
	t.Helper()
	src := filepath.Join("testdata", "corpus")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		parts := strings.Split(filepath.ToSlash(rel), "/")
		for i, s := range parts {
			if strings.HasPrefix(s, "_") {
				parts[i] = "." + s[1:]
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writeFile(t, filepath.Join(dir, filepath.FromSlash(strings.Join(parts, "/"))), string(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// corpusRepo commits the corpus with a little history: a file renamed on a
// branch and merged, a file deleted on main. At HEAD nothing the prose
// cites has been removed.
func corpusRepo(t *testing.T) *gitRepo {
	r := newRepo(t)
	copyCorpus(t, r.dir)
	log := filepath.Join(r.dir, "src/util/log.ts")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	r.write("src/util/logging.ts", string(b))
	r.write("src/legacy/old.ts", "export const old = 1;\n")
	r.commit("import tern")
	r.git("checkout", "-q", "-b", "feature")
	r.mv("src/util/logging.ts", "src/util/log.ts")
	r.commit("rename logging.ts to log.ts")
	r.git("checkout", "-q", "main")
	r.git("rm", "-q", "src/legacy/old.ts")
	r.commit("drop legacy")
	r.git("merge", "-q", "--no-ff", "-m", "merge feature", "feature")
	return r
}

func scanCorpus(t *testing.T, root string, mode Mode, explain bool) Report {
	t.Helper()
	full, err := config.Load(root)
	if err != nil {
		t.Fatal(err)
	}
	cfg := full.Staleness
	c, err := Open(root, mode, cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := OptionsFor(cfg)
	opts.Explain = explain
	rep, err := Scan(root, c, &manifest.Log{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Err(); err != nil {
		t.Fatalf("checker: %v", err)
	}
	return rep
}

// TestCorpusPrecision: at a commit where nothing cited was removed, no
// reference of the corpus is reported (the bar is 5 % false alarms; the
// figure is in docs/staleness.md).
func TestCorpusPrecision(t *testing.T) {
	r := corpusRepo(t)
	for _, mode := range []Mode{Auto, Staged, PreCommit} {
		rep := scanCorpus(t, r.dir, mode, true)
		how := map[string]int{}
		for _, res := range rep.Refs {
			k := res.How
			if k == "" {
				k = res.Reason
			}
			how[k]++
			if testing.Verbose() && res.How == "" {
				t.Logf("  %s  %s  %s", res.Source, res.Ref, res.Reason)
			}
		}
		t.Logf("mode %d: %d references checked, %d reported, %d sources; resolved by %v", mode, rep.Checked, len(rep.Stale), len(rep.Sources), how)
		if rep.Checked < 100 {
			t.Errorf("mode %d: only %d references: the corpus is not being read", mode, rep.Checked)
		}
		// 3 ADRs and 2 KNOWLEDGE.md (presets); README, CONTRIBUTING,
		// docs/architecture.md and 3 skill files (staleness.sources).
		if len(rep.Sources) != 11 {
			t.Errorf("mode %d: %d sources %v, want 11", mode, len(rep.Sources), rep.Sources)
		}
		if rate := float64(len(rep.Stale)) / float64(rep.Checked); rate > 0.05 {
			t.Errorf("mode %d: false alarm rate %.1f%% > 5%%", mode, 100*rate)
		}
		for _, f := range rep.Stale {
			t.Errorf("mode %d: false alarm: %s %s %s", mode, f.ID, f.Ref, f.Reason)
		}
	}
}

// TestCorpusRecall: every reference to a file the staged commit deletes or
// renames is reported — bare names, partial paths and full paths — in the
// pre-commit check and in stale --staged, with where renamed files went.
func TestCorpusRecall(t *testing.T) {
	r := corpusRepo(t)
	before := scanCorpus(t, r.dir, Auto, true)
	removed := map[string]string{ // path → where it goes ("" deleted)
		"src/plugins.ts":                   "",
		"server/internal/store/store.go":   "",
		"src/core/config.ts":               "src/core/settings.ts",
		"server/internal/api/handler.go":   "server/internal/api/http.go",
		"skills/coder/references/style.md": "",
	}
	// What must be reported: every reference (per entry) that resolved to
	// a removed file.
	want := map[string]string{}
	for _, res := range before.Refs {
		if to, ok := removed[res.ResolvedAs]; ok {
			want[res.Source+" "+res.Ref] = to
		}
	}
	if len(want) < 15 {
		t.Fatalf("only %d references to the removed files: %v", len(want), want)
	}
	for p, to := range removed {
		if to == "" {
			r.git("rm", "-q", p)
		} else {
			r.mv(p, to)
		}
	}
	for _, mode := range []Mode{PreCommit, Staged} {
		rep := scanCorpus(t, r.dir, mode, false)
		got := map[string]string{}
		for _, f := range rep.Stale {
			where := f.ID
			if f.Heading != "" {
				where += " § " + f.Heading
			}
			if f.Reason != Missing {
				t.Errorf("mode %d: unexpected %s %s %s", mode, where, f.Ref, f.Reason)
				continue
			}
			got[where+" "+f.Ref] = strings.TrimSuffix(strings.SplitN(f.RenamedTo, ":", 2)[0], "#")
		}
		var missed, extra []string
		for k, to := range want {
			g, ok := got[k]
			if !ok {
				missed = append(missed, k)
			} else if g != to {
				t.Errorf("mode %d: %s renamed_to %q, want %q", mode, k, g, to)
			}
		}
		for k := range got {
			if _, ok := want[k]; !ok {
				extra = append(extra, k)
			}
		}
		sort.Strings(missed)
		sort.Strings(extra)
		if len(missed) > 0 {
			t.Errorf("mode %d: not reported (%d of %d):\n%s", mode, len(missed), len(want), strings.Join(missed, "\n"))
		}
		if len(extra) > 0 {
			t.Errorf("mode %d: reported but not a reference to a removed file:\n%s", mode, strings.Join(extra, "\n"))
		}
		t.Logf("mode %d: %d of %d references to removed files reported", mode, len(want)-len(missed), len(want))
	}
}
