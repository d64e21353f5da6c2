package learn

import "math"

// KindRestored is the feedback kind of a deletion that was undone: the
// artifact came back with its recorded content (reconcile), or a person ran
// `learnwatch restore`. It cancels one deleted event of its target.
const KindRestored = "restored"

// cancelDeleted undoes the newest deleted event still in force: the
// deletion was reversed (the artifact came back with its content, or a
// person ran restore), so it is as if it never happened. A restored event
// with no deletion to cancel changes nothing.
func cancelDeleted(s Stats, e Event) Stats {
	n := len(s.deleted)
	if n == 0 {
		return s
	}
	mag := s.deleted[n-1]
	s.deleted = s.deleted[: n-1 : n-1]
	if n == 1 {
		s.deleted = nil // one representation of "none", whatever the history
	}
	s.Harmful = math.Max(0, s.Harmful-mag)
	s.HarmfulEvents = max(0, s.HarmfulEvents-1)
	return s
}
