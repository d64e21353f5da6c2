package heal

// Moved artifacts: a command or skill a person renamed or moved (mv, git
// mv) — promoted out of self-learning/ into the project's own commands,
// say — is still an artifact the agent uses. It is not a deletion: the
// manifest entry follows the file to its new path.
//
// A missing whole-file artifact that the pass would call deleted (git
// does not explain its absence) has moved when a file of the same kind
// that no manifest entry names holds exactly its recorded content: a
// command is any *.md below .claude/commands/, a skill a SKILL.md in a
// directory of its own below .claude/skills/. A file moved elsewhere (out
// of those directories, or renamed to foo.md.bak) no longer works as one:
// a deletion. A file moved and edited at once matches when it is the one
// file of its kind that still carries the artifact marker and the
// observation's pattern as its description (matchEdited): it moved, and
// the edit is recorded as one. Given another description, or stripped of
// the marker, it is the person's own file: a deletion.

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
	"github.com/learnwatch/learnwatch/safefs"
)

// Artifact roots and kinds, relative to the repository root.
const (
	commandsRoot = ".claude/commands"
	skillsRoot   = ".claude/skills"
	skillFile    = "SKILL.md"
)

// maxMoveCandidates bounds the files listed and read looking for moves:
// a directory of commands larger than that is not searched further.
const maxMoveCandidates = 20000

// MaxMoveDepth bounds how deep below .claude/commands a moved command is
// looked for (the watcher watches that deep for the same reason).
const MaxMoveDepth = 8

// artifactKind says what kind of artifact rel (slash-separated, relative
// to the root) is: "command", "skill", or "" for anything else.
func artifactKind(rel string) string {
	switch {
	case strings.HasPrefix(rel, commandsRoot+"/") && strings.HasSuffix(rel, ".md"):
		return "command"
	case strings.HasPrefix(rel, skillsRoot+"/") && path.Base(rel) == skillFile &&
		strings.Count(strings.TrimPrefix(rel, skillsRoot+"/"), "/") == 1:
		return "skill"
	}
	return ""
}

// findMoves starts looking for moved artifacts and returns the function
// that fills st.Moved once askGit has run: for each whole-file artifact
// missing from the work tree, not absent because of git and not penalised
// yet, the unregistered artifact file of its kind that holds its recorded
// content (each file given to one entry, in manifest order; the first such
// file in path order). The directories are listed on another goroutine
// while git is asked (a few milliseconds for thousands of commands), and
// only when an artifact of that kind is missing. scope are the entries the
// pass looked at (the others' outcomes stand). only, when not nil, holds
// the paths that can be candidates (the watcher's arrivals: a directory
// among them is listed): nothing else is listed, so a watcher's pass costs
// what its events name, not what the repository holds.
func (st *State) findMoves(scope []manifest.Entry, only map[string]bool) (finish func()) {
	st.Moved = map[string]movedFile{}
	var wants []moveWant
	kinds := map[string]bool{}
	for _, e := range scope {
		if e.AnchorID != "" || e.Deleted != nil || st.Foreign[e.Path] {
			continue
		}
		rel, ok := st.Rel[e.Path]
		if !ok || !st.Missing[rel] {
			continue
		}
		if kind := artifactKind(rel); kind != "" {
			wants = append(wants, moveWant{rel, kind, e.ContentHash, e.ObservationID})
			kinds[kind] = true
		}
	}
	if len(wants) == 0 {
		return func() {}
	}
	// Most files listed are other entries' artifacts: a manifest path is
	// spelled relative or absolute, so two lookups leave them out without
	// a set of every entry built per pass. (A match is checked against
	// every entry before it is taken: matchMoves.)
	root := st.Root
	named := func(rel string) bool {
		if _, ok := st.Rel[rel]; ok {
			return true
		}
		_, ok := st.Rel[filepath.Join(root, filepath.FromSlash(rel))]
		return ok
	}
	listed := make(chan []string, 1)
	go func() {
		if only != nil {
			listed <- arrivedArtifacts(root, only, named)
			return
		}
		listed <- listArtifacts(root, kinds, named)
	}()
	return func() {
		cands := <-listed
		st.matchMoves(wants, cands)
	}
}

// moveWant is a missing artifact looked for among the candidates: its
// key (path), kind ("command", "skill"), recorded hash and observation.
type moveWant struct{ key, kind, hash, id string }

// maxCandidateBytes bounds one candidate read: a rendered command or
// skill is a few kilobytes; a larger file is not one that moved.
const maxCandidateBytes = 1 << 20

