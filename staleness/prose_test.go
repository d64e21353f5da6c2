package staleness

import (
	"reflect"
	"testing"
)

// TestExtractProse is the extraction table: lines of prose written the way
// real projects write design notes, READMEs, MADR ADRs and KNOWLEDGE.md
// files, each with the references it must yield (path, and "=" for a
// rooted one). Resolution against a tree is tested by the corpus.
func TestExtractProse(t *testing.T) {
	tests := []struct {
		style, line string
		want        []string
	}{
		// Design notes.
		{"design", "The registry lives in `plugins.ts`; each adapter in `adapters/*.ts` registers itself.", []string{"plugins.ts"}},
		{"design", "Parsing moved from src/cli/args.ts to `commands/init.ts` (see #412).", []string{"src/cli/args.ts", "commands/init.ts"}},
		{"design", "We picked Node.js 20 and Vue.js 3 over Next.js; ASP.NET was never an option.", []string{"Node.js", "Vue.js", "Next.js"}},
		{"design", "Release v1.2.3 fixed the race; 2.0 drops the legacy `config.yaml` loader.", []string{"config.yaml"}},
		{"design", "Build output goes to `dist/index.js` and is never committed.", []string{"dist/index.js"}},
		{"design", "Per-user state is in `~/.config/tool/state.json` or `$XDG_STATE_HOME/tool.json`.", nil},
		{"design", "Each skill has `<skill>/SKILL.md` and optional `{name}.md` helpers under `devflowDir/skills/`.", nil},
		{"design", "Templates render to `devflowDir/memory/WORKING-MEMORY.md` at session start.", []string{"devflowDir/memory/WORKING-MEMORY.md"}},
		{"design", "Hot path: `src/queue/worker.go:142` (the retry loop), then worker.go#L200-L230.", []string{"src/queue/worker.go:142", "worker.go#L200-L230"}},
		{"design", "Cf. https://github.com/acme/tool/blob/main/src/server.ts and github.com/acme/tool/x.go.", nil},
		// READMEs.
		{"readme", "Copy `.env.example` to `.env`, then edit `tsconfig.json` and `package.json` scripts.", []string{"tsconfig.json", "package.json"}},
		{"readme", "See [the contributing guide](./CONTRIBUTING.md) and [architecture](docs/architecture.md#layers).", []string{"=CONTRIBUTING.md", "docs/architecture.md#layers"}},
		{"readme", "CI runs `.github/workflows/ci.yml`; lint settings are in `pyproject.toml`.", []string{".github/workflows/ci.yml", "pyproject.toml"}},
		{"readme", "Run `npm test` or `go test ./...`; e.g. `go test ./internal/...`.", nil},
		{"readme", "Supported: Linux, macOS 13+, Windows 10 (see `docs/platforms.md`).", []string{"docs/platforms.md"}},
		// MADR ADRs.
		{"madr", "* Status: accepted", nil},
		{"madr", "* Deciders: @alice, @bob", nil},
		{"madr", "Chosen option: \"SQLite\", because `db/schema.sql` stays readable and `db/migrate.py` is simple.", []string{"db/migrate.py"}},
		{"madr", "* Good, because the adapter in `internal/store/sqlite.go` is 200 lines", []string{"internal/store/sqlite.go"}},
		{"madr", "Supersedes [ADR-0003](0003-use-postgres.md).", []string{"0003-use-postgres.md"}},
		// KNOWLEDGE.md files.
		{"knowledge", "- **Gotcha**: `handler.py` must import `models.py` lazily (circular import).", []string{"handler.py", "models.py"}},
		{"knowledge", "- Keys come from `references/gdpr.md`, section 4.", []string{"references/gdpr.md"}},
		{"knowledge", "- Never edit `generated/api.ts` by hand: `scripts/gen.sh` rewrites it.", []string{"generated/api.ts", "scripts/gen.sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.style, func(t *testing.T) {
			var got []string
			for _, r := range ExtractMarkdown([]byte(tt.line), Options{}) {
				s := r.Raw
				if r.Rooted {
					s = "=" + r.Path
				}
				got = append(got, s)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("%s\n got %q\nwant %q", tt.line, got, tt.want)
			}
		})
	}
}

// TestLookAlikes pins the words that only look like files and the
// placeholder rule.
func TestLookAlikes(t *testing.T) {
	for _, w := range []string{"Node.js", "vue.js", "ASP.NET", "v1.2.md", "1.2.3.ts", "2.0.json", "v1.md"} {
		if !looksLikeWord(w) {
			t.Errorf("looksLikeWord(%q) = false", w)
		}
	}
	for _, w := range []string{"node.ts", "a1.2.md", "index.js", "src/Node.js", ".js", "v.md", "1..2.md"} {
		if looksLikeWord(w) {
			t.Errorf("looksLikeWord(%q) = true", w)
		}
	}
	for _, p := range []string{"devflowDir/x.md", "projectRoot/src/a.ts", "outputPath/a.json", "homeFolder/x.md"} {
		if !isPlaceholder(p) {
			t.Errorf("isPlaceholder(%q) = false", p)
		}
	}
	for _, p := range []string{"Dir/x.md", "dir/x.md", "srcdir/x.md", "my-Dir/x.md", "x.md", "Dir"} {
		if isPlaceholder(p) {
			t.Errorf("isPlaceholder(%q) = true", p)
		}
	}
}

// FuzzRefSuffix: the line suffix kept for renamed_to is the end of the
// reference as written, and only references with a line have one; the
// look-alike and placeholder rules never panic.
func FuzzRefSuffix(f *testing.F) {
	f.Add("src/a.go:12 b.go#L3-L9 c\\d.ts:1:2 x.md#intro v1.2.md devflowDir/x.md")
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range ExtractText(s, Options{}) {
			suf := refSuffix(r)
			if r.Line == 0 && suf != "" {
				t.Fatalf("%q: suffix %q without a line", r.Raw, suf)
			}
			if len(suf) > len(r.Raw) || r.Raw[len(r.Raw)-len(suf):] != suf {
				t.Fatalf("%q: suffix %q is not its end", r.Raw, suf)
			}
			_ = looksLikeWord(r.Path)
			_ = isPlaceholder(r.Path)
		}
	})
}
