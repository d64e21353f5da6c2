// Package render turns ready observations into files (DESIGN.md §3): a
// workflow becomes a slash command, a procedural observation a skill, a
// decision the next ADR in decisions.md and a pitfall the next PF in
// pitfalls.md. It decides with plain functions over the loaded state and
// writes in the order that makes a crash healable: artifact or knowledge
// file first, then the log, then the manifest.
package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"time"

	"github.com/learnwatch/learnwatch/capacity"
	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/inbox"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/safefs"
)

// Capacity is the number of active entries a knowledge file takes at most.
const Capacity = capacity.Ceiling

// Options configure a render run.
type Options struct {
	Now         time.Time
	LockTimeout time.Duration
	// Hold reports whether an observation must wait (a policy overlay that
	// requires approval). Nil holds nothing.
	Hold func(o *manifest.Observation) bool
}

// Rendered describes one file written (or adopted) for an observation.
type Rendered struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Path   string `json:"path"`
	Anchor string `json:"anchor,omitempty"`
}

// Skip says why a ready observation was not rendered.
type Skip struct {
	ID     string `json:"id"`
	Reason string `json:"reason"`
}

// Result of a render run.
type Result struct {
	// Refused says why knowledge files were refused (a symlink, a special
	// file, too big); the observations for them were skipped, others
	// rendered.
	Refused []string `json:"refused,omitempty"`

	Rendered []Rendered `json:"rendered"`
	Skipped  int        `json:"skipped"`
	Skips    []Skip     `json:"skips,omitempty"`
	// Warnings are problems that did not stop the render (a notifications
	// file that does not parse is left alone and reported here).
	Warnings []string `json:"warnings,omitempty"`
	Wrote    []string `json:"-"`
	// Inbox is what the drain of the inbox did before the pass.
	Inbox inbox.Result `json:"inbox,omitzero"`
}

// SkipQuality is the reason a ready observation without quality_ok: true
// is not rendered.
const SkipQuality = "quality_ok is not true: not rendered until a sighting with quality_ok: true is merged in"

// Run renders every ready observation of the repository at root, under the
// learning lock (and the knowledge lock around knowledge appends).
func Run(ctx context.Context, root string, opts Options) (Result, error) {
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	p := manifest.PathsFor(root)
	lock, drained, err := inbox.LockLog(ctx, root, opts.LockTimeout)
	if err != nil {
		return Result{}, err
	}
	if lock == nil {
		return Result{Rendered: []Rendered{}}, nil
	}
	defer lock.Release()
	st, err := Load(p)
	if err != nil {
		return Result{Inbox: drained}, err
	}
	res, err := Apply(ctx, st, opts)
	res.Inbox = drained
	return res, err
}

// State is what a render reads.
type State struct {
	Paths    manifest.Paths
	Log      *manifest.Log
	Manifest *manifest.Manifest
	Usage    *manifest.Usage
}

// Load reads the log, manifest and usage file. A corrupt manifest is an
// error here: render would otherwise lose the registry (reconcile heals it).
func Load(p manifest.Paths) (*State, error) {
	log, err := manifest.ReadLog(p.Log)
	if err != nil {
		return nil, err
	}
	m, _, err := manifest.ReadManifest(p.Manifest)
	if err != nil {
		return nil, fmt.Errorf("%w (run learnwatch reconcile to rebuild it)", err)
	}
	u, err := manifest.ReadUsage(p.Usage)
	if err != nil {
		return nil, fmt.Errorf("%w (run learnwatch reconcile to rebuild it)", err)
	}
	return &State{Paths: p, Log: log, Manifest: m, Usage: u}, nil
}