// matchMoves gives each missing entry not absent because of git the
// first candidate of its kind holding its recorded content. Each
// candidate is read once and only its sums are kept (an untrusted
// repository may hold thousands of files there); the file an entry takes
// is read again, and taken only if it still matches.
func (st *State) matchMoves(wants []moveWant, cands []string) {
	// Candidates by the sums a manifest may record of them (sha256 and
	// the legacy djb2, of the bytes and, with CRLF line ends, of their LF
	// form: manifest.Unchanged), in path order.
	bySha, byDJB := map[string][]string{}, map[string][]string{}
	var marked []string // candidates carrying the artifact marker, in path order
	for _, c := range cands {
		b, err := safefs.ReadFile(filepath.Join(st.Root, filepath.FromSlash(c)), maxCandidateBytes)
		if err != nil {
			continue
		}
		if markdown.HasMarker(b) {
			marked = append(marked, c)
		}
		bySha[manifest.Hash(b)] = append(bySha[manifest.Hash(b)], c)
		byDJB[manifest.DJB2(b)] = append(byDJB[manifest.DJB2(b)], c)
		if manifest.HasCRLF(b) {
			lf := manifest.LF(b)
			bySha[manifest.Hash(lf)] = append(bySha[manifest.Hash(lf)], c)
			byDJB[manifest.DJB2(lf)] = append(byDJB[manifest.DJB2(lf)], c)
		}
	}
	var registered map[string]bool // every entry's file, built for the first match
	isRegistered := func(rel string) bool {
		if registered == nil {
			registered = make(map[string]bool, len(st.Rel)+len(st.Knowledge))
			for _, r := range st.Rel {
				registered[r] = true
			}
			for r := range st.Knowledge {
				registered[r] = true
			}
		}
		return registered[rel]
	}
	taken := map[string]bool{}
	take := func(w moveWant, c string) bool {
		if taken[c] || artifactKind(c) != w.kind || isRegistered(c) {
			return false
		}
		b, err := safefs.ReadFile(filepath.Join(st.Root, filepath.FromSlash(c)), maxCandidateBytes)
		if err != nil || !manifest.Unchanged(w.hash, b, b) {
			return false // changed since it was read
		}
		st.Moved[w.key] = movedFile{rel: c, b: b}
		taken[c] = true
		return true
	}
	var left []moveWant
	for _, w := range wants {
		if st.Absent[w.key] {
			continue
		}
		exact := bySha[w.hash]
		if manifest.IsLegacyHash(w.hash) {
			exact = byDJB[strings.ToLower(strings.TrimSpace(w.hash))]
		}
		found := false
		for _, c := range exact {
			if found = take(w, c); found {
				break
			}
		}
		if !found {
			left = append(left, w)
		}
	}
	if len(left) > 0 && len(marked) > 0 {
		st.matchEdited(left, marked, taken, isRegistered)
	}
}

// maxEditedCandidates bounds the marked candidates matchEdited reads
// again; maxEditedWants the missing entries it looks up.
const (
	maxEditedCandidates = 256
	maxEditedWants      = 1024
)

// matchEdited gives a missing entry that no file holds exactly (left) a
// file moved and edited at once: a candidate of its kind that still
// carries the artifact marker (a learned artifact's rendition, not the
// person's own file) and whose frontmatter description is still the
// observation's pattern, the entry's identity as the agent sees it. It
// must be the only such candidate for that entry and that entry the only
// missing one with that pattern; anything less is left a deletion.
func (st *State) matchEdited(left []moveWant, marked []string, taken map[string]bool, isRegistered func(string) bool) {
	if len(left) > maxEditedWants {
		left = left[:maxEditedWants]
	}
	type cand struct {
		rel string
		b   []byte
	}
	byDesc := map[string][]cand{} // kind + "\x00" + description
	n := 0
	for _, c := range marked {
		if taken[c] || isRegistered(c) {
			continue
		}
		if n++; n > maxEditedCandidates {
			break
		}
		b, err := safefs.ReadFile(filepath.Join(st.Root, filepath.FromSlash(c)), maxCandidateBytes)
		if err != nil {
			continue
		}
		desc, ok := markdown.ArtifactDescription(b)
		if desc = oneLine(desc); ok && desc != "" {
			k := artifactKind(c) + "\x00" + desc
			byDesc[k] = append(byDesc[k], cand{c, b})
		}
	}
	if len(byDesc) == 0 {
		return
	}
	keys := make([]string, len(left))
	wanted := map[string]int{}
	for i, w := range left {
		ln := st.Log.FindLine(w.id)
		if ln == nil {
			continue
		}
		o := ln.Observation()
		if o == nil {
			continue
		}
		if p := oneLine(o.Pattern); p != "" {
			keys[i] = w.kind + "\x00" + p
			wanted[keys[i]]++
		}
	}
	for i, w := range left {
		k := keys[i]
		if k == "" || wanted[k] != 1 || len(byDesc[k]) != 1 {
			continue // no such file, or ambiguous
		}
		c := byDesc[k][0]
		if taken[c.rel] {
			continue
		}
		st.Moved[w.key] = movedFile{rel: c.rel, b: c.b}
		taken[c.rel] = true
	}
}

