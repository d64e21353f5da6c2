package manifest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// Values a generated line draws from: escapes, HTML characters, control
// bytes, U+2028, invalid UTF-8, blank patterns, look-alike ids.
var lazyStrings = []string{
	"", " ", "obs_a", "obs_b", "obs_a", "obs_x.y-z", "obs_bad id", "nope", "obs_é",
	"decision", "pitfall", "workflow", "procedural", "lesson",
	"observing", "ready", "created", "deprecated",
	"Use <b>SQLite</b> & \"quotes\"", "tab\tnew\nline\r\b\f\x01\x1f", "back\\slash /",
	"line\u2028sep\u2029", "bad \xff\xfe utf8", "emoji 🎉 ünïcode", ".claude/commands/self-learning/x.md",
	".memory/knowledge/decisions.md#ADR-001", "2026-01-02T03:04:05Z",
}

var lazyNumbers = []string{"0", "-0", "0.5", "0.50", "1", "3", "1e2", "1.5", "-2", "1e-7", "1e21", "123456789", "1e400", "9223372036854775808", "0.000001"}

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.Intn(len(xs))] }

func ws(r *rand.Rand) string {
	if r.Intn(4) == 0 {
		return pick(r, []string{" ", "\t", "  ", "\r"})
	}
	return ""
}

func jsonStr(r *rand.Rand, s string) string {
	if r.Intn(6) == 0 && s != "" {
		// an escaped spelling of the same string
		var b strings.Builder
		b.WriteByte('"')
		for _, c := range s {
			if c < 0x10000 {
				fmt.Fprintf(&b, `\u%04x`, c)
			} else {
				b.WriteString(string(c))
			}
		}
		b.WriteByte('"')
		return b.String()
	}
	if r.Intn(8) == 0 {
		return `"` + s + `"` // raw, maybe invalid JSON (a control byte, a quote)
	}
	b, _ := json.Marshal(s)
	return string(b)
}

// genValue returns a JSON value for key k, mostly of the right type.
func genValue(r *rand.Rand, k string) string {
	if r.Intn(12) == 0 {
		return pick(r, []string{"null", `"x"`, "7", "true", `{"a":[1,"b"]}`, "[]", `[null]`, `[1]`})
	}
	switch k {
	case "confidence", "observations":
		return pick(r, lazyNumbers)
	case "quality_ok", "needsReview", "mayBeStale", "softCapExceeded":
		return pick(r, []string{"true", "false"})
	case "evidence":
		n := r.Intn(3)
		parts := make([]string, n)
		for i := range parts {
			parts[i] = ws(r) + jsonStr(r, pick(r, lazyStrings)) + ws(r)
		}
		return "[" + ws(r) + strings.Join(parts, ",") + "]"
	}
	if strings.HasPrefix(k, "x") || k == "ID" || k == "Status" {
		return pick(r, []string{`{"k":[1,2.50]}`, `"v"`, "12", "null", `[ "a" , {"b":"}"} ]`, jsonStr(r, pick(r, lazyStrings))})
	}
	return jsonStr(r, pick(r, lazyStrings))
}

// genLine returns one log line: mostly observations with their keys in a
// random order, unknown fields, odd spacing; sometimes garbage.
func genLine(r *rand.Rand) string {
	switch r.Intn(20) {
	case 0:
		return ""
	case 1:
		return "not json"
	case 2:
		return `{"id":"obs_cut","type":`
	case 3:
		return "[1,2]"
	}
	keys := []string{"id", "type", "pattern"}
	for _, k := range append(append([]string(nil), knownKeys[3:]...), "x_first", "x_nested", "x<&>", "ID", "Status", "x\u00e9", `x\"q`) {
		if r.Intn(3) == 0 {
			keys = append(keys, k)
		}
	}
	if r.Intn(10) == 0 {
		keys = keys[1:] // no id
	}
	if r.Intn(15) == 0 {
		keys = append(keys, pick(r, keys)) // a repeated key
	}
	r.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
	var b strings.Builder
	b.WriteString(ws(r) + "{" + ws(r))
	for i, k := range keys {
		if i > 0 {
			b.WriteString(ws(r) + "," + ws(r))
		}
		var v string
		switch k {
		case "id":
			v = jsonStr(r, pick(r, []string{"obs_a", "obs_b", "obs_c", "obs_a", "bad", "obs_x y", ""}))
		case "type":
			v = jsonStr(r, pick(r, Types))
		case "pattern":
			v = jsonStr(r, pick(r, []string{"a pattern", " ", "Use <b>SQLite</b>", "p\u2028"}))
		default:
			v = genValue(r, k)
		}
		key := k
		if k == `x\"q` {
			key = `x\"q` // already escaped
		} else {
			kb, _ := json.Marshal(k)
			key = string(kb[1 : len(kb)-1])
		}
		b.WriteString(`"` + key + `"` + ws(r) + ":" + ws(r) + v)
	}
	b.WriteString(ws(r) + "}" + ws(r))
	return b.String()
}

func genLog(r *rand.Rand) []byte {
	n := r.Intn(6)
	lines := make([]string, n)
	for i := range lines {
		lines[i] = genLine(r)
	}
	s := strings.Join(lines, "\n")
	if n > 0 && r.Intn(3) > 0 {
		s += "\n"
	}
	return []byte(s)
}

// change applies one random field change to o.
func change(r *rand.Rand, o *Observation) {
	str := func() string { return pick(r, lazyStrings) }
	switch r.Intn(20) {
	case 0:
		o.ID = str()
	case 1:
		o.Type = str()
	case 2:
		o.Pattern = str()
	case 3:
		o.Confidence = pick(r, []float64{0, 0.5, 1e-7, 1e21, 123456789, -0.25, 1.0 / 3, 1e-300, 5e-324})
	case 4:
		o.Observations = pick(r, []int{0, 1, 2, -5, math.MaxInt64})
	case 5:
		o.FirstSeen = str()
	case 6:
		o.LastSeen = str()
	case 7:
		o.Status = str()
	case 8:
		o.Evidence = pick(r, [][]string{nil, {}, {str()}, {str(), str()}})
	case 9:
		o.Details = str()
	case 10:
		o.QualityOK = !o.QualityOK
	case 11:
		o.ArtifactPath = pick(r, []string{"", str()})
	case 12:
		o.DeprecatedAt = pick(r, []string{"", str()})
	case 13:
		o.NeedsReview = !o.NeedsReview
	case 14:
		o.MayBeStale = !o.MayBeStale
	case 15:
		o.StaleReason = pick(r, []string{"", str()})
	case 16:
		o.SoftCapExceeded = !o.SoftCapExceeded
	case 17:
		o.SetExtra(pick(r, []string{"x_first", "x_new", "x<&>", "status", "ID", "x_nested"}), json.RawMessage(pick(r, []string{`1`, `"s"`, `{"a":null}`})))
	case 18:
		if r.Intn(40) == 0 {
			o.Confidence = math.NaN()
		}
	case 19:
		if e := o.Evidence; len(e) > 0 {
			e[0] = str()
		}
	}
}

