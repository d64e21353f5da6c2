// Package inbox owns .memory/inbox/: the queue of facts written by commands
// that could not take the learning lock in time, and the drain that merges
// them into the learning log, the journals and the usage file under the
// lock.
//
// A writer that only adds facts (observe, outcome record, verdict record,
// cite, the Stop hook) and finds the lock held longer than
// lock.queue_after writes its input as one file,
// .memory/inbox/item-<UTC time>-<nanoseconds>-<pid>-<counter>.json, with an
// atomic write (temp file, fsync, rename): a file is complete or absent,
// and no two writers ever touch the same file. The names sort in the order
// the items were queued.
//
// Every pass that holds the learning lock calls Drain first. Drain is
// exactly-once across a crash at any step:
//
//  1. it lists the items in name order and reads the log;
//  2. an item whose id is already recorded in the log (the field
//     x_learnwatch_inbox of the observations it touched) was applied by a
//     drain that crashed before removing it: its file is only removed;
//  3. every other item is merged (lifecycle.Observer, item after item,
//     each with the clock the queuing command had, under the promotion
//     rules of learnwatch.yaml and the policy's multipliers, as observe
//     merges) and its id recorded on every observation it created or
//     merged into;
//  4. the log is written — the commit point: the merge and the record of
//     the item ids are one atomic write;
//  5. the item files are removed, the directory fsynced;
//  6. the ids are removed from the log again (a second write), since no
//     file carries them any more. A marker file, .memory/inbox/.prune,
//     written before step 4 and removed after this one, makes the next
//     drain finish the prune after a crash even when no item is queued.
//
// Outcome and feedback items are idempotent by themselves (applyJournal).
//
// Cite items (cite and the Stop hook) carry citation counts, their
// "cited" feedback events and, from the Stop hook, the stretch of the
// session's transcript they were counted from. The drain adds the counts
// of the items not yet applied to the usage file and records their ids
// in the same write (the top-level key x_learnwatch_inbox, which other
// tools keep as they keep every unknown key): that write is their commit
// point. It then sets each stretch's session offset to the stretch's end
// (idempotent), appends the events unless feedback.jsonl holds a line of
// the item's id after the size it had at queue time, removes the files,
// and prunes the ids from the usage file as it does from the log. Until
// then, a Stop hook that cannot take the lock starts its scan after the
// last stretch queued for its session (QueuedEnd), so a queued stretch is
// never read twice. A usage or offsets file that cannot be read leaves
// the cite items queued for a later pass (Result.Deferred).
//
// An item that cannot be read (not JSON, too large, not a regular file) is
// renamed to rejected-<name> and reported, never deleted.
package inbox

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/learnwatch/learnwatch/citation"
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/failpoint"
	"github.com/learnwatch/learnwatch/journal"
	"github.com/learnwatch/learnwatch/learn"
	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// Dir is the inbox directory's name under .memory/.
const Dir = "inbox"

// Field is the log field that records, on each observation a drained item
// touched, the item's id until its file is gone.
const Field = "x_learnwatch_inbox"

// Item kinds: observations (observe), a run's outcome with its feedback
// (outcome record), feedback events (verdict record), knowledge citations
// (cite and the Stop hook).
const (
	KindObserve  = "observe"
	KindOutcome  = "outcome"
	KindFeedback = "feedback"
	KindCite     = "cite"
)

// MaxItemBytes bounds the size of an item file: a larger one is not
// queued, and Drain sets aside one it finds.
const MaxItemBytes = 64 << 20

// OldAfter is the age from which review warns about queued items: every
// pass drains the inbox, so an old item means no pass has run since.
const OldAfter = time.Hour

const (
	// pruneMarker exists while item ids may be recorded in the log.
	pruneMarker = ".prune"
	prefix      = "item-"
	rejected    = "rejected-"
	suffix      = ".json"
	stamp       = "20060102T150405Z"
)

