package reliability

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// expect is what a repository must hold after a run: the model the
// harness keeps of what the processes acknowledged.
type expect struct {
	// obs maps every observation id that must be in the log, exactly once,
	// to the number of sightings it must carry (the "observations" field);
	// a negative number only requires the id to be there.
	obs map[string]int
	// corrupt lists log lines that did not parse before the run and must
	// still be there verbatim (a line that does not parse is never dropped).
	corrupt []string
	// humanFiles are artifact files (relative paths) a person wrote: they
	// need no manifest entry.
	humanFiles map[string]bool
	// dangling are created observations whose artifact is gone with no
	// manifest entry left to notice it (deleted while the manifest was
	// unreadable): they may stay created and unregistered.
	dangling map[string]bool
	// removed are the artifacts the scenario itself deleted, as "path" or
	// "path#ADR-NNN", and the targets their deleted feedback events may
	// name (observation ids, ADR/PF ids): the only ones that may carry a
	// deletion penalty (no penalty without a deletion by the person).
	removed map[string]bool
	// killed is set when some process was SIGKILLed: a stray temp file of
	// an atomic write it was in is allowed (never a half-written file).
	killed bool
	// settled is set after a final reconcile: the manifest must then
	// match the files exactly (hashes included) and every rendered
	// knowledge section must be registered.
	settled bool
}

func (e expect) clone() expect {
	c := e
	c.obs = make(map[string]int, len(e.obs))
	for k, v := range e.obs {
		c.obs[k] = v
	}
	c.corrupt = append([]string(nil), e.corrupt...)
	c.removed = make(map[string]bool, len(e.removed))
	for k, v := range e.removed {
		c.removed[k] = v
	}
	return c
}

// logLine is the part of an observation the checks look at.
type logLine struct {
	ID           string `json:"id"`
	Type         string `json:"type"`
	Status       string `json:"status"`
	ArtifactPath string `json:"artifact_path"`
	Observations int    `json:"observations"`
}