// checkAgainstOld parses data both ways, checks that the lazy reading
// agrees with the old eager one line by line, applies the same random
// changes to both (seeded by seed) and appends the same new observation,
// and checks that both encode to the same bytes (or fail alike).
func checkAgainstOld(t *testing.T, data []byte, seed int64) {
	t.Helper()
	lz, old := ParseLog(data), oldParseLog(data)
	if len(lz.Lines) != len(old.Lines) || lz.Corrupt() != old.Corrupt() || lz.InvalidCount() != old.InvalidCount() {
		t.Fatalf("lines %d/%d corrupt %d/%d invalid %d/%d for %q", len(lz.Lines), len(old.Lines), lz.Corrupt(), old.Corrupt(), lz.InvalidCount(), old.InvalidCount(), data)
	}
	for i, ln := range lz.Lines {
		ol := old.Lines[i]
		if fmt.Sprint(ln.Err()) != strings.ReplaceAll(fmt.Sprint(ol.Err), "oldPlainObservation", "plainObservation") || fmt.Sprint(ln.Invalid()) != fmt.Sprint(ol.Invalid) {
			t.Fatalf("line %d %q: err %v / %v, invalid %v / %v", i, ln.Raw(), ln.Err(), ol.Err, ln.Invalid(), ol.Invalid)
		}
		if ol.Obs != nil && (ln.ID() != ol.Obs.ID || ln.Type() != ol.Obs.Type || ln.Status() != ol.Obs.Status || ln.ArtifactPath() != ol.Obs.ArtifactPath) {
			t.Fatalf("line %d %q: index fields %q %q %q %q before decoding, decoded %q %q %q %q", i, ln.Raw(),
				ln.ID(), ln.Type(), ln.Status(), ln.ArtifactPath(), ol.Obs.ID, ol.Obs.Type, ol.Obs.Status, ol.Obs.ArtifactPath)
		}
		if ol.Obs != nil && (ln.MayBeStale() != ol.Obs.MayBeStale || ln.NeedsReview() != ol.Obs.NeedsReview || ln.StaleReason() != ol.Obs.StaleReason) {
			t.Fatalf("line %d %q: marks %v %v %q before decoding, decoded %v %v %q", i, ln.Raw(), ln.MayBeStale(), ln.NeedsReview(), ln.StaleReason(),
				ol.Obs.MayBeStale, ol.Obs.NeedsReview, ol.Obs.StaleReason)
		}
		// The raw texts decide the decoded ones.
		if d, e, ok := ln.RawTexts(); ok {
			if ol.Obs == nil {
				t.Fatalf("line %d %q: raw texts of a line that does not decode", i, ln.Raw())
			}
			var details string
			var evidence []string
			if d != nil && json.Unmarshal(d, &details) != nil || e != nil && json.Unmarshal(e, &evidence) != nil {
				t.Fatalf("line %d %q: raw texts %q %q do not decode", i, ln.Raw(), d, e)
			}
			if dd, de, err := DecodeTexts(d, e); err != nil || dd != details || !reflect.DeepEqual(de, evidence) {
				t.Fatalf("line %d %q: DecodeTexts = %q %#v %v, encoding/json %q %#v", i, ln.Raw(), dd, de, err, details, evidence)
			}
			if details != ol.Obs.Details || !reflect.DeepEqual(evidence, ol.Obs.Evidence) {
				t.Fatalf("line %d %q: raw texts decode to %q %#v, the observation has %q %#v", i, ln.Raw(), details, evidence, ol.Obs.Details, ol.Obs.Evidence)
			}
		} else if ln.Parsed() && !ln.Decoded() {
			t.Fatalf("line %d %q: no raw texts for a scanned line", i, ln.Raw())
		}
	}
	// Confidences answers what Find decodes, decoding nothing.
	decoded := 0
	for _, ln := range lz.Lines {
		if ln.Decoded() {
			decoded++
		}
	}
	wantConf := map[string]float64{}
	for _, ol := range old.Lines {
		if ol.Obs == nil || ol.Invalid != nil {
			continue
		}
		if _, dup := wantConf[ol.Obs.ID]; !dup {
			wantConf[ol.Obs.ID] = old.Find(ol.Obs.ID).Confidence
		}
	}
	if got := lz.Confidences(); !reflect.DeepEqual(got, wantConf) {
		t.Fatalf("Confidences() = %v, Find gives %v for %q", got, wantConf, data)
	}
	for _, ln := range lz.Lines {
		if ln.Decoded() {
			decoded--
		}
	}
	if decoded != 0 {
		t.Fatalf("Confidences decoded %d lines of %q", -decoded, data)
	}
	for _, id := range []string{"obs_a", "obs_b", "obs_c", "obs_x y"} {
		a, b := lz.Find(id), old.Find(id)
		if (a == nil) != (b == nil) || a != nil && !reflect.DeepEqual(oldObservation(*a), *b) {
			t.Fatalf("Find(%s) = %+v, old %+v", id, a, b)
		}
	}
	for i, ln := range lz.Lines {
		o, ol := ln.Observation(), old.Lines[i].Obs
		if (o == nil) != (ol == nil) || o != nil && !reflect.DeepEqual(oldObservation(*o), *ol) {
			t.Fatalf("line %d %q decodes to %+v, old %+v", i, ln.Raw(), o, ol)
		}
	}
	if lz.Changed() || old.Changed() {
		t.Fatalf("decoding alone counts as a change for %q", data)
	}
	for i, ln := range lz.Lines {
		if o := ln.Observation(); o != nil {
			for _, k := range []string{"x_first", "x_nested", "x<&>", "ID", "Status", "x\u00e9", `x"q`, "id", "nope"} {
				v1, ok1 := o.Extra(k)
				v2, ok2 := old.Lines[i].Obs.Extra(k)
				if ok1 != ok2 || !bytes.Equal(v1, v2) {
					t.Fatalf("line %d %q: Extra(%q) = %q %v, old %q %v", i, ln.Raw(), k, v1, ok1, v2, ok2)
				}
			}
		}
	}
	r := rand.New(rand.NewSource(seed))
	for i, ln := range lz.Lines {
		o := ln.Observation()
		if o == nil || r.Intn(3) == 0 {
			continue
		}
		for n := r.Intn(4); n >= 0; n-- {
			change(r, o)
		}
		*old.Lines[i].Obs = oldObservation(*o)
	}
	// Changed lines answer with their change (an id changed too: the
	// first valid line with the id it has now).
	wantConf = map[string]float64{}
	for _, o := range lz.Observations() {
		if _, dup := wantConf[o.ID]; !dup {
			wantConf[o.ID] = o.Confidence
		}
	}
	if got := lz.Confidences(); fmt.Sprint(got) != fmt.Sprint(wantConf) { // a change may be NaN
		t.Fatalf("Confidences() after changes = %v, the observations give %v", got, wantConf)
	}
	// Raw texts are offered for a changed line only while its texts are
	// still the ones its bytes hold.
	for i, ln := range lz.Lines {
		d, e, ok := ln.RawTexts()
		if !ok {
			continue
		}
		dd, de, err := DecodeTexts(d, e)
		o := ln.Observation()
		if err != nil || o == nil || dd != o.Details || len(de) != len(o.Evidence) || len(de) > 0 && !reflect.DeepEqual(de, o.Evidence) {
			t.Fatalf("line %d %q: raw texts %q %q after changes, the observation has %q %#v", i, ln.Raw(), d, e, o.Details, o.Evidence)
		}
	}
	if r.Intn(2) == 0 {
		n := &Observation{ID: "obs_new", Type: Decision, Pattern: "n", Evidence: []string{}}
		for k := r.Intn(5); k >= 0; k-- {
			change(r, n)
		}
		lz.Append(n)
		on := oldObservation(*n)
		old.Append(&on)
	}
	if lz.Changed() != old.Changed() {
		t.Fatalf("Changed %v, old %v", lz.Changed(), old.Changed())
	}
	got, err1 := lz.Bytes()
	want, err2 := old.Bytes()
	if fmt.Sprint(err1) != strings.ReplaceAll(fmt.Sprint(err2), "oldObservation", "Observation") || !bytes.Equal(got, want) {
		t.Fatalf("encoding differs for %q:\n new: %q (%v)\n old: %q (%v)", data, got, err1, want, err2)
	}
	for _, ln := range lz.Lines {
		if o := ln.Observation(); o != nil {
			b1, e1 := json.Marshal(o)
			b2, e2 := json.Marshal(oldObservation(*o))
			if fmt.Sprint(e1 != nil) != fmt.Sprint(e2 != nil) || !bytes.Equal(b1, b2) {
				t.Fatalf("MarshalJSON differs: %q (%v) / %q (%v)", b1, e1, b2, e2)
			}
		}
	}
}

