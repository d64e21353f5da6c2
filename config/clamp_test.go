package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func load(t *testing.T, yaml string) Config {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, FileName), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(root)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLoadClampsNumericSettings(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		get        func(Config) any
		want       any
		warnKey    string // "" when no warning is expected
	}{
		{"huge budget", "index:\n  budget: 1000000000\n", func(c Config) any { return c.Index.Budget }, 4000, "index.budget"},
		{"tiny budget", "index:\n  budget: 3\n", func(c Config) any { return c.Index.Budget }, 50, "index.budget"},
		{"budget in range", "index:\n  budget: 1200\n", func(c Config) any { return c.Index.Budget }, 1200, ""},
		{"budget at max", "index:\n  budget: 4000\n", func(c Config) any { return c.Index.Budget }, 4000, ""},
		{"zero budget is the default", "index:\n  budget: 0\n", func(c Config) any { return c.Index.Budget }, 800, ""},
		{"negative budget is the default", "index:\n  budget: -5\n", func(c Config) any { return c.Index.Budget }, 800, ""},
		{"rename depth bomb", "staleness:\n  rename_depth: 100000000\n", func(c Config) any { return c.Staleness.RenameDepth }, 10000, "staleness.rename_depth"},
		{"rename depth in range", "staleness:\n  rename_depth: 50\n", func(c Config) any { return c.Staleness.RenameDepth }, 50, ""},
		{"debounce too long", "watch:\n  debounce: 1000h\n", func(c Config) any { return c.Watch.Debounce.Duration }, 10 * time.Second, "watch.debounce"},
		{"debounce too short", "watch:\n  debounce: 1ns\n", func(c Config) any { return c.Watch.Debounce.Duration }, 10 * time.Millisecond, "watch.debounce"},
		{"max delay too long", "watch:\n  max_delay: 24h\n", func(c Config) any { return c.Watch.MaxDelay.Duration }, time.Minute, "watch.max_delay"},
		{"negative max delay is the watcher default", "watch:\n  max_delay: -5s\n", func(c Config) any { return c.Watch.MaxDelay.Duration }, time.Duration(0), ""},
		{"max delay unset stays 0 (watcher default)", "watch:\n  render: true\n", func(c Config) any { return c.Watch.MaxDelay.Duration }, time.Duration(0), ""},
		{"rescan busy loop", "watch:\n  rescan: 1ms\n", func(c Config) any { return c.Watch.Rescan.Duration }, 5 * time.Second, "watch.rescan"},
		{"rescan in range", "watch:\n  rescan: 2m\n", func(c Config) any { return c.Watch.Rescan.Duration }, 2 * time.Minute, ""},
		{"lock timeout forever", "lock:\n  timeout: 87600h\n", func(c Config) any { return c.Lock.Timeout.Duration }, time.Minute, "lock.timeout"},
		{"lock timeout too short", "lock:\n  timeout: 1us\n", func(c Config) any { return c.Lock.Timeout.Duration }, 100 * time.Millisecond, "lock.timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := load(t, tc.yaml)
			if got := tc.get(c); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
			if tc.warnKey == "" {
				if len(c.Warnings) != 0 {
					t.Errorf("unexpected warnings %q", c.Warnings)
				}
				return
			}
			if len(c.Warnings) != 1 || !strings.Contains(c.Warnings[0], tc.warnKey+" ") || !strings.Contains(c.Warnings[0], FileName) {
				t.Errorf("warnings %q do not name %s", c.Warnings, tc.warnKey)
			}
		})
	}
}

func TestClampSeveralKeys(t *testing.T) {
	c := load(t, "index:\n  budget: 99999\nstaleness:\n  rename_depth: 99999\nlock:\n  timeout: 10s\n")
	if len(c.Warnings) != 2 || c.Index.Budget != 4000 || c.Staleness.RenameDepth != 10000 || c.Lock.Timeout.Duration != 10*time.Second {
		t.Fatalf("%+v", c)
	}
}

// The defaults are inside their ranges: a config without the key never
// warns.
func TestDefaultsInRange(t *testing.T) {
	c := Default()
	if w := c.Clamp(); len(w) != 0 {
		t.Fatalf("defaults clamped: %q", w)
	}
}

// FuzzLoadInRange: whatever the repository's file says, an accepted config
// holds every numeric setting inside its safe range (0 only where 0 means
// the watcher's default).
func FuzzLoadInRange(f *testing.F) {
	f.Add("index:\n  budget: 1000000000\nstaleness:\n  rename_depth: 100000000\n")
	f.Add("watch:\n  debounce: 1ns\n  rescan: 100000h\n  max_delay: 1us\nlock:\n  timeout: 0s\n")
	f.Add("index: {budget: -7}\n")
	f.Add("watch:\n  max_delay: -5s\n")
	f.Fuzz(func(t *testing.T, yaml string) {
		root := t.TempDir()
		if err := os.MkdirAll(filepath.Join(root, ".memory"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, FileName), []byte(yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(root)
		if err != nil {
			return
		}
		in := func(v, lo, hi int64) bool { return v >= lo && v <= hi }
		d := func(r DurationRange, v time.Duration) bool { return in(int64(v), int64(r.Min), int64(r.Max)) }
		if !in(int64(c.Index.Budget), int64(BudgetRange.Min), int64(BudgetRange.Max)) ||
			!in(int64(c.Staleness.RenameDepth), int64(RenameDepthRange.Min), int64(RenameDepthRange.Max)) ||
			!d(DebounceRange, c.Watch.Debounce.Duration) || !d(RescanRange, c.Watch.Rescan.Duration) ||
			!d(LockTimeoutRange, c.Lock.Timeout.Duration) ||
			(c.Watch.MaxDelay.Duration != 0 && !d(MaxDelayRange, c.Watch.MaxDelay.Duration)) {
			t.Fatalf("out of range: %+v", c)
		}
	})
}