// Item is one queued input.
type Item struct {
	Version int    `json:"v"`
	ID      string `json:"id"`
	Kind    string `json:"kind"`
	// QueuedAt is the wall-clock time of queuing; Now the clock of the
	// command (LEARNWATCH_NOW), used for the merge.
	QueuedAt     string                  `json:"queued_at"`
	Now          string                  `json:"now"`
	Observations []*manifest.Observation `json:"observations,omitempty"`
	// Outcome is the outcomes.jsonl line of an outcome item; Events the
	// feedback.jsonl lines of an outcome or feedback item, appended with
	// the item id as their pass id; Offset the size of feedback.jsonl when
	// the item was queued (its events cannot be before it).
	Outcome json.RawMessage   `json:"outcome,omitempty"`
	Events  []json.RawMessage `json:"events,omitempty"`
	Offset  int64             `json:"offset,omitempty"`
	// Cites are the citation counts of a cite item; Stretch, for one
	// queued by the Stop hook or cite --transcript, the part of the
	// session's transcript they were counted from.
	Cites   map[string]int    `json:"cites,omitempty"`
	Stretch *citation.Stretch `json:"stretch,omitempty"`
}

// Path returns root/.memory/inbox.
func Path(root string) string { return filepath.Join(root, ".memory", Dir) }

// ErrNotDirectory is returned when .memory or .memory/inbox is not a real
// directory (a symlink, a file): the inbox is never followed out of the
// repository.
var ErrNotDirectory = errors.New("not a directory (symlinks are not followed)")

// dir verifies .memory and its inbox are real directories; create makes
// the inbox when missing. It returns the inbox path, "" when it does not
// exist and create is false.
func dir(root string, create bool) (string, error) {
	mem := filepath.Join(root, ".memory")
	for _, d := range []string{mem, Path(root)} {
		fi, err := os.Lstat(d)
		if errors.Is(err, os.ErrNotExist) {
			if !create {
				return "", nil
			}
			if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return "", fmt.Errorf("create %s: %w", d, err)
			}
			if fi, err = os.Lstat(d); err != nil {
				return "", fmt.Errorf("inbox: %w", err)
			}
		} else if err != nil {
			return "", fmt.Errorf("inbox: %w", err)
		}
		if !fi.IsDir() || fi.Mode()&os.ModeSymlink != 0 {
			return "", fmt.Errorf("inbox: %s: %w", d, ErrNotDirectory)
		}
	}
	return Path(root), nil
}

var counter atomic.Int64

// name returns a new item name: ordered by time, unique by pid and counter.
func name(t time.Time) string {
	t = t.UTC()
	return fmt.Sprintf("%s%s-%09d-%d-%d", prefix, t.Format(stamp), t.Nanosecond(), os.Getpid(), counter.Add(1))
}

// Enqueue writes obs as one new item and returns it. now is the command's
// clock (kept for the merge); the name comes from the wall clock.
func Enqueue(root string, now time.Time, obs []*manifest.Observation) (Item, error) {
	return enqueue(root, Item{Kind: KindObserve, Now: now.UTC().Format(time.RFC3339Nano), Observations: obs})
}

// EnqueueOutcome queues a run's outcome (its outcomes.jsonl line) and the
// feedback it causes; EnqueueFeedback queues feedback events (lines as
// journal.MarshalEvent writes them).
func EnqueueOutcome(root string, now time.Time, outcome json.RawMessage, events []json.RawMessage) (Item, error) {
	return enqueue(root, Item{Kind: KindOutcome, Now: now.UTC().Format(time.RFC3339Nano), Outcome: outcome,
		Events: events, Offset: journal.FeedbackSize(root)})
}

// EnqueueFeedback: see EnqueueOutcome.
func EnqueueFeedback(root string, now time.Time, events []json.RawMessage) (Item, error) {
	return enqueue(root, Item{Kind: KindFeedback, Now: now.UTC().Format(time.RFC3339Nano), Events: events,
		Offset: journal.FeedbackSize(root)})
}

// EnqueueCite queues citation counts with their "cited" feedback events
// (citation.Events); s, when not nil, is the stretch of a session's
// transcript they were counted from (its session's offset advances to
// s.To when the item is drained).
func EnqueueCite(root string, now time.Time, counts map[string]int, s *citation.Stretch) (Item, error) {
	evs, err := citation.Events(counts, now)
	if err != nil {
		return Item{}, fmt.Errorf("inbox: %w", err)
	}
	return enqueue(root, Item{Kind: KindCite, Now: now.UTC().Format(time.RFC3339Nano), Cites: counts, Stretch: s,
		Events: evs, Offset: journal.FeedbackSize(root)})
}

