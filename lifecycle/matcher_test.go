package lifecycle

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
)

// matches reports whether existing is the same observation as in (§2):
// the rule the matcher indexes, one pair at a time.
func matches(existing, in *manifest.Observation) bool {
	if existing.Status == manifest.Deprecated || existing.Type != in.Type {
		return false
	}
	if Normalize(existing.Pattern) == Normalize(in.Pattern) {
		return true
	}
	if in.Type == manifest.Pitfall {
		ea, ei := pitfallKey(existing.Details)
		ia, ii := pitfallKey(in.Details)
		return ea != "" && ei != "" && ea == ia && ei == ii
	}
	return false
}

// findOracle is how ObserveWith found a sighting's observation before the
// matcher: every observation of the log compared with it, in order.
func findOracle(log *manifest.Log, in *manifest.Observation) (target *manifest.Observation, idTaken bool) {
	for _, o := range log.Observations() {
		if o.ID == in.ID {
			idTaken = true
			if o.Type == in.Type && o.Status != manifest.Deprecated {
				return o, true
			}
		}
	}
	for _, o := range log.Observations() {
		if matches(o, in) {
			return o, idTaken
		}
	}
	return nil, idTaken
}

// randomLog is a log whose observations share ids, types, patterns that
// normalise alike, pitfall keys (some details blank, so that a merge gives
// them one), and deprecated ones.
func randomLog(r *rand.Rand, n int) []byte {
	log := manifest.ParseLog(nil)
	for i := range n {
		o := randomObs(r)
		o.ID = fmt.Sprintf("obs_%d", r.IntN(n+1))
		if i%7 == 0 {
			o.ID = fmt.Sprintf("obs_x%d", i)
		}
		o.Confidence, o.Observations, o.Status = 0.33, 1, []string{manifest.Observing, manifest.Ready, manifest.Deprecated}[r.IntN(3)]
		o.FirstSeen, o.LastSeen = "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z"
		log.Append(o)
	}
	b, err := log.Bytes()
	if err != nil {
		panic(err)
	}
	return b
}

func randomObs(r *rand.Rand) *manifest.Observation {
	patterns := []string{"Use SQLite", "use sqlite!", " USE  SQLITE ", "Run the linter", "run the linter.", "Deploy", "Clock", "clock", "!!!", "Ünïcode Kelvin"}
	details := []string{"", "  ", "area: scheduler; issue: wall clock", "area: Scheduler!; issue: WALL clock", "area: db; issue: mocks", "area: ; issue: x", "issue: wall clock"}
	typ := []string{manifest.Workflow, manifest.Decision, manifest.Pitfall, manifest.Procedural}[r.IntN(4)]
	o := &manifest.Observation{ID: fmt.Sprintf("obs_%d", r.IntN(12)), Type: typ, Pattern: patterns[r.IntN(len(patterns))],
		Evidence: []string{fmt.Sprintf("e%d", r.IntN(5))}, QualityOK: r.IntN(2) == 0}
	if typ == manifest.Pitfall || r.IntN(4) == 0 {
		o.Details = details[r.IntN(len(details))]
	}
	return o
}

// observeOracle is ObserveWith with findOracle.
func observeOracle(log *manifest.Log, incoming []*manifest.Observation, now time.Time, th map[string]Threshold) Result {
	var res Result
	res.IDs = []string{}
	stamp := now.UTC().Format(time.RFC3339)
	for i, in := range incoming {
		if err := ValidateSighting(in); err != nil {
			res.Skipped++
			res.Messages = append(res.Messages, fmt.Sprintf("observation #%d: %v", i+1, err))
			continue
		}
		target, idTaken := findOracle(log, in)
		if target != nil {
			merge(target, in, stamp, th)
			if target.Status == manifest.Observing && ReadyWith(target, 1, th) {
				target.Status = manifest.Ready
				res.Promoted = append(res.Promoted, target.ID)
			}
			res.Merged++
			res.IDs = append(res.IDs, target.ID)
			continue
		}
		o := in.Clone()
		if idTaken {
			used := map[string]bool{}
			for _, ln := range log.Lines {
				if ln.Parsed() {
					used[ln.ID()] = true
				}
			}
			o.ID = freeID(used, in.ID)
		}
		o.Confidence = FirstConfidence
		o.Observations = 1
		o.FirstSeen, o.LastSeen = stamp, stamp
		o.Status = manifest.Observing
		o.Evidence = mergeEvidence(nil, in.Evidence)
		o.ArtifactPath, o.DeprecatedAt = "", ""
		if ReadyWith(o, 1, th) {
			o.Status = manifest.Ready
			res.Promoted = append(res.Promoted, o.ID)
		}
		log.Append(o)
		res.Created++
		res.IDs = append(res.IDs, o.ID)
	}
	return res
}

