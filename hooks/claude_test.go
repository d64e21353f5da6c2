package hooks

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func readJSON(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, data)
	}
	return v
}

func TestInstallClaudeFresh(t *testing.T) {
	root := t.TempDir()
	st, err := InstallClaude(root)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Changed || !st.SessionStart || !st.Stop {
		t.Errorf("status %+v", st)
	}
	got, _ := os.ReadFile(filepath.Join(root, SettingsFile))
	want := `{
  "hooks": {
    "SessionStart": [
      {
        "matcher": "",
        "hooks": [
          {
            "command": "learnwatch hook session-start",
            "type": "command"
          }
        ]
      }
    ],
    "Stop": [
      {
        "hooks": [
          {
            "command": "learnwatch hook stop",
            "type": "command"
          }
        ]
      }
    ]
  }
}
`
	if string(got) != want {
		t.Errorf("settings.json:\n%s\nwant:\n%s", got, want)
	}
	// Uninstall of a file holding only our entries removes it.
	st, err = UninstallClaude(root)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Changed || st.SessionStart || st.Stop {
		t.Errorf("status %+v", st)
	}
	if _, err := os.Stat(filepath.Join(root, ".claude")); !os.IsNotExist(err) {
		t.Errorf(".claude left behind: %v", err)
	}
}

const existingSettings = `{
  "model": "opus",
  "permissions": {"allow": ["Bash(go test:*)"], "deny": []},
  "hooks": {
    "PreToolUse": [
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "check.sh && echo <ok>", "timeout": 30}]}
    ],
    "SessionStart": [
      {"matcher": "startup", "hooks": [{"type": "command", "command": "other-tool start"}]}
    ]
  },
  "zzUnknown": {"nested": [1, 2.50, null, true]}
}
`

func TestInstallClaudeMergesAndIsIdempotent(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, SettingsFile)
	writeFile(t, path, existingSettings, 0o600)

	if _, err := InstallClaude(root); err != nil {
		t.Fatal(err)
	}
	after := readJSON(t, path).(map[string]any)
	if after["model"] != "opus" || after["zzUnknown"] == nil || after["permissions"] == nil {
		t.Errorf("unknown keys lost: %v", after)
	}
	hooks := after["hooks"].(map[string]any)
	if len(hooks["PreToolUse"].([]any)) != 1 {
		t.Errorf("PreToolUse: %v", hooks["PreToolUse"])
	}
	ss := hooks["SessionStart"].([]any)
	if len(ss) != 2 || !strings.Contains(mustMarshal(t, ss[0]), "other-tool start") || !strings.Contains(mustMarshal(t, ss[1]), "learnwatch hook session-start") {
		t.Errorf("SessionStart: %s", mustMarshal(t, ss))
	}
	data, _ := os.ReadFile(path)
	// Key order and readable strings are kept; the mode too.
	if i, j := strings.Index(string(data), `"model"`), strings.Index(string(data), `"zzUnknown"`); i < 0 || j < i || !strings.Contains(string(data), "check.sh && echo <ok>") || !strings.Contains(string(data), "2.50") {
		t.Errorf("layout not kept:\n%s", data)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v", fi.Mode().Perm())
	}

	// A second install writes nothing.
	st, err := InstallClaude(root)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if st.Changed || string(again) != string(data) {
		t.Errorf("second install changed the file (changed=%v)", st.Changed)
	}

	// The same content in other whitespace is recognised too.
	var v any
	json.Unmarshal(data, &v)
	compact, _ := json.Marshal(v)
	writeFile(t, path, string(compact), 0o600)
	st, err = InstallClaude(root)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); st.Changed || string(got) != string(compact) {
		t.Errorf("compact file rewritten (changed=%v):\n%s", st.Changed, got)
	}

	// Uninstall gives back the original content.
	st, err = UninstallClaude(root)
	if err != nil {
		t.Fatal(err)
	}
	var orig any
	json.Unmarshal([]byte(existingSettings), &orig)
	if got := readJSON(t, path); !reflect.DeepEqual(got, orig) {
		t.Errorf("after uninstall:\n%s\nwant:\n%s", mustMarshal(t, got), mustMarshal(t, orig))
	}
	if !st.Changed || st.SessionStart || st.Stop {
		t.Errorf("status %+v", st)
	}
	// And a second uninstall nothing.
	before, _ := os.ReadFile(path)
	if st, err := UninstallClaude(root); err != nil || st.Changed {
		t.Errorf("second uninstall: %+v %v", st, err)
	}
	if got, _ := os.ReadFile(path); string(got) != string(before) {
		t.Errorf("second uninstall rewrote the file")
	}
}

func TestUninstallClaudeKeepsNeighboursInGroup(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, SettingsFile)
	writeFile(t, path, `{"hooks":{"SessionStart":[{"matcher":"","hooks":[
		{"type":"command","command":"/usr/local/bin/learnwatch  hook session-start"},
		{"type":"command","command":"echo hi"}]}],
		"Stop":[{"hooks":[{"type":"command","command":"learnwatch hook stop"}]}, "not-a-group"]}}`, 0o644)
	st, err := CheckClaude(root)
	if err != nil || !st.SessionStart || !st.Stop {
		t.Fatalf("check: %+v %v", st, err)
	}
	if st, err := InstallClaude(root); err != nil || st.Changed {
		t.Fatalf("install over an absolute-path entry: %+v %v", st, err)
	}
	if _, err := UninstallClaude(root); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"hooks": map[string]any{
		"SessionStart": []any{map[string]any{"matcher": "", "hooks": []any{map[string]any{"type": "command", "command": "echo hi"}}}},
		"Stop":         []any{"not-a-group"},
	}}
	if got := readJSON(t, path); !reflect.DeepEqual(got, want) {
		t.Errorf("got %s", mustMarshal(t, got))
	}
}

func TestInvalidSettingsNamesFileAndWritesNothing(t *testing.T) {
	for name, content := range map[string]string{
		"syntax":      `{"hooks": {`,
		"array":       `[]`,
		"trailing":    `{} {}`,
		"hooks type":  `{"hooks": []}`,
		"event type":  `{"hooks": {"SessionStart": {}}}`,
		"hooks null":  `{"hooks": null}`,
		"key garbage": `{"a":1,}`,
	} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			path := filepath.Join(root, SettingsFile)
			writeFile(t, path, content, 0o644)
			for op, f := range map[string]func(string) (ClaudeStatus, error){"install": InstallClaude, "uninstall": UninstallClaude, "check": CheckClaude} {
				_, err := f(root)
				var fe *FileError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), path) {
					t.Errorf("%s: err = %v, want a FileError naming %s", op, err, path)
				}
				if got, _ := os.ReadFile(path); string(got) != content {
					t.Errorf("%s wrote %q", op, got)
				}
			}
		})
	}
}

func TestEmptySettingsFile(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, SettingsFile)
	writeFile(t, path, "  \n", 0o644)
	if _, err := InstallClaude(root); err != nil {
		t.Fatal(err)
	}
	if st, _ := CheckClaude(root); !st.SessionStart || !st.Stop {
		t.Errorf("status %+v", st)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
