package staleness

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/parallel"
	"github.com/learnwatch/learnwatch/safefs"
)

// ReasonPrefix starts the staleReason Mark writes (DESIGN.md §5).
const ReasonPrefix = "code-ref-missing:"

// knowledgeDir is where the knowledge files live, relative to the root:
// the base of their relative links.
const knowledgeDir = ".memory/knowledge"

// Report is the result of a Scan.
type Report struct {
	Checked int       `json:"checked"` // references checked (deduplicated per entry)
	Stale   []Finding `json:"stale"`
	// Sources are the source files checked besides the knowledge base.
	Sources []string `json:"sources,omitempty"`
	// Refs is how every reference resolved (Options.Explain).
	Refs []Resolution `json:"refs,omitempty"`
	// Inputs are what the report depends on besides the log and the
	// knowledge files.
	Inputs Inputs `json:"-"`
}

// ScanTree opens the tree mode names (Open) and scans the knowledge files and
// log against it with the options of cfg: what a hook or a reconcile needs
// when it has no use for the Checker itself.
func ScanTree(root string, mode Mode, cfg config.Staleness, log *manifest.Log) (Report, error) {
	return ScanTreeContext(context.Background(), root, mode, cfg, log)
}

// ScanTreeContext is ScanTree whose history walk stops when ctx ends.
func ScanTreeContext(ctx context.Context, root string, mode Mode, cfg config.Staleness, log *manifest.Log) (Report, error) {
	c, err := Open(root, mode, cfg)
	if err != nil {
		return Report{}, err
	}
	return Scan(root, c.WithContext(ctx), log, OptionsFor(cfg))
}

// ScanTreeCached is ScanTreeContext for a caller that holds the learning
// lock (reconcile's staleness pass): it also writes what the run
// extracted and resolved to the staleness cache (Checker.SaveCache). The
// cache is disposable: failing to write it is not an error of the scan,
// and is returned apart (cacheErr) for the caller to warn about.
func ScanTreeCached(ctx context.Context, root string, mode Mode, cfg config.Staleness, log *manifest.Log) (rep Report, cacheErr, err error) {
	c, err := Open(root, mode, cfg)
	if err != nil {
		return Report{}, nil, err
	}
	return ScanCached(ctx, root, c, cfg, log)
}

// ScanCached is ScanTreeCached with a Checker the caller opened (Open,
// with the same root and cfg), for a pass that opens it while it reads
// the memory.
func ScanCached(ctx context.Context, root string, c *Checker, cfg config.Staleness, log *manifest.Log) (rep Report, cacheErr, err error) {
	rep, err = Scan(root, c.WithContext(ctx), log, OptionsFor(cfg))
	if err != nil {
		return Report{}, nil, err
	}
	return rep, c.SaveCache(), nil
}

// Marking is what MarkCached did: how many findings the scan had
// (len(Report.Stale)), the lines it marked (Mark) and the inputs the
// outcome depends on.
type Marking struct {
	Stale  int
	Marked []Marked
	Inputs Inputs
}

// MarkCached is ScanCached followed by Mark, for a pass that needs the
// marks and the count, not the findings: it never holds them (at 100,000
// observations they were 11 MB of a first pass's peak), only the first
// stale reference of each entry, which is all Mark reads of them. c is
// spent: its extractions go once the cache is saved, before the marks
// are made (9 MB of a first pass's peak at 100,000 observations).
func MarkCached(ctx context.Context, root string, c *Checker, cfg config.Staleness, log *manifest.Log) (m Marking, cacheErr, err error) {
	var firsts firstRefs
	rep, err := scan(root, c.WithContext(ctx), log, OptionsFor(cfg), &firsts)
	if err != nil {
		return Marking{}, nil, err
	}
	c.letListingGo()
	cacheErr = c.SaveCache()
	c.cache.letExtractsGo()
	return Marking{Stale: firsts.n, Marked: markFirst(log, &firsts), Inputs: rep.Inputs}, cacheErr, nil
}

