package statcache

import "slices"

// Known holds lstats a caller took moments before a pass, by absolute
// path: the engine's replay check stats every input of the last pass (its
// files and the directories on the way to them), and a pass that runs
// after it takes those stats instead of stat'ing each path again. A stat
// taken a moment earlier is what a pass that started a moment earlier
// would have seen: a change after it is the next pass's, exactly as a
// change just after the pass's own stat would be.
//
// The paths are sorted and looked up by binary search (about 15
// comparisons among 25,000), and Known keeps the caller's slices (the
// replay record's paths, held for the pass's confirmation anyway): a map
// of the 25,000 inputs of a 100,000 observations' full pass was 5 MB of
// its peak.
type Known struct {
	paths []string    // sorted, each once
	stats []KnownStat // stats[i] is paths[i]'s
}

// NewKnown returns the Known of paths, sorted and each once, and their
// stats; it keeps both slices. Paths out of order or repeated, or not as
// many stats as paths, give the empty Known: the pass then stats each
// path itself.
func NewKnown(paths []string, stats []KnownStat) Known {
	if len(paths) != len(stats) {
		return Known{}
	}
	for i := 1; i < len(paths); i++ {
		if paths[i-1] >= paths[i] {
			return Known{}
		}
	}
	return Known{paths: paths, stats: stats}
}

// Len is how many paths k holds.
func (k Known) Len() int { return len(k.paths) }

// get returns the stat of path, ok when k holds it.
func (k Known) get(path string) (KnownStat, bool) {
	i, ok := slices.BinarySearch(k.paths, path)
	if !ok {
		return KnownStat{}, false
	}
	return k.stats[i], true
}

// KnownStat is one path's lstat: Type as LstatRaw returns it (0: the path
// did not exist or could not be stat'ed).
type KnownStat struct {
	Stat Stat
	Type uint32
}

// Regular returns the stat of path when it was a regular file.
func (k Known) Regular(path string) (Stat, bool) {
	s, ok := k.get(path)
	if !ok || s.Type != typeRegular {
		return Stat{}, false
	}
	return s.Stat, true
}

// SeenDir reports whether path was a directory (not a symlink to one).
func (k Known) SeenDir(path string) bool {
	s, ok := k.get(path)
	return ok && s.Type == typeDir
}

// SeenFile reports whether path was a regular file.
func (k Known) SeenFile(path string) bool {
	_, ok := k.Regular(path)
	return ok
}