// The lazy log reads, counts, finds and encodes exactly like the old
// eager one, over thousands of generated logs with random field changes.
func TestLogLazyMatchesOld(t *testing.T) {
	r := rand.New(rand.NewSource(12))
	n := 4000
	if testing.Short() {
		n = 500
	}
	for i := 0; i < n; i++ {
		data := genLog(r)
		t.Run("", func(t *testing.T) { checkAgainstOld(t, data, int64(i)) })
		if t.Failed() {
			return
		}
	}
}

// FuzzLogLazyMatchesOld: the differential test driven by the fuzzer: any
// input and any seed of random field changes.
func FuzzLogLazyMatchesOld(f *testing.F) {
	for _, s := range logSeeds {
		f.Add([]byte(s), int64(1))
	}
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 40; i++ {
		f.Add(genLog(r), int64(i))
	}
	f.Add([]byte("{\"id\":\"obs_a\",\"ID\":\"obs_b\",\"Type\":\"decision\",\"pattern\":\"case\"}\n"), int64(2))
	f.Add([]byte("{\"id\":\"obs_a\",\"type\":\"decision\",\"pattern\":\"p\",\"ſtatus\":\"ready\",\"\u212aey\":1}\n"), int64(3))
	f.Fuzz(func(t *testing.T, data []byte, seed int64) {
		checkAgainstOld(t, data, seed)
	})
}

// Finding and patching one line of a large log decodes that line only;
// every other line is written back from its bytes.
func TestLogDecodesOnlyWhatIsAsked(t *testing.T) {
	data := benchLog(500)
	l := ParseLog(data)
	o := l.Find("obs_g250")
	if o == nil {
		t.Fatal("obs_g250 not found")
	}
	o.Status = Ready
	o.Observations++
	decoded := 0
	for _, ln := range l.Lines {
		if ln.Decoded() {
			decoded++
		}
	}
	if decoded != 1 {
		t.Errorf("%d lines decoded after one Find, want 1", decoded)
	}
	got, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	old := oldParseLog(data)
	oo := old.Find("obs_g250")
	oo.Status = Ready
	oo.Observations++
	want, _ := old.Bytes()
	if !bytes.Equal(got, want) {
		t.Fatal("patched log differs from the old encoder's")
	}
	a, b := bytes.Split(data, []byte("\n")), bytes.Split(got, []byte("\n"))
	diff := 0
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			diff++
		}
	}
	if len(a) != len(b) || diff != 1 {
		t.Errorf("%d lines of %d differ after one patch, want 1", diff, len(a))
	}
}

// The cheap accessors select by the index fields without decoding, keep
// "first valid id wins", and see changes made to decoded observations.
func TestLogAccessors(t *testing.T) {
	in := strings.Join([]string{
		`{"id":"obs_dup","type":"decision","pattern":" "}`, // invalid: blank pattern
		`{"id":"obs_dup","type":"pitfall","pattern":"second wins","status":"ready","artifact_path":".memory/knowledge/pitfalls.md#PF-001"}`,
		`{"id":"obs_dup","type":"workflow","pattern":"third","status":"ready"}`,
		`{"id":"obs_w","type":"workflow","pattern":"w","status":"created","artifact_path":".claude/commands/self-learning/w.md"}`,
		`{"id":"obs_cut","type":`,
		`{"id":"obs_o","type":"procedural","pattern":"o","status":"observing"}`,
		`{"id":"obs_case","Type":"decision","pattern":"case variant, full decode"}`,
	}, "\n") + "\n"
	l := ParseLog([]byte(in))
	// encoding/json fills type from "Type": obs_case is valid.
	if !l.Has("obs_case") || !l.Has("obs_o") || l.Has("obs_cut") {
		t.Errorf("Has: obs_case %v, obs_o %v, obs_cut %v", l.Has("obs_case"), l.Has("obs_o"), l.Has("obs_cut"))
	}
	if o := l.Find("obs_dup"); o == nil || o.Pattern != "second wins" {
		t.Fatalf("Find(obs_dup) = %+v, want the second line (the first is invalid)", o)
	}
	byType, byStatus := l.Counts()
	wantType := map[string]int{Pitfall: 1, Workflow: 2, Procedural: 1, Decision: 1}
	wantStatus := map[string]int{Ready: 2, Created: 1, Observing: 1, "": 1}
	if !reflect.DeepEqual(byType, wantType) || !reflect.DeepEqual(byStatus, wantStatus) {
		t.Errorf("Counts = %v %v, want %v %v", byType, byStatus, wantType, wantStatus)
	}
	if got := l.ByStatus(Ready); len(got) != 2 || got[0].Pattern != "second wins" || got[1].Pattern != "third" {
		t.Errorf("ByStatus(ready) = %+v", got)
	}
	if o := l.ByArtifact(".claude/commands/self-learning/w.md"); o == nil || o.ID != "obs_w" {
		t.Errorf("ByArtifact = %+v", o)
	}
	if o := l.ByArtifact(""); o != nil {
		t.Errorf("ByArtifact(\"\") = %+v, want nil", o)
	}
	sel := l.Select(func(e LogEntry) bool { return e.Type == Workflow })
	if len(sel) != 2 || sel[0].Pattern != "third" || sel[1].ID != "obs_w" {
		t.Errorf("Select(workflow) = %+v", sel)
	}
	// A change to a decoded observation is what the accessors see.
	l.Find("obs_w").Status = Deprecated
	if got := l.ByStatus(Created); len(got) != 0 {
		t.Errorf("ByStatus(created) after a change = %+v", got)
	}
	es := l.LogEntries()
	if len(es) != 5 || es[0].Line != 1 || es[2].Status != Deprecated || es[4].ID != "obs_case" {
		t.Errorf("LogEntries = %+v", es)
	}
	if l.Corrupt() != 1 || l.InvalidCount() != 1 {
		t.Errorf("corrupt %d invalid %d, want 1 and 1", l.Corrupt(), l.InvalidCount())
	}
}