// firstRefs is what a scan for Mark keeps of its findings: their number
// and the first one's reference per id. An id's first reference is that
// of its first entry with a finding, in the scan's order: the knowledge
// base's sections (pre), the log's lines, the sources (post). The
// lines' are kept per line, in log order, not in a map by id: at 100,000
// observations with a finding each such a map was 7 MB of a pass's peak;
// the few ids more than one line has are sorted out when marking
// (markFirst).
type firstRefs struct {
	n         int
	pre, post map[string]string
	lines     []lineFirst
}

// lineFirst is the first stale reference of one line of the log.
type lineFirst struct {
	ln  *manifest.Line
	ref string
}

// add counts findings, an entry's, and keeps the first one's reference:
// for its line (ln, from the log) or its id (file set: a source's; else a
// knowledge base's section).
func (f *firstRefs) add(ln *manifest.Line, id, file string, findings []Finding) {
	f.n += len(findings)
	switch {
	case len(findings) == 0:
	case ln != nil:
		if ln.ID() != "" {
			f.lines = append(f.lines, lineFirst{ln, findings[0].Ref})
		}
	case file != "":
		f.post = keepFirst(f.post, id, findings[0].Ref)
	default:
		f.pre = keepFirst(f.pre, id, findings[0].Ref)
	}
}

// keepFirst makes ref the first stale reference of id in m, unless id has
// one already (or is empty), and returns m (made when nil).
func keepFirst(m map[string]string, id, ref string) map[string]string {
	if id == "" {
		return m
	}
	if m == nil {
		m = map[string]string{}
	}
	if _, ok := m[id]; !ok {
		m[id] = ref
	}
	return m
}

// firstLookup gives the first stale reference of the id of each line of
// a log (firstRefs.lookup), asked for every line in log order.
type firstLookup struct {
	f *firstRefs
	// shared are the ids more than one line of the log has, each with the
	// first of those lines' references (if one has one).
	shared map[string]string
	next   int // f.lines[next] is the next line of the log with one
}

// lookup returns the firstLookup of log: an id only one line of the log
// has (FindLine finds that very line) is answered by the line's own; the
// ids of more lines are collected first, and are few. With no line's
// reference kept (Mark's) the log's ids are not looked at.
func (f *firstRefs) lookup(log *manifest.Log) *firstLookup {
	l := &firstLookup{f: f}
	var many map[string]bool
	for _, ln := range log.Lines {
		if len(f.lines) == 0 {
			break
		}
		if ln.Parsed() && ln.ID() != "" && log.FindLine(ln.ID()) != ln {
			if many == nil {
				many = map[string]bool{}
			}
			many[ln.ID()] = true
		}
	}
	for _, lf := range f.lines {
		if many[lf.ln.ID()] {
			l.shared = keepFirst(l.shared, lf.ln.ID(), lf.ref)
		}
	}
	return l
}

// of returns the first stale reference of ln's id: the pre map's, else
// that of the first line of the same id with one, else the post map's.
// It is called for every line of the log in order (after rewind, again
// from the first).
func (l *firstLookup) of(ln *manifest.Line) (string, bool) {
	f := l.f
	own, has := "", false
	if l.next < len(f.lines) && f.lines[l.next].ln == ln {
		own, has = f.lines[l.next].ref, true
		l.next++
	}
	id := ln.ID()
	if ref, ok := f.pre[id]; ok {
		return ref, true
	}
	if ref, ok := l.shared[id]; ok {
		// An id more lines have: its first line's, whichever this is.
		// (Such an id without one has none in any of its lines, this
		// one's included.)
		own, has = ref, true
	}
	if has {
		return own, true
	}
	ref, ok := f.post[id]
	return ref, ok
}

// rewind starts the lines over.
func (l *firstLookup) rewind() { l.next = 0 }

// Scan checks the references of every active section of
// .memory/knowledge/decisions.md and pitfalls.md (IDs ADR-NNN, PF-NNN) and
// of every observation of log whose status is not deprecated (details and
// evidence; ID the observation's id). log may be nil. Findings come in
// that order: decisions, pitfalls, then observations in log order.
func Scan(root string, c *Checker, log *manifest.Log, opts Options) (Report, error) {
	return scan(root, c, log, opts, nil)
}