// oneLine collapses s's whitespace (a rendered description is the pattern
// on one line).
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// movedFile is the content of a file an entry moved to, as findMoves read
// it (Plan records it as the pass's view of that file).
type movedFile struct {
	rel string
	b   []byte
}

// listArtifacts lists the files of the kinds asked for below root that
// registered does not hold (slash paths, sorted): real files in real
// directories only, no symlink followed, at most maxMoveCandidates
// entries looked at.
func listArtifacts(root string, kinds map[string]bool, registered func(rel string) bool) []string {
	var out []string
	seen := 0
	var walk func(rel string, depth int)
	walk = func(rel string, depth int) {
		if depth > MaxMoveDepth || seen >= maxMoveCandidates {
			return
		}
		ents, err := readDir(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			return
		}
		for _, d := range ents {
			if seen++; seen > maxMoveCandidates {
				return
			}
			child := rel + "/" + d.Name()
			switch {
			case d.Type()&fs.ModeSymlink != 0:
			case d.IsDir():
				walk(child, depth+1)
			case d.Type().IsRegular() && strings.HasSuffix(d.Name(), ".md") && !registered(child):
				out = append(out, child)
			}
		}
	}
	if kinds["command"] && isRealDir(root, commandsRoot) {
		walk(commandsRoot, 0)
	}
	if kinds["skill"] && isRealDir(root, skillsRoot) {
		ents, _ := readDir(filepath.Join(root, filepath.FromSlash(skillsRoot)))
		for _, d := range ents {
			f := skillsRoot + "/" + d.Name() + "/" + skillFile
			if !d.IsDir() || d.Type()&fs.ModeSymlink != 0 || registered(f) {
				continue
			}
			if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(f))); err == nil && fi.Mode().IsRegular() {
				out = append(out, f)
			}
		}
	}
	slices.Sort(out)
	return out
}

// arrivedArtifacts lists the command and skill files among the arrived
// paths, and in the arrived directories (a skill directory moved, a
// directory of commands), that registered does not hold: sorted, real
// files in real directories only.
func arrivedArtifacts(root string, arrived map[string]bool, registered func(rel string) bool) []string {
	var out []string
	seen := map[string]bool{}
	add := func(rel string) {
		if seen[rel] || registered(rel) || artifactKind(rel) == "" {
			return
		}
		seen[rel] = true
		if fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel))); err == nil && fi.Mode().IsRegular() {
			out = append(out, rel)
		}
	}
	n := 0
	for rel := range arrived {
		if n++; n > maxMoveCandidates {
			break
		}
		fi, err := os.Lstat(filepath.Join(root, filepath.FromSlash(rel)))
		switch {
		case err != nil:
		case fi.Mode().IsRegular():
			add(rel)
		case fi.IsDir():
			add(rel + "/" + skillFile)
			if ents, err := readDir(filepath.Join(root, filepath.FromSlash(rel))); err == nil {
				for i, d := range ents {
					if i >= maxMoveCandidates {
						break
					}
					if d.Type().IsRegular() {
						add(rel + "/" + d.Name())
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// readDir lists dir's entries unsorted (os.ReadDir sorts them; the
// candidates are sorted once at the end).
func readDir(dir string) ([]fs.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return f.ReadDir(-1)
}

// isRealDir reports whether every component of rel below root is a real
// directory (none a symlink).
func isRealDir(root, rel string) bool {
	cur := root
	for _, part := range strings.Split(rel, "/") {
		cur = filepath.Join(cur, part)
		fi, err := os.Lstat(cur)
		if err != nil || !fi.IsDir() {
			return false
		}
	}
	return true
}

// movedPath spells the new path to like old: absolute when old is (the
// legacy manifest's spelling), else relative and slash-separated.
func movedPath(root, old, to string) string {
	if filepath.IsAbs(old) {
		return filepath.Join(root, filepath.FromSlash(to))
	}
	return to
}
