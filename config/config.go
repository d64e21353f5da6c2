// Package config reads the optional .memory/learnwatch.yaml. Every setting
// has a default, so a missing file is the same as an empty one. A key the
// binary does not know is an error naming it with its line: a misspelt
// `blok: true` must not silently leave commits unblocked.
package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/learnwatch/learnwatch/safefs"
)

// FileName is the config file's path relative to the repository root.
const FileName = ".memory/learnwatch.yaml"

// Config is the whole configuration.
type Config struct {
	Staleness Staleness `yaml:"staleness"`
	Precommit Precommit `yaml:"precommit"`
	Watch     Watch     `yaml:"watch"`
	Index     Index     `yaml:"index"`
	Learn     Learn     `yaml:"learn"`
	Lock      Lock      `yaml:"lock"`
	Engine    Pass      `yaml:"engine"`

	// Warnings says which settings Load clamped to their safe range
	// (Clamp); callers print them on stderr.
	Warnings []string `yaml:"-"`
}

// Staleness configures §5 reference extraction.
type Staleness struct {
	// Extensions of files that count as source references (no dot).
	Extensions []string `yaml:"extensions"`
	// Ignore lists path globs (path.Match syntax, or a directory prefix
	// ending in "/") whose references are never reported.
	Ignore []string `yaml:"ignore"`
	// RenameDepth bounds how many commits are walked to find a rename.
	RenameDepth int `yaml:"rename_depth"`
	// Sources lists globs (gitignore syntax) of Markdown files whose
	// references are checked read-only besides .memory/knowledge.
	Sources []string `yaml:"sources"`
	// NoPresets turns off the automatically detected sources (docs/adr,
	// doc/adr, docs/decisions, **/KNOWLEDGE.md).
	NoPresets bool `yaml:"no_presets"`
}

// Pass configures how an engine pass decides a file is unchanged (the
// engine: section).
type Pass struct {
	// CheckStat is like git's core.checkStat: "default" compares size,
	// mtime, ctime and inode with the stat cache; "minimal" only size and
	// mtime (file systems whose ctime or inode numbers are not stable).
	// "" means "default".
	CheckStat string `yaml:"check_stat"`
}

// Validate refuses a check_stat other than default or minimal.
func (e Pass) Validate() error {
	switch e.CheckStat {
	case "", "default", "minimal":
		return nil
	}
	return fmt.Errorf("engine.check_stat must be default or minimal, not %q", e.CheckStat)
}

// Precommit configures the pre-commit hook.
type Precommit struct {
	// Block makes the hook fail the commit (exit 1) when knowledge goes stale.
	Block bool `yaml:"block"`
}

// Watch configures the long-running watcher.
type Watch struct {
	Debounce Duration `yaml:"debounce"`
	Render   bool     `yaml:"render"`
	// Rescan is the periodic full-reconcile interval used only when the
	// inotify watch limit was hit.
	Rescan Duration `yaml:"rescan"`
	// MaxDelay caps how long a steady stream of events can postpone a
	// reconcile (measured from the first event of a burst; 0: the watcher's
	// default, 2s).
	MaxDelay Duration `yaml:"max_delay"`
	// Grace is how long an artifact must stay missing, beyond the
	// debounce, before the watcher calls it deleted (0: the watcher's
	// default, 2s): an editor or a script that moves a file aside and back
	// is not a deletion.
	Grace Duration `yaml:"grace"`
}

// Index configures the session-start index.
type Index struct {
	Budget int `yaml:"budget"`
}

// Learn configures the learning engine (see learning.go for the engine's
// numbers and their validation).
type Learn struct {
	// HighConfidenceRoles are adversarial roles whose patterns a validator's
	// false-positive verdict penalises at 1.5 instead of 1.0 (default
	// sentinel, inspector; an empty list turns the extra weight off).
	HighConfidenceRoles []string `yaml:"high_confidence_roles"`
	Engine              `yaml:",inline"`
}

// Lock configures lock waiting.
type Lock struct {
	Timeout Duration `yaml:"timeout"`
	// QueueAfter is how long a command that only adds facts (observe)
	// waits for the lock before it queues its input in the inbox instead.
	QueueAfter Duration `yaml:"queue_after"`
	// HookTimeout bounds a hook's wait for the lock (never above Timeout).
	HookTimeout Duration `yaml:"hook_timeout"`
}

// Default lock waits.
const (
	DefaultLockTimeout = 10 * time.Second
	DefaultQueueAfter  = 2 * time.Second
	DefaultHookTimeout = 3 * time.Second
)

// Duration is a time.Duration written as "200ms", "5s" in YAML.
type Duration struct{ time.Duration }

// UnmarshalYAML parses a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	var s string
	if err := n.Decode(&s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	d.Duration = v
	return nil
}

