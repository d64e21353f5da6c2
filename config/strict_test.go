package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadRejectsUnknownKeys(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"misspelt key", "precommit:\n  blok: true\n", `line 2: unknown key "blok" under precommit`},
		{"unknown section", "precomit:\n  block: true\n", `line 1: unknown key "precomit" under the top level`},
		{"two problems", "index:\n  budgt: 9\nlock:\n  timout: 1s\n", `line 2: unknown key "budgt" under index; line 4: unknown key "timout" under lock`},
		{"wrong type", "index:\n  budget: lots\n", "line 2: cannot unmarshal"},
		{"bad duration", "watch:\n  debounce: soon\n", "line 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, FileName), []byte(tc.yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(root)
			if err == nil {
				t.Fatal("loaded without an error")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "learnwatch.yaml") {
				t.Errorf("error %q\nwant it to contain %q and the file name", err, tc.want)
			}
		})
	}
}