func enqueue(root string, it Item) (Item, error) {
	d, err := dir(root, true)
	if err != nil {
		return Item{}, err
	}
	id := name(time.Now())
	it.Version, it.ID, it.QueuedAt = 1, id, time.Now().UTC().Format(time.RFC3339Nano)
	b, err := encodeItem(it, MaxItemBytes)
	if err != nil {
		return Item{}, err
	}
	if err := manifest.WriteFile(filepath.Join(d, id+suffix), b, 0o644); err != nil {
		return Item{}, fmt.Errorf("inbox: %w", err)
	}
	return it, nil
}

// encodeItem returns the file of it: refused when longer than max bytes,
// which Drain would set aside; refused now, the writer hears it while it
// still holds the input.
func encodeItem(it Item, max int) ([]byte, error) {
	b, err := json.Marshal(it)
	if err != nil {
		return nil, fmt.Errorf("inbox: encode item: %w", err)
	}
	if b = append(b, '\n'); len(b) > max {
		return nil, fmt.Errorf("inbox: an item of %d bytes, more than the %d one may hold: not queued", len(b), max)
	}
	return b, nil
}

// IsItem reports whether path names a queued item of root's inbox (not a
// temp file of its write, not a rejected item).
func IsItem(root, path string) bool {
	base := filepath.Base(path)
	return filepath.Dir(path) == Path(root) && strings.HasPrefix(base, prefix) && strings.HasSuffix(base, suffix)
}

// Entry is an item file in the inbox.
type Entry struct {
	ID      string
	Path    string
	Size    int64
	ModTime time.Time
}

// List returns the queued items in order (rejected items and temp files
// are not listed). A missing inbox is empty.
func List(root string) ([]Entry, error) {
	d, err := dir(root, false)
	if err != nil || d == "" {
		return nil, err
	}
	des, err := os.ReadDir(d)
	if err != nil {
		return nil, fmt.Errorf("inbox: %w", err)
	}
	var out []Entry
	for _, de := range des {
		n := de.Name()
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, suffix) {
			continue
		}
		e := Entry{ID: strings.TrimSuffix(n, suffix), Path: filepath.Join(d, n)}
		if fi, err := de.Info(); err == nil {
			e.Size, e.ModTime = fi.Size(), fi.ModTime()
		}
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Depth describes the inbox for status and review.
type Depth struct {
	Items    int       `json:"items"`
	Rejected int       `json:"rejected"`
	Oldest   time.Time `json:"oldest,omitzero"`
}

// Stat counts the queued and rejected items; Oldest is the queuing time
// of the first item (its file's mtime).
func Stat(root string) (Depth, error) {
	var d Depth
	es, err := List(root)
	if err != nil {
		return d, err
	}
	d.Items = len(es)
	for _, e := range es {
		if d.Oldest.IsZero() || e.ModTime.Before(d.Oldest) {
			d.Oldest = e.ModTime
		}
	}
	if rs, _ := filepath.Glob(filepath.Join(Path(root), rejected+"*")); len(rs) > 0 {
		d.Rejected = len(rs)
	}
	return d, nil
}

// Result says what a drain did.
type Result struct {
	Drained      int `json:"drained"`             // items merged by this drain
	Completed    int `json:"completed"`           // items a crashed drain had merged: only removed
	Observations int `json:"observations"`        // sightings merged
	Events       int `json:"events,omitempty"`    // feedback events appended (outcome, feedback and cite items)
	Citations    int `json:"citations,omitempty"` // citations added to the usage file (cite items)
	// Deferred says why cite items were left queued (a usage or offsets
	// file that cannot be read).
	Deferred string   `json:"deferred,omitempty"`
	Rejected []string `json:"rejected,omitempty"`
	Skipped  string   `json:"skipped,omitempty"` // why the inbox was not drained
	// Feedback counts the feedback events of an interrupted reconcile
	// recorded by Lock before the drain.
	Feedback int `json:"feedback,omitempty"`
	// CitationPass is set when Lock found the record of an interrupted
	// citation pass (and completed or dropped it).
	CitationPass bool `json:"citation_pass,omitempty"`
}

// read loads an item file: a regular file, at most MaxItemBytes, whose id
// matches its name.
func read(e Entry) (Item, error) {
	var it Item
	// Not followed through a link, never blocking on a FIFO, regular.
	f, err := safefs.Open(e.Path)
	if err != nil {
		return it, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxItemBytes+1))
	if err != nil {
		return it, err
	}
	if len(b) > MaxItemBytes {
		return it, fmt.Errorf("%s: larger than %d bytes", e.Path, MaxItemBytes)
	}
	it, err = Parse(b, e.ID)
	if err != nil {
		return it, fmt.Errorf("%s: %w", e.Path, err)
	}
	return it, nil
}