// verify checks the invariants of DESIGN.md on the repository at root and
// returns every violation found (empty: consistent).
func verify(root string, e expect) []string {
	var probs []string
	bad := func(format string, a ...any) { probs = append(probs, fmt.Sprintf(format, a...)) }
	p := manifest.PathsFor(root)

	// 1. The log: every line is JSON or one of the corrupt lines that were
	// there before; every observation id once; the expected ids, no more,
	// no fewer, with the sightings acknowledged.
	obs := map[string]logLine{}
	if data, err := os.ReadFile(p.Log); err == nil {
		corrupt := map[string]int{}
		for _, c := range e.corrupt {
			corrupt[c]++
		}
		lines := strings.Split(string(data), "\n")
		if lines[len(lines)-1] == "" {
			lines = lines[:len(lines)-1]
		}
		for i, line := range lines {
			if strings.TrimSpace(line) == "" {
				continue
			}
			var o logLine
			if err := json.Unmarshal([]byte(line), &o); err != nil {
				if corrupt[line] > 0 {
					corrupt[line]--
					continue
				}
				bad("log line %d does not parse and was not corrupt before: %v: %.200q", i+1, err, line)
				continue
			}
			if _, dup := obs[o.ID]; dup {
				bad("observation %s appears twice in the log", o.ID)
			}
			obs[o.ID] = o
		}
		for line, n := range corrupt {
			if n > 0 {
				bad("a corrupt log line was dropped (it must be kept verbatim): %.200q", line)
			}
		}
	} else if !errors.Is(err, os.ErrNotExist) || len(e.obs) > 0 {
		bad("read the log: %v", err)
	}
	for id, n := range e.obs {
		o, ok := obs[id]
		switch {
		case !ok:
			bad("observation %s was lost", id)
		case n >= 0 && o.Observations != n:
			bad("observation %s carries %d sightings, %d were acknowledged", id, o.Observations, n)
		}
	}
	var extra []string
	for id := range obs {
		if _, ok := e.obs[id]; !ok {
			extra = append(extra, id)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		bad("observations in the log that nobody acknowledged: %v", extra)
	}

	// 2. Knowledge files parse; no ADR/PF id twice; no observation
	// rendered into two entries.
	sections := map[string][]markdown.Section{}
	knowledge := map[string][]byte{}
	for _, path := range []string{p.Decisions, p.Pitfalls} {
		src, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			bad("read %s: %v", path, err)
			continue
		}
		rel := relTo(root, path)
		knowledge[rel] = src
		secs := markdown.Sections(src)
		sections[rel] = secs
		ids, sources := map[string]bool{}, map[string]string{}
		for _, s := range secs {
			if ids[s.ID] {
				bad("%s: %s appears twice", rel, s.ID)
			}
			ids[s.ID] = true
			if s.Source != "" {
				if prev, dup := sources[s.Source]; dup {
					bad("%s: %s and %s were both rendered from %s", rel, prev, s.ID, s.Source)
				}
				sources[s.Source] = s.ID
			}
		}
	}

	// 3. The manifest parses and matches the files and the log.
	m, exists, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		bad("manifest: %v", err)
	}
	registered := map[string]manifest.Entry{} // observation id → entry
	byPath := map[string]string{}             // path#anchor → observation id
	res := manifest.NewResolver(root)
	if exists && err == nil {
		for _, en := range m.Entries {
			if _, dup := registered[en.ObservationID]; dup {
				bad("manifest: %s registered twice", en.ObservationID)
			}
			registered[en.ObservationID] = en
			abs, rel, err := res.Resolve(en.Path)
			if err != nil {
				bad("manifest entry %s: %v", en.ObservationID, err)
				continue
			}
			key := rel + "#" + en.AnchorID
			if en.Deleted != nil {
				// A penalty, kept to be undone; its artifact is gone (and a
				// freed ADR/PF id may have gone to another observation).
				if k := strings.TrimSuffix(key, "#"); !e.removed[k] {
					bad("penalty without a deletion by the person: %s (%s) was penalised, the scenario never removed it", en.ObservationID, k)
				}
				continue
			}
			if other, dup := byPath[key]; dup {
				bad("manifest: %s and %s both registered at %s", other, en.ObservationID, key)
			}
			byPath[key] = en.ObservationID
			o, ok := obs[en.ObservationID]
			if !ok {
				if e.settled {
					bad("manifest entry %s has no observation in the log", en.ObservationID)
				}
				continue
			}
			if e.settled && o.Status != manifest.Created {
				bad("manifest entry %s: its observation is %s, not created", en.ObservationID, o.Status)
			}
			want := rel
			if en.AnchorID != "" {
				want += "#" + en.AnchorID
			}
			if e.settled && o.ArtifactPath != want {
				bad("manifest entry %s points at %s, the log says artifact_path %q", en.ObservationID, want, o.ArtifactPath)
			}
			var current, legacy []byte
			if en.AnchorID != "" {
				src, ok := knowledge[rel]
				if !ok {
					if src, err = os.ReadFile(abs); err != nil {
						if e.settled {
							bad("manifest entry %s: %v", en.ObservationID, err)
						}
						continue
					}
				}
				var found *markdown.Section
				for _, s := range markdown.Sections(src) {
					if s.ID == en.AnchorID && (found == nil || s.Source == en.ObservationID) {
						s := s
						found = &s
					}
				}
				if found == nil {
					if e.settled {
						bad("manifest entry %s: anchor %s is not in %s", en.ObservationID, en.AnchorID, rel)
					}
					continue
				}
				current, legacy = markdown.SectionText(src, *found), src[found.Start:found.LegacyEnd]
			} else {
				b, err := os.ReadFile(abs)
				if err != nil {
					if e.settled {
						bad("manifest entry %s: %v", en.ObservationID, err)
					}
					continue
				}
				current, legacy = b, b
			}
			if e.settled && !manifest.Unchanged(en.ContentHash, current, legacy) {
				bad("manifest entry %s: the hash of %s does not match the file after a reconcile", en.ObservationID, want)
			}
		}
	}
	for id, o := range obs {
		if e.settled && o.Status == manifest.Created && !e.dangling[id] {
			if _, ok := registered[id]; !ok {
				bad("observation %s is created but the manifest does not list it", id)
			}
		}
	}
	// A knowledge section rendered from an observation of the log is
	// registered (else the next render or heal could write it again).
	if e.settled {
		for rel, secs := range sections {
			for _, s := range secs {
				if s.Source == "" {
					continue
				}
				if _, ok := obs[s.Source]; !ok {
					continue
				}
				if byPath[rel+"#"+s.ID] != s.Source {
					bad("%s: %s (rendered from %s) is not registered in the manifest", rel, s.ID, s.Source)
				}
			}
		}
		// Every command and skill file is registered: none was rendered
		// twice under another name.
		for _, f := range artifactFiles(root) {
			if e.humanFiles[f] {
				continue
			}
			if _, ok := byPath[f+"#"]; !ok {
				bad("artifact %s is not registered in the manifest (a duplicate render?)", f)
			}
		}
	}

	// 4. The usage file parses and lists every registered anchor.
	u, err := manifest.ReadUsage(p.Usage)
	if err != nil {
		bad("usage file: %v", err)
	} else if e.settled {
		for id, en := range registered {
			if en.AnchorID != "" {
				if _, ok := u.Entries[en.AnchorID]; !ok {
					bad("usage file: no entry for %s (observation %s)", en.AnchorID, id)
				}
			}
		}
	}

	// 5. No penalty without a deletion by the person: every deleted
	// feedback event targets an artifact the scenario removed (its
	// observation, or its ADR/PF id).
	allowed := map[string]bool{}
	for id, o := range obs {
		if e.removed[o.ArtifactPath] {
			allowed[id] = true
			if _, anchor, ok := strings.Cut(o.ArtifactPath, "#"); ok {
				allowed[anchor] = true
			}
		}
	}
	if data, err := os.ReadFile(filepath.Join(p.Memory, "feedback.jsonl")); err == nil {
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ev struct{ Target, Kind, Source string }
			if json.Unmarshal(line, &ev) == nil && ev.Kind == "deleted" && ev.Source == "reconcile" && !allowed[ev.Target] && !e.removed[ev.Target] {
				bad("penalty without a deletion by the person: a deleted event for %s, whose artifact the scenario never removed", ev.Target)
			}
		}
	}

	// 6. learnwatch's other files parse.
	for _, name := range []string{"feedback.jsonl", "outcomes.jsonl", "errors.jsonl"} {
		data, err := os.ReadFile(filepath.Join(p.Memory, name))
		if err != nil {
			continue
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) > 0 && !json.Valid(line) {
				bad("%s line %d does not parse: %.200q", name, i+1, line)
			}
		}
		if len(data) > 0 && data[len(data)-1] != '\n' {
			bad("%s does not end with a newline (a torn append)", name)
		}
	}
	for _, name := range []string{"learning-policy.json", ".watch-state.json", ".citation-offsets.json", ".kept-stamp.json", ".notifications.json"} {
		if data, err := os.ReadFile(filepath.Join(p.Memory, name)); err == nil && !json.Valid(data) {
			bad("%s does not parse", name)
		}
	}

	// 7. No lock a live process forgot, no half-taken-over lock, no
	// half-written file.
	for _, l := range []string{".learning.lock", ".knowledge.lock"} {
		if fi, err := os.Stat(filepath.Join(p.Memory, l)); err == nil && time.Since(fi.ModTime()) < 50*time.Second {
			bad("lock directory %s left behind by a process that was not killed", l)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(p.Memory, "*.lock.stale-*")); len(m) > 0 {
		bad("lock takeover leftovers: %v", m)
	}
	if tmp := tempFiles(root); len(tmp) > 0 && !e.killed {
		bad("temp files left behind though no process was killed: %v", tmp)
	}

	// 7. The inbox: after the final passes every queued item was drained
	// (none left, none rejected) and the drain's record is gone from the
	// log; no lock-queue ticket is left by a process that was not killed.
	if e.settled {
		items, _ := filepath.Glob(filepath.Join(p.Memory, "inbox", "item-*"))
		rejected, _ := filepath.Glob(filepath.Join(p.Memory, "inbox", "rejected-*"))
		if items = append(items, rejected...); len(items) > 0 {
			bad("inbox items left after the final reconcile: %v", items)
		}
		if data, _ := os.ReadFile(p.Log); bytes.Contains(data, []byte("x_learnwatch_inbox")) {
			bad("the inbox drain's record is left in the log")
		}
		if data, _ := os.ReadFile(p.Usage); bytes.Contains(data, []byte("x_learnwatch_inbox")) {
			bad("the inbox drain's record is left in the usage file")
		}
		if _, err := os.Stat(filepath.Join(p.Memory, ".citation-pass.json")); err == nil {
			bad(".citation-pass.json (an interrupted Stop hook's record) left after the final reconcile")
		}
	}
	// 8. Feedback exactly once: no event of a pass twice; no record of an
	// interrupted reconcile left after the final one.
	if data, err := os.ReadFile(filepath.Join(p.Memory, "feedback.jsonl")); err == nil {
		seen := map[string]bool{}
		for _, line := range bytes.Split(data, []byte("\n")) {
			var ev struct{ Pass, Kind, Target, Reason, Type string }
			if json.Unmarshal(line, &ev) != nil || ev.Pass == "" {
				continue
			}
			k := ev.Pass + " " + ev.Kind + " " + ev.Target + " " + ev.Reason + " " + ev.Type
			if seen[k] {
				bad("feedback event appended twice by one pass: %s", k)
			}
			seen[k] = true
		}
	}
	if _, err := os.Stat(filepath.Join(p.Memory, ".feedback-pass.json")); err == nil && e.settled {
		bad(".feedback-pass.json left after the final reconcile")
	}
	if tickets, _ := filepath.Glob(filepath.Join(p.Memory, "*.lock.queue", "*")); len(tickets) > 0 && !e.killed {
		bad("lock queue tickets left behind though no process was killed: %v", tickets)
	}
	return probs
}

