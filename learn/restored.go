package learn

import "math"

// KindRestored is the feedback kind of a deletion that was undone: the
// artifact came back with its recorded content (reconcile), or a person ran
// `learnwatch restore`. It cancels one deleted event of its target.
const KindRestored = "restored"

// inForce is a deleted event a restored one has not cancelled: its
// magnitude, and the deletion it records (Event.Of, "" when unnamed).
type inForce struct {
	mag float64
	of  string
}

// deletionAt returns the index of deletion of among those in force, -1
// when of is empty or not in force.
func (s Stats) deletionAt(of string) int {
	if of == "" {
		return -1
	}
	for i, d := range s.deleted {
		if d.of == of {
			return i
		}
	}
	return -1
}

// cancelDeleted undoes a deleted event still in force: the deletion was
// reversed (the artifact came back with its content, or a person ran
// restore), so it is as if it never happened. A restored event naming its
// deletion (Of) cancels that one, and nothing when it is not in force (a
// second record of one restore); one naming none cancels the newest. A
// restored event with no deletion to cancel changes nothing.
func cancelDeleted(s Stats, e Event) Stats {
	n := len(s.deleted)
	if n == 0 {
		return s
	}
	i := n - 1
	if e.Of != "" {
		if i = s.deletionAt(e.Of); i < 0 {
			return s
		}
	}
	mag := s.deleted[i].mag
	s.deleted = append(s.deleted[:i:i], s.deleted[i+1:]...)
	if len(s.deleted) == 0 {
		s.deleted = nil // one representation of "none", whatever the history
	}
	s.Harmful = math.Max(0, s.Harmful-mag)
	s.HarmfulEvents = max(0, s.HarmfulEvents-1)
	return s
}
