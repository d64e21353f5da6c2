package staleness

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/learnwatch/learnwatch/cachedir"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// CacheName is the staleness cache's file name in the cache directory
// (cachedir): .memory/.cache/staleness.cache.
const CacheName = "staleness.cache"

// cacheMagic starts the cache file; another version is ignored. The
// magic is followed by a line with the local identity (cacheHeader) and
// the encoded cacheFile (cachecodec.go): a file written for another clone
// is ignored before anything in it is decoded.
const cacheMagic = "learnwatch staleness cache 3\n"

// cacheHeader is what a cache file written for local starts with.
func cacheHeader(local string) string { return cacheMagic + local + "\n" }

// maxCache bounds the cache file read. A 10,000-observation memory's is
// about 400 KB; decoding may allocate up to about 17 times the bytes read
// (references are small on disk and large in memory), so the bound keeps a
// crafted file under a few hundred MiB.
const maxCache = 16 << 20

// cacheFile is what the staleness cache holds. Nothing in it is ever
// needed: a run without it computes the same thing. It holds:
//
//   - the references extracted from each text (a knowledge section, a source
//     section, an observation), by a hash of the text, the document's
//     directory and the extraction options: extraction (goldmark) is what a
//     run spends most of its time on;
//   - per mode (HEAD, index), how every unique reference resolved, the
//     line checks, and the Markdown paths of the tree, valid for one key — the mode, HEAD's
//     commit, the index's identity (what it stages, or for a check against
//     HEAD the names it holds: IndexIdentity), the root's prefix, the rename
//     depth and ignore list — and the contents of the ignore files read
//     (compared again before the outcomes are used);
//   - the deletions found in HEAD's history (History), keyed on HEAD and
//     the depth: a reference no file ever had is known to be one without
//     walking thousands of commits again.
type cacheFile struct {
	// Local identifies the directories the cache was written for
	// (localIdentity of the root and the git directory): a cache from
	// anywhere else is ignored.
	Local   string
	Opts    string
	Extract []cachedRefs
	// Trees holds the outcomes of each mode (HEAD, index) last checked.
	Trees   []treeSection
	History *cachedHistory
}

// treeSection is the outcomes of one mode, valid for its Tree key.
type treeSection struct {
	Mode     int
	Tree     string
	Ignore   []ignoreDep
	Outcomes []cachedOutcome
	EOF      []cachedEOF
	HasMD    bool
	MD       []string
}

type cachedRefs struct {
	Key  [32]byte
	Refs []Ref
}

// ignoreDep is one ignore file read while resolving: its content's hash,
// or Present false when it could not be read (missing, not a regular
// file).
type ignoreDep struct {
	Name    string
	Present bool
	Sum     [32]byte
}

type cachedOutcome struct {
	Path, Dir string
	Rooted    bool
	Found     string
	How       string
	Skip      string
	Missing   bool
	Moved     string
	Searched  int
	Truncated bool
}

type cachedEOF struct {
	Path, Dir string
	Rooted    bool
	Line      int
	Past      bool
}

// cachedHistory is the history walked from one HEAD: every step's trees
// and the deletions of each, newest first, and whether the walk reached
// the end (Complete: every commit within the depth was read).
type cachedHistory struct {
	Head      string
	Depth     int
	Complete  bool
	Truncated bool
	Steps     [][2][20]byte
	Dels      []cachedDeletion
	Renames   []cachedRenames
}

// cachedRenames is the renames go-git's detection found in one step,
// kept once computed (Pairs: from, to).
type cachedRenames struct {
	Step  int
	Pairs [][2]string
}

type cachedDeletion struct {
	Step int
	Path string
}

type eofKey struct {
	k    outcomeKey
	line int
}

