package statcache

// Known holds lstats a caller took moments before a pass, by absolute
// path: the engine's replay check stats every input of the last pass (its
// files and the directories on the way to them), and a pass that runs
// after it takes those stats instead of stat'ing each path again. A stat
// taken a moment earlier is what a pass that started a moment earlier
// would have seen: a change after it is the next pass's, exactly as a
// change just after the pass's own stat would be.
type Known map[string]KnownStat

// KnownStat is one path's lstat: Type as LstatRaw returns it (0: the path
// did not exist or could not be stat'ed).
type KnownStat struct {
	Stat Stat
	Type uint32
}

// Regular returns the stat of path when it was a regular file.
func (k Known) Regular(path string) (Stat, bool) {
	s, ok := k[path]
	if !ok || s.Type != typeRegular {
		return Stat{}, false
	}
	return s.Stat, true
}

// SeenDir reports whether path was a directory (not a symlink to one).
func (k Known) SeenDir(path string) bool {
	s, ok := k[path]
	return ok && s.Type == typeDir
}

// SeenFile reports whether path was a regular file.
func (k Known) SeenFile(path string) bool {
	_, ok := k.Regular(path)
	return ok
}
