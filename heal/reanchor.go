package heal

import (
	"bytes"
	"strings"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/markdown"
)

// reanchor follows knowledge entries a merge renumbered. A manifest entry
// whose anchor now names a section carrying another observation's Source
// marker (or no section at all), while exactly one section of the same file
// carries its own observation's marker, moves to that section: the anchor,
// the observation's artifact_path, and — when the section differs from what
// was recorded only by its number — the recorded hash, so a renumbering is
// neither a deletion nor an edit. Plan calls it before comparing anything.
func reanchor(st *State, sections map[string][]markdown.Section, res *Result) {
	for i := range st.Manifest.Entries {
		e := &st.Manifest.Entries[i]
		if e.AnchorID == "" {
			continue
		}
		rel, ok := st.Rel[e.Path]
		if !ok {
			continue
		}
		src, ok := st.Knowledge[rel]
		if !ok {
			continue
		}
		var at, own []markdown.Section
		for _, s := range sections[rel] {
			if s.ID == e.AnchorID {
				at = append(at, s)
			}
			if s.Source == e.ObservationID {
				own = append(own, s)
			}
		}
		if len(own) != 1 || own[0].ID == e.AnchorID {
			continue
		}
		if len(at) > 0 && !anchorTaken(at, e.ObservationID) {
			continue // the anchor's section is there without a marker naming another observation
		}
		s, old := own[0], e.AnchorID
		text := markdown.SectionText(src, s)
		if manifest.Unchanged(e.ContentHash, renumberedBack(text, s.ID, old), renumberedBack(src[s.Start:s.LegacyEnd], s.ID, old)) {
			e.ContentHash = manifest.Hash(text)
		}
		e.AnchorID = s.ID
		if o := st.Log.Find(e.ObservationID); o != nil {
			if p, a, ok := strings.Cut(o.ArtifactPath, "#"); ok && a == old {
				o.ArtifactPath = p + "#" + s.ID
			}
		}
		res.Reanchored = append(res.Reanchored, e.ObservationID+": "+old+" -> "+s.ID)
	}
}

// anchorTaken reports whether every section under the anchor carries the
// Source marker of an observation other than obsID.
func anchorTaken(at []markdown.Section, obsID string) bool {
	for _, s := range at {
		if s.Source == "" || s.Source == obsID {
			return false
		}
	}
	return true
}

// renumberedBack returns text with the first occurrence of id on its first
// line (the heading) replaced by old: the section as it was before a merge
// renumbered it.
func renumberedBack(text []byte, id, old string) []byte {
	line, rest, hasRest := bytes.Cut(text, []byte("\n"))
	i := bytes.Index(line, []byte(id))
	if i < 0 {
		return text
	}
	out := append([]byte{}, line[:i]...)
	out = append(out, old...)
	out = append(out, line[i+len(id):]...)
	if hasRest {
		out = append(out, '\n')
		out = append(out, rest...)
	}
	return out
}