// cacheState is a Checker's view of the cache: what was read, and what
// this run used or computed (what a save writes).
type cacheState struct {
	enabled bool   // a cache may be read and written for this Checker
	tried   bool   // loadCache ran
	file    string // the cache file
	local   string // localIdentity of this root and git directory
	optsKey string
	treeKey string // "" when outcomes cannot be cached (no stable identity)
	treeHit bool   // the cached outcomes were valid and loaded
	// oldRead is set when the file was read (and understood) or written
	// by this Checker, and oldSum is the SHA-256 of its bytes then: a
	// save that would write the same bytes writes nothing. The bytes are
	// not held for that (at 100,000 observations the file is 4 MB, held
	// through the pass).
	oldRead bool
	oldSum  [32]byte
	// What the file read held, to tell whether a save would write it
	// again (unchanged): its options key, its history record, whether it
	// had a section for this mode, and whether it is in the order a save
	// writes (canonicalCache) and still the file (a save that writes
	// clears canon).
	readOpts string
	readHist *cachedHistory
	ownRead  bool
	canon    bool
	// extOld are the extractions the file held; extUsed, those this run
	// computed (the ones it took from extOld are marked there).
	extOld  oldExtracts
	extUsed newExtracts
	ignore  map[string]ignoreDep
	eof     map[eofKey]bool
	hasMD   bool
	md      []string
	history *cachedHistory // as read (valid for this HEAD and depth)
	others  []treeSection  // the other modes' sections, kept as read
	// computed: this run worked something out the cache did not hold
	// (a save then writes).
	computed bool
	// extNew: an extraction was computed; histNew: the history walk read
	// a commit or detected renames (both also set computed).
	extNew, histNew bool
	// usedEOF are the line checks this run asked for (the outcomes it
	// asked for are marked used): a save writes only them, so references
	// that went away leave the cache at the next save that writes
	// (unchanged).
	usedEOF map[eofKey]bool
}

func (s *cacheState) useEOF(k eofKey) {
	if s.usedEOF == nil {
		s.usedEOF = map[eofKey]bool{}
	}
	s.usedEOF[k] = true
}

// optionsKey fingerprints the options extraction depends on.
func optionsKey(opts Options) string {
	var b strings.Builder
	for _, e := range opts.Extensions {
		b.WriteString(e)
		b.WriteByte(0)
	}
	b.WriteByte(1)
	for _, e := range opts.Ignore {
		b.WriteString(e)
		b.WriteByte(0)
	}
	return b.String()
}