// scan is Scan; with firsts set, the findings go there instead of into
// the report (MarkCached).
func scan(root string, c *Checker, log *manifest.Log, opts Options, firsts *firstRefs) (Report, error) {
	// The knowledge base's and the sources' entries; the log's lines have
	// their own, smaller (as many as the log has lines), and come between
	// the two.
	type entry struct {
		id, file, heading string
		refs              []Ref
		ln                *manifest.Line // a log line's entry
	}
	type lineEntry struct {
		ln   *manifest.Line
		refs []Ref
		gone bool // its texts did not decode
	}
	var entries []entry
	var lines []lineEntry
	if log != nil {
		lines = make([]lineEntry, 0, len(log.Lines))
	}
	c.useOptions(opts)
	paths := manifest.PathsFor(root)
	kopts := opts
	kopts.LinkBase = knowledgeDir
	for _, file := range []string{paths.Decisions, paths.Pitfalls} {
		c.dep(file)
		src, err := readKnowledge(root, file)
		if err != nil {
			return Report{}, err
		}
		for _, s := range c.sections(file, src) {
			if s.Active() {
				text := markdown.SectionText(src, s)
				refs := c.extract(textKey("md", kopts.LinkBase, string(text)), func() []Ref { return ExtractMarkdown(text, kopts) })
				entries = append(entries, entry{id: s.ID, refs: refs})
			}
		}
	}
	knowledge := len(entries)
	if log != nil {
		// Lines the cache does not answer are extracted a batch at a
		// time, on every core (extractTexts); their entries wait in place.
		var pending []pendingText
		pendingAt := map[[32]byte]int{}
		var dups [][2]int // {pending, entry}: more lines with a pending text
		// A line whose texts are still what its bytes say is looked up by
		// the values of its details and evidence as written, and never
		// decoded: most lines are not (a decode, and the change check at
		// the write, per line cost more than the extraction they look
		// up). The key is the same whether or not a pass decoded the
		// line. Keys are summed on every core first, a batch of lines
		// at a time: hashing every line's texts was most of a warm pass's
		// scan, and the keys of a 100,000-line log held at once would be
		// 6 MB more at a cold pass's peak.
		c.cache.expectUsed(len(log.Lines))
		// The pending texts are extracted a batch at a time: they are
		// slices of the lines' bytes, and a chunked log's lines are read
		// back a chunk at a time (manifest.ReadLogChunked): held to the
		// end, they held the whole log.
		drop := false
		flush := func() {
			extractTexts(pending, opts)
			for i := range pending {
				p := &pending[i]
				if !p.ok {
					// The scan vouched for the values: never seen. The
					// entries go, as a line that cannot be read is not
					// checked.
					drop = true
					lines[p.entry].gone = true
					continue
				}
				p.refs = c.extract(p.key, func() []Ref { return p.refs })
				lines[p.entry].refs = p.refs
			}
			for _, d := range dups {
				p := &pending[d[0]]
				lines[d[1]].refs, lines[d[1]].gone = p.refs, !p.ok
				drop = drop || !p.ok
			}
			clear(pending)
			pending, dups = pending[:0], dups[:0]
			clear(pendingAt)
		}
		for ln, r := range keyedLines(log.Lines, &c.cache.extOld) {
			if r.ok {
				k := r.key
				refs, hit := r.refs, r.hit
				if hit {
					c.cache.extOld.used[r.at] = true
				} else {
					refs, hit = c.cache.extUsed.find(k) // a text an earlier line had
				}
				if !hit {
					if at, seen := pendingAt[k]; seen {
						dups = append(dups, [2]int{at, len(lines)})
					} else {
						pendingAt[k] = len(pending)
						if len(pending) == cap(pending) {
							// Doubled, not grown by a quarter as append grows
							// a large slice: a cold pass at 100k observations
							// copied 68 MB of them growing it.
							pending = slices.Grow(pending, max(cap(pending), 256))
						}
						d, e, _ := ln.RawTexts() // as keyedLines found them
						pending = append(pending, pendingText{key: k, details: d, evidence: e, entry: len(lines)})
					}
				}
				lines = append(lines, lineEntry{ln: ln, refs: refs})
				if len(pending) >= keyBatch {
					flush()
				}
				continue
			}
			o := ln.Observation()
			if o == nil {
				continue
			}
			k := textKey("obs", "", append([]string{o.Details}, o.Evidence...)...)
			refs := c.extract(k, func() []Ref { return ObservationRefs(o, opts) })
			lines = append(lines, lineEntry{ln: ln, refs: refs})
		}
		flush()
		if drop {
			lines = slices.DeleteFunc(lines, func(e lineEntry) bool { return e.gone })
		}
	}
	rep := Report{Stale: []Finding{}}
	read := 0
	for _, sf := range SelectSources(c.TreePaths(".md"), opts.Sources, opts.NoPresets) {
		if read >= maxSourceBytes {
			break
		}
		c.dep(filepath.Join(root, filepath.FromSlash(sf.Path)))
		src, err := readBounded(root, sf.Path, maxSourceFile)
		if err != nil {
			// A source in the tree but not on disk (or too large, or a
			// symlink): nothing to read, not a failure of the check.
			continue
		}
		read += len(src)
		rep.Sources = append(rep.Sources, sf.Path)
		sopts := opts
		sopts.LinkBase = path.Dir(sf.Path)
		if sopts.LinkBase == "." {
			sopts.LinkBase = ""
		}
		for _, sec := range SplitSections(src, sf.Whole) {
			refs := c.extract(textKey("md", sopts.LinkBase, string(sec.Text)), func() []Ref { return ExtractMarkdown(sec.Text, sopts) })
			if len(refs) > 0 {
				entries = append(entries, entry{id: sf.Path, file: sf.Path, heading: sec.Heading, refs: refs})
			}
		}
	}

	// Every entry in the order of the findings: the knowledge base's,
	// the log's lines, the sources'.
	each := func(yield func(entry) bool) {
		for _, e := range entries[:knowledge] {
			if !yield(e) {
				return
			}
		}
		for _, e := range lines {
			if !yield(entry{id: e.ln.ID(), refs: e.refs, ln: e.ln}) {
				return
			}
		}
		for _, e := range entries[knowledge:] {
			if !yield(e) {
				return
			}
		}
	}
	n := 0
	for e := range each {
		n += len(e.refs)
	}
	outs := c.resolveSeq(n, func(yield func(Ref) bool) {
		for e := range each {
			for _, r := range e.refs {
				if !yield(r) {
					return
				}
			}
		}
	})
	if firsts == nil {
		// Room for every finding the outcomes can give (a cold pass at
		// 100k observations has 100,000 of them: appended one by one, the
		// slice was copied to 65 MB growing).
		most, at := 0, 0
		for e := range each {
			for i, r := range e.refs {
				if o := outs[at+i]; o.missing || o.found != "" && r.Line > 0 {
					most++
				}
			}
			at += len(e.refs)
		}
		rep.Stale = make([]Finding, 0, most)
	}
	at := 0
	var found []Finding // an entry's findings, for firsts
	for e := range each {
		if c.ctx != nil && c.ctx.Err() != nil {
			return Report{}, fmt.Errorf("staleness: check stopped: %w", context.Cause(c.ctx))
		}
		rep.Checked += len(e.refs)
		if firsts != nil {
			found = c.appendChecked(found[:0], e.refs, outs[at:at+len(e.refs)])
			firsts.add(e.ln, e.id, e.file, found)
		} else {
			from := len(rep.Stale)
			rep.Stale = c.appendChecked(rep.Stale, e.refs, outs[at:at+len(e.refs)]) // resolveSeq decided them
			for i := from; i < len(rep.Stale); i++ {
				f := &rep.Stale[i]
				f.ID, f.File, f.Heading = e.id, e.file, e.heading
			}
		}
		at += len(e.refs)
		if opts.Explain {
			where := e.id
			if e.heading != "" {
				where += " § " + e.heading
			}
			for _, r := range c.Explain(e.refs) {
				r.Source = where
				rep.Refs = append(rep.Refs, r)
			}
		}
	}
	if c.ctx != nil && c.ctx.Err() != nil {
		// The history walk stopped early: a rename may read as a removal.
		return Report{}, fmt.Errorf("staleness: check stopped: %w", context.Cause(c.ctx))
	}
	rep.Inputs = c.inputs()
	return rep, nil
}