// MarshalYAML writes the duration as a string.
func (d Duration) MarshalYAML() (any, error) { return d.Duration.String(), nil }

// DefaultExtensions are the source extensions of DESIGN.md §5.
var DefaultExtensions = []string{"ts", "tsx", "js", "cjs", "mjs", "md", "sh", "py", "go", "java", "rs", "rb", "c", "h", "cc", "cpp", "cs", "kt", "swift", "json", "yaml", "yml", "toml"}

// DefaultRenameDepth is how many commits the rename search walks by default.
const DefaultRenameDepth = 2000

// Default returns the configuration used when no file exists.
func Default() Config {
	return Config{
		Staleness: Staleness{Extensions: append([]string(nil), DefaultExtensions...), RenameDepth: DefaultRenameDepth},
		Watch:     Watch{Debounce: Duration{200 * time.Millisecond}, Rescan: Duration{30 * time.Second}},
		Index:     Index{Budget: 800},
		Learn:     Learn{HighConfidenceRoles: append([]string(nil), DefaultHighConfidenceRoles...), Engine: DefaultEngine()},
		Lock:      Lock{Timeout: Duration{DefaultLockTimeout}, QueueAfter: Duration{DefaultQueueAfter}, HookTimeout: Duration{DefaultHookTimeout}},
		Engine:    Pass{CheckStat: "default"},
	}
}

// Load reads root/.memory/learnwatch.yaml over the defaults. A missing file
// is not an error; a malformed one is, naming the file.
func Load(root string) (Config, error) {
	c := Default()
	path := filepath.Join(root, FileName)
	data, err := safefs.ReadFile(path, safefs.MaxConfig) // regular file, no symlink, at most 1 MiB
	if errors.Is(err, os.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", path, err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return c, nil
	}
	if err := decodeStrict(data, &c); err != nil {
		return Default(), fmt.Errorf("parse %s: %w", path, err)
	}
	c.Warnings = c.Clamp()
	if len(c.Staleness.Extensions) == 0 {
		c.Staleness.Extensions = append([]string(nil), DefaultExtensions...)
	}
	if c.Watch.Debounce.Duration <= 0 {
		c.Watch.Debounce.Duration = 200 * time.Millisecond
	}
	if c.Watch.Rescan.Duration <= 0 {
		c.Watch.Rescan.Duration = 30 * time.Second
	}
	if c.Index.Budget <= 0 {
		c.Index.Budget = 800
	}
	if c.Lock.Timeout.Duration <= 0 {
		c.Lock.Timeout.Duration = DefaultLockTimeout
	}
	if c.Lock.QueueAfter.Duration <= 0 {
		c.Lock.QueueAfter.Duration = DefaultQueueAfter
	}
	if c.Lock.HookTimeout.Duration <= 0 {
		c.Lock.HookTimeout.Duration = DefaultHookTimeout
	}
	if c.Staleness.RenameDepth <= 0 {
		c.Staleness.RenameDepth = DefaultRenameDepth
	}
	if err := c.Learn.Engine.Validate(); err != nil {
		return Default(), fmt.Errorf("%s: %w", path, err)
	}
	if err := c.Engine.Validate(); err != nil {
		return Default(), fmt.Errorf("%s: %w", path, err)
	}
	return c, nil
}

// decodeStrict decodes YAML into c, refusing keys Config does not have.
// yaml.v3 names each problem with its line ("line 3: field blok not found
// in type config.Precommit"); the type name is rewritten in the user's
// terms.
func decodeStrict(data []byte, c *Config) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	err := dec.Decode(c)
	if err == nil || errors.Is(err, io.EOF) {
		return nil
	}
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs := make([]string, len(te.Errors))
		for i, m := range te.Errors {
			msgs[i] = userTerms(m)
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	return err
}

// userTerms turns "line 3: field blok not found in type config.Precommit"
// into "line 3: unknown key \"blok\" under precommit".
func userTerms(msg string) string {
	line, rest, ok := strings.Cut(msg, ": ")
	if !ok || !strings.HasPrefix(rest, "field ") {
		return msg
	}
	field, typ, ok := strings.Cut(strings.TrimPrefix(rest, "field "), " not found in type ")
	if !ok {
		return msg
	}
	section := sectionOf[strings.TrimPrefix(typ, "config.")]
	if section == "" {
		return fmt.Sprintf("%s: unknown key %q", line, field)
	}
	return fmt.Sprintf("%s: unknown key %q under %s", line, field, section)
}

// sectionOf names each section's Go type by its key in the file.
var sectionOf = map[string]string{
	"Config":    "the top level",
	"Staleness": "staleness",
	"Precommit": "precommit",
	"Watch":     "watch",
	"Index":     "index",
	"Learn":     "learn",
	"Lock":      "lock",
}
