package hooks

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A cloned repository's .claude/settings.json (or .claude itself) planted
// as a symlink — to the user-wide settings, dangling, or inside the repo —
// is refused by install and uninstall, and nothing outside is written,
// created or removed.
func TestClaudeRefusesSymlinkedSettings(t *testing.T) {
	userWide := `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"learnwatch hook stop"}]}]}}` + "\n"
	cases := map[string]func(root, outside string) error{
		"settings to outside file": func(root, outside string) error {
			os.MkdirAll(filepath.Join(root, ".claude"), 0o755)
			return os.Symlink(filepath.Join(outside, "settings.json"), filepath.Join(root, SettingsFile))
		},
		"settings dangling outside": func(root, outside string) error {
			os.MkdirAll(filepath.Join(root, ".claude"), 0o755)
			return os.Symlink(filepath.Join(outside, "new.json"), filepath.Join(root, SettingsFile))
		},
		"settings to a file in the repo": func(root, outside string) error {
			os.MkdirAll(filepath.Join(root, ".claude"), 0o755)
			os.WriteFile(filepath.Join(root, "other.json"), []byte("{}\n"), 0o644)
			return os.Symlink(filepath.Join(root, "other.json"), filepath.Join(root, SettingsFile))
		},
		".claude to outside dir": func(root, outside string) error {
			return os.Symlink(outside, filepath.Join(root, ".claude"))
		},
	}
	for name, plant := range cases {
		t.Run(name, func(t *testing.T) {
			base := t.TempDir()
			root, outside := filepath.Join(base, "repo"), filepath.Join(base, "home")
			os.MkdirAll(root, 0o755)
			os.MkdirAll(outside, 0o755)
			os.WriteFile(filepath.Join(outside, "settings.json"), []byte(userWide), 0o644)
			if err := plant(root, outside); err != nil {
				t.Fatal(err)
			}
			for op, f := range map[string]func(string) (ClaudeStatus, error){"install": func(r string) (ClaudeStatus, error) { return InstallClaude(r, "") }, "uninstall": UninstallClaude} {
				_, err := f(root)
				if err == nil || !strings.Contains(err.Error(), "symlink") {
					t.Errorf("%s: %v, want a refusal naming the symlink", op, err)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(outside, "settings.json")); string(b) != userWide {
				t.Errorf("the user-wide settings changed:\n%s", b)
			}
			if ents, _ := os.ReadDir(outside); len(ents) != 1 {
				t.Errorf("files created or removed outside the repo: %v", ents)
			}
		})
	}
}