// relTo returns path relative to root with / separators.
func relTo(root, path string) string {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return path
	}
	return filepath.ToSlash(rel)
}

// artifactFiles lists the command and skill files under root.
func artifactFiles(root string) []string {
	var out []string
	cmds, _ := filepath.Glob(filepath.Join(root, ".claude", "commands", "self-learning", "*.md"))
	skills, _ := filepath.Glob(filepath.Join(root, ".claude", "skills", "*", "SKILL.md"))
	for _, f := range append(cmds, skills...) {
		out = append(out, relTo(root, f))
	}
	sort.Strings(out)
	return out
}

// tempFiles lists the temp files of atomic writes (".<name>.tmp-<hex>").
func tempFiles(root string) []string {
	var out []string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasPrefix(d.Name(), ".") && strings.Contains(d.Name(), ".tmp-") {
			out = append(out, relTo(root, path))
		}
		return nil
	})
	return out
}

// readObs returns the observations of the log by id (for building models).
func readObs(root string) map[string]logLine {
	out := map[string]logLine{}
	data, _ := os.ReadFile(manifest.PathsFor(root).Log)
	for _, line := range strings.Split(string(data), "\n") {
		var o logLine
		if json.Unmarshal([]byte(line), &o) == nil && o.ID != "" {
			out[o.ID] = o
		}
	}
	return out
}