// benchLog returns n lines the shape bench/gen writes: known fields, an
// unknown one, evidence, a few artifacts.
func benchLog(n int) []byte {
	var b bytes.Buffer
	statuses := []string{Observing, Ready, Created, Deprecated}
	for i := 0; i < n; i++ {
		art := ""
		if i%5 == 0 {
			art = fmt.Sprintf(`,"artifact_path":".claude/commands/self-learning/g%d.md"`, i)
		}
		fmt.Fprintf(&b, `{"id":"obs_g%d","type":"%s","pattern":"Run make check before pushing change %d","confidence":0.%d,"observations":%d,"first_seen":"2026-01-02T03:04:05Z","last_seen":"2026-02-03T04:05:06Z","status":"%s","evidence":["session %d: ran make check","CI failed on lint <gofmt>"],"details":"step 1: make check\nstep 2: push","quality_ok":true%s,"x_tool":{"v":2}}`+"\n",
			i, Types[i%4], i, i%10, i%7+1, statuses[i%4], i, art)
	}
	return b.Bytes()
}

// FuzzValidMembers: the scan's own JSON check never accepts what json.Valid
// refuses (a line it accepts skips encoding/json entirely), and accepts the
// objects the log holds.
func FuzzValidMembers(f *testing.F) {
	for _, s := range logSeeds {
		for _, line := range strings.Split(s, "\n") {
			f.Add([]byte(line))
		}
	}
	for _, s := range []string{`{"a":"\u00e9\ud800","b":[1,-0.5e+7,{"c":null}],"d":true}`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, "{\"a\":\"\x01\"}", `{"a":tru}`, `{"a":[1,]}`, `{"a":1}}`, `{"a" 1}`, `{}`, `{ }`, `{"a":-}`, `{"a":1e}`, `{"a":"\u12"}`} {
		f.Add([]byte(s))
	}
	r := rand.New(rand.NewSource(5))
	for i := 0; i < 30; i++ {
		f.Add([]byte(genLine(r)))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ms, ok := validMembers(nil, data)
		if ok && !json.Valid(data) {
			t.Fatalf("validMembers accepts invalid JSON %q", data)
		}
		if ok {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(data, &m); err != nil || len(m) > len(ms) {
				t.Fatalf("%q: %d members, encoding/json sees %d (%v)", data, len(ms), len(m), err)
			}
			for _, x := range ms {
				if v, found := m[string(x.key)]; !found || !json.Valid(x.val) || len(m) == len(ms) && !bytes.Equal(bytes.TrimSpace(v), x.val) {
					t.Fatalf("%q: member %q = %q, encoding/json %q", data, x.key, x.val, v)
				}
			}
		}
		if _, plain := members(nil, data); plain && json.Valid(data) && bytes.Count(data, []byte("[")) < 100 && bytes.Count(data, []byte("{")) < 100 && !ok {
			t.Fatalf("validMembers refuses valid JSON %q", data)
		}
	})
}

// WriteLog streams the file: what it writes is Bytes, past the write
// buffer's size; an observation that cannot be encoded leaves the file as
// it was and says which one.
func TestWriteLogStreams(t *testing.T) {
	data := benchLog(3000) // about 1 MiB
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	if err := WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	l.Find("obs_g2999").Pattern = "patched <last>"
	l.Find("obs_g7").SetExtra("x_new", json.RawMessage(`{"a": [1, 2]}`))
	want, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLog(path, l); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, want) || !bytes.Contains(got, []byte(`"x_new":{"a":[1,2]}`)) {
		t.Fatalf("written file differs from Bytes (%d / %d bytes)", len(got), len(want))
	}
	if l.Changed() {
		t.Error("changed after WriteLog")
	}
	// StageLog hands every byte it writes to its copy as well.
	l.Find("obs_g11").Pattern = "patched again"
	var copied bytes.Buffer
	s, err := StageLog(path, l, &copied)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit(); err != nil {
		t.Fatal(err)
	}
	s.Release()
	if got, _ = os.ReadFile(path); !bytes.Equal(copied.Bytes(), got) || !bytes.Contains(got, []byte("patched again")) {
		t.Fatalf("the copy differs from the file written (%d / %d bytes)", copied.Len(), len(got))
	}
	l.Find("obs_g5").Confidence = math.NaN()
	err = WriteLog(path, l)
	if err == nil || !strings.Contains(err.Error(), "encode observation obs_g5") {
		t.Fatalf("WriteLog of a NaN confidence: %v", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, got) {
		t.Error("a failed WriteLog changed the file")
	}
}

// Change detection compares a decoded observation with its line in place
// (no copy held per line) and agrees with the old reflect.DeepEqual on
// the edge cases: -0 set to 0, a value set to what it was, an escaped
// string set to its decoded value, evidence edited in place, null and
// empty evidence, an unknown field set.
func TestLogChangeDetection(t *testing.T) {
	line := `{"id":"obs_a","type":"decision","pattern":"p\u00e9 \"q\"","confidence":-0,"observations":2,"evidence":["e1","e2"],"details":null,"x":1}`
	cases := []struct {
		name    string
		edit    func(o *Observation)
		changed bool
	}{
		{"nothing", func(o *Observation) {}, false},
		{"-0 set to 0", func(o *Observation) { o.Confidence = 0 }, false},
		{"same pattern", func(o *Observation) { o.Pattern = "pé \"q\"" }, false},
		{"same count", func(o *Observation) { o.Observations = 2 }, false},
		{"details still empty", func(o *Observation) { o.Details = "" }, false},
		{"count", func(o *Observation) { o.Observations = 3 }, true},
		{"evidence in place", func(o *Observation) { o.Evidence[1] = "e3" }, true},
		{"evidence emptied", func(o *Observation) { o.Evidence = []string{} }, true},
		{"evidence nil", func(o *Observation) { o.Evidence = nil }, true},
		{"unknown field", func(o *Observation) { o.SetExtra("x", json.RawMessage("1")) }, true},
		{"artifact set", func(o *Observation) { o.ArtifactPath = "a.md" }, true},
		{"flag set", func(o *Observation) { o.MayBeStale = true }, true},
	}
	for _, c := range cases {
		l, old := ParseLog([]byte(line)), oldParseLog([]byte(line))
		o := l.Find("obs_a")
		oo := old.Find("obs_a")
		// The same edit on a copy of the old observation (evidence shared
		// as the edit shares it), then copied over.
		c.edit(o)
		var ev []string
		if oo.Evidence != nil {
			ev = append([]string{}, oo.Evidence...)
		}
		cp := Observation(*oo)
		cp.Evidence = ev
		c.edit(&cp)
		*oo = oldObservation(cp)
		if l.Changed() != c.changed || old.Changed() != c.changed {
			t.Errorf("%s: Changed() = %v, old %v, want %v", c.name, l.Changed(), old.Changed(), c.changed)
		}
		got, _ := l.Bytes()
		want, _ := old.Bytes()
		if !bytes.Equal(got, want) {
			t.Errorf("%s: %q, old %q", c.name, got, want)
		}
	}
}

