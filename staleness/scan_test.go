package staleness

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

const decisions = `<!-- TL;DR: 2 decisions. Key: ADR-001, ADR-003 -->
# Architectural Decisions

Decisions of this repo.

## ADR-001: Auth lives in one place

- **Status**: Accepted
- **Context**: handlers in ` + "`src/auth/login.go`" + ` and src/auth/old.go:3
- **Decision**: see [the doc](../../docs/auth.md)

` + "```go\n// src/in_fence.go\n```" + `

## ADR-002: Superseded one

- **Status**: Superseded by ADR-003
- **Context**: src/superseded_missing.go

## ADR-003: Fine

- **Status**: Accepted
- **Context**: src/auth/login.go:2
`

const pitfalls = `# Known Pitfalls

## PF-001: Renamed helper

- **Area**: src/util.go
- **Issue**: breaks
- **Status**: Active

## PF-002: Gone

- **Area**: x
- **Issue**: src/gone.go
- **Status**: Deprecated
`

func obsLine(id, status, details string, evidence ...string) string {
	o := map[string]any{
		"id": id, "type": "pitfall", "pattern": "p " + id, "confidence": 0.5, "observations": 1,
		"first_seen": "2024-01-01T00:00:00Z", "last_seen": "2024-01-01T00:00:00Z", "status": status,
		"evidence": evidence, "details": details, "quality_ok": true,
	}
	b, _ := json.Marshal(o)
	return string(b)
}

func scanRepo(t *testing.T) (*gitRepo, *manifest.Log) {
	r := newRepo(t)
	r.write("src/auth/login.go", "a\nb\nc\n")
	r.write("src/auth/old.go", "a\nb\nc\n")
	r.write("src/util.go", "package util\n")
	r.write("docs/auth.md", "# auth\n")
	r.write(".memory/knowledge/decisions.md", decisions)
	r.write(".memory/knowledge/pitfalls.md", pitfalls)
	r.commit("init")
	r.git("rm", "-q", "src/auth/old.go")
	r.mv("src/util.go", "lib/util.go")
	r.commit("move")
	log := manifest.ParseLog([]byte(strings.Join([]string{
		obsLine("obs_fine", "created", "see src/auth/login.go:3"),
		obsLine("obs_stale", "observing", "context: x; decision: use src/util.go", "src/missing.ts:1", "src/auth/login.go:9"),
		obsLine("obs_dep", "deprecated", "src/gone.go"),
		`{not json`,
	}, "\n") + "\n"))
	return r, log
}

func TestScan(t *testing.T) {
	r, log := scanRepo(t)
	rep, err := Scan(r.dir, open(t, r.dir, Auto), log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Stale {
		got = append(got, fmt.Sprintf("%s %s %s %s", f.ID, f.Ref, f.Reason, f.RenamedTo))
	}
	want := []string{
		"ADR-001 src/auth/old.go:3 missing ",
		"PF-001 src/util.go missing lib/util.go",
		"obs_stale src/util.go missing lib/util.go",
		"obs_stale src/missing.ts:1 missing ",
		"obs_stale src/auth/login.go:9 line-past-eof ",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stale:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// ADR-001: login.go, old.go:3, docs/auth.md; ADR-003: login.go:2;
	// PF-001: util.go; obs_fine: 1; obs_stale: 3.
	if rep.Checked != 9 {
		t.Errorf("checked = %d, want 9", rep.Checked)
	}
}

func TestScanNoMemory(t *testing.T) {
	dir := t.TempDir()
	rep, err := Scan(dir, open(t, dir, Auto), nil, Options{})
	if err != nil || rep.Checked != 0 || len(rep.Stale) != 0 || rep.Stale == nil {
		t.Fatalf("rep = %+v, err = %v", rep, err)
	}
}

func TestMark(t *testing.T) {
	r, log := scanRepo(t)
	rep, err := Scan(r.dir, open(t, r.dir, Auto), log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// A previously stale observation whose refs are fine again, and one
	// marked stale by another tool for another reason.
	fine := log.Find("obs_fine")
	fine.MayBeStale, fine.StaleReason, fine.NeedsReview = true, "code-ref-missing:src/x.go", true
	dep := log.Find("obs_dep")
	dep.MayBeStale, dep.StaleReason = true, "code-ref-missing:src/gone.go"

	if n := Mark(log, rep.Stale); n != 2 {
		t.Errorf("Mark changed %d, want 2", n)
	}
	s := log.Find("obs_stale")
	if !s.MayBeStale || !s.NeedsReview || s.StaleReason != "code-ref-missing:src/util.go" {
		t.Errorf("obs_stale = %+v", s)
	}
	if fine.MayBeStale || fine.StaleReason != "" || !fine.NeedsReview {
		t.Errorf("obs_fine not cleared (or needsReview lost): %+v", fine)
	}
	if !dep.MayBeStale || dep.StaleReason == "" {
		t.Errorf("deprecated observation touched: %+v", dep)
	}
	if n := Mark(log, rep.Stale); n != 0 {
		t.Errorf("second Mark changed %d", n)
	}
	if !log.Changed() {
		t.Fatal("log not changed")
	}
	// Written back: the corrupt line stays, the fields are there.
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := manifest.WriteLog(path, log); err != nil {
		t.Fatal(err)
	}
	back, err := manifest.ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Corrupt() != 1 || !back.Find("obs_stale").MayBeStale {
		t.Errorf("round trip lost data")
	}

	// Another tool's reason is not ours to clear.
	other := log.Find("obs_fine")
	other.MayBeStale, other.StaleReason = true, "schema-changed"
	if n := Mark(log, nil); n != 1 || !other.MayBeStale {
		t.Errorf("Mark(nil) = %d, other = %+v", n, other)
	}
}

func TestScanStaged(t *testing.T) {
	r, log := scanRepo(t)
	r.mv("src/auth/login.go", "src/auth/signin.go")
	rep, err := Scan(r.dir, open(t, r.dir, Staged), log, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range rep.Stale {
		if f.Ref == "src/auth/login.go" || strings.HasPrefix(f.Ref, "src/auth/login.go:") {
			got = append(got, f.ID+" "+f.Ref+" "+f.RenamedTo)
		}
	}
	want := "ADR-001 src/auth/login.go src/auth/signin.go|ADR-003 src/auth/login.go:2 src/auth/signin.go|obs_fine src/auth/login.go:3 src/auth/signin.go|obs_stale src/auth/login.go:9 src/auth/signin.go"
	if strings.Join(got, "|") != want {
		t.Errorf("got  %s\nwant %s", strings.Join(got, "|"), want)
	}
}
