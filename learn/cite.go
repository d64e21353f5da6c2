package learn

import (
	"maps"
	"slices"
	"time"
)

// CitationSource is the source of the cited events of a transcript scan.
const CitationSource = "transcript"

// CitationEvents returns one helpful "cited" event per entry an agent
// cited in a scanned stretch of a transcript, however many times (one
// chatty session must not outweigh the others), in id order. The type
// comes from the id (ADR: decision, PF: pitfall).
func CitationEvents(counts map[string]int, at time.Time) []Event {
	var evs []Event
	for _, id := range slices.Sorted(maps.Keys(counts)) {
		if counts[id] <= 0 {
			continue
		}
		evs = append(evs, Event{TS: at, Target: id, Kind: KindCited, Value: 1, Source: CitationSource, Type: TypeOf(id, nil)})
	}
	return evs
}
