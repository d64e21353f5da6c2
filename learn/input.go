package learn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"time"
)

// FieldError is a validation error naming the offending field.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %q: %s", e.Field, e.Msg) }

// The validators' expressions are compiled on first use, not at start:
// together with idMentionRe they were 0.7 ms of every command's start
// (GODEBUG=inittrace=1), hooks included, most of which never validate.
var (
	entryIDRe = lazyRegexp(`^(?:ADR-[0-9]+|PF-[0-9]+|obs_[A-Za-z0-9_.-]{1,124})$`)
	slugRe    = lazyRegexp(`^[a-z0-9][a-z0-9_.-]{0,63}$`)
	// roleRe is a validator role: one word, as it may be printed to an agent.
	roleRe = lazyRegexp(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)
)

// lazyRegexp returns a function that compiles expr once, when first called.
func lazyRegexp(expr string) func() *regexp.Regexp {
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// ValidRole reports whether s can name a validator or consumer role
// ("sentinel", "judge", "qa-bot"): one word of letters, digits, '-', '_' or
// '.', at most 64 characters.
func ValidRole(s string) bool { return roleRe().MatchString(s) }

// ValidEntryID reports whether id names a knowledge entry (ADR-NNN, PF-NNN)
// or an observation (obs_…).
func ValidEntryID(id string) bool { return entryIDRe().MatchString(id) }

// object decodes data as exactly one JSON object into raw fields.
func object(data []byte) (map[string]json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty: send one JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]json.RawMessage
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if m == nil {
		return nil, fmt.Errorf("not a JSON object: null")
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value (send one object)")
	}
	return m, nil
}

type fields map[string]json.RawMessage

func kindOf(raw json.RawMessage) string {
	switch t := bytes.TrimSpace(raw); {
	case len(t) == 0:
		return "nothing"
	case t[0] == '"':
		return "a string"
	case t[0] == '{':
		return "an object"
	case t[0] == '[':
		return "an array"
	case t[0] == 't' || t[0] == 'f':
		return "a boolean"
	case t[0] == 'n':
		return "null"
	}
	return "a number"
}

// has reports whether the field is present and not null.
func (f fields) has(name string) bool {
	raw, ok := f[name]
	return ok && kindOf(raw) != "null"
}

