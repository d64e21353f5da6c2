package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// SettingsFile is the agent's project settings file, relative to the root.
const SettingsFile = ".claude/settings.json"

// agentHook is one hook entry learnwatch adds to the agent's settings.
type agentHook struct {
	event   string
	matcher bool   // whether the event takes a matcher ("" matches all)
	sub     string // the `learnwatch hook` subcommand
}

var agentHooks = []agentHook{
	{event: "SessionStart", matcher: true, sub: "session-start"},
	{event: "Stop", sub: "stop"},
}

// command is the hook's command line: the binary by absolute path when it
// is known and needs no shell quoting (the agent may run hooks with a
// minimal PATH), else learnwatch looked up on PATH.
func (h agentHook) command(binary string) string {
	return commandName(binary) + " hook " + h.sub
}

// commandName is binary when it is an absolute path of plain characters,
// else "learnwatch".
func commandName(binary string) string {
	if !filepath.IsAbs(binary) || strings.IndexFunc(binary, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._+-", r))
	}) >= 0 {
		return "learnwatch"
	}
	return binary
}

// isOurCommand reports whether a hook command runs `learnwatch hook <sub>`
// (learnwatch by any path, any spacing).
func isOurCommand(command, sub string) bool {
	f := strings.Fields(command)
	return len(f) == 3 && filepath.Base(f[0]) == "learnwatch" && f[1] == "hook" && f[2] == sub
}

// ClaudeStatus is the state of learnwatch's entries in the agent's settings.
type ClaudeStatus struct {
	Settings     string `json:"settings"`      // path of settings.json
	SessionStart bool   `json:"session_start"` // the SessionStart entry is there
	Stop         bool   `json:"stop"`          // the Stop (citation scan) entry is there
	Changed      bool   `json:"changed,omitempty"`
	// Command is the learnwatch binary the entries run (set by install).
	Command string `json:"command,omitempty"`
}

// settings is a parsed settings.json: the top-level object and its "hooks"
// object, both keeping their key order.
type settings struct {
	path   string
	exists bool
	// compact: the file was written on one line; it is written back so.
	compact bool
	perm    os.FileMode
	top     *object
	hooks   *object
}

func loadSettings(root string) (*settings, error) {
	path := filepath.Join(root, SettingsFile)
	s := &settings{path: path, perm: 0o644, top: newObject(), hooks: newObject()}
	// The settings of a cloned repository are untrusted: a symlinked
	// .claude directory or settings file could lead into the user-wide
	// settings or anywhere else, so neither is followed. The file is read
	// only when it is a regular file of bounded size.
	if err := checkSettingsPath(root); err != nil {
		return nil, err
	}
	data, err := safefs.ReadFile(s.path, safefs.MaxConfig)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, &FileError{Path: s.path, Err: err}
	}
	s.exists = true
	if fi, err := os.Lstat(s.path); err == nil {
		s.perm = fi.Mode().Perm()
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return s, nil
	}
	top, err := parseObject(data)
	if err != nil {
		return nil, &FileError{Path: s.path, Err: err}
	}
	s.top = top
	s.compact = !bytes.Contains(bytes.TrimSpace(data), []byte("\n"))
	if raw, ok := top.get("hooks"); ok {
		h, err := parseObject(raw)
		if err != nil {
			return nil, &FileError{Path: s.path, Field: "hooks", Err: err}
		}
		s.hooks = h
	}
	return s, nil
}

// checkSettingsPath refuses a .claude that is not a real directory and a
// settings file that is not a regular file (a symlink above all, dangling
// or not); missing ones are fine.
func checkSettingsPath(root string) error {
	dir := filepath.Join(root, filepath.Dir(filepath.FromSlash(SettingsFile)))
	if fi, err := os.Lstat(dir); err == nil && (fi.Mode()&os.ModeSymlink != 0 || !fi.IsDir()) {
		return &FileError{Path: dir, Err: &safefs.RefusedError{Path: dir, Reason: "is a symlink or not a directory; agent settings are never written through a link"}}
	}
	path := filepath.Join(root, filepath.FromSlash(SettingsFile))
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return &FileError{Path: path, Err: &safefs.RefusedError{Path: path, Reason: "is a symlink or not a regular file; agent settings are never written through a link"}}
	}
	return nil
}

// groups returns the matcher groups of one hook event.
func (s *settings) groups(event string) ([]json.RawMessage, error) {
	raw, ok := s.hooks.get(event)
	if !ok {
		return nil, nil
	}
	var groups []json.RawMessage
	if err := json.Unmarshal(raw, &groups); err != nil {
		return nil, &FileError{Path: s.path, Field: "hooks." + event, Err: errors.New("not an array")}
	}
	return groups, nil
}

// groupHooks returns a matcher group's object and its "hooks" array; ok is
// false when the group does not have that shape (it is then someone else's,
// left as it is).
func groupHooks(raw json.RawMessage) (g *object, list []json.RawMessage, ok bool) {
	g, err := parseObject(raw)
	if err != nil {
		return nil, nil, false
	}
	hr, found := g.get("hooks")
	if !found || json.Unmarshal(hr, &list) != nil {
		return nil, nil, false
	}
	return g, list, true
}

// isOurEntry reports whether one hook entry runs learnwatch hook <sub>.
func isOurEntry(raw json.RawMessage, sub string) bool {
	var e struct {
		Type    string `json:"type"`
		Command string `json:"command"`
	}
	if json.Unmarshal(raw, &e) != nil {
		return false
	}
	return (e.Type == "command" || e.Type == "") && isOurCommand(e.Command, sub)
}