// Parse decodes an item file's bytes; id is the id its name gives. The
// item must be an observe item of that id whose observations are all
// JSON objects with a valid type (observe queued only valid ones).
func Parse(b []byte, id string) (Item, error) {
	var it Item
	if err := json.Unmarshal(b, &it); err != nil {
		return Item{}, fmt.Errorf("not an inbox item: %w", err)
	}
	if it.ID != id || it.Version != 1 {
		return Item{}, fmt.Errorf("not an inbox item: id %q, version %d (want %s, version 1)", it.ID, it.Version, id)
	}
	for i, o := range it.Observations {
		if o == nil {
			return Item{}, fmt.Errorf("not an inbox item: observation %d is null", i+1)
		}
	}
	for i, e := range it.Events {
		if _, err := journal.ParseEvent(e); err != nil {
			return Item{}, fmt.Errorf("not an inbox item: event %d: %w", i+1, err)
		}
	}
	switch it.Kind {
	case KindObserve:
		if len(it.Outcome) > 0 || len(it.Events) > 0 {
			return Item{}, errors.New("not an inbox item: an observe item with an outcome or events")
		}
	case KindOutcome:
		if _, err := journal.ParseOutcome(it.Outcome); err != nil {
			return Item{}, fmt.Errorf("not an inbox item: outcome: %w", err)
		}
	case KindFeedback:
	case KindCite:
		if len(it.Outcome) > 0 {
			return Item{}, errors.New("not an inbox item: a cite item with an outcome")
		}
		if len(it.Cites) == 0 {
			return Item{}, errors.New("not an inbox item: a cite item without citations")
		}
		if err := citation.ValidateCounts(it.Cites); err != nil {
			return Item{}, fmt.Errorf("not an inbox item: cites: %w", err)
		}
		if it.Stretch != nil {
			if err := it.Stretch.Validate(); err != nil {
				return Item{}, fmt.Errorf("not an inbox item: %w", err)
			}
		}
		// Only the helpful events of the item's own citations.
		for i, raw := range it.Events {
			if e, _ := journal.ParseEvent(raw); e.Kind != learn.KindCited || it.Cites[e.Target] == 0 {
				return Item{}, fmt.Errorf("not an inbox item: event %d is not a citation of the item (%s %s)", i+1, e.Kind, e.Target)
			}
		}
	default:
		return Item{}, fmt.Errorf("not an inbox item: kind %q", it.Kind)
	}
	if it.Kind != KindObserve && len(it.Observations) > 0 {
		return Item{}, fmt.Errorf("not an inbox item: a %s item with observations", it.Kind)
	}
	if it.Kind != KindCite && (len(it.Cites) > 0 || it.Stretch != nil) {
		return Item{}, fmt.Errorf("not an inbox item: a %s item with citations", it.Kind)
	}
	return it, nil
}