// A settled log tells changes as before: untouched lines are unchanged
// (nothing re-encoded), a field set afterwards is a change, and Bytes and
// WriteTo give the same bytes.
func TestLogSettle(t *testing.T) {
	src := `{"id":"obs_a","type":"workflow","pattern":"p a","confidence":0.9,"observations":3,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","status":"created","evidence":null,"details":"","quality_ok":true,"x_tool":{"k":[1, 2]}}
{"id":"obs_b","type":"workflow","pattern":"p b","confidence":0.5,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","status":"observing","evidence":[],"details":"d","quality_ok":false}
not json
{"id":"obs_c","type":"pitfall","pattern":"p c","confidence":0.7,"observations":2,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-02T00:00:00Z","status":"ready","evidence":["e"],"details":"","quality_ok":true}`
	l := ParseLog([]byte(src))
	for _, id := range []string{"obs_a", "obs_b", "obs_c"} {
		if l.Find(id) == nil {
			t.Fatal(id)
		}
	}
	l.Settle()
	if l.Changed() {
		t.Fatal("a settled, untouched log changed")
	}
	var w bytes.Buffer
	if _, err := l.WriteTo(&w); err != nil || w.String() != src {
		t.Fatalf("WriteTo: %v\n%q", err, w.String())
	}
	l.Find("obs_b").Confidence = 0.25
	if !l.Changed() {
		t.Fatal("a field set after Settle is not a change")
	}
	b, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(src, `"confidence":0.5`, `"confidence":0.25`, 1)
	if string(b) != want {
		t.Fatalf("Bytes after Settle:\n%s\nwant\n%s", b, want)
	}
	w.Reset()
	l.WriteTo(&w)
	if w.String() != want {
		t.Fatalf("WriteTo after the change:\n%s", w.String())
	}
}

// TestParseLinesParallel scans a large generated log (every kind of line
// genLine writes: corrupt, invalid, repeated keys, look-alike ids) on one
// goroutine and on several, and requires the same lines field for field;
// ParseLog of the whole takes the parallel path and must agree too.
func TestParseLinesParallel(t *testing.T) {
	r := rand.New(rand.NewSource(7))
	var b bytes.Buffer
	for b.Len() < 3*parseShare {
		b.WriteString(genLine(r))
		b.WriteByte('\n')
	}
	data := b.Bytes()
	split := func() []*Line {
		var lines []*Line
		for _, raw := range bytes.Split(data[:len(data)-1], []byte{'\n'}) {
			ln := &Line{}
			ln.setRaw(raw)
			lines = append(lines, ln)
		}
		return lines
	}
	want := split()
	parseLines(want, 1)
	parsed := 0
	for _, ln := range want {
		if ln.parsed {
			parsed++
		}
	}
	if parsed == 0 || parsed == len(want) {
		t.Fatalf("%d of %d lines parse: the log does not mix good and bad lines", parsed, len(want))
	}
	for _, workers := range []int{2, 3, 7} {
		got := split()
		parseLines(got, workers)
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("%d workers, line %d (%q): %+v, one goroutine: %+v", workers, i, want[i].Raw(), *got[i], *want[i])
			}
		}
	}
	l := ParseLog(data)
	if len(l.Lines) != len(want) {
		t.Fatalf("ParseLog: %d lines, want %d", len(l.Lines), len(want))
	}
	// ParseLog's lines are stretches of one chunk, split's their own:
	// alike but for where their bytes are held.
	unheld := func(ln *Line) Line {
		c := *ln
		c.ck, c.at, c.n = nil, 0, 0
		return c
	}
	for i := range want {
		if !bytes.Equal(l.Lines[i].Raw(), want[i].Raw()) || !reflect.DeepEqual(unheld(l.Lines[i]), unheld(want[i])) {
			t.Fatalf("ParseLog line %d (%q) differs from the serial scan", i, want[i].Raw())
		}
	}
}