// readKnowledge reads a knowledge file; a missing one is empty, one that
// resolves outside the root (a symlink) is an error.
func readKnowledge(root, file string) ([]byte, error) {
	abs, _, err := manifest.Resolve(root, file)
	if err != nil {
		return nil, fmt.Errorf("staleness: %w", err)
	}
	src, err := safefs.ReadFile(abs, safefs.MaxKnowledge)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("staleness: read %s: %w", abs, err)
	}
	if err := markdown.Check(src); err != nil {
		return nil, fmt.Errorf("staleness: %s: %w", abs, err)
	}
	return src, nil
}

// Parsed is a Markdown file a caller has read and split: Sections is
// markdown.Sections(Src).
type Parsed struct {
	Src      []byte
	Sections []markdown.Section
}

// UseParsed hands the Checker the knowledge files the caller already read
// and split, by absolute path (the reconcile that runs the pass parsed
// them: at 200 entries a parse is 4 ms). Scan still reads each file and
// takes the sections only when it holds the same bytes.
func (c *Checker) UseParsed(files map[string]Parsed) { c.parsed = files }

// sections returns markdown.Sections(src) of the knowledge file at path,
// from UseParsed when it holds the same bytes.
func (c *Checker) sections(path string, src []byte) []markdown.Section {
	if p, ok := c.parsed[path]; ok && bytes.Equal(p.Src, src) {
		return p.Sections
	}
	return markdown.Sections(src)
}