// Apply renders the ready observations of st and writes the results. The
// caller holds the learning lock.
func Apply(ctx context.Context, st *State, opts Options) (Result, error) {
	res := Result{Rendered: []Rendered{}}
	stamp := opts.Now.UTC().Format(time.RFC3339)
	var entries []manifest.Entry
	usageChanged := false
	var knowledge = map[string]*knowledgeFile{}
	var klock *manifest.Lock
	defer func() {
		if klock != nil {
			klock.Release()
		}
	}()

	registered := map[string]bool{} // artifact paths the manifest lists
	for _, e := range st.Manifest.Entries {
		registered[e.Path] = true
	}
	notes := notifications{path: st.Paths.Notifications()}
	for _, o := range st.Log.Observations() {
		if o.Status != manifest.Ready {
			continue
		}
		if !o.QualityOK {
			res.Skipped++
			res.Skips = append(res.Skips, Skip{ID: o.ID, Reason: SkipQuality})
			continue
		}
		if opts.Hold != nil && opts.Hold(o) && !crashRendered(st.Paths.Root, o, opts.Now, registered) {
			res.Skipped++
			res.Skips = append(res.Skips, Skip{ID: o.ID, Reason: "held by policy: run learnwatch approve " + o.ID})
			continue
		}
		if i := st.Manifest.Find(o.ID); i >= 0 {
			// Already registered (a crash after the manifest write would not
			// leave it ready; a hand edit might): just mark it created.
			o.Status = manifest.Created
			o.ArtifactPath = artifactPath(st.Manifest.Entries[i])
			continue
		}
		entry := entryOf(o, opts.Now)
		switch o.Type {
		case manifest.Workflow, manifest.Procedural:
			rel, content, err := artifactFor(st.Paths.Root, o, entry, registered)
			if err != nil {
				return res, err
			}
			registered[rel] = true
			abs := filepath.Join(st.Paths.Root, filepath.FromSlash(rel))
			if existing, err := safefs.ReadFile(abs, safefs.MaxKnowledge); err != nil || string(existing) != string(content) {
				if err := manifest.WriteFile(abs, content, 0o644); err != nil {
					return res, err
				}
				res.Wrote = append(res.Wrote, abs)
			}
			if err := failpoint.Inject("render:after-artifact"); err != nil {
				return res, err
			}
			o.Status = manifest.Created
			o.ArtifactPath = rel
			entries = append(entries, manifest.Entry{ObservationID: o.ID, Type: o.Type, Path: rel, ContentHash: manifest.Hash(content), RenderedAt: stamp})
			res.Rendered = append(res.Rendered, Rendered{ID: o.ID, Type: o.Type, Path: rel})
		case manifest.Decision, manifest.Pitfall:
			kind, path := markdown.ADR, st.Paths.Decisions
			if o.Type == manifest.Pitfall {
				kind, path = markdown.PF, st.Paths.Pitfalls
			}
			kf := knowledge[path]
			if kf == nil {
				if klock == nil {
					var err error
					if klock, err = manifest.AcquireLock(ctx, st.Paths.KnowledgeLock, opts.LockTimeout); err != nil {
						return res, err
					}
				}
				var err error
				if kf, err = openKnowledge(st.Paths, path, kind); err != nil {
					if !manifest.IsRefused(err) && !safefs.IsRefused(err) {
						return res, err
					}
					// A planted symlink or special file is refused for
					// this file only: the other targets still render.
					kf = &knowledgeFile{path: path, kind: kind, refused: err}
					res.Refused = append(res.Refused, err.Error())
				}
				knowledge[path] = kf
			}
			if kf.refused != nil {
				res.Skipped++
				res.Skips = append(res.Skips, Skip{ID: o.ID, Reason: kf.refused.Error()})
				continue
			}
			sec, skip, err := kf.add(o, entry)
			if err != nil {
				return res, err
			}
			if skip != "" {
				if skip == skipCapacity {
					o.SoftCapExceeded = true
					notes.set(capacityKey(kind), capacity.AtCeiling(sec.previous, opts.Now))
				}
				res.Skipped++
				res.Skips = append(res.Skips, Skip{ID: o.ID, Reason: skip})
				continue
			}
			rel, _ := filepath.Rel(st.Paths.Root, path)
			rel = filepath.ToSlash(rel)
			o.Status = manifest.Created
			o.ArtifactPath = rel + "#" + sec.ID
			o.SoftCapExceeded = false
			if sec.appended {
				notes.afterAppend(capacityKey(kind), sec.previous, opts.Now)
			}
			entries = append(entries, manifest.Entry{ObservationID: o.ID, Type: o.Type, Path: rel, AnchorID: sec.ID, RenderedAt: stamp, ContentHash: sec.hash})
			if st.Usage.Register(sec.ID, opts.Now) {
				usageChanged = true
			}
			res.Rendered = append(res.Rendered, Rendered{ID: o.ID, Type: o.Type, Path: rel, Anchor: sec.ID})
		}
	}
	// Knowledge files first (each atomically), then log, then manifest.
	for _, path := range []string{st.Paths.Decisions, st.Paths.Pitfalls} {
		kf := knowledge[path]
		if kf == nil || !kf.changed {
			continue
		}
		if err := manifest.WriteFile(path, kf.src, 0o644); err != nil {
			return res, err
		}
		res.Wrote = append(res.Wrote, path)
	}
	// The capacity notifications, still under the knowledge lock.
	if notes.changed {
		if err := manifest.WriteNotifications(notes.path, notes.file); err != nil {
			return res, err
		}
		res.Wrote = append(res.Wrote, notes.path)
	}
	res.Warnings = append(res.Warnings, notes.warnings...)
	if err := failpoint.Inject("render:after-knowledge"); err != nil {
		return res, err
	}
	if usageChanged {
		if err := manifest.WriteUsage(st.Paths.Usage, st.Usage); err != nil {
			return res, err
		}
		res.Wrote = append(res.Wrote, st.Paths.Usage)
	}
	if st.Log.Changed() {
		if err := manifest.WriteLog(st.Paths.Log, st.Log); err != nil {
			return res, err
		}
		res.Wrote = append(res.Wrote, st.Paths.Log)
	}
	if err := failpoint.Inject("render:after-log"); err != nil {
		return res, err
	}
	if len(entries) > 0 {
		st.Manifest.Entries = append(st.Manifest.Entries, entries...)
		if err := manifest.WriteManifest(st.Paths.Manifest, st.Manifest); err != nil {
			return res, err
		}
		res.Wrote = append(res.Wrote, st.Paths.Manifest)
	}
	return res, nil
}

