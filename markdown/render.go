package markdown

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Entry is what an ADR/PF/command/skill is rendered from (plain data, the caller fills it
// from an observation).
type Entry struct {
	ObservationID string
	Pattern       string
	Details       string // decisions "context: …; decision: …; rationale: …", pitfalls "area: …; issue: …; impact: …; resolution: …"
	Evidence      []string
	Date          time.Time
	// Confidence and Observations are the observation's, for the artifact
	// marker line of a command or skill.
	Confidence   float64
	Observations int
}

// detailKeys are the keys ParseDetails splits on after a ";".
var detailKeys = []string{
	"context", "decision", "rationale", "consequences", "alternatives",
	"area", "issue", "impact", "resolution",
	"trigger", "when", "steps", "procedure", "status",
}

// ParseDetails splits "key: value; key: value" into a map with lower-case keys.
//
// A new pair starts only at the beginning of the string or after a ";" (plus optional
// whitespace) that is followed by one of the known keys (context, decision, rationale,
// consequences, alternatives, area, issue, impact, resolution, trigger, when, steps,
// procedure, status; any case) and a ":". Any other ";" or ":" is part of the value, so
// "context: a; b: c; decision: d" gives context "a; b: c". The first pair may use any key
// made of letters, digits, '_' or '-' (at most 30 bytes) followed by ": " or the end; text
// that starts with no key is stored under "". Values are trimmed of whitespace and a trailing ";"; when a key
// repeats, the first value wins.
func ParseDetails(details string) map[string]string {
	out := map[string]string{}
	type cut struct{ at, valStart int } // at: start of the pair, valStart: after "key:"
	var cuts []cut
	var keys []string
	if k, n, ok := leadingKey(details, false); ok {
		cuts = append(cuts, cut{0, n})
		keys = append(keys, k)
	} else {
		cuts = append(cuts, cut{0, 0})
		keys = append(keys, "")
	}
	for i := 0; i < len(details); i++ {
		if details[i] != ';' {
			continue
		}
		j := i + 1
		for j < len(details) && (details[j] == ' ' || details[j] == '\t' || details[j] == '\n' || details[j] == '\r') {
			j++
		}
		if k, n, ok := leadingKey(details[j:], true); ok {
			cuts = append(cuts, cut{i, j + n})
			keys = append(keys, k)
		}
	}
	for c := range cuts {
		end := len(details)
		if c+1 < len(cuts) {
			end = cuts[c+1].at
		}
		v := strings.TrimSpace(details[cuts[c].valStart:end])
		v = strings.TrimSpace(strings.TrimRight(v, ";"))
		if keys[c] == "" && v == "" {
			continue
		}
		if _, dup := out[keys[c]]; !dup {
			out[keys[c]] = v
		}
	}
	return out
}

// leadingKey reads "key:" at the start of s; it returns the lower-case key and the length
// consumed. With knownOnly, only the known detail keys count; otherwise any key of
// letters, digits, '_' and '-' followed by ": " (or the end) counts too.
func leadingKey(s string, knownOnly bool) (string, int, bool) {
	colon := strings.IndexByte(s, ':')
	if colon <= 0 || colon > 30 {
		return "", 0, false
	}
	k := strings.ToLower(strings.TrimSpace(s[:colon]))
	if k == "" {
		return "", 0, false
	}
	for _, dk := range detailKeys {
		if k == dk {
			return k, colon + 1, true
		}
	}
	if knownOnly {
		return "", 0, false
	}
	if colon+1 < len(s) && s[colon+1] != ' ' && s[colon+1] != '\t' && s[colon+1] != '\n' && s[colon+1] != '\r' {
		return "", 0, false
	}
	for i, r := range k {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (i > 0 && (r == '_' || r == '-'))
		if !ok {
			return "", 0, false
		}
	}
	return k, colon + 1, true
}

// oneLine collapses every run of whitespace (newlines included) into one space and trims.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// frontmatter encodes the ordered key/value pairs as a YAML mapping between "---" lines,
// one line per key (a string with a line break is double-quoted), with marker (a "# …" comment line, see Marker) as the last line of the mapping: the
// encoder writes it as the foot comment of the last value.
func frontmatter(marker string, pairs ...any) ([]byte, error) {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(pairs); i += 2 {
		k := &yaml.Node{}
		v := &yaml.Node{}
		if err := k.Encode(pairs[i]); err != nil {
			return nil, fmt.Errorf("encode frontmatter key %v: %w", pairs[i], err)
		}
		if err := v.Encode(pairs[i+1]); err != nil {
			return nil, fmt.Errorf("encode frontmatter %v: %w", pairs[i], err)
		}
		if str, ok := pairs[i+1].(string); ok && strings.ContainsAny(str, "\n\r\u0085\u2028\u2029") {
			// One line per key (escaped line breaks), so the marker stays
			// within the first lines where devflow's cleanup looks for it.
			v.Style = yaml.DoubleQuotedStyle
		}
		m.Content = append(m.Content, k, v)
	}
	if n := len(m.Content); n > 0 && marker != "" {
		m.Content[n-1].FootComment = marker
	}
	var buf bytes.Buffer
	buf.WriteString("---\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encode frontmatter: %w", err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("encode frontmatter: %w", err)
	}
	buf.WriteString("---\n")
	return buf.Bytes(), nil
}

// entryMarker is the artifact marker line of e.
func entryMarker(e Entry) string { return Marker(e.Date, e.Confidence, e.Observations) }

// writeDetails writes the details as a paragraph block (verbatim apart from trimming)
// followed by a blank line; nothing when empty.
func writeDetails(b *bytes.Buffer, details string) {
	d := strings.TrimSpace(strings.ReplaceAll(details, "\r\n", "\n"))
	if d == "" {
		return
	}
	b.WriteString(d)
	b.WriteString("\n\n")
}

// heading1 returns "# <pattern>" on one line ("# Untitled" when the pattern is blank).
func heading1(pattern string) string {
	p := oneLine(pattern)
	if p == "" {
		p = "Untitled"
	}
	return "# " + p + "\n\n"
}

// RenderCommand renders a workflow artifact (.claude/commands/self-learning/<slug>.md):
// YAML frontmatter {description: <pattern>} from the YAML encoder and the artifact marker
// line (Marker of the entry's date, confidence and observations), "# <pattern>" (on one
// line), the details verbatim, and "## Evidence" with one "- item" per evidence string
// (whitespace collapsed; the section is left out when there is no evidence).
func RenderCommand(e Entry) ([]byte, error) {
	fm, err := frontmatter(entryMarker(e), "description", e.Pattern)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Write(fm)
	b.WriteString("\n")
	b.WriteString(heading1(e.Pattern))
	writeDetails(&b, e.Details)
	writeList(&b, "## Evidence", e.Evidence, "- ")
	return trimOneNewline(b.Bytes()), nil
}

// writeList writes a "## Heading" and one item per non-blank string.
func writeList(b *bytes.Buffer, title string, items []string, bullet string) {
	var lines []string
	for _, it := range items {
		if it = oneLine(it); it != "" {
			lines = append(lines, it)
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString(title + "\n\n")
	for i, l := range lines {
		if bullet == "1. " {
			fmt.Fprintf(b, "%d. %s\n", i+1, l)
		} else {
			b.WriteString(bullet + l + "\n")
		}
	}
	b.WriteString("\n")
}

// trimOneNewline makes the document end with exactly one "\n".
func trimOneNewline(b []byte) []byte {
	return append(bytes.TrimRight(b, "\n"), '\n')
}

// RenderSkill renders a procedural artifact (.claude/skills/<slug>/SKILL.md): frontmatter
// with, in this order, name: self-learning:<slug>, description: <pattern>,
// user-invocable: false, allowed-tools: "Read, Grep, Glob" (a string), then the artifact
// marker line; then
// "# <pattern>", the details, "## Iron Law" with the pattern in upper case,
// "## When This Skill Activates" (trigger/when/context details, then the pattern and up to
// five evidence items) and "## Procedure" (steps/procedure details split on ";" or
// newlines, else the other details in order, then applying and verifying the pattern).
func RenderSkill(e Entry, slug string) ([]byte, error) {
	fm, err := frontmatter(entryMarker(e),
		"name", "self-learning:"+slug,
		"description", e.Pattern,
		"user-invocable", false,
		"allowed-tools", "Read, Grep, Glob",
	)
	if err != nil {
		return nil, err
	}
	d := ParseDetails(e.Details)
	var b bytes.Buffer
	b.Write(fm)
	b.WriteString("\n")
	b.WriteString(heading1(e.Pattern))
	writeDetails(&b, e.Details)

	law := strings.ToUpper(oneLine(e.Pattern))
	if law == "" {
		law = "UNTITLED"
	}
	b.WriteString("## Iron Law\n\n" + law + "\n\n")

	var when []string
	for _, k := range []string{"trigger", "when", "context"} {
		if v := d[k]; v != "" {
			when = append(when, v)
		}
	}
	when = append(when, "The task matches: "+oneLine(e.Pattern))
	for i, ev := range e.Evidence {
		if i == 5 {
			break
		}
		if ev = oneLine(ev); ev != "" {
			when = append(when, "Seen before in: "+ev)
		}
	}
	writeList(&b, "## When This Skill Activates", when, "- ")

	var steps []string
	for _, k := range []string{"steps", "procedure"} {
		for _, s := range strings.FieldsFunc(d[k], func(r rune) bool { return r == ';' || r == '\n' }) {
			if s = strings.TrimSpace(s); s != "" {
				steps = append(steps, s)
			}
		}
	}
	if len(steps) == 0 {
		for _, k := range detailOrder(e.Details, d) {
			if k == "trigger" || k == "when" || k == "context" {
				continue
			}
			if k == "" {
				steps = append(steps, d[k])
			} else {
				steps = append(steps, strings.ToUpper(k[:1])+k[1:]+": "+d[k])
			}
		}
	}
	steps = append([]string{"Confirm the task matches the situation above."}, steps...)
	steps = append(steps, "Apply the rule: "+oneLine(e.Pattern), "Verify the result before reporting the task done.")
	writeList(&b, "## Procedure", steps, "1. ")
	return trimOneNewline(b.Bytes()), nil
}

// detailOrder returns the keys of d in the order they appear in details.
func detailOrder(details string, d map[string]string) []string {
	lower := strings.ToLower(details)
	type kp struct {
		k string
		p int
	}
	var ks []kp
	for k := range d {
		p := 0
		if k != "" {
			p = strings.Index(lower, k+":")
			if p < 0 {
				p = len(lower)
			}
		}
		ks = append(ks, kp{k, p})
	}
	for i := 1; i < len(ks); i++ { // insertion sort: a handful of keys
		for j := i; j > 0 && (ks[j].p < ks[j-1].p || ks[j].p == ks[j-1].p && ks[j].k < ks[j-1].k); j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	out := make([]string, len(ks))
	for i, x := range ks {
		out[i] = x.k
	}
	return out
}

// notRecorded is written for a knowledge bullet the observation has no value for.
const notRecorded = "Not recorded."

// first returns the first non-blank value, collapsed to one line.
func first(vals ...string) string {
	for _, v := range vals {
		if v = oneLine(v); v != "" {
			return v
		}
	}
	return ""
}

// entryHeading writes "## <id>: <title>" where the title is the pattern on one line.
func entryHeading(b *bytes.Buffer, id, pattern string) {
	b.WriteString("## " + oneLine(id) + ":")
	if t := oneLine(pattern); t != "" {
		b.WriteString(" " + t)
	}
	b.WriteString("\n\n")
}

func bullet(b *bytes.Buffer, key, val string) {
	b.WriteString("- **" + key + "**: " + val + "\n")
}

// RenderDecision renders one ADR section: "## <id>: <title>" (the pattern on one line), a
// blank line, then the bullets Date (YYYY-MM-DD, UTC), Status: Accepted, Context,
// Decision, Consequences (from rationale), Source: self-learning:<obs id>. Every value is
// collapsed to one line so nothing in an observation can start a heading. Fallbacks:
// Context = details when they carry no known key, else "Not recorded."; Decision = the
// pattern; Consequences = the consequences key, else "Not recorded.". Ends with one "\n".
func RenderDecision(id string, e Entry) []byte {
	d := ParseDetails(e.Details)
	var b bytes.Buffer
	entryHeading(&b, id, e.Pattern)
	bullet(&b, "Date", e.Date.UTC().Format("2006-01-02"))
	bullet(&b, "Status", "Accepted")
	bullet(&b, "Context", first(d["context"], unkeyed(d), notRecorded))
	bullet(&b, "Decision", first(d["decision"], e.Pattern, notRecorded))
	bullet(&b, "Consequences", first(d["rationale"], d["consequences"], notRecorded))
	bullet(&b, "Source", "self-learning:"+oneLine(e.ObservationID))
	return b.Bytes()
}

// unkeyed returns details that carry no key at all ("" otherwise).
func unkeyed(d map[string]string) string {
	if len(d) == 1 {
		return d[""]
	}
	return ""
}

// RenderPitfall renders one PF section: "## <id>: <title>", a blank line, then Area,
// Issue, Impact, Resolution, Status: Active, Source: self-learning:<obs id>, each on one
// line. Fallbacks: Area "general", Issue = the pattern, Impact and Resolution
// "Not recorded." (Issue uses unkeyed details before the pattern). Ends with one "\n".
func RenderPitfall(id string, e Entry) []byte {
	d := ParseDetails(e.Details)
	var b bytes.Buffer
	entryHeading(&b, id, e.Pattern)
	bullet(&b, "Area", first(d["area"], "general"))
	bullet(&b, "Issue", first(d["issue"], unkeyed(d), e.Pattern, notRecorded))
	bullet(&b, "Impact", first(d["impact"], notRecorded))
	bullet(&b, "Resolution", first(d["resolution"], notRecorded))
	bullet(&b, "Status", "Active")
	bullet(&b, "Source", "self-learning:"+oneLine(e.ObservationID))
	return b.Bytes()
}

// Slug: lower case (strings.ToLower), runs of characters outside [a-z0-9] become "-",
// trimmed of "-", at most 50 bytes (a trailing "-" left by the cut is trimmed too). An
// empty result becomes "untitled". Non-ASCII letters are outside [a-z0-9]: "Café" gives "caf".
func Slug(s string) string {
	s = strings.ToLower(s)
	b := make([]byte, 0, 51)
	dash := false
	for i := 0; i < len(s) && len(b) <= 50; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if dash && len(b) > 0 {
				b = append(b, '-')
			}
			dash = false
			b = append(b, c)
			continue
		}
		dash = true
	}
	b = b[:min(len(b), 50)]
	out := strings.Trim(string(b), "-")
	if out == "" {
		return "untitled"
	}
	return out
}