// Drain merges every queued item into the learning log (observations),
// the journals (outcomes, feedback) and the usage file (citations); the
// caller holds the learning lock. See the package comment for why a crash
// at any point neither loses nor double-counts an item.
func Drain(root string) (Result, error) {
	var res Result
	es, err := List(root)
	if err != nil {
		return res, err
	}
	marker := filepath.Join(Path(root), pruneMarker)
	if len(es) == 0 {
		if _, err := os.Lstat(marker); err != nil {
			return res, nil
		}
		// A drain was killed before it pruned its record from the log.
	}
	manifest.RemoveStaleTemps(Path(root), 10*time.Minute)
	p := manifest.PathsFor(root)
	log, err := manifest.ReadLog(p.Log)
	if err != nil {
		return res, err
	}
	present := map[string]bool{}
	for _, e := range es {
		present[e.ID] = true
	}
	recorded := prune(log, present)
	var done []Entry
	var applied []string
	var cites []queuedItem
	var observed []queuedItem // merged below, in their order
	for _, e := range es {
		if recorded[e.ID] {
			res.Completed++
			done = append(done, e)
			continue
		}
		it, err := read(e)
		if err != nil {
			if rerr := os.Rename(e.Path, filepath.Join(filepath.Dir(e.Path), rejected+filepath.Base(e.Path))); rerr != nil {
				return res, fmt.Errorf("inbox: set aside %s: %w", e.Path, rerr)
			}
			res.Rejected = append(res.Rejected, err.Error())
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, it.Now)
		if err != nil {
			at = e.ModTime
		}
		switch it.Kind {
		case KindCite:
			cites = append(cites, queuedItem{e, it, at})
			continue
		case KindOutcome, KindFeedback:
			// Journal items are idempotent by themselves: applied now,
			// removed with the others after the log write.
			n, err := applyJournal(root, it)
			if err != nil {
				return res, err
			}
			res.Drained++
			res.Events += n
			done = append(done, e)
			continue
		}
		observed = append(observed, queuedItem{e, it, at})
	}
	if len(observed) > 0 {
		// One index of the log for every item (lifecycle.Observer), and
		// the promotion rules and multipliers a command's observe uses.
		var all []*manifest.Observation
		for _, q := range observed {
			all = append(all, q.it.Observations...)
		}
		pol, _ := journal.LoadPolicy(root)
		ob := lifecycle.NewObserver(log, all, pol.Multiplier, thresholds(root))
		for _, q := range observed {
			r := ob.Observe(q.it.Observations, q.at)
			mark(log, r.IDs, q.e.ID)
			res.Drained++
			res.Observations += r.Created + r.Merged
			done = append(done, q.e)
			applied = append(applied, q.e.ID)
		}
	}
	cd := prepareCites(root, cites, present, &res)
	if err != nil {
		return res, err
	}
	if len(applied) > 0 || cd.applied {
		// Says "ids may be in the log or the usage file" until they are
		// pruned, so that the prune is finished even when no item is left
		// to drain.
		if err := os.WriteFile(marker, nil, 0o644); err != nil {
			return res, fmt.Errorf("inbox: %w", err)
		}
	}
	if err := failpoint.Inject("inbox:before-log"); err != nil {
		return res, fmt.Errorf("inbox: %w", err)
	}
	if log.Changed() {
		if err := manifest.WriteLog(p.Log, log); err != nil {
			return res, err
		}
	}
	if err := failpoint.Inject("inbox:after-log"); err != nil {
		return res, fmt.Errorf("inbox: %w", err)
	}
	cdone, n, err := cd.commit(root)
	if err != nil {
		return res, err
	}
	res.Events += n
	done = append(done, cdone...)
	for _, e := range done {
		if err := failpoint.Inject("inbox:remove"); err != nil {
			return res, fmt.Errorf("inbox: %w", err)
		}
		if err := os.Remove(e.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return res, fmt.Errorf("inbox: remove drained item: %w", err)
		}
	}
	if err := syncDir(Path(root)); err != nil {
		return res, err
	}
	if err := failpoint.Inject("inbox:after-remove"); err != nil {
		return res, fmt.Errorf("inbox: %w", err)
	}
	prune(log, nil)
	if log.Changed() {
		if err := manifest.WriteLog(p.Log, log); err != nil {
			return res, err
		}
	}
	// The ids of the items still queued (deferred cite items) stay.
	still := map[string]bool{}
	if es, err := List(root); err == nil {
		for _, e := range es {
			still[e.ID] = true
		}
	}
	if err := pruneUsage(root, still); err != nil {
		return res, err
	}
	if err := os.Remove(marker); err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("inbox: %w", err)
	}
	return res, nil
}

// queuedItem is an item read by Drain (a cite or observe item, applied
// after the others), with its clock.
type queuedItem struct {
	e  Entry
	it Item
	at time.Time
}

// citeDrain is the part of a drain that concerns cite items: the usage
// file with their counts and ids, the stretches whose sessions advance,
// and the items done once both are written.
type citeDrain struct {
	usage     *manifest.Usage
	applied   bool // counts added: the usage file is written
	stretches []citation.Stretch
	at        time.Time
	items     []queuedItem
}