// citesExactly checks that the usage file counts exactly want citations
// of each id (citations counted exactly once: none lost, none doubled).
func citesExactly(root string, want map[string]int) []string {
	u, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err != nil {
		return []string{fmt.Sprintf("usage file: %v", err)}
	}
	var probs []string
	ids := make([]string, 0, len(want))
	for id := range want {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		if n, _ := u.Cites(id); n != want[id] {
			probs = append(probs, fmt.Sprintf("usage file: %s cited %d times, want %d (a citation lost or counted twice)", id, n, want[id]))
		}
	}
	return probs
}

// citedEvents checks that feedback.jsonl holds exactly want helpful
// "cited" events per entry from transcript scans (one per entry per scan
// or queued item: a learning signal neither lost nor doubled).
func citedEvents(root string, want map[string]int) []string {
	got := map[string]int{}
	data, _ := os.ReadFile(filepath.Join(root, ".memory", "feedback.jsonl"))
	for _, line := range strings.Split(string(data), "\n") {
		var e struct{ Kind, Target, Source string }
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == "cited" && e.Source == "transcript" {
			got[e.Target]++
		}
	}
	var probs []string
	for id, n := range want {
		if got[id] != n {
			probs = append(probs, fmt.Sprintf("feedback.jsonl has %d cited events of %s from transcripts, want %d (a learning signal lost or doubled)", got[id], id, n))
		}
	}
	sort.Strings(probs)
	return probs
}