func (f fields) str(name string, required bool) (string, error) {
	if !f.has(name) {
		if required {
			return "", &FieldError{name, "missing (a string is required)"}
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(f[name], &s); err != nil {
		return "", &FieldError{name, "must be a string, got " + kindOf(f[name])}
	}
	if strings.ContainsAny(s, "\n\r\x00") {
		return "", &FieldError{name, "must not contain line breaks or NUL"}
	}
	if required && strings.TrimSpace(s) == "" {
		return "", &FieldError{name, "must not be empty"}
	}
	return s, nil
}

func (f fields) boolean(name string) (bool, error) {
	if !f.has(name) {
		return false, &FieldError{name, "missing (true or false is required)"}
	}
	var b bool
	if err := json.Unmarshal(f[name], &b); err != nil {
		return false, &FieldError{name, "must be true or false, got " + kindOf(f[name])}
	}
	return b, nil
}

// number returns the field as a float64 (present reports presence).
func (f fields) number(name string, required bool, what string) (v float64, present bool, err error) {
	if !f.has(name) {
		if required {
			return 0, false, &FieldError{name, "missing (" + what + " is required)"}
		}
		return 0, false, nil
	}
	var n json.Number
	if kindOf(f[name]) != "a number" || json.Unmarshal(f[name], &n) != nil {
		return 0, false, &FieldError{name, "must be " + what + ", got " + kindOf(f[name])}
	}
	v, err = n.Float64()
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false, &FieldError{name, "must be " + what + ", got " + n.String()}
	}
	return v, true, nil
}

func (f fields) count(name string, required bool, max float64) (int64, bool, error) {
	v, ok, err := f.number(name, required, "a whole number >= 0")
	if err != nil || !ok {
		return 0, ok, err
	}
	if v < 0 {
		return 0, false, &FieldError{name, fmt.Sprintf("must be >= 0, got %s", string(bytes.TrimSpace(f[name])))}
	}
	if v != math.Trunc(v) {
		return 0, false, &FieldError{name, fmt.Sprintf("must be a whole number, got %s", string(bytes.TrimSpace(f[name])))}
	}
	if v > max {
		return 0, false, &FieldError{name, fmt.Sprintf("must be at most %.0f, got %s", max, string(bytes.TrimSpace(f[name])))}
	}
	return int64(v), true, nil
}

func (f fields) ids(name string) ([]string, error) {
	if !f.has(name) {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(f[name], &raws); err != nil {
		return nil, &FieldError{name, "must be an array of entry ids, got " + kindOf(f[name])}
	}
	out := make([]string, 0, len(raws))
	for i, r := range raws {
		field := fmt.Sprintf("%s[%d]", name, i)
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, &FieldError{field, "must be a string, got " + kindOf(r)}
		}
		if !ValidEntryID(s) {
			return nil, &FieldError{field, fmt.Sprintf("%q is not an entry id (ADR-NNN, PF-NNN or obs_…)", s)}
		}
		out = append(out, s)
	}
	return out, nil
}

func (f fields) texts(name string) ([]string, error) {
	if !f.has(name) {
		return nil, nil
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(f[name], &raws); err != nil {
		return nil, &FieldError{name, "must be an array of strings, got " + kindOf(f[name])}
	}
	out := make([]string, 0, len(raws))
	for i, r := range raws {
		var s string
		if err := json.Unmarshal(r, &s); err != nil {
			return nil, &FieldError{fmt.Sprintf("%s[%d]", name, i), "must be a string, got " + kindOf(r)}
		}
		if strings.TrimSpace(s) == "" {
			return nil, &FieldError{fmt.Sprintf("%s[%d]", name, i), "must not be empty"}
		}
		out = append(out, s)
	}
	return out, nil
}

func (f fields) time(name string) (time.Time, error) {
	s, err := f.str(name, false)
	if err != nil || s == "" {
		return time.Time{}, err
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, &FieldError{name, fmt.Sprintf("must be an RFC3339 time, got %q", s)}
	}
	if y := t.UTC().Year(); y < 0 || y > 9999 {
		// The journal stores UTC: such a time could not be read back.
		return time.Time{}, &FieldError{name, fmt.Sprintf("must be within the years 0000-9999 in UTC, got %q", s)}
	}
	return t, nil
}

// DecodeOutcome parses and validates one run outcome:
//
//	{"run_id": string (required), "success": bool (required),
//	 "duration_ms": whole number ≥0 (required), "retry_count": whole number ≥0 (required),
//	 "error_count": whole number ≥0 (optional: the run's unresolved errors),
//	 "quality": number 0..1 (optional), "cited": [entry ids] (optional),
//	 "failure_type": slug (optional), "strategy": string (optional),
//	 "type": slug (optional: the artifact type the run worked on),
//	 "ts": RFC3339 (optional: when the run ended)}
//
// Unknown fields are ignored. The error is a *FieldError for a bad field.
func DecodeOutcome(data []byte) (Outcome, error) {
	m, err := object(data)
	if err != nil {
		return Outcome{}, err
	}
	f := fields(m)
	var o Outcome
	if o.RunID, err = f.str("run_id", true); err != nil {
		return Outcome{}, err
	}
	if o.Success, err = f.boolean("success"); err != nil {
		return Outcome{}, err
	}
	if o.DurationMS, _, err = f.count("duration_ms", true, math.MaxInt32*1000.0); err != nil {
		return Outcome{}, err
	}
	n, set, err := f.count("error_count", false, 1e9)
	if err != nil {
		return Outcome{}, err
	}
	o.ErrorCount, o.ErrorCountSet = int(n), set
	if n, _, err = f.count("retry_count", true, 1e9); err != nil {
		return Outcome{}, err
	}
	o.RetryCount = int(n)
	if o.Quality, o.QualitySet, err = f.number("quality", false, "a number from 0 to 1"); err != nil {
		return Outcome{}, err
	}
	if o.QualitySet && (o.Quality < 0 || o.Quality > 1) {
		return Outcome{}, &FieldError{"quality", fmt.Sprintf("must be from 0 to 1, got %s", bytes.TrimSpace(f["quality"]))}
	}
	if o.Cited, err = f.ids("cited"); err != nil {
		return Outcome{}, err
	}
	if o.FailureType, err = f.str("failure_type", false); err != nil {
		return Outcome{}, err
	}
	if o.FailureType != "" && !slugRe().MatchString(o.FailureType) {
		return Outcome{}, &FieldError{"failure_type", fmt.Sprintf("must be a lowercase word such as timeout or tool_failure, got %q", o.FailureType)}
	}
	if o.Strategy, err = f.str("strategy", false); err != nil {
		return Outcome{}, err
	}
	if o.Type, err = f.str("type", false); err != nil {
		return Outcome{}, err
	}
	if o.Type != "" && !slugRe().MatchString(o.Type) {
		return Outcome{}, &FieldError{"type", fmt.Sprintf("must be a lowercase artifact type such as workflow or decision, got %q", o.Type)}
	}
	if o.TS, err = f.time("ts"); err != nil {
		return Outcome{}, err
	}
	return o, nil
}

// Verdict is a validator's verdict on a run (issue 6 item 9).
type Verdict struct {
	TS             time.Time
	RunID          string
	Pass           bool
	Role           string
	EvidenceLevel  int // 1 execution output, 2 file:line citation, 3 reasoning only
	FalsePositives []string
	Cited          []string
	// Files are the repository paths the run changed (optional): a PASS at
	// evidence level 1–2 also reinforces the entries relevant to them.
	Files []string
}

// MaxVerdictFiles bounds the "files" of a verdict.
const MaxVerdictFiles = 10000

// DecodeVerdict parses and validates
//
//	{"run_id": string, "verdict": "PASS"|"FAIL", "role": string (optional),
//	 "evidence_level": 1|2|3, "false_positives": [text…] (optional),
//	 "cited": [entry ids] (optional), "files": [repo paths] (optional),
//	 "ts": RFC3339 (optional)}
func DecodeVerdict(data []byte) (Verdict, error) {
	m, err := object(data)
	if err != nil {
		return Verdict{}, err
	}
	f := fields(m)
	var v Verdict
	if v.RunID, err = f.str("run_id", true); err != nil {
		return Verdict{}, err
	}
	s, err := f.str("verdict", true)
	if err != nil {
		return Verdict{}, err
	}
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "PASS":
		v.Pass = true
	case "FAIL":
	default:
		return Verdict{}, &FieldError{"verdict", fmt.Sprintf("must be PASS or FAIL, got %q", s)}
	}
	if v.Role, err = f.str("role", false); err != nil {
		return Verdict{}, err
	}
	if v.Role != "" && !ValidRole(v.Role) {
		return Verdict{}, &FieldError{"role", fmt.Sprintf("must be one word of letters, digits, '-', '_' or '.' (at most 64), got %q", v.Role)}
	}
	lvl, _, err := f.count("evidence_level", true, 3)
	if err != nil {
		return Verdict{}, err
	}
	if lvl < 1 {
		return Verdict{}, &FieldError{"evidence_level", "must be 1, 2 or 3, got 0"}
	}
	v.EvidenceLevel = int(lvl)
	if v.FalsePositives, err = f.texts("false_positives"); err != nil {
		return Verdict{}, err
	}
	if v.Cited, err = f.ids("cited"); err != nil {
		return Verdict{}, err
	}
	if v.Files, err = f.texts("files"); err != nil {
		return Verdict{}, err
	}
	if len(v.Files) > MaxVerdictFiles {
		return Verdict{}, &FieldError{"files", fmt.Sprintf("lists %d paths, at most %d are accepted", len(v.Files), MaxVerdictFiles)}
	}
	for i, p := range v.Files {
		if strings.ContainsAny(p, "\n\r\x00") || len(p) > 4096 {
			return Verdict{}, &FieldError{fmt.Sprintf("files[%d]", i), "must be one repository path (one line, at most 4096 bytes)"}
		}
	}
	if v.TS, err = f.time("ts"); err != nil {
		return Verdict{}, err
	}
	return v, nil
}