// textKey hashes the texts one extraction reads, with its kind and the
// document's directory, each length-prefixed.
func textKey(kind, dir string, texts ...string) [32]byte {
	h := sha256.New()
	var n [8]byte
	put := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	put(kind)
	put(dir)
	for _, t := range texts {
		put(t)
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// oldExtracts are the extractions a cache file held, by increasing key
// (the file's order), each marked when a run used it: held as read,
// not as a map (at 100,000 observations a map of them was 8 MB, and the
// run's used ones were put in a second one, 8 MB more).
type oldExtracts struct {
	list []cachedRefs
	used []bool
	// starts index list by the first bits of the key: the entries whose
	// key begins with bucket b are list[starts[b]:starts[b+1]]. The keys
	// are SHA-256 sums, spread evenly, so a bucket holds one or two of
	// them: a look-up compares a key or two instead of the fourteen of
	// a binary search over 10,000 (3 ms of the 56 ms of CPU of a first
	// reconcile at 10,000 observations, profiles of 12 runs).
	starts []uint32
	shift  uint
}

// newOldExtracts takes the file's extractions, sorting and deduplicating
// a copy of those of a file not in the order a save writes (the last of a
// key stands, as a map filled in the file's order would have it). list
// itself is left as read: whether the file is canonical is told from it.
func newOldExtracts(list []cachedRefs) oldExtracts {
	cmp := func(a, b cachedRefs) int { return bytes.Compare(a.Key[:], b.Key[:]) }
	if !slices.IsSortedFunc(list, func(a, b cachedRefs) int {
		if c := cmp(a, b); c != 0 {
			return c
		}
		return -1 // a repeated key is out of order too
	}) {
		list = slices.Clone(list)
		slices.SortStableFunc(list, cmp)
		out := list[:0]
		for i, e := range list {
			if i+1 < len(list) && list[i+1].Key == e.Key {
				continue // a later one of the same key stands
			}
			out = append(out, e)
		}
		clear(list[len(out):])
		list = out
	}
	o := oldExtracts{list: list, used: make([]bool, len(list))}
	o.index()
	return o
}

// index builds starts: about one bucket per entry, a power of two.
func (o *oldExtracts) index() {
	if len(o.list) < 64 {
		return // a binary search is as quick
	}
	n := uint(bits.Len(uint(len(o.list))))
	o.shift = 64 - n
	o.starts = make([]uint32, 1<<n+1)
	b := 0
	for i := range o.list {
		for k := o.bucket(o.list[i].Key); b <= k; b++ {
			o.starts[b] = uint32(i)
		}
	}
	for ; b < len(o.starts); b++ {
		o.starts[b] = uint32(len(o.list))
	}
}

// bucket is the bucket of key k.
func (o *oldExtracts) bucket(k [32]byte) int {
	return int(binary.BigEndian.Uint64(k[:8]) >> o.shift)
}

// find returns the place of k's extraction, ok when there is one.
func (o *oldExtracts) find(k [32]byte) (int, bool) {
	lo, hi := 0, len(o.list)
	if o.starts != nil {
		b := o.bucket(k)
		lo, hi = int(o.starts[b]), int(o.starts[b+1])
	}
	i, ok := slices.BinarySearchFunc(o.list[lo:hi], k, func(e cachedRefs, k [32]byte) int { return bytes.Compare(e.Key[:], k[:]) })
	return lo + i, ok
}

// expectUsed makes room for the extractions of n more texts this run
// looks up: a scan looks up every line's, and a map grown one insert at a
// time rehashed its entries over and over. Those the file holds are not
// put in it.
func (s *cacheState) expectUsed(n int) {
	if s.extUsed.list == nil {
		s.extUsed.grow(max(0, n-len(s.extOld.list)))
	}
}

// extract returns the references of the texts from the cache, or computes
// them with f and remembers them.
func (c *Checker) extract(k [32]byte, f func() []Ref) []Ref {
	if refs, ok := c.cache.extUsed.find(k); ok {
		return refs
	}
	if i, ok := c.cache.extOld.find(k); ok {
		c.cache.extOld.used[i] = true
		return c.cache.extOld.list[i].Refs
	}
	refs := f()
	c.cache.computed, c.cache.extNew = true, true
	c.cache.extUsed.add(k, refs)
	return refs
}

// newExtracts are the extractions a run computed, in the order it
// computed them, found by key: list's entries are what a save writes
// (sorted by key then), with no copy of them. at finds an entry by the
// first eight bytes of its key (SHA-256 sums: a key of its own for all
// but a vanishing few), more by the whole key when another entry has
// the same first eight bytes. At 100,000 observations this is 7 MB where
// a map from keys to references was 6 MB, and the save's copy of its
// entries 5 MB more.
type newExtracts struct {
	list []cachedRefs
	at   map[uint64]int32
	more map[[32]byte]int32
}

// grow makes room for n more entries.
func (e *newExtracts) grow(n int) {
	e.list = slices.Grow(e.list, n)
	if e.at == nil {
		e.at = make(map[uint64]int32, n)
	}
}

// prefix is the part of a key at indexes.
func prefix(k [32]byte) uint64 { return binary.BigEndian.Uint64(k[:8]) }

// find returns the references of key k, ok when it has an entry.
func (e *newExtracts) find(k [32]byte) ([]Ref, bool) {
	i, ok := e.at[prefix(k)]
	if !ok {
		return nil, false
	}
	if e.list[i].Key != k {
		if i, ok = e.more[k]; !ok {
			return nil, false
		}
	}
	return e.list[i].Refs, true
}

// add gives k (which has no entry) the references refs.
func (e *newExtracts) add(k [32]byte, refs []Ref) {
	if e.at == nil {
		e.at = map[uint64]int32{}
	}
	i := int32(len(e.list))
	e.list = append(e.list, cachedRefs{k, refs})
	if _, taken := e.at[prefix(k)]; !taken {
		e.at[prefix(k)] = i
		return
	}
	if e.more == nil {
		e.more = map[[32]byte]int32{}
	}
	e.more[k] = i
}

// checkoutIdentity names the checkout a cache was written for: the root
// and, in git ("" outside), the worktree's git directory and the common
// one when it is another (localIdentity).
func checkoutIdentity(root, gitDir, commonDir string) string {
	dirs := []string{root}
	if gitDir != "" {
		dirs = append(dirs, gitDir)
		if commonDir != gitDir {
			dirs = append(dirs, commonDir)
		}
	}
	return localIdentity(dirs...)
}

// treeKey is what a resolution against git's trees depends on besides the
// ignore files read: the mode, HEAD's commit, the index's identity
// (IndexIdentity), the root's prefix, the rename depth and the ignore list.
func treeKey(mode Mode, head plumbing.Hash, index, prefix string, depth int, ignore []string) string {
	return fmt.Sprintf("%d\x00%s\x00%s\x00%s\x00%d\x00%q", mode, head, index, prefix, depth, ignore)
}

// ignoreDeps are the ignore files this Checker's runs read, by name.
func (c *Checker) ignoreDeps() []ignoreDep {
	out := make([]ignoreDep, 0, len(c.cache.ignore))
	for _, d := range c.cache.ignore {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b ignoreDep) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// indexFile is the index file git would commit (GIT_INDEX_FILE when set).
func (c *Checker) indexFile() string { return indexFileOf(c.gitDir) }

// indexFileOf is the index file git would commit in the worktree whose
// git directory is gitDir (GIT_INDEX_FILE when set).
func indexFileOf(gitDir string) string {
	if name := os.Getenv("GIT_INDEX_FILE"); name != "" {
		if abs, err := filepath.Abs(name); err == nil {
			return abs
		}
		return ""
	}
	return filepath.Join(gitDir, "index")
}

// loadCache reads the cache for this Checker (once). Outcomes are taken
// only when the tree key matches and every ignore file they depended on
// still has the same content.
func (c *Checker) loadCache() {
	c.cache.tried = true
	gitDir, commonDir := "", ""
	if c.repo != nil {
		gitDir, commonDir = c.gitDir, c.commonDir
	}
	if c.cache.local = checkoutIdentity(c.root, gitDir, commonDir); c.cache.local == "" {
		return
	}
	c.cache.enabled = true
	c.cache.file = cachedir.Path(c.root, CacheName)
	if c.repo != nil && c.head != nil {
		var headHash plumbing.Hash = c.head.Hash
		c.dep(c.indexFile())
		if id := indexIdentity(c.root, c.indexFile(), c.mode != PreCommit).of(c.mode); id != "" {
			c.cache.treeKey = treeKey(c.mode, headHash, id, c.prefix, c.depth, c.ignore)
		}
	}
	data, err := safefs.ReadFile(c.cache.file, maxCache)
	head := cacheHeader(c.cache.local)
	if err != nil || !bytes.HasPrefix(data, []byte(head)) {
		return
	}
	cf, err := decodeCacheFile(data[len(head):])
	if err != nil || cf.Local != c.cache.local {
		return
	}
	c.cache.oldRead, c.cache.oldSum = true, sha256.Sum256(data)
	c.cache.optsKey, c.cache.readOpts, c.cache.readHist = cf.Opts, cf.Opts, cf.History
	c.cache.extOld = newOldExtracts(cf.Extract)
	if h := cf.History; h != nil && h.Complete && c.head != nil && h.Depth == c.depth && c.mode != PreCommit {
		if h.Head != c.head.Hash.String() {
			// HEAD moved on: commits on top of the cached walk's HEAD
			// extend it (extendHistory).
			if h = c.extendHistory(h); h != nil {
				c.cache.computed = true
			}
		}
		if h != nil && c.restoreHistory(h) {
			c.cache.history = h
		}
	}
	var sec *treeSection
	for i := range cf.Trees {
		if cf.Trees[i].Mode == int(c.mode) {
			sec = &cf.Trees[i]
		} else {
			c.cache.others = append(c.cache.others, cf.Trees[i])
		}
	}
	c.cache.ownRead = sec != nil
	c.cache.canon = canonicalCache(&cf, sec)
	if sec == nil || c.mode == PreCommit || c.cache.treeKey == "" || sec.Tree != c.cache.treeKey {
		return // PreCommit keeps no results (Open)
	}
	for _, d := range sec.Ignore {
		c.dep(d.Name)
		if readIgnoreDep(d.Name) != d {
			return
		}
	}
	c.cache.treeHit = true
	c.cache.ignore = make(map[string]ignoreDep, len(sec.Ignore))
	for _, d := range sec.Ignore {
		c.cache.ignore[d.Name] = d
	}
	for _, o := range sec.Outcomes {
		c.outcomes[outcomeKey{o.Path, o.Dir, o.Rooted}] = &outcome{
			found: o.Found, how: o.How, skip: o.Skip, missing: o.Missing,
			moved: o.Moved, searched: o.Searched, truncated: o.Truncated,
		}
	}
	c.cache.eof = make(map[eofKey]bool, len(sec.EOF))
	for _, e := range sec.EOF {
		c.cache.eof[eofKey{outcomeKey{e.Path, e.Dir, e.Rooted}, e.Line}] = e.Past
	}
	c.cache.hasMD, c.cache.md = sec.HasMD, sec.MD
}

// useOptions drops cached extractions made with other options.
func (c *Checker) useOptions(opts Options) {
	k := optionsKey(opts)
	if k != c.cache.optsKey {
		c.cache.optsKey = k
		c.cache.extOld = oldExtracts{}
		c.cache.extUsed = newExtracts{}
	}
}

// readIgnoreDep reads an ignore file the way readIgnore does and returns
// its dependency record.
func readIgnoreDep(name string) ignoreDep {
	data, ok := readIgnoreBytes(name)
	d := ignoreDep{Name: name, Present: ok}
	if ok {
		d.Sum = sha256.Sum256(data)
	}
	return d
}

// SaveCache writes what this Checker's runs extracted and resolved to
// the staleness cache, when that differs from what was read. The caller
// holds the learning lock. A Checker that met an error, was cancelled or
// checks for the pre-commit hook (which writes nothing) saves nothing.
func (c *Checker) SaveCache() error {
	if !c.cache.enabled || c.mode == PreCommit || c.ctx != nil && c.ctx.Err() != nil {
		return nil
	}
	hist := c.saveHistory()
	if c.cache.unchanged(c.err == nil, hist) {
		// The file read holds all a save would write.
		return nil
	}
	head := []byte(cacheHeader(c.cache.local))
	table, body := c.encodeCache(hist)
	h := sha256.New()
	h.Write(head)
	h.Write(table)
	h.Write(body)
	var sum [32]byte
	h.Sum(sum[:0])
	if c.cache.oldRead && sum == c.cache.oldSum {
		return nil
	}
	if _, err := cachedir.Ensure(c.root); err != nil {
		return fmt.Errorf("staleness: cache directory: %w", err)
	}
	// Written in its parts, not joined first (the file's size more at a
	// first pass's peak).
	if err := manifest.WriteFileParts(c.cache.file, 0o644, head, table, body); err != nil {
		return fmt.Errorf("staleness: write cache: %w", err)
	}
	// The file is no longer the one read: later saves of this Checker
	// compare with what was written.
	c.cache.oldRead, c.cache.oldSum, c.cache.canon = true, sum, false
	return nil
}

// saveHistory is the history record a save writes: none after an error.
func (c *Checker) saveHistory() *cachedHistory {
	if c.err != nil {
		return nil
	}
	return c.historyRecord()
}

// encodeCache returns the cache file a save writes after its header, in
// its two parts (cacheParts), with the history record hist: the
// extractions, outcomes and line checks this Checker's runs used, the
// other modes' sections as read.
func (c *Checker) encodeCache(hist *cachedHistory) (table, body []byte) {
	cf := cacheFile{Local: c.cache.local, Opts: c.cache.optsKey, History: hist}
	old, made := &c.cache.extOld, c.cache.extUsed.list
	n := len(made)
	for _, u := range old.used {
		if u {
			n++
		}
	}
	extract := make([]*cachedRefs, 0, n)
	for i, u := range old.used {
		if u {
			extract = append(extract, &old.list[i]) // in order
		}
	}
	if len(made) > 0 {
		for i := range made {
			extract = append(extract, &made[i])
		}
		slices.SortFunc(extract, func(a, b *cachedRefs) int { return bytes.Compare(a.Key[:], b.Key[:]) })
	}
	cf.Trees = append(cf.Trees, c.cache.others...)
	if c.err == nil && c.cache.treeKey != "" {
		sec := treeSection{Mode: int(c.mode), Tree: c.cache.treeKey, Outcomes: make([]cachedOutcome, 0, len(c.outcomes))}
		sec.Ignore = c.ignoreDeps()
		for k, o := range c.outcomes {
			if !o.used {
				continue
			}
			sec.Outcomes = append(sec.Outcomes, cachedOutcome{
				Path: k.path, Dir: k.dir, Rooted: k.rooted, Found: o.found, How: o.how, Skip: o.skip,
				Missing: o.missing, Moved: o.moved, Searched: o.searched, Truncated: o.truncated,
			})
		}
		sort.Slice(sec.Outcomes, func(i, j int) bool { return outcomeLess(&sec.Outcomes[i], &sec.Outcomes[j]) })
		for k, past := range c.cache.eof {
			if !c.cache.usedEOF[k] {
				continue
			}
			sec.EOF = append(sec.EOF, cachedEOF{k.k.path, k.k.dir, k.k.rooted, k.line, past})
		}
		sort.Slice(sec.EOF, func(i, j int) bool { return eofLess(&sec.EOF[i], &sec.EOF[j]) })
		sec.HasMD, sec.MD = c.cache.hasMD, c.cache.md
		cf.Trees = append(cf.Trees, sec)
	}
	sort.Slice(cf.Trees, func(i, j int) bool { return cf.Trees[i].Mode < cf.Trees[j].Mode })
	return cacheParts(&cf, extract)
}

// unchanged reports whether the file read already holds everything a save
// would write, so that it need not even be encoded: withSection is whether
// the save writes this mode's section (it does unless the Checker met an
// error), hist the history record it writes. Anything else is left to the
// comparison of the encoded bytes. The file may hold more than this run
// used (extractions of observations gone since, outcomes of references no
// longer written): they are still right — keyed by the text, or by the
// trees of the section — and the next save that has something to add
// drops them, so the file never grows by skipping. A pass after a few
// deletions then writes no cache at all (at 10,000 observations the
// encode was 6 ms). It holds when
//
//   - Opts and Extract: the same options, and every extraction used came
//     from the cache (extNew unset);
//   - Trees: the other modes' sections are kept as read; this mode's is
//     the one read when the outcomes were taken from it and nothing was
//     computed (every outcome and line check used was loaded), or, when
//     no section is written (no tree key outside git, or an error), there
//     was none for this mode;
//   - History: the very record read (historyRecord hands back the record
//     restored when the walk read nothing more), or none read and none
//     written;
//   - and the file read was in the order a save writes (canon).
func (s *cacheState) unchanged(withSection bool, hist *cachedHistory) bool {
	if !s.oldRead || !s.canon || s.optsKey != s.readOpts || hist != s.readHist || s.extNew {
		return false
	}
	if !withSection || s.treeKey == "" {
		return !s.ownRead
	}
	return s.treeHit && !s.computed
}

// canonicalCache reports whether cf is in the order SaveCache writes, with
// none of the duplicates it cannot write: Extract by strictly increasing
// key, Trees by strictly increasing mode and, in own (this mode's section,
// when there is one), the ignore files by strictly increasing name and the
// outcomes and line checks in strictly increasing order.
func canonicalCache(cf *cacheFile, own *treeSection) bool {
	for i := 1; i < len(cf.Extract); i++ {
		if bytes.Compare(cf.Extract[i-1].Key[:], cf.Extract[i].Key[:]) >= 0 {
			return false
		}
	}
	for i := 1; i < len(cf.Trees); i++ {
		if cf.Trees[i-1].Mode >= cf.Trees[i].Mode {
			return false
		}
	}
	if own == nil {
		return true
	}
	for i := 1; i < len(own.Ignore); i++ {
		if own.Ignore[i-1].Name >= own.Ignore[i].Name {
			return false
		}
	}
	for i := 1; i < len(own.Outcomes); i++ {
		if !outcomeLess(&own.Outcomes[i-1], &own.Outcomes[i]) {
			return false
		}
	}
	for i := 1; i < len(own.EOF); i++ {
		if !eofLess(&own.EOF[i-1], &own.EOF[i]) {
			return false
		}
	}
	return true
}

// outcomeLess orders the outcomes of a section (a key once).
func outcomeLess(a, b *cachedOutcome) bool {
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	if a.Dir != b.Dir {
		return a.Dir < b.Dir
	}
	return !a.Rooted && b.Rooted
}

// eofLess orders the line checks of a section (a key and line once).
func eofLess(a, b *cachedEOF) bool {
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	if a.Dir != b.Dir {
		return a.Dir < b.Dir
	}
	if a.Rooted != b.Rooted {
		return !a.Rooted
	}
	return a.Line < b.Line
}

// noteIgnore records an ignore file read while resolving.
func (c *Checker) noteIgnore(name string, data []byte, ok bool) {
	c.cache.computed = true
	if c.cache.ignore == nil {
		c.cache.ignore = map[string]ignoreDep{}
	}
	d := ignoreDep{Name: name, Present: ok}
	if ok {
		d.Sum = sha256.Sum256(data)
	}
	c.cache.ignore[name] = d
}

// letExtractsGo drops the extractions read and computed, once saved: the
// Checker is not saved again (MarkCached).
func (s *cacheState) letExtractsGo() {
	s.extOld, s.extUsed, s.enabled = oldExtracts{}, newExtracts{}, false
}
