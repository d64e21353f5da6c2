// Package examples ships a realistic repository memory (examples/repo: a
// learning log of a dozen observations across the four types, rendered
// artifacts, knowledge files with a human-written entry, and a manifest with
// a legacy djb2 hash) for `learnwatch demo` and the tests.
package examples

import (
	"embed"
	"io/fs"
	"os"
	"path/filepath"
)

//go:embed all:repo
var repo embed.FS

// CopyTo writes the example repository into dir (created if needed).
func CopyTo(dir string) error {
	sub, err := fs.Sub(repo, "repo")
	if err != nil {
		return err
	}
	return fs.WalkDir(sub, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(path))
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := fs.ReadFile(sub, path)
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if filepath.Ext(path) == ".sh" {
			mode = 0o755
		}
		return os.WriteFile(target, b, mode)
	})
}