// crashRendered reports whether a command or skill render of o was cut
// short by a crash: its file exists at the path render would use, unclaimed
// by the manifest. Such a render is completed even when the policy holds the
// type — the file is already there, and holding it would leave a command
// the agent sees but learnwatch does not track. (A knowledge section in the
// same state is healed by reconcile through its Source marker.)
func crashRendered(root string, o *manifest.Observation, now time.Time, registered map[string]bool) bool {
	if o.Type != manifest.Workflow && o.Type != manifest.Procedural {
		return false
	}
	rel, _, err := artifactFor(root, o, entryOf(o, now), registered)
	if err != nil || registered[rel] {
		return false
	}
	_, err = os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
	return err == nil
}

// entryOf is what o renders from on the day now.
func entryOf(o *manifest.Observation, now time.Time) markdown.Entry {
	return markdown.Entry{ObservationID: o.ID, Pattern: o.Pattern, Details: o.Details, Evidence: o.Evidence,
		Date: now, Confidence: o.Confidence, Observations: o.Observations}
}

// Artifact renders the slash command (a workflow) or the skill (a
// procedural observation) of e under slug, with its path relative to the
// root.
func Artifact(typ, slug string, e markdown.Entry) (rel string, content []byte, err error) {
	if typ == manifest.Workflow {
		content, err = markdown.RenderCommand(e)
		return ".claude/commands/self-learning/" + slug + ".md", content, err
	}
	content, err = markdown.RenderSkill(e, slug)
	return ".claude/skills/" + slug + "/SKILL.md", content, err
}

func artifactPath(e manifest.Entry) string {
	if e.AnchorID != "" {
		return e.Path + "#" + e.AnchorID
	}
	return e.Path
}

