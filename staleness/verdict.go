package staleness

import (
	"strings"

	"github.com/learnwatch/learnwatch/lifecycle"
	"github.com/learnwatch/learnwatch/manifest"
)

// Verdict is what the pre-commit check makes of a scan's findings: it
// judges the text a person maintains.
type Verdict struct {
	// Blocking are the findings that block a commit under precommit.block:
	// knowledge entries (ADR/PF) and ready or created observations that
	// have no knowledge entry of their own (commands, skills, decisions
	// and pitfalls not yet rendered).
	Blocking []Issue `json:"blocking"`
	// Warnings never block: observations the person has not seen yet
	// (observing, or any status but ready and created).
	Warnings []Issue `json:"warnings"`
	// Findings are the findings judged (those not dropped), in order.
	Findings []Finding `json:"stale"`
}

// Issue is one stale reference, reported once, with the entries citing it
// and how to fix each.
type Issue struct {
	Ref       string   `json:"ref"`
	Reason    string   `json:"reason"`
	RenamedTo string   `json:"renamed_to,omitempty"`
	IDs       []string `json:"ids"`
	// Where names each of IDs for a person: the id, and for a reference in
	// a Markdown source its heading ("docs/adr/0002-x.md § Decision").
	Where []string `json:"where,omitempty"`
	Fix   []string `json:"fix"`
}

// Judge sorts findings into a Verdict. A rendered decision or pitfall
// (status created, type decision or pitfall) is checked through its
// knowledge entry only: its own finding is dropped, so fixing the ADR/PF
// text is enough. A reference a person resolved on an observation
// (`learnwatch resolve`) is not reported for it again. Each reference is
// reported once per verdict list, in the order of the findings.
func Judge(findings []Finding, log *manifest.Log) Verdict {
	type judged struct {
		f        Finding
		blocking bool
		fix      string
	}
	var all []judged
	for _, f := range findings {
		j := judged{f: f, blocking: true}
		switch {
		case f.File != "":
			// A Markdown source (staleness.sources, the ADR presets): the
			// team's own file, which learnwatch never rewrites — the fix is
			// an edit of that file, not of an observation.
			j.fix = "update the reference in " + f.File
			if f.RenamedTo != "" {
				j.fix += " (now " + f.RenamedTo + ")"
			}
		case strings.HasPrefix(f.ID, "ADR-"), strings.HasPrefix(f.ID, "PF-"):
			file := "decisions.md"
			if strings.HasPrefix(f.ID, "PF-") {
				file = "pitfalls.md"
			}
			j.fix = "edit " + f.ID + " in .memory/knowledge/" + file
		default:
			var o *manifest.Observation
			if log != nil {
				o = log.Find(f.ID)
			}
			j.fix = "learnwatch edit " + f.ID + " --details …, or learnwatch resolve " + f.ID + " --ref " + f.Ref + " --reason …"
			if o == nil {
				break
			}
			if o.Status == manifest.Created && (o.Type == manifest.Decision || o.Type == manifest.Pitfall) {
				continue // judged through its knowledge entry
			}
			if lifecycle.Resolved(o, ReasonPrefix+f.Ref) {
				continue
			}
			j.blocking = o.Status == manifest.Ready || o.Status == manifest.Created
		}
		all = append(all, j)
	}
	v := Verdict{Blocking: []Issue{}, Warnings: []Issue{}, Findings: []Finding{}}
	for _, j := range all {
		v.Findings = append(v.Findings, j.f)
	}
	at := map[string]*[]Issue{}
	idx := map[string]int{}
	// Blocking first: a reference that blocks is listed there once, with
	// every entry citing it, blocking or not.
	for _, pass := range []bool{true, false} {
		for _, j := range all {
			if j.blocking != pass {
				continue
			}
			list, ok := at[j.f.Ref]
			if !ok {
				list = &v.Warnings
				if pass {
					list = &v.Blocking
				}
				at[j.f.Ref] = list
				idx[j.f.Ref] = len(*list)
				*list = append(*list, Issue{Ref: j.f.Ref, Reason: j.f.Reason, RenamedTo: j.f.RenamedTo})
			}
			is := &(*list)[idx[j.f.Ref]]
			is.IDs = append(is.IDs, j.f.ID)
			where := j.f.ID
			if j.f.Heading != "" {
				where += " § " + j.f.Heading
			}
			is.Where = append(is.Where, where)
			is.Fix = append(is.Fix, j.fix)
		}
	}
	return v
}
