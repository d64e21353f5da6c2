// Package scaffold sets a repository up for learnwatch: the memory
// directories, a commented .memory/learnwatch.yaml showing every default,
// and the .gitignore lines for the files that belong to one checkout only
// (locks, the watcher's pid and state, backups, temp files). Deciding which
// lines are missing is a plain function over the .gitignore's bytes, matched
// with go-git's gitignore matcher; Apply does the I/O.
package scaffold

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/format/gitignore"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// LocalFile is one kind of file that is local to a checkout: the .gitignore
// pattern that covers it and an example name the pattern must match.
type LocalFile struct {
	Pattern string
	Example string
	What    string
}

// LocalState lists every file learnwatch writes that must not be committed.
// The shared state (the log, the manifest, the usage file, the knowledge
// files, the feedback and outcome journals) is meant to be committed.
var LocalState = []LocalFile{
	{".memory/.learning.lock*", ".memory/.learning.lock.owner", "the learning lock and its owner file"},
	{".memory/.knowledge.lock*", ".memory/.knowledge.lock.owner", "the knowledge lock and its owner file"},
	{".memory/.watch.pid", ".memory/.watch.pid", "the watcher's pid file"},
	{".memory/.watch-state.json", ".memory/.watch-state.json", "the watcher's state for `status`"},
	{".memory/.citation-offsets.json", ".memory/.citation-offsets.json", "how far the Stop hook has read each transcript"},
	{".memory/.kept-stamp.json", ".memory/.kept-stamp.json", "when `kept` feedback was last recorded"},
	{".memory/.notifications.json", ".memory/.notifications.json", "capacity notifications and your dismissals of them (shared with devflow's HUD)"},
	{".memory/.cache/", ".memory/.cache/stat.cache", "disposable caches (they also carry a .gitignore of their own)"},
	{".memory/*.corrupt-*", ".memory/.learning-manifest.json.corrupt-20260102T150405Z", "copies of corrupt files kept before a rebuild"},
	{".memory/learning-log.purged-*", ".memory/learning-log.purged-20260102T150405Z.jsonl", "what `purge` removed"},
	{".memory/learning-log.cleared-*", ".memory/learning-log.cleared-20260102T150405Z.jsonl", "what `clear` emptied"},
	{".memory/.feedback-pass.json", ".memory/.feedback-pass.json", "the feedback of the reconcile in progress (exactly-once learning signals)"},
	{".memory/.citation-pass.json", ".memory/.citation-pass.json", "the citations of the Stop hook in progress (counted exactly once)"},
	{".memory/inbox/", ".memory/inbox/item-20260102T150405Z-000000001-4242-1.json", "input queued while the learning lock was busy (merged by the next pass)"},
	{".memory/.*.tmp-*", ".memory/.learning-log.jsonl.tmp-0123abcd", "temp files of atomic writes"},
}

// MissingIgnoreLines returns the LocalState patterns that the .gitignore
// content does not already cover, in LocalState's order. A file covered by
// a broader rule the repository already has (`.memory/`, `*.pid`) needs no
// line of its own.
func MissingIgnoreLines(gitignoreContent []byte) []string {
	var ps []gitignore.Pattern
	for _, line := range strings.Split(string(gitignoreContent), "\n") {
		line = strings.TrimRight(line, "\r")
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		ps = append(ps, gitignore.ParsePattern(line, nil))
	}
	m := gitignore.NewMatcher(ps)
	var missing []string
	for _, f := range LocalState {
		if !m.Match(strings.Split(f.Example, "/"), false) {
			missing = append(missing, f.Pattern)
		}
	}
	return missing
}

// IgnoreBlock is the text appended to .gitignore for the missing lines.
func IgnoreBlock(existing []byte, missing []string) []byte {
	if len(missing) == 0 {
		return nil
	}
	var b bytes.Buffer
	if len(existing) > 0 && !bytes.HasSuffix(existing, []byte("\n")) {
		b.WriteByte('\n')
	}
	if len(existing) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString("# learnwatch: state local to this checkout (see `learnwatch init`)\n")
	for _, p := range missing {
		b.WriteString(p + "\n")
	}
	return b.Bytes()
}

// Result says what Apply created or changed, as paths relative to the root.
type Result struct {
	Created []string `json:"created"`
	// Gitignore lists the lines appended to .gitignore.
	Gitignore []string `json:"gitignore,omitempty"`
}

// Apply sets root up: .memory/ and .memory/knowledge/ (refused when either
// exists as anything but a real directory), .memory/learnwatch.yaml from
// config.Template() when there is none, and the missing .gitignore lines.
// Running it again changes nothing.
func Apply(root string) (Result, error) {
	var res Result
	for _, dir := range []string{".memory", ".memory/knowledge"} {
		p := filepath.Join(root, filepath.FromSlash(dir))
		fi, err := os.Lstat(p)
		switch {
		case err == nil && fi.IsDir():
			continue
		case err == nil:
			return res, fmt.Errorf("%s exists and is not a directory (a symlink or a file); learnwatch will not use it", dir)
		case !errors.Is(err, fs.ErrNotExist):
			return res, err
		}
		if err := os.Mkdir(p, 0o755); err != nil {
			return res, err
		}
		res.Created = append(res.Created, dir+"/")
	}
	cfgPath := filepath.Join(root, filepath.FromSlash(config.FileName))
	if _, err := os.Lstat(cfgPath); errors.Is(err, fs.ErrNotExist) {
		if err := manifest.WriteFile(cfgPath, config.Template(), 0o644); err != nil {
			return res, err
		}
		res.Created = append(res.Created, config.FileName)
	} else if err != nil {
		return res, err
	}
	gi := filepath.Join(root, ".gitignore")
	// A regular file of at most 1 MiB, never read through a link.
	existing, err := safefs.ReadFile(gi, safefs.MaxConfig)
	if errors.Is(err, fs.ErrNotExist) {
		existing, err = nil, nil
	}
	if err != nil {
		return res, err
	}
	missing := MissingIgnoreLines(existing)
	if block := IgnoreBlock(existing, missing); block != nil {
		if err := manifest.WriteFile(gi, append(existing, block...), 0o644); err != nil {
			return res, err
		}
		if existing == nil {
			res.Created = append(res.Created, ".gitignore")
		}
		res.Gitignore = missing
	}
	return res, nil
}