// artifactFor chooses the path of a command or skill and renders it. When
// the slug's file already exists with other content (a human's file or
// another observation's), a numbered variant is used; when it exists with
// this content (a render that crashed before the log write; the artifact
// marker line, which carries the day and the confidence, is not compared),
// it is adopted — also when it differs only in the evidence and no manifest entry
// claims it (that render crashed, then the observation was sighted again
// with new evidence: rendering a second file would leave the first one
// behind as a duplicate), or when it is another renderer's artifact for the
// same pattern (see generatedFor).
func artifactFor(root string, o *manifest.Observation, e markdown.Entry, registered map[string]bool) (string, []byte, error) {
	slug := markdown.Slug(o.Pattern)
	var refused error // why the last name was refused
	for n := 1; n < 1000; n++ {
		s := slug
		if n > 1 {
			s = fmt.Sprintf("%s-%d", slug, n)
		}
		rel, content, err := Artifact(o.Type, s, e)
		if err != nil {
			return "", nil, fmt.Errorf("render %s: %w", o.ID, err)
		}
		abs, _, err := manifest.Resolve(root, rel)
		if err != nil {
			refused = err
			continue // a symlinked directory leading out: try another name
		}
		existing, err := safefs.ReadFile(abs, safefs.MaxKnowledge)
		if errors.Is(err, os.ErrNotExist) || (err == nil && bytes.Equal(markdown.WithoutMarker(existing), markdown.WithoutMarker(content))) {
			return rel, content, nil
		}
		if err == nil && !registered[rel] && bytes.Equal(withoutEvidence(markdown.WithoutMarker(existing)), withoutEvidence(markdown.WithoutMarker(content))) {
			return rel, content, nil
		}
		if err == nil && !registered[rel] && generatedFor(existing, o.Pattern) {
			return rel, content, nil
		}
	}
	if refused != nil {
		return "", nil, fmt.Errorf("render %s: no file name for slug %q that is not refused: %w", o.ID, slug, refused)
	}
	return "", nil, fmt.Errorf("render %s: no free file name for slug %q", o.ID, slug)
}

// generatedFor reports whether an unregistered file is a self-learning
// artifact generated for pattern by another renderer (devflow's render-ready,
// or an older learnwatch): its frontmatter carries the artifact marker and
// its description is the pattern (devflow's skills say "This skill should
// be used when <pattern>"). Such a file is the same observation's render
// cut short before its log write, so it is adopted (and rewritten) rather
// than left behind beside a numbered duplicate. A file without the marker
// is a human's and is never taken.
func generatedFor(existing []byte, pattern string) bool {
	d, ok := markdown.ArtifactDescription(existing)
	return ok && d != "" && (d == pattern || d == "This skill should be used when "+pattern)
}

// withoutEvidence drops what a rendered command or skill says about the
// evidence (the "## Evidence" section, "- Seen before in:" lines), so two
// renders of one observation compare equal across new sightings.
func withoutEvidence(b []byte) []byte {
	var out []byte
	skip := false
	for _, line := range bytes.SplitAfter(b, []byte("\n")) {
		t := bytes.TrimRight(line, "\r\n")
		if bytes.HasPrefix(t, []byte("## ")) {
			skip = string(t) == "## Evidence"
		}
		if skip || bytes.HasPrefix(t, []byte("- Seen before in: ")) {
			continue
		}
		out = append(out, line...)
	}
	return bytes.TrimRight(out, "\n")
}

const skipCapacity = "capacity: the knowledge file already holds 100 active entries"

// knowledgeFile is a knowledge file being appended to, under its lock.
type knowledgeFile struct {
	path, kind string
	src        []byte
	changed    bool
	refused    error // the file was refused (symlink, not regular, too big)

	// Caches over src, valid for one render under the knowledge lock (only
	// this render changes the file meanwhile): the parsed sections, and the
	// pitfall keys (area+issue) of its PF sections, first section per key.
	secs   []markdown.Section
	parsed bool
	pfKeys map[string]string
}

// sections returns the parsed sections of k.src, parsing at most once per
// change.
func (k *knowledgeFile) sections() []markdown.Section {
	if !k.parsed {
		k.secs, k.parsed = markdown.Sections(k.src), true
	}
	return k.secs
}

// pitfallOwner returns the id of the first PF section with the given key.
func (k *knowledgeFile) pitfallOwner(key string) (string, bool) {
	if k.pfKeys == nil {
		k.pfKeys = map[string]string{}
		for _, s := range k.sections() {
			k.notePitfall(s)
		}
	}
	id, ok := k.pfKeys[key]
	return id, ok
}

func (k *knowledgeFile) notePitfall(s markdown.Section) {
	if s.Kind != markdown.PF {
		return
	}
	key := lifecycle.PitfallKey(s.Area, sectionFields(k.src, s)["issue"])
	if _, seen := k.pfKeys[key]; key != "" && !seen {
		k.pfKeys[key] = s.ID
	}
}

type addedSection struct {
	ID   string
	hash string
	// appended is false for an adopted section; previous is the number of
	// active entries of the file before the append (or the refusal).
	appended bool
	previous int
}