// prepareCites applies the cite items to the usage file in memory. An
// item whose id the usage file records (Field, a top-level key) was
// applied by a drain killed before removing it: it is only done (its
// stretch still advances, which is idempotent). Recorded ids whose files
// are gone (not in present) are pruned. When the usage or offsets file
// cannot be read (does not parse, is refused), the cite items stay queued
// (res.Deferred says why): a later pass drains them once reconcile rebuilt
// the usage file or the offsets file was removed.
func prepareCites(root string, items []queuedItem, present map[string]bool, res *Result) *citeDrain {
	cd := &citeDrain{}
	if len(items) == 0 {
		return cd
	}
	u, err := manifest.ReadUsage(manifest.PathsFor(root).Usage)
	if err == nil {
		_, err = citation.ReadOffsets(root)
	}
	if err != nil {
		res.Deferred = fmt.Sprintf("%d cite item(s) left queued: %v", len(items), err)
		return cd
	}
	recorded := usageIDs(u)
	var keep []string
	for _, id := range recorded {
		if present[id] {
			keep = append(keep, id)
		}
	}
	for _, q := range items {
		if slices.Contains(keep, q.e.ID) {
			res.Completed++
		} else {
			citation.AddCites(u, q.it.Cites, q.at)
			keep = append(keep, q.e.ID)
			cd.applied = true
			res.Drained++
			res.Citations += citation.Total(q.it.Cites)
		}
		if q.it.Stretch != nil {
			cd.stretches = append(cd.stretches, *q.it.Stretch)
		}
		cd.at = q.at
		cd.items = append(cd.items, q)
	}
	setUsageIDs(u, keep)
	cd.usage = u
	return cd
}

// commit writes the usage file — the commit point of the cite items: their
// counts and ids in one atomic write — then advances the sessions of
// their stretches and appends their feedback events (each item's once:
// they carry the item id as their pass), and returns the items done and
// the number of events appended.
func (cd *citeDrain) commit(root string) ([]Entry, int, error) {
	var done []Entry
	n := 0
	if err := cd.write(root); err != nil {
		return nil, 0, err
	}
	for _, q := range cd.items {
		k, err := citation.AppendEvents(root, q.e.ID, q.it.Offset, q.it.Events)
		if err != nil {
			return nil, n, fmt.Errorf("inbox: %w", err)
		}
		n += k
		done = append(done, q.e)
	}
	return done, n, nil
}

func (cd *citeDrain) write(root string) error {
	if cd.applied {
		if err := failpoint.Inject("inbox:before-usage"); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		if err := manifest.WriteUsage(manifest.PathsFor(root).Usage, cd.usage); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
		if err := failpoint.Inject("inbox:after-usage"); err != nil {
			return fmt.Errorf("inbox: %w", err)
		}
	}
	if len(cd.stretches) == 0 {
		return nil
	}
	if err := citation.Advance(root, cd.stretches, cd.at); err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	if err := failpoint.Inject("inbox:after-offsets"); err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	return nil
}

// usageIDs returns the item ids the usage file records.
func usageIDs(u *manifest.Usage) []string { return idList(u.Extra(Field)) }

// idList decodes a recorded list of item ids (none when absent or not a
// list of strings).
func idList(raw json.RawMessage, ok bool) []string {
	var out []string
	if !ok || json.Unmarshal(raw, &out) != nil {
		return nil
	}
	return out
}

// setUsageIDs records ids in the usage file (none: the key is removed).
func setUsageIDs(u *manifest.Usage, ids []string) {
	if len(ids) == 0 {
		u.DeleteExtra(Field)
		return
	}
	b, _ := json.Marshal(ids)
	u.SetExtra(Field, b)
}

// pruneUsage removes from the usage file the recorded item ids not in
// keep (their files are gone). A usage file that cannot be read has
// nothing learnwatch could prune.
func pruneUsage(root string, keep map[string]bool) error {
	path := manifest.PathsFor(root).Usage
	u, err := manifest.ReadUsage(path)
	if err != nil {
		return nil // unreadable: nothing learnwatch could prune
	}
	have := usageIDs(u)
	if _, ok := u.Extra(Field); !ok {
		return nil
	}
	var still []string
	for _, id := range have {
		if keep[id] {
			still = append(still, id)
		}
	}
	if len(still) == len(have) && len(have) > 0 {
		return nil
	}
	setUsageIDs(u, still)
	if err := manifest.WriteUsage(path, u); err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	return nil
}