// Merging a batch through the matcher gives what comparing every sighting
// with every observation gave: the same counts, ids and promotions, and a
// log written byte for byte the same — on random logs whose observations
// collide by id, by pattern and by pitfall key, with deprecated ones,
// pitfalls that get their details (and so a key) from a merge, and batches
// that match what they create themselves.
func TestMatcherIsTheOracle(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for seed := range uint64(400) {
		r := rand.New(rand.NewPCG(seed, 7))
		data := randomLog(r, r.IntN(40))
		batch := make([]*manifest.Observation, r.IntN(30))
		for i := range batch {
			batch[i] = randomObs(r)
		}
		a, b := manifest.ParseLog(data), manifest.ParseLog(data)
		got := ObserveWith(a, batch, now, nil, nil)
		want := observeOracle(b, batch, now, nil)
		got.Messages, want.Messages = nil, nil // worded apart: not the matcher's
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d: result\n got %+v\nwant %+v", seed, got, want)
		}
		ab, err := a.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		bb, err := b.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ab, bb) {
			t.Fatalf("seed %d: logs differ\n got %s\nwant %s", seed, ab, bb)
		}
	}
}

// An Observer merging batch after batch, each with its own clock, gives
// what ObserveWith gave called once per batch (the inbox drain did that,
// indexing the log for every item): results and logs byte for byte,
// whether it was told every batch's sightings up front or only the
// first's (then it indexes again when a batch brings another type or id).
func TestObserverIsBatchAfterBatch(t *testing.T) {
	th := map[string]Threshold{manifest.Decision: {Required: 5, Promote: 0.65}}
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 11))
		data := randomLog(r, r.IntN(40))
		batches := make([][]*manifest.Observation, 1+r.IntN(6))
		var all []*manifest.Observation
		for i := range batches {
			batches[i] = make([]*manifest.Observation, r.IntN(8))
			for j := range batches[i] {
				batches[i][j] = randomObs(r)
			}
			all = append(all, batches[i]...)
		}
		want := manifest.ParseLog(data)
		var wantRes []Result
		for i, b := range batches {
			wantRes = append(wantRes, ObserveWith(want, b, time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC), nil, th))
		}
		wb, err := want.Bytes()
		if err != nil {
			t.Fatal(err)
		}
		for _, told := range [][]*manifest.Observation{all, batches[0]} {
			got := manifest.ParseLog(data)
			ob := NewObserver(got, told, nil, th)
			for i, b := range batches {
				if res := ob.Observe(b, time.Date(2026, 3, 1+i, 0, 0, 0, 0, time.UTC)); !reflect.DeepEqual(res, wantRes[i]) {
					t.Fatalf("seed %d, batch %d (told %d sightings): result\n got %+v\nwant %+v", seed, i, len(told), res, wantRes[i])
				}
			}
			gb, err := got.Bytes()
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(gb, wb) {
				t.Fatalf("seed %d (told %d sightings): logs differ\n got %s\nwant %s", seed, len(told), gb, wb)
			}
		}
	}
}

// BenchmarkObserveBatch merges 2,000 new sightings into a log of 10,000
// observations in one call.
func BenchmarkObserveBatch(b *testing.B) {
	var sb strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&sb, `{"id":"obs_%06d","type":"workflow","pattern":"Deploy service %d with make release","status":"observing","observations":1,"confidence":0.33,"evidence":["e"]}`+"\n", i, i)
	}
	data := []byte(sb.String())
	batch := make([]*manifest.Observation, 2000)
	for i := range batch {
		batch[i] = &manifest.Observation{ID: fmt.Sprintf("obs_new%d", i), Type: manifest.Workflow, Pattern: fmt.Sprintf("Build target %d with make", i), Evidence: []string{"e"}}
	}
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for b.Loop() {
		log := manifest.ParseLog(data)
		if res := Observe(log, batch, now, nil); res.Created != len(batch) {
			b.Fatal(res)
		}
	}
}