// TestEncodeRunsParallel changes random fields of most lines of a large
// generated log and requires the bytes encoded on several goroutines to
// be those encoded on one, line for line; Bytes of the whole (which takes
// the parallel path) must be the serial bytes too.
func TestEncodeRunsParallel(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	var b bytes.Buffer
	for n := 0; n < 3*encodeShare; {
		line := genLine(r)
		for _, ln := range ParseLog([]byte(line)).Lines {
			if ln.Observation() != nil {
				n++
			}
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	l := ParseLog(b.Bytes())
	changed := 0
	for _, ln := range l.Lines {
		o := ln.Observation()
		if o == nil {
			continue
		}
		if r.Intn(4) > 0 {
			change(r, o)
			changed++
		}
		if _, err := json.Marshal(o); err != nil {
			o.Confidence = 0.5 // read as NaN or out of range: encodable again
		}
	}
	if changed < 2*encodeShare {
		t.Fatalf("only %d lines changed", changed)
	}
	firstErr := func(workers int) error {
		return encodeRuns(l.Lines, make([][]byte, len(l.Lines)), workers)
	}
	if err := firstErr(1); err != nil {
		t.Fatalf("the changed log does not encode: %v", err)
	}
	// Two lines that cannot be encoded, one in the first run and one in
	// the last: the error names the first, however many goroutines.
	var bad []*Observation
	for _, i := range []int{5, len(l.Lines) - 5} {
		for ; l.Lines[i].Observation() == nil; i++ {
		}
		bad = append(bad, l.Lines[i].Observation())
	}
	for _, o := range bad {
		o.Confidence = math.NaN()
	}
	for _, workers := range []int{1, 2, 3, 8} {
		if err := firstErr(workers); err == nil || !strings.Contains(err.Error(), "encode observation "+bad[0].ID+":") {
			t.Fatalf("%d goroutines: error %v, want one naming %q", workers, err, bad[0].ID)
		}
	}
	for _, o := range bad {
		o.Confidence = 0.5
	}
	want := make([][]byte, len(l.Lines))
	encodeRuns(l.Lines, want, 1)
	for _, workers := range []int{2, 3, 8} {
		got := make([][]byte, len(l.Lines))
		encodeRuns(l.Lines, got, workers)
		for i := range want {
			if !bytes.Equal(got[i], want[i]) || (got[i] == nil) != (want[i] == nil) {
				t.Fatalf("%d workers, line %d: %q, one goroutine: %q", workers, i, got[i], want[i])
			}
		}
	}
	all, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	var serial bytes.Buffer
	l.writeLines(&serial, want, nil)
	if !bytes.Equal(all, serial.Bytes()) {
		t.Fatal("Bytes differs from the lines encoded on one goroutine")
	}
}

// TestDecodeLinesParallel decodes a large generated log's lines on every
// core and one by one and requires the same lines.
func TestDecodeLinesParallel(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	var b bytes.Buffer
	for n := 0; n < 3*encodeShare; n++ {
		b.WriteString(genLine(r))
		b.WriteByte('\n')
	}
	want, got := ParseLog(b.Bytes()), ParseLog(b.Bytes())
	if len(got.Lines) < 2*encodeShare {
		t.Fatalf("only %d lines", len(got.Lines))
	}
	for _, ln := range want.Lines {
		ln.Observation()
	}
	DecodeLines(got.Lines)
	for i := range want.Lines {
		if !reflect.DeepEqual(got.Lines[i], want.Lines[i]) {
			t.Fatalf("line %d (%q): decoded together %+v, alone %+v", i, want.Lines[i].Raw(), *got.Lines[i], *want.Lines[i])
		}
		if got.Lines[i].Parsed() && !got.Lines[i].Decoded() {
			t.Fatalf("line %d was not decoded", i)
		}
	}
}

// checkMarksPatch: staleness marks set aside on lines nothing decoded
// (SetMarks) and patched into their bytes write exactly what decoding the
// lines, setting the marks and encoding them writes, whether or not a
// line is decoded after its marks were set; the log written and read
// again holds those marks.
func checkMarksPatch(t *testing.T, data []byte, seed int64) (patched int) {
	t.Helper()
	lz, ref := ParseLog(data), ParseLog(data)
	r := rand.New(rand.NewSource(seed))
	reasons := []string{"", "code-ref-missing:src/a.go", "code-ref-missing:src/<b>&\"c\".go", "schema-changed", "é\u2028x"}
	want := map[int]Marks{}
	for i, ln := range lz.Lines {
		if !ln.Parsed() || r.Intn(4) == 0 {
			continue
		}
		m := Marks{MayBeStale: r.Intn(2) == 0, NeedsReview: r.Intn(2) == 0, StaleReason: reasons[r.Intn(len(reasons))]}
		decoded := ln.Decoded()
		ln.SetMarks(m)
		if !decoded && ln.Decoded() {
			t.Fatalf("line %d %q: SetMarks decoded it", i, ln.Raw())
		}
		if got := ln.Marks(); got != m {
			t.Fatalf("line %d %q: Marks() = %+v after SetMarks(%+v)", i, ln.Raw(), got, m)
		}
		want[i] = m
		if o := ref.Lines[i].Observation(); o != nil {
			o.MayBeStale, o.NeedsReview, o.StaleReason = m.MayBeStale, m.NeedsReview, m.StaleReason
		}
		if r.Intn(5) == 0 {
			// Decoded after: the observation has the marks.
			if o := ln.Observation(); o != nil && (Marks{o.MayBeStale, o.NeedsReview, o.StaleReason}) != m {
				t.Fatalf("line %d %q: decoded after SetMarks(%+v): %+v", i, ln.Raw(), m, o)
			}
		}
	}
	if lz.Changed() != ref.Changed() {
		t.Fatalf("Changed() = %v, decoding %v for %q", lz.Changed(), ref.Changed(), data)
	}
	for _, ln := range lz.Lines {
		if ln.marks != nil {
			if _, _, ok := patchMarks(nil, bytes.TrimSpace(ln.Raw()), *ln.marks); ok {
				patched++
			}
		}
	}
	got, err1 := lz.Bytes()
	exp, err2 := ref.Bytes()
	if (err1 == nil) != (err2 == nil) || !bytes.Equal(got, exp) {
		t.Fatalf("marks patched:\n%s(%v)\nmarks decoded:\n%s(%v)\nfrom:\n%s", got, err1, exp, err2, data)
	}
	if err1 != nil {
		return patched
	}
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	if err := WriteLog(path, lz); err != nil {
		t.Fatal(err)
	}
	back, err := ReadLog(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Lines) != len(lz.Lines) {
		t.Fatalf("%d lines read back, %d written", len(back.Lines), len(lz.Lines))
	}
	if lz.Changed() {
		t.Fatalf("the log written still counts as changed")
	}
	// The log written is what reading the file gives: its bytes (the
	// patched lines kept as read, their marks patched in again at each
	// write), index fields and texts; and once settled (or decoded) its
	// lines hold the file's bytes.
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if again, err := lz.Bytes(); err != nil || !bytes.Equal(again, file) {
		t.Fatalf("the log written gives %q (%v), the file holds %q", again, err, file)
	}
	for _, settled := range []bool{false, true} {
		if settled {
			lz.Settle()
		}
		for i, ln := range lz.Lines {
			bl := back.Lines[i]
			d1, e1, ok1 := ln.RawTexts()
			d2, e2, ok2 := bl.RawTexts()
			if settled && !bytes.Equal(bytes.TrimSpace(ln.Raw()), bytes.TrimSpace(bl.Raw())) || ln.ID() != bl.ID() || ln.Status() != bl.Status() ||
				ln.Marks() != bl.Marks() || ln.HasResolution() != bl.HasResolution() ||
				ok1 && ok2 && (!bytes.Equal(d1, d2) || !bytes.Equal(e1, e2)) || ok1 != ok2 && !ln.Decoded() {
				t.Fatalf("line %d after the write (settled %v): %q %v %q %q, read back: %q %v %q %q", i, settled, ln.Raw(), ok1, d1, e1, bl.Raw(), ok2, d2, e2)
			}
			if !settled && r.Intn(3) == 0 && ln.Observation() != nil {
				// Decoded before a settle: the line holds the file's bytes.
				if !bytes.Equal(bytes.TrimSpace(ln.Raw()), bytes.TrimSpace(bl.Raw())) || ln.Marks() != bl.Marks() {
					t.Fatalf("line %d decoded after the write: %q %+v, read back: %q %+v", i, ln.Raw(), ln.Marks(), bl.Raw(), bl.Marks())
				}
			}
		}
		if lz.Changed() {
			t.Fatalf("the log written counts as changed (settled %v)", settled)
		}
	}
	for i, m := range want {
		for _, l := range []*Log{lz, back} {
			ln := l.Lines[i]
			if o := ln.Observation(); o != nil && ln.Invalid() == nil && (ln.Marks() != m || Marks{o.MayBeStale, o.NeedsReview, o.StaleReason} != m) {
				t.Fatalf("line %d %q: marks %+v / %+v after the write, want %+v", i, ln.Raw(), ln.Marks(), o, m)
			}
		}
	}
	checkMarksRewritten(t, data, r)
	return patched
}

// checkMarksRewritten: marks set on data's lines, written, then set again
// (back to what the line was read with, or others) with some lines decoded
// or the log settled in between, give the file that reading the first
// write's file, decoding every line and setting the second marks gives.
func checkMarksRewritten(t *testing.T, data []byte, r *rand.Rand) {
	t.Helper()
	reasons := []string{"", "code-ref-missing:src/a.go", "schema-changed"}
	draw := func() Marks {
		return Marks{MayBeStale: r.Intn(2) == 0, NeedsReview: r.Intn(2) == 0, StaleReason: reasons[r.Intn(len(reasons))]}
	}
	lz := ParseLog(data)
	own := make([]Marks, len(lz.Lines))
	for i, ln := range lz.Lines {
		own[i] = ln.Marks()
		if ln.Parsed() && r.Intn(3) > 0 {
			ln.SetMarks(draw())
		}
	}
	path := filepath.Join(t.TempDir(), "learning-log.jsonl")
	if err := WriteLog(path, lz); err != nil {
		return // a line that cannot be encoded: checkMarksPatch compared that
	}
	ref, err := ReadLog(path) // the log as the first write left it
	if err != nil {
		t.Fatal(err)
	}
	if r.Intn(3) == 0 {
		lz.Settle()
	}
	for i, ln := range lz.Lines {
		if !ln.Parsed() || r.Intn(4) == 0 {
			continue
		}
		m := draw()
		if r.Intn(2) == 0 {
			m = own[i] // back to what it was read with
		}
		ln.SetMarks(m)
		if r.Intn(4) == 0 {
			ln.Observation()
		}
		if o := ref.Lines[i].Observation(); o != nil {
			o.MayBeStale, o.NeedsReview, o.StaleReason = m.MayBeStale, m.NeedsReview, m.StaleReason
		}
	}
	for i, ln := range ref.Lines {
		if ln.Parsed() && ln.obs == nil {
			ln.Observation() // every line the decoding way
			if m := lz.Lines[i].Marks(); ln.obs != nil {
				ln.obs.MayBeStale, ln.obs.NeedsReview, ln.obs.StaleReason = m.MayBeStale, m.NeedsReview, m.StaleReason
			}
		}
	}
	if err := WriteLog(path, lz); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	exp, err := ref.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, exp) {
		t.Fatalf("marks set again after a write:\n%s\nthe decoding way:\n%s\nfrom:\n%s", got, exp, data)
	}
}

// genFullLog returns lines holding every field, as devflow writes them,
// in any order, with values written the way encoding/json writes them or
// not (other escapes, raw HTML characters, "0.50", whitespace, nulls),
// optional fields and marks present or not, unknown members: lines
// patchMarks takes and lines it must decline.
func genFullLog(r *rand.Rand) []byte {
	str := func() string {
		v := pick(r, lazyStrings)
		if r.Intn(2) == 0 {
			v = pick(r, []string{"Run make check", "src/a.go", "2026-01-02T03:04:05Z", "say \"hi\"\nthen\tgo \\ on", "é 🎉"})
		}
		switch r.Intn(20) {
		case 0: // another writer's escapes
			q := strings.NewReplacer("/", `\/`, "é", `\u00e9`, "<", "<", "\n", `\u000a`).Replace(v)
			b, _ := json.Marshal(q)
			return strings.ReplaceAll(string(b), `\\`, `\`)
		case 1: // node's JSON.stringify: no HTML escapes
			var b bytes.Buffer
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(false)
			_ = enc.Encode(v)
			return strings.TrimSpace(b.String())
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	num := func() string {
		if r.Intn(10) == 0 {
			return pick(r, lazyNumbers)
		}
		return pick(r, []string{"0.95", "0.5", "4", "1", "0.7"})
	}
	var out bytes.Buffer
	for n := r.Intn(5); n >= 0; n-- {
		ms := []string{
			`"id":` + pick(r, []string{`"obs_a"`, `"obs_b"`, `"obs_c"`}),
			`"type":` + pick(r, []string{`"workflow"`, `"decision"`, `"pitfall"`}),
			`"pattern":` + str(),
			`"confidence":` + num(),
			`"observations":` + num(),
			`"first_seen":` + str(),
			`"last_seen":` + str(),
			`"status":` + pick(r, []string{`"ready"`, `"created"`, `"observing"`}),
			`"evidence":` + pick(r, []string{`[]`, `["a"]`, "[" + str() + "]", "[" + str() + "," + str() + "]", `["a", "b"]`, `null`, `["` + "x<y" + `","z"]`}[:4+r.Intn(2)*3]),
			`"details":` + str(),
			`"quality_ok":` + pick(r, []string{"true", "false"}),
		}
		if r.Intn(12) == 0 {
			ms = ms[:len(ms)-1-r.Intn(3)] // a field missing
		}
		for _, opt := range []string{`"artifact_path":`, `"deprecated_at":`, `"softCapExceeded":`, `"needsReview":`, `"mayBeStale":`, `"staleReason":`, `"x_tool":`, `"resolved":`, `"x<&>":`} {
			if r.Intn(3) != 0 {
				continue
			}
			switch opt {
			case `"softCapExceeded":`, `"needsReview":`, `"mayBeStale":`:
				ms = append(ms, opt+pick(r, []string{"true", "false", "true", "false", "null"}))
			case `"x_tool":`:
				ms = append(ms, opt+pick(r, []string{`{"v":2}`, `[1,2]`, `1.50`, `{"v": 2}`, `"<tool>"`}))
			case `"resolved":`:
				ms = append(ms, opt+`{"staleReasons":["code-ref-missing:src/a.go"]}`)
			default:
				ms = append(ms, opt+pick(r, []string{`""`, str(), str(), `null`}))
			}
		}
		r.Shuffle(len(ms), func(i, j int) { ms[i], ms[j] = ms[j], ms[i] })
		out.WriteString("{" + strings.Join(ms, ",") + "}\n")
	}
	return out.Bytes()
}

func TestMarksPatchMatchesDecoding(t *testing.T) {
	r := rand.New(rand.NewSource(11))
	n := 400
	if testing.Short() {
		n = 100
	}
	patched := 0
	for i := range n {
		checkMarksPatch(t, genLog(r), int64(i))
		patched += checkMarksPatch(t, genFullLog(r), int64(i))
		if t.Failed() {
			return
		}
	}
	if patched < n/8 {
		t.Errorf("%d lines patched in %d logs: the generator misses the fast way", patched, n)
	}
	for i, s := range logSeeds {
		checkMarksPatch(t, []byte(s), int64(i))
	}
	// Lines as devflow and bench/gen write them are patched, not decoded:
	// the fast way is the common one.
	var b bytes.Buffer
	for i := range 50 {
		fmt.Fprintf(&b, `{"id":"obs_%03d","type":"workflow","pattern":"Run make check","confidence":0.95,"observations":4,"first_seen":"2026-04-16T11:00:00Z","last_seen":"2026-04-17T09:00:00Z","status":"created","evidence":["session 0","src/pkg0/file%d.go"],"details":"Steps:\n1. \"make check\"\n2. push","quality_ok":true,"artifact_path":".claude/commands/self-learning/c%d.md"}`+"\n", i, i, i)
	}
	lz := ParseLog(b.Bytes())
	for _, ln := range lz.Lines {
		ln.SetMarks(Marks{MayBeStale: true, NeedsReview: true, StaleReason: "code-ref-missing:src/x.go"})
	}
	patched = 0
	for _, ln := range lz.Lines {
		if _, _, ok := patchMarks(nil, bytes.TrimSpace(ln.Raw()), *ln.marks); ok {
			patched++
		}
	}
	if patched != 50 {
		t.Errorf("%d of 50 devflow-shaped lines patched, want all", patched)
	}
	if got := checkMarksPatch(t, b.Bytes(), 5); got == 0 {
		t.Errorf("no devflow-shaped line patched")
	}
}

// FuzzMarksPatch: checkMarksPatch on any input.
func FuzzMarksPatch(f *testing.F) {
	for _, s := range logSeeds {
		f.Add([]byte(s), int64(1))
	}
	r := rand.New(rand.NewSource(5))
	for i := range 20 {
		f.Add(genLog(r), int64(i))
		f.Add(genFullLog(r), int64(i))
	}
	f.Add([]byte(`{"id":"obs_a","type":"workflow","pattern":"p","confidence":1e-7,"observations":1,"first_seen":"","last_seen":"","status":"ready","evidence":[],"details":"\u2028 \/ \u00e9 \u003c \u001f \ud83d\ude00","quality_ok":false,"softCapExceeded":false,"artifact_path":"","x":{"a": 1}}`+"\n"), int64(2))
	f.Fuzz(func(t *testing.T, data []byte, seed int64) {
		checkMarksPatch(t, data, seed)
	})
}

// TestMarksChangedAfterTheirWrite: marks set after the write that patched
// a line's marks in — back to what the line was read with, or to others —
// are written by the next write, whether the line was decoded or the log
// settled in between, or neither.
func TestMarksChangedAfterTheirWrite(t *testing.T) {
	line := `{"id":"obs_a","type":"workflow","pattern":"p","confidence":0.5,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"created","evidence":["src/a.go"],"details":"see src/a.go","quality_ok":true}`
	stale := Marks{MayBeStale: true, NeedsReview: true, StaleReason: "code-ref-missing:src/a.go"}
	other := Marks{MayBeStale: true, StaleReason: "code-ref-missing:src/b.go"}
	for _, then := range []Marks{{}, other, stale} {
		for _, between := range []string{"nothing", "decode", "settle"} {
			path := filepath.Join(t.TempDir(), "learning-log.jsonl")
			if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			l, err := ReadLog(path)
			if err != nil {
				t.Fatal(err)
			}
			l.Lines[0].SetMarks(stale)
			if err := WriteLog(path, l); err != nil {
				t.Fatal(err)
			}
			l.Lines[0].SetMarks(then)
			switch between {
			case "decode":
				if o := l.Lines[0].Observation(); (Marks{o.MayBeStale, o.NeedsReview, o.StaleReason}) != then {
					t.Fatalf("then %+v, decoded: %+v", then, o)
				}
			case "settle":
				l.Settle()
			}
			if got := l.Lines[0].Marks(); got != then {
				t.Fatalf("then %+v, %s between: Marks() %+v", then, between, got)
			}
			if l.Changed() != (then != stale) {
				t.Fatalf("then %+v, %s between: Changed() %v", then, between, l.Changed())
			}
			if err := WriteLog(path, l); err != nil {
				t.Fatal(err)
			}
			back, err := ReadLog(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := back.Lines[0].Marks(); got != then {
				t.Errorf("then %+v, %s between: the file holds %+v: %s", then, between, got, back.Lines[0].Raw())
			}
		}
	}
}

// internJSON is the string of kindJSON(v), the scan's type or status.
func internJSON(v []byte) string {
	k, odd := kindJSON(v)
	if k == oddKind {
		return odd
	}
	return kinds[k]
}

// kindJSON (through internJSON) gives what decoding the value and
// interning it gives, and the package's constant itself for a known type
// or status, escaped or not.
func TestInternJSON(t *testing.T) {
	for _, v := range []string{
		`"workflow"`, `"procedural"`, `"decision"`, `"pitfall"`,
		`"created"`, `"deprecated"`, `"ready"`, `"observing"`,
		`"\u0077orkflow"`, `"work\/flow"`, `"workflow "`, `"Workflow"`, `""`,
		`"custom"`, "\"caf\xc3\xa9\"", "\"bad\xff\"", `"\ud800"`,
	} {
		want := intern(jsonString([]byte(v)))
		got := internJSON([]byte(v))
		if got != want {
			t.Errorf("internJSON(%s) = %q, want %q", v, got, want)
		}
		for _, c := range slices.Concat(Types, Statuses) {
			if got == c && unsafe.StringData(got) != unsafe.StringData(c) {
				t.Errorf("internJSON(%s) is a copy of %q, not the constant", v, c)
			}
		}
	}
}

// Lines with the same stale reason share its string once scanned (at
// 100,000 marked lines a string each was 5 MB of a pass's heap), and a
// reason written with escapes still reads as its decoding.
func TestScanSharesStaleReasons(t *testing.T) {
	line := func(id, reason string) string {
		b, err := json.Marshal(map[string]any{"id": id, "type": "workflow", "pattern": "p", "status": "ready",
			"mayBeStale": true, "needsReview": true, "staleReason": reason})
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	in := strings.Join([]string{
		line("obs_a", "code-ref-missing:src/a.go"),
		line("obs_b", "code-ref-missing:src/a.go"),
		line("obs_c", "code-ref-missing:src/b.go"),
		line("obs_d", "quote \" and <tag>"),
		line("obs_e", "quote \" and <tag>"),
	}, "\n") + "\n"
	l := ParseLog([]byte(in))
	want := []string{"code-ref-missing:src/a.go", "code-ref-missing:src/a.go", "code-ref-missing:src/b.go", "quote \" and <tag>", "quote \" and <tag>"}
	for i, ln := range l.Lines {
		if ln.Decoded() {
			t.Fatalf("line %d decoded by the scan", i)
		}
		if got := ln.StaleReason(); got != want[i] {
			t.Errorf("line %d: StaleReason %q, want %q", i, got, want[i])
		}
	}
	if a, b := l.Lines[0].StaleReason(), l.Lines[1].StaleReason(); unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("two lines with the same stale reason hold a string each")
	}
	if a, c := l.Lines[0].StaleReason(), l.Lines[2].StaleReason(); unsafe.StringData(a) == unsafe.StringData(c) {
		t.Error("two different stale reasons share a string")
	}
	// A line read alone (no scratch) reads the same.
	var one Line
	parseLine(&one, []byte(line("obs_f", "code-ref-missing:src/a.go")), nil)
	if one.StaleReason() != "code-ref-missing:src/a.go" {
		t.Errorf("a line scanned alone: StaleReason %q", one.StaleReason())
	}
}