// QueuedEnd returns the end of the last stretch of transcript queued for
// session (0 when none): a scan that cannot take the lock starts there,
// so that a stretch waiting in the inbox is not counted twice. Items over
// 1 MiB (a cite item is a few hundred bytes) and items that cannot be
// read are skipped.
func QueuedEnd(root, session, transcript string) int64 {
	es, _ := List(root)
	var end int64
	for _, e := range es {
		if e.Size > 1<<20 {
			continue
		}
		it, err := read(e)
		if err != nil || it.Kind != KindCite || it.Stretch == nil {
			continue
		}
		if s := it.Stretch; s.Session == session && s.Transcript == transcript && s.To > end {
			end = s.To
		}
	}
	return end
}

// applyJournal appends an outcome or feedback item, once: the outcome
// line unless outcomes.jsonl already has its run (a drain killed after
// appending it, or the run recorded directly); the events unless
// feedback.jsonl has a line of the item's id after its offset, or the run
// was recorded with its feedback before this item. It returns the number
// of events appended.
func applyJournal(root string, it Item) (int, error) {
	if it.Kind == KindOutcome {
		o, err := journal.ParseOutcome(it.Outcome)
		if err != nil {
			return 0, err
		}
		outs, _, err := journal.ReadOutcomes(root)
		if err != nil {
			return 0, err
		}
		if slices.ContainsFunc(outs, func(x learn.Outcome) bool { return x.RunID == o.RunID }) {
			evs, _, err := journal.ReadFeedback(root)
			if err != nil {
				return 0, err
			}
			src := learn.OutcomeSourcePrefix + o.RunID
			mine, err := journal.Journaled(root, it.ID, it.Offset)
			if err != nil {
				return 0, err
			}
			if mine || slices.ContainsFunc(evs, func(e learn.Event) bool { return e.Source == src }) {
				return 0, nil // complete already
			}
		} else if err := journal.AppendOutcome(root, o); err != nil {
			return 0, err
		}
	}
	if len(it.Events) == 0 {
		return 0, nil
	}
	if done, err := journal.Journaled(root, it.ID, it.Offset); err != nil || done {
		return 0, err
	}
	if err := journal.AppendFeedbackPass(root, it.ID, it.Events); err != nil {
		return 0, err
	}
	return len(it.Events), nil
}

// ids returns the item ids recorded on o.
func ids(o *manifest.Observation) []string { return idList(o.Extra(Field)) }

// prune removes from the log the recorded ids not in keep (their files
// are gone) and returns the ids kept.
func prune(log *manifest.Log, keep map[string]bool) map[string]bool {
	kept := map[string]bool{}
	key := []byte(`"` + Field + `"`)
	for _, ln := range log.Lines {
		// Only lines as read or last written carry the field (marks are
		// always written before they are pruned): no JSON parse per line.
		if !bytes.Contains(ln.Raw(), key) {
			continue
		}
		o := ln.Observation()
		if o == nil {
			continue
		}
		have := ids(o)
		var still []string
		for _, id := range have {
			if keep[id] {
				still = append(still, id)
				kept[id] = true
			}
		}
		switch {
		case len(still) == 0:
			o.DeleteExtra(Field)
		case len(still) < len(have):
			b, _ := json.Marshal(still)
			o.SetExtra(Field, b)
		}
	}
	return kept
}

// mark records item id on every observation with one of touched's ids.
func mark(log *manifest.Log, touched []string, id string) {
	for _, ln := range log.Lines {
		if !ln.Parsed() || !slices.Contains(touched, ln.ID()) {
			continue
		}
		o := ln.Observation()
		if o == nil {
			continue
		}
		have := ids(o)
		if slices.Contains(have, id) {
			continue
		}
		b, _ := json.Marshal(append(have, id))
		o.SetExtra(Field, b)
	}
}

// thresholds are the promotion rules of root's learnwatch.yaml
// (learn.thresholds), the ones a command's observe merges with (merged by
// the defaults, a queued sighting was promoted where the same sighting
// merged at once was not). A file that does not parse gives the defaults,
// as it does to a hook.
// The drain reads the file rather than taking a caller's Config: every
// pass that takes the lock drains, and each loaded the same file.
func thresholds(root string) map[string]lifecycle.Threshold {
	c, err := config.Load(root)
	if err != nil {
		c = config.Default()
	}
	return lifecycle.ThresholdsFrom(c.Learn.Thresholds)
}

func syncDir(d string) error {
	f, err := os.Open(d)
	if err != nil {
		return fmt.Errorf("inbox: %w", err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("inbox: sync %s: %w", d, err)
	}
	return nil
}
