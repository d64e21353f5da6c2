package learn

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

func randomEvents(r *rand.Rand, n int, from time.Time) []Event {
	evs := make([]Event, n)
	for i := range evs {
		from = from.Add(time.Duration(r.IntN(5)) * time.Hour)
		evs[i] = Event{
			TS:     parsed(from.In(time.FixedZone("", 3600*(r.IntN(5)-2)))),
			Target: []string{"ADR-001", "PF-002", "obs_a", "obs_b", ""}[r.IntN(5)],
			Kind:   append(append([]string{}, Kinds...), "unknown")[r.IntN(len(Kinds)+1)],
			Value:  []float64{0, 1, -1, 0.38, 0.9, 3}[r.IntN(6)],
			Type:   []string{"", "decision", "pitfall"}[r.IntN(3)],
			Reason: []string{"", "deleted", "timeout"}[r.IntN(3)],
			Role:   []string{"", "reviewer"}[r.IntN(2)],
			Of:     []string{"", "", "k1", "k2"}[r.IntN(4)],
		}
	}
	return evs
}

// parsed is t as the journal reader gets it: from its RFC 3339 form.
func parsed(t time.Time) time.Time {
	p, err := time.Parse(time.RFC3339Nano, t.Format(time.RFC3339Nano))
	if err != nil {
		panic(err)
	}
	return p
}

// Folding in two batches, with the state kept in its binary form between them, is
// the one-batch fold bit for bit; a second batch older than the first is
// refused and changes nothing.
func TestFolderStepsEqualOneFold(t *testing.T) {
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		evs := randomEvents(r, r.IntN(80), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		p := Params{HalfLifeDays: 45}
		want := FoldWith(evs, now, p)
		cut := r.IntN(len(evs) + 1)
		f := NewFolder()
		if !f.Add(evs[:cut]) {
			t.Fatal("first batch refused")
		}
		b, err := f.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		var g Folder
		if err := g.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
		if !g.Add(evs[cut:]) {
			t.Fatalf("seed %d: ordered second batch refused", seed)
		}
		if got := g.Result(now, p); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d (cut %d):\n got %+v\nwant %+v", seed, cut, got, want)
		}
		if g.Events() != len(evs) {
			t.Fatalf("%d events, want %d", g.Events(), len(evs))
		}
		if cut > 0 && cut < len(evs) && evs[0].TS.Before(evs[cut-1].TS) {
			before, _ := g.MarshalBinary()
			if g.Add(evs[:1]) {
				t.Fatalf("seed %d: an older event was accepted", seed)
			}
			if after, _ := g.MarshalBinary(); !bytes.Equal(before, after) {
				t.Fatalf("seed %d: a refused batch changed the state", seed)
			}
		}
	}
}

// A fold state that does not parse or is inconsistent is refused; one
// that parses survives a round trip unchanged.
func FuzzFolderState(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	fo := NewFolder()
	fo.Add(randomEvents(r, 40, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	good, _ := fo.MarshalBinary()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte("lwfold1"))
	f.Add([]byte("lwfold1\x02\x0f\x01\x00\x00\x00\x0e\x00\x00\x00\x00\x00\x00\xff\xff\x01"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var g Folder
		if err := g.UnmarshalBinary(b); err != nil {
			return
		}
		out, err := g.MarshalBinary()
		if err != nil {
			t.Fatalf("accepted %q but cannot write it: %v", b, err)
		}
		var h Folder
		if err := h.UnmarshalBinary(out); err != nil {
			t.Fatalf("written state %s does not parse: %v", out, err)
		}
		again, _ := h.MarshalBinary()
		if !bytes.Equal(out, again) {
			t.Fatalf("round trip changed the state:\n%s\n%s", out, again)
		}
		now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
		// Compared as printed: a time read back may carry an equal
		// location of another pointer (a zone with an offset in seconds
		// is written in time's version-2 binary form), which DeepEqual
		// tells apart; %+v prints every field, times by instant and zone.
		if a, b := fmt.Sprintf("%+v", g.Result(now, Params{})), fmt.Sprintf("%+v", h.Result(now, Params{})); a != b {
			t.Fatalf("round trip changed the result:\n%s\n%s", a, b)
		}
	})
}

// A fold state written before deletions were named ("lwfold1", kept in
// every compaction base of an older journal) reads back: its deletions in
// force are unnamed, a restore cancels the newest, and written again it is
// the current version.
func TestFoldStateV1ReadsBack(t *testing.T) {
	// Two deletions of obs_a and a kept event of obs_b, folded and
	// marshalled by the code of e494603.
	const v1 = "bHdmb2xkMQYPAQAAAA7g58wgAAAAAP//AgVvYnNfYQh3b3JrZmxvdwAAAAAAAAAAAAAAAAAAAEAAAAAAAAAAAAAEAA8BAAAADuDnvhAAAAAA//8PAQAAAAAAAAAAAAAAAP//AAAAAAAAAgAAAAAAAPA/AAAAAAAA8D8AAA8BAAAAAAAAAAAAAAAA//8PAQAAAAAAAAAAAAAAAP//BW9ic19iCHdvcmtmbG93AAAAAAAA8D8AAAAAAAAAAAAAAAAAAAAAAgAADwEAAAAO4OfMIAAAAAD//w8BAAAAAAAAAAAAAAAA//8CAAAAAAAAAAAPAQAAAAAAAAAAAAAAAP//DwEAAAAAAAAAAAAAAAD//w=="
	raw, err := base64.StdEncoding.DecodeString(v1)
	if err != nil {
		t.Fatal(err)
	}
	f := NewFolder()
	if err := f.UnmarshalBinary(raw); err != nil {
		t.Fatalf("a v1 fold state: %v", err)
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0.Add(48 * time.Hour)
	if got := f.Result(now, Params{})["obs_a"].HarmfulEvents; got != 2 {
		t.Fatalf("%d harmful events read back, want 2", got)
	}
	f.Add([]Event{{TS: t0.Add(3 * time.Hour), Target: "obs_a", Kind: KindRestored, Value: 1, Type: "workflow", Of: "k"}})
	if got := f.Result(now, Params{})["obs_a"].HarmfulEvents; got != 2 {
		t.Fatalf("a restore naming a deletion the v1 state cannot name cancelled one: %d", got)
	}
	f.Add([]Event{{TS: t0.Add(4 * time.Hour), Target: "obs_a", Kind: KindRestored, Value: 1, Type: "workflow"}})
	if got := f.Result(now, Params{})["obs_a"].HarmfulEvents; got != 1 {
		t.Fatalf("an unnamed restore after a v1 state: %d harmful events, want 1", got)
	}
	b, err := f.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), foldMagic) {
		t.Fatalf("written again as %q", b[:7])
	}
}