// pendingText is an observation's texts the extraction cache did not
// answer: the JSON values as its line holds them, and the first entry of
// the scan that waits for their references.
type pendingText struct {
	key               [32]byte
	details, evidence []byte
	entry             int // the first entry with these texts
	refs              []Ref
	ok                bool // decoded and extracted
}

// extractTexts decodes and extracts the references of every pending text,
// on as many goroutines as there are cores when there is enough to share:
// a cold pass extracts every observation of the log, and extraction is a
// pure function of the text.
func extractTexts(pending []pendingText, opts Options) {
	one := func(p *pendingText) {
		details, evidence, err := manifest.DecodeTexts(p.details, p.evidence)
		if err != nil {
			return
		}
		p.refs, p.ok = textRefs(details, evidence, opts), true
	}
	parallel.Ranges(len(pending), parallel.Workers(len(pending), extractShare), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			one(&pending[i])
		}
	})
	compactRefs(pending)
}

// compactRefs moves the references of a batch of pending texts into one
// slice, and their strings into one string: a reference's strings were
// slices of its decoded text, which they kept alive for as long as the
// scan and the cache held the reference (at 100,000 observations, 5 MB
// of evidence at a first pass's peak), and each text's references were
// a slice of their own, grown one append at a time. A Path that is part
// of its Raw (as written: most are) is taken from Raw's copy. Dir is
// the options' and shared already.
func compactRefs(pending []pendingText) {
	n, size := 0, 0
	for i := range pending {
		for _, r := range pending[i].refs {
			n++
			size += len(r.Raw)
			if !strings.Contains(r.Raw, r.Path) {
				size += len(r.Path)
			}
		}
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(size)
	for i := range pending {
		for _, r := range pending[i].refs {
			b.WriteString(r.Raw)
			if !strings.Contains(r.Raw, r.Path) {
				b.WriteString(r.Path)
			}
		}
	}
	all, at := b.String(), 0
	arena := make([]Ref, 0, n)
	for i := range pending {
		p := &pending[i]
		if len(p.refs) == 0 {
			continue
		}
		from := len(arena)
		for _, r := range p.refs {
			raw := all[at : at+len(r.Raw)]
			at += len(r.Raw)
			if j := strings.Index(raw, r.Path); j >= 0 {
				r.Path = raw[j : j+len(r.Path)]
			} else {
				r.Path = all[at : at+len(r.Path)]
				at += len(r.Path)
			}
			r.Raw = raw
			arena = append(arena, r)
		}
		p.refs = arena[from:len(arena):len(arena)]
	}
}

// scanned reports whether the scan checks a log line: parsed, valid and
// not deprecated.
func scanned(ln *manifest.Line) bool {
	return ln.Parsed() && ln.Invalid() == nil && ln.Status() != manifest.Deprecated
}

// rawKey is the key (rawTextKey) of a scanned line's texts as written,
// ok when they are what its bytes say (manifest.Line.RawTexts), and the
// references the cache file held for them (hit). Kept per line for the
// length of a scan: 64 bytes.
type rawKey struct {
	key     [32]byte
	refs    []Ref
	at      int // its place in the cache's extractions (hit)
	ok, hit bool
}

// keyedLines yields the lines the scan checks (scanned), in order, each
// with its rawKey: the keys of a batch of keyBatch lines are summed and
// looked up in old (the extractions the cache file held, only read here)
// on every core before its lines are yielded.
func keyedLines(lines []*manifest.Line, old *oldExtracts) iter.Seq2[*manifest.Line, rawKey] {
	return func(yield func(*manifest.Line, rawKey) bool) {
		raws := make([]rawKey, min(len(lines), keyBatch))
		for lo := 0; lo < len(lines); lo += keyBatch {
			batch := lines[lo:min(lo+keyBatch, len(lines))]
			rawKeys(raws[:len(batch)], batch, old)
			for i, ln := range batch {
				if scanned(ln) && !yield(ln, raws[i]) {
					return
				}
			}
		}
	}
}

// rawKeys sets out[i] to the rawKey of lines[i] (the zero rawKey for a
// line not scanned or not answered by its bytes), its key summed and
// looked up in old, on every core when there are enough.
func rawKeys(out []rawKey, lines []*manifest.Line, old *oldExtracts) {
	parallel.Ranges(len(lines), parallel.Workers(len(lines), keyShare), func(lo, hi int) {
		for i, ln := range lines[lo:hi] {
			out[lo+i] = rawKey{}
			if !scanned(ln) {
				continue
			}
			if d, e, ok := ln.RawTexts(); ok {
				k := rawTextKey(d, e)
				at, hit := old.find(k)
				var refs []Ref
				if hit {
					refs = old.list[at].Refs
				}
				out[lo+i] = rawKey{key: k, refs: refs, at: at, ok: true, hit: hit}
			}
		}
	})
}

// keyShare is how many lines make another goroutine summing their keys
// worth starting; keyBatch, how many lines' keys a scan holds at once.
const (
	keyShare = 1024
	keyBatch = 8192
)

// extractShare is how many texts make another extraction goroutine worth
// starting.
const extractShare = 256

// rawTextKey is the extraction key of an observation read from its line:
// the JSON values of its details and evidence as written (nil when
// absent), each length-prefixed, under a kind of its own ("obs" keys hash
// the decoded texts). Equal values decode to equal texts, so equal keys
// extract the same references.
func rawTextKey(details, evidence []byte) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, b := range [][]byte{[]byte("obs-raw"), details, evidence} {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// ObservationRefs returns the references of an observation's details and
// evidence, deduplicated.
func ObservationRefs(o *manifest.Observation, opts Options) []Ref {
	return textRefs(o.Details, o.Evidence, opts)
}

// textRefs is ObservationRefs of an observation's texts.
func textRefs(details string, evidence []string, opts Options) []Ref {
	refs := ExtractText(details, opts)
	seen := map[refKey]bool{}
	for _, r := range refs {
		seen[refKey{r.Path, r.Line}] = true
	}
	for _, ev := range evidence {
		for _, r := range ExtractText(ev, opts) {
			refs = addRef(refs, seen, r)
		}
	}
	return refs
}

// Marked is a line Mark changed, with the marks it had before.
type Marked struct {
	Line           *manifest.Line
	manifest.Marks // before
}

// Mark applies a Scan's findings to the observations of log in memory and
// returns the lines it changed, with their marks before (the caller
// writes the log, or puts them back with SetMarks). An observation with a
// finding gets mayBeStale, staleReason "code-ref-missing:<first stale
// ref>" and needsReview. An observation without one whose staleReason came
// from this check (code-ref-missing:) has all three cleared — its
// references are fine again, and the review flag the mark set goes with
// it (docs/staleness.md). Deprecated observations are left alone, and so are
// stale reasons other tools set. findings must come from a Scan of the
// same log: an observation it did not check counts as fine. No line is
// decoded but those holding a person's resolution (lifecycle.Resolved),
// and those decoded already: the others' marks are set aside, and the
// write patches their bytes (manifest.Line.SetMarks).
func Mark(log *manifest.Log, findings []Finding) []Marked {
	if log == nil {
		return nil
	}
	firsts := firstRefs{pre: make(map[string]string, len(findings))}
	for _, f := range findings {
		firsts.pre = keepFirst(firsts.pre, f.ID, f.Ref)
	}
	return markFirst(log, &firsts)
}

// maxReasons bounds the stale reasons markFirst shares between lines.
const maxReasons = 4096

// markFirst is Mark given the first finding's reference of each id.
func markFirst(log *manifest.Log, firsts *firstRefs) []Marked {
	if log == nil {
		return nil
	}
	first := firsts.lookup(log)
	// due tells whether a line is one to mark or clear, and its reference
	// (found: it has one). The log is walked twice, not its due lines
	// held: a first pass marks every line.
	due := func(ln *manifest.Line) (ref string, found, ok bool) {
		ref, found = first.of(ln)
		if !ln.Parsed() || ln.Invalid() != nil || ln.Status() == manifest.Deprecated {
			return "", false, false
		}
		if !found && !ln.MayBeStale() {
			return "", false, false // nothing to mark, nothing to clear
		}
		if found && ln.MayBeStale() && ln.NeedsReview() && ln.StaleReason() == ReasonPrefix+ref {
			return "", false, false // marked already (resolved or not: nothing to change)
		}
		return ref, found, true
	}
	// The lines with a resolution are decoded first, together (on every
	// core when there are many).
	var decode []*manifest.Line
	n := 0
	for _, ln := range log.Lines {
		if _, found, ok := due(ln); ok {
			n++
			if found && ln.HasResolution() {
				decode = append(decode, ln)
			}
		}
	}
	manifest.DecodeLines(decode)
	first.rewind()
	out := make([]Marked, 0, n)
	// A reason is made once per reference, not per line: lines name the
	// same files (a first pass at 100,000 stale observations made 5 MB of
	// them), up to a bound.
	reasons := map[string]string{}
	reasonOf := func(ref string) string {
		if r, ok := reasons[ref]; ok {
			return r
		}
		r := ReasonPrefix + ref
		if len(reasons) < maxReasons {
			reasons[ref] = r
		}
		return r
	}
	for _, ln := range log.Lines {
		ref, found, ok := due(ln) // a line whose decode failed is not Parsed
		if !ok {
			continue
		}
		before := ln.Marks()
		if found {
			reason := reasonOf(ref)
			if ln.HasResolution() && lifecycle.Resolved(ln.Observation(), reason) {
				continue // a person resolved this very mark
			}
			ln.SetMarks(manifest.Marks{MayBeStale: true, NeedsReview: true, StaleReason: reason})
			out = append(out, Marked{ln, before})
			continue
		}
		if before.MayBeStale && strings.HasPrefix(before.StaleReason, ReasonPrefix) {
			// The reference resolves again: the review flag staleness set
			// goes with it.
			ln.SetMarks(manifest.Marks{})
			out = append(out, Marked{ln, before})
		}
	}
	return out
}