// has reports whether event has our entry in any matcher group.
func (s *settings) has(h agentHook) (bool, error) {
	groups, err := s.groups(h.event)
	if err != nil {
		return false, err
	}
	for _, g := range groups {
		if _, list, ok := groupHooks(g); ok {
			for _, e := range list {
				if isOurEntry(e, h.sub) {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

func (s *settings) status() (ClaudeStatus, error) {
	st := ClaudeStatus{Settings: s.path}
	var err error
	if st.SessionStart, err = s.has(agentHooks[0]); err != nil {
		return st, err
	}
	st.Stop, err = s.has(agentHooks[1])
	return st, err
}

// save writes the settings back atomically. When nothing but an empty
// object is left of a file, the file is removed (and .claude/ if empty).
// finish saves the settings when an install or uninstall changed them and
// returns the status after.
func (s *settings) finish(changed bool) (ClaudeStatus, error) {
	if changed {
		if err := s.save(); err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
	}
	st, err := s.status()
	st.Changed = changed
	return st, err
}

func (s *settings) save() error {
	if s.hooks.len() > 0 {
		raw, err := marshal(s.hooks)
		if err != nil {
			return err
		}
		s.top.set("hooks", raw)
	} else {
		s.top.del("hooks")
	}
	if s.top.len() == 0 {
		if !s.exists {
			return nil
		}
		if err := checkSettingsPath(filepath.Dir(filepath.Dir(s.path))); err != nil {
			return err
		}
		if err := os.Remove(s.path); err != nil {
			return fmt.Errorf("remove empty agent settings: %w", err)
		}
		_ = os.Remove(filepath.Dir(s.path)) // only if empty
		return nil
	}
	data, err := marshalIndent(s.top)
	if s.compact {
		// Keep a one-line file on one line.
		data, err = marshal(s.top)
		data = append(data, '\n')
	}
	if err != nil {
		return fmt.Errorf("encode %s: %w", s.path, err)
	}
	if err := manifest.WriteFile(s.path, data, s.perm); err != nil {
		return fmt.Errorf("write agent settings: %w", err)
	}
	return nil
}

// CheckClaude reports whether learnwatch's entries are in the agent's
// settings under root.
func CheckClaude(root string) (ClaudeStatus, error) {
	s, err := loadSettings(root)
	if err != nil {
		return ClaudeStatus{Settings: filepath.Join(root, SettingsFile)}, err
	}
	return s.status()
}

// InstallClaude adds learnwatch's SessionStart hook (the session-start
// reconcile and index) and Stop hook (the citation scan) to
// root/.claude/settings.json, creating it if needed. Every other key and
// hook entry is kept. An entry already present, in any matcher group and
// any formatting, is not added again; then the file is not written at all.
// A settings file that is not valid JSON is a *FileError and nothing is
// written.
//
// The entries run binary by absolute path when it is given (the agent may
// start hooks with a minimal PATH); "" runs learnwatch from PATH.
func InstallClaude(root, binary string) (ClaudeStatus, error) {
	s, err := loadSettings(root)
	if err != nil {
		return ClaudeStatus{Settings: filepath.Join(root, SettingsFile)}, err
	}
	changed := false
	for _, h := range agentHooks {
		found, err := s.has(h)
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		if found {
			continue
		}
		groups, _ := s.groups(h.event)
		g := newObject()
		if h.matcher {
			g.set("matcher", json.RawMessage(`""`))
		}
		entry, err := marshal(map[string]string{"type": "command", "command": h.command(binary)})
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		list, err := marshal([]json.RawMessage{entry})
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		g.set("hooks", list)
		graw, err := marshal(g)
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		raw, err := marshal(append(groups, graw))
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		s.hooks.set(h.event, raw)
		changed = true
	}
	st, err := s.finish(changed)
	st.Command = commandName(binary)
	return st, err
}

// UninstallClaude removes learnwatch's entries from the agent's settings,
// and the matcher groups, event arrays and "hooks" object that leaves
// empty. Everything else stays. When the file is left as an empty object it
// is removed.
func UninstallClaude(root string) (ClaudeStatus, error) {
	s, err := loadSettings(root)
	if err != nil {
		return ClaudeStatus{Settings: filepath.Join(root, SettingsFile)}, err
	}
	changed := false
	for _, h := range agentHooks {
		groups, err := s.groups(h.event)
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		var keep []json.RawMessage
		removed := false
		for _, graw := range groups {
			g, list, ok := groupHooks(graw)
			if !ok {
				keep = append(keep, graw)
				continue
			}
			var rest []json.RawMessage
			for _, e := range list {
				if isOurEntry(e, h.sub) {
					removed = true
					continue
				}
				rest = append(rest, e)
			}
			switch {
			case len(rest) == len(list):
				keep = append(keep, graw)
			case len(rest) > 0:
				raw, err := marshal(rest)
				if err != nil {
					return ClaudeStatus{Settings: s.path}, err
				}
				g.set("hooks", raw)
				graw, err = marshal(g)
				if err != nil {
					return ClaudeStatus{Settings: s.path}, err
				}
				keep = append(keep, graw)
			}
		}
		if !removed {
			continue
		}
		changed = true
		if len(keep) == 0 {
			s.hooks.del(h.event)
			continue
		}
		raw, err := marshal(keep)
		if err != nil {
			return ClaudeStatus{Settings: s.path}, err
		}
		s.hooks.set(h.event, raw)
	}
	return s.finish(changed)
}
