package markdown

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

var day = time.Date(2024, 3, 5, 23, 30, 0, 0, time.UTC)

func TestParseDetails(t *testing.T) {
	tests := []struct {
		in   string
		want map[string]string
	}{
		{"context: slow CI; decision: cache modules; rationale: 3x faster",
			map[string]string{"context": "slow CI", "decision": "cache modules", "rationale": "3x faster"}},
		{"Area: api/http.go; Issue: timeouts: 30s; IMPACT: users wait; resolution: set ctx deadline;",
			map[string]string{"area": "api/http.go", "issue": "timeouts: 30s", "impact": "users wait", "resolution": "set ctx deadline"}},
		{"context: a; b; c: d; decision: e",
			map[string]string{"context": "a; b; c: d", "decision": "e"}},
		{"context: x;decision: y", map[string]string{"context": "x", "decision": "y"}},
		{"context: x; context: y", map[string]string{"context": "x"}},
		{"run go test before pushing", map[string]string{"": "run go test before pushing"}},
		{"Note: free text; decision: d", map[string]string{"note": "free text", "decision": "d"}},
		{"Step 1: make lint", map[string]string{"": "Step 1: make lint"}},
		{"context:x;decision:y", map[string]string{"context": "x", "decision": "y"}},
		{"Issue:", map[string]string{"issue": ""}},
		{"see http://x: y; decision: d", map[string]string{"": "see http://x: y", "decision": "d"}},
		{"", map[string]string{}},
	}
	for _, tt := range tests {
		if got := ParseDetails(tt.in); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseDetails(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"Run the Linter before Commit!":    "run-the-linter-before-commit",
		"  --Hello__World--  ":             "hello-world",
		"":                                 "untitled",
		"!!!":                              "untitled",
		"Café au lait":                     "caf-au-lait",
		strings.Repeat("ab ", 30):          "ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab-ab",
		strings.Repeat("a", 49) + " bcdef": strings.Repeat("a", 49),
		strings.Repeat("x", 80):            strings.Repeat("x", 50),
	}
	for in, want := range tests {
		if got := Slug(in); got != want {
			t.Errorf("Slug(%q) = %q, want %q", in, got, want)
		}
		if got := Slug(in); len(got) > 50 || strings.HasSuffix(got, "-") {
			t.Errorf("Slug(%q) = %q: too long or trailing dash", in, got)
		}
	}
}

func TestRenderCommand(t *testing.T) {
	got, err := RenderCommand(Entry{
		ObservationID: "obs_1",
		Pattern:       "Run make lint before committing",
		Details:       "Step 1: make lint\nStep 2: commit",
		Evidence:      []string{"session 2024-01-01", "  multi\nline  "},
		Date:          day,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "---\ndescription: Run make lint before committing\n---\n\n# Run make lint before committing\n\n" +
		"Step 1: make lint\nStep 2: commit\n\n## Evidence\n\n- session 2024-01-01\n- multi line\n"
	if string(got) != want {
		t.Errorf("RenderCommand =\n%s\nwant\n%s", got, want)
	}
}

func TestRenderSkill(t *testing.T) {
	got, err := RenderSkill(Entry{
		Pattern:  "Check migrations before deploy",
		Details:  "trigger: a deploy is requested; steps: list pending migrations; run them on staging",
		Evidence: []string{"deploy 12"},
	}, "check-migrations-before-deploy")
	if err != nil {
		t.Fatal(err)
	}
	want := `---
name: self-learning:check-migrations-before-deploy
description: Check migrations before deploy
user-invocable: false
allowed-tools: Read, Grep, Glob
---

# Check migrations before deploy

trigger: a deploy is requested; steps: list pending migrations; run them on staging

## Iron Law

CHECK MIGRATIONS BEFORE DEPLOY

## When This Skill Activates

- a deploy is requested
- The task matches: Check migrations before deploy
- Seen before in: deploy 12

## Procedure

1. Confirm the task matches the situation above.
2. list pending migrations
3. run them on staging
4. Apply the rule: Check migrations before deploy
5. Verify the result before reporting the task done.
`
	if string(got) != want {
		t.Errorf("RenderSkill =\n%s\nwant\n%s", got, want)
	}
	fm, body, err := Frontmatter(got)
	if err != nil {
		t.Fatal(err)
	}
	if fm["user-invocable"] != false || fm["allowed-tools"] != "Read, Grep, Glob" || fm["name"] != "self-learning:check-migrations-before-deploy" {
		t.Errorf("frontmatter = %v", fm)
	}
	if !bytes.HasPrefix(body, []byte("\n# Check")) {
		t.Errorf("body starts %q", body[:20])
	}
}

func TestRenderSkillProcedureFromOtherDetails(t *testing.T) {
	got, err := RenderSkill(Entry{Pattern: "p", Details: "context: big repo; issue: slow; resolution: use index"}, "p")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"- big repo\n", "2. Issue: slow\n3. Resolution: use index\n4. Apply the rule: p\n"} {
		if !bytes.Contains(got, []byte(want)) {
			t.Errorf("skill lacks %q:\n%s", want, got)
		}
	}
}

func TestRenderDecision(t *testing.T) {
	got := RenderDecision("ADR-004", Entry{
		ObservationID: "obs_d1",
		Pattern:       "Use sqlc\nfor queries",
		Details:       "context: ORMs hid N+1 queries; decision: generate code with sqlc; rationale: typed queries,\n## ADR-999: no heading injection",
		Date:          day,
	})
	want := "## ADR-004: Use sqlc for queries\n\n- **Date**: 2024-03-05\n- **Status**: Accepted\n" +
		"- **Context**: ORMs hid N+1 queries\n- **Decision**: generate code with sqlc\n" +
		"- **Consequences**: typed queries, ## ADR-999: no heading injection\n- **Source**: self-learning:obs_d1\n"
	if string(got) != want {
		t.Errorf("RenderDecision =\n%s\nwant\n%s", got, want)
	}
	secs := Sections(got)
	if len(secs) != 1 || secs[0].ID != "ADR-004" || secs[0].Title != "Use sqlc for queries" ||
		secs[0].Status != "Accepted" || secs[0].Source != "obs_d1" || !secs[0].HasMarker {
		t.Errorf("rendered decision parses as %+v", secs)
	}

	fallback := string(RenderDecision("ADR-001", Entry{ObservationID: "obs_2", Pattern: "Prefer small PRs", Details: "reviews go faster", Date: day}))
	for _, want := range []string{"- **Context**: reviews go faster\n", "- **Decision**: Prefer small PRs\n", "- **Consequences**: Not recorded.\n"} {
		if !strings.Contains(fallback, want) {
			t.Errorf("fallback decision lacks %q:\n%s", want, fallback)
		}
	}
}

func TestRenderPitfall(t *testing.T) {
	got := RenderPitfall("PF-002", Entry{
		ObservationID: "obs_p1",
		Pattern:       "Tests share a DB",
		Details:       "area: internal/db; issue: parallel tests collide; impact: flaky CI; resolution: one schema per test",
	})
	want := "## PF-002: Tests share a DB\n\n- **Area**: internal/db\n- **Issue**: parallel tests collide\n" +
		"- **Impact**: flaky CI\n- **Resolution**: one schema per test\n- **Status**: Active\n- **Source**: self-learning:obs_p1\n"
	if string(got) != want {
		t.Errorf("RenderPitfall =\n%s\nwant\n%s", got, want)
	}
	secs := Sections(got)
	if len(secs) != 1 || secs[0].Area != "internal/db" || secs[0].Status != "Active" || !secs[0].Active() {
		t.Errorf("rendered pitfall parses as %+v", secs)
	}
	fallback := string(RenderPitfall("PF-003", Entry{ObservationID: "obs_p2", Pattern: "p"}))
	for _, want := range []string{"- **Area**: general\n", "- **Issue**: p\n", "- **Impact**: Not recorded.\n"} {
		if !strings.Contains(fallback, want) {
			t.Errorf("fallback pitfall lacks %q:\n%s", want, fallback)
		}
	}
}

// hostile patterns must survive the YAML frontmatter unchanged.
var hostile = []string{
	`He said "quote" and 'single'`,
	"key: value",
	"# not a comment",
	"- leading dash",
	"{flow: mapping}",
	"[flow, seq]",
	"two\nlines",
	"trailing newline\n",
	"  leading spaces",
	"yes",
	"null",
	"012",
	"---",
	"...",
	"a: b # c",
	"&anchor *alias !tag %directive @at `tick`",
	"tab\there",
	"unicode ✓ and \u2028 separator",
	"",
	"all of it: \"'#\n- {x",
}

func TestFrontmatterRoundTrip(t *testing.T) {
	for _, p := range hostile {
		out, err := RenderCommand(Entry{Pattern: p})
		if err != nil {
			t.Fatalf("RenderCommand(%q): %v", p, err)
		}
		fm, body, err := Frontmatter(out)
		if err != nil {
			t.Fatalf("Frontmatter of %q: %v\n%s", p, err, out)
		}
		if fm["description"] != p {
			t.Errorf("description = %q, want %q\n%s", fm["description"], p, out)
		}
		if !bytes.HasPrefix(body, []byte("\n# ")) {
			t.Errorf("pattern %q: body = %q", p, body)
		}
		skill, err := RenderSkill(Entry{Pattern: p}, Slug(p))
		if err != nil {
			t.Fatal(err)
		}
		fm, _, err = Frontmatter(skill)
		if err != nil || fm["description"] != p {
			t.Errorf("skill frontmatter of %q: %v %v", p, fm, err)
		}
	}
}

func TestSkillFrontmatterOrder(t *testing.T) {
	out, err := RenderSkill(Entry{Pattern: "x: y"}, "x-y")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, line := range strings.Split(string(out), "\n")[1:] {
		if line == "---" {
			break
		}
		k, _, _ := strings.Cut(line, ":")
		keys = append(keys, k)
	}
	want := []string{"name", "description", "user-invocable", "allowed-tools"}
	if !reflect.DeepEqual(keys, want) {
		t.Errorf("frontmatter keys = %q, want %q", keys, want)
	}
}

func TestFrontmatter(t *testing.T) {
	tests := []struct {
		name, src, body, err string
		want                 map[string]any
	}{
		{name: "none", src: "# title\n", body: "# title\n"},
		{name: "empty", src: "---\n---\nbody", want: map[string]any{}, body: "body"},
		{name: "crlf", src: "---\r\na: 1\r\n---\r\nbody", want: map[string]any{"a": 1}, body: "body"},
		{name: "dots close", src: "---\na: x\n...\n", want: map[string]any{"a": "x"}, body: ""},
		{name: "invalid yaml", src: "---\na: b\nc: [\n---\n", err: "frontmatter: line 3: did not find"},
		{name: "bad indentation", src: "---\na: b\n c: d\n---\n", err: "frontmatter: line 3"},
		{name: "not a mapping", src: "---\n- a\n---\n", err: "frontmatter: line 2"},
		{name: "unclosed", src: "---\na: b\n", err: "never closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fm, body, err := Frontmatter([]byte(tt.src))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(fm, tt.want) || string(body) != tt.body {
				t.Errorf("got %v %q, want %v %q", fm, body, tt.want, tt.body)
			}
		})
	}
}