// openKnowledge reads a knowledge file; the caller holds the knowledge lock.
func openKnowledge(p manifest.Paths, path, kind string) (*knowledgeFile, error) {
	if _, _, err := manifest.Resolve(p.Root, path); err != nil {
		return nil, err
	}
	src, err := safefs.ReadFile(path, safefs.MaxKnowledge)
	if safefs.IsRefused(err) {
		return nil, err
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if err := markdown.Check(src); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &knowledgeFile{path: path, kind: kind, src: src}, nil
}

// add appends o's entry, or returns why it is skipped. A section that
// already carries o's Source marker (a render that crashed before the log
// write) is adopted instead of appended again.
func (k *knowledgeFile) add(o *manifest.Observation, e markdown.Entry) (addedSection, string, error) {
	secs := k.sections()
	for _, s := range secs {
		if s.Kind == k.kind && s.Source == o.ID {
			return addedSection{ID: s.ID, hash: manifest.Hash(markdown.SectionText(k.src, s))}, "", nil
		}
	}
	active := 0
	for _, s := range secs {
		if s.Kind == k.kind && s.Active() {
			active++
		}
	}
	if active >= Capacity {
		return addedSection{previous: active}, skipCapacity, nil
	}
	if k.kind == markdown.PF {
		// Compare the Area and Issue the new entry would get (with the
		// renderer's fallbacks: Area "general", Issue from the pattern) with
		// those of the existing entries, like with like.
		d := markdown.Fields(markdown.RenderPitfall("PF-000", e))
		key := lifecycle.PitfallKey(d["area"], d["issue"])
		if key != "" {
			if id, dup := k.pitfallOwner(key); dup {
				return addedSection{}, "duplicate of " + id + " (same area and issue)", nil
			}
		}
	}
	id := markdown.FormatID(k.kind, markdown.NextNumber(secs, k.kind))
	var sec []byte
	if k.kind == markdown.ADR {
		sec = markdown.RenderDecision(id, e)
	} else {
		sec = markdown.RenderPitfall(id, e)
	}
	k.src = markdown.Append(k.src, k.kind, sec)
	k.changed = true
	k.parsed = false
	for _, s := range k.sections() {
		if s.ID == id {
			if k.pfKeys != nil {
				k.notePitfall(s)
			}
			return addedSection{ID: id, hash: manifest.Hash(markdown.SectionText(k.src, s)), appended: true, previous: active}, "", nil
		}
	}
	return addedSection{}, "", fmt.Errorf("render %s: appended %s but cannot find it again in %s", o.ID, id, k.path)
}

// sectionFields returns the "- **Key**: value" bullets of a section.
func sectionFields(src []byte, s markdown.Section) map[string]string {
	return markdown.Fields(markdown.SectionText(src, s))
}

// capacityKey is the notification key of a knowledge file kind.
func capacityKey(kind string) string {
	if kind == markdown.PF {
		return capacity.KeyPitfalls
	}
	return capacity.KeyDecisions
}

// notifications is the notifications file during a render: read on first
// use (under the knowledge lock), changed in memory, written once. A file
// that does not parse is left alone, with a warning.
type notifications struct {
	path     string
	file     *manifest.Notifications
	loaded   bool
	changed  bool
	warnings []string
}

func (n *notifications) load() bool {
	if !n.loaded {
		n.loaded = true
		f, err := manifest.ReadNotifications(n.path)
		if err != nil {
			n.warnings = append(n.warnings, fmt.Sprintf("capacity notifications not updated: %v", err))
		}
		n.file = f
	}
	return n.file != nil
}

// set stores v under key, unless the stored notification says the same
// apart from its created_at (a file still full on the next run is not
// rewritten).
func (n *notifications) set(key string, v manifest.Notification) {
	if !n.load() {
		return
	}
	if old, ok := n.file.Get(key); ok {
		old.CreatedAt = v.CreatedAt
		if reflect.DeepEqual(old, v) {
			return
		}
	}
	if n.file.Set(key, v) == nil {
		n.changed = true
	}
}

// afterAppend updates key after an append to a file that held previous
// active entries.
func (n *notifications) afterAppend(key string, previous int, now time.Time) {
	if !n.load() {
		return
	}
	var existing *manifest.Notification
	if v, ok := n.file.Get(key); ok {
		existing = &v
	}
	if v, fire := capacity.AfterAppend(existing, previous, previous+1, now); fire {
		n.set(key, v)
	}
}
