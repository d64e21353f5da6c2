package manifest

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/learnwatch/learnwatch/jsonscan"
)

// This file holds the cheap side of the learning log: a scan that splits a
// line's JSON object into its top-level members without decoding them, the
// index fields a pass asks about (id, type, status, artifact path), and the
// encoder that rewrites a changed observation by patching its members in
// their original order. Lines the scan cannot vouch for take the full
// encoding/json path instead, so every result stays exactly what a full
// decode gives.

// member is one top-level member of a JSON object: the key's bytes between
// its quotes and the value's bytes, which start at offset at of the object.
type member struct {
	key, val []byte
	at       int
}

// members splits the JSON object data into its top-level members,
// appending them to dst. It checks the structure only (it does not validate
// literals or escapes: callers run json.Valid first or work on bytes that
// came from a parsed line). ok is false when data is not an object it can
// split, or a key holds a backslash or a non-ASCII byte (those keys mean
// something else once decoded).
func members(dst []member, data []byte) ([]member, bool) {
	return splitMembers(dst, data, false)
}

// validMembers is members that also checks the whole object is valid JSON
// (the grammar json.Valid checks). It may refuse valid JSON it does not
// care to follow (nesting deeper than maxScanDepth); never the reverse.
func validMembers(dst []member, data []byte) ([]member, bool) {
	return splitMembers(dst, data, true)
}

func splitMembers(dst []member, data []byte, validate bool) ([]member, bool) {
	i := jsonscan.SkipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return dst, false
	}
	i = jsonscan.SkipSpace(data, i+1)
	if i < len(data) && data[i] == '}' {
		return dst, jsonscan.SkipSpace(data, i+1) == len(data)
	}
	for i < len(data) {
		if data[i] != '"' {
			return dst, false
		}
		end, plain := skipString(data, i)
		if end < 0 || !plain || validate && !validString(data[i:end]) {
			return dst, false
		}
		key := data[i+1 : end-1]
		i = jsonscan.SkipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return dst, false
		}
		i = jsonscan.SkipSpace(data, i+1)
		var vend int
		if validate {
			vend = validValue(data, i, 0)
		} else {
			vend = skipValue(data, i)
		}
		if vend < 0 {
			return dst, false
		}
		dst = append(dst, member{key: key, val: data[i:vend], at: i})
		i = jsonscan.SkipSpace(data, vend)
		if i >= len(data) {
			return dst, false
		}
		switch data[i] {
		case ',':
			i = jsonscan.SkipSpace(data, i+1)
		case '}':
			return dst, jsonscan.SkipSpace(data, i+1) == len(data)
		default:
			return dst, false
		}
	}
	return dst, false
}

// skipString returns the index after the string starting at data[i] (a
// quote), or -1; plain reports no backslash and no byte ≥ 0x80.
func skipString(data []byte, i int) (int, bool) {
	plain := true
	for j := i + 1; j < len(data); j++ {
		switch c := data[j]; {
		case c == '"':
			return j + 1, plain
		case c == '\\':
			plain = false
			j++
		case c >= utf8.RuneSelf:
			plain = false
		}
	}
	return -1, false
}

// skipValue returns the index after the value starting at data[i], or -1.
func skipValue(data []byte, i int) int {
	if i >= len(data) {
		return -1
	}
	switch data[i] {
	case '"':
		end, _ := skipString(data, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				end, _ := skipString(data, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
		j++
	}
	return j
}

// maxScanDepth bounds the nesting validValue follows; deeper values go to
// encoding/json.
const maxScanDepth = 200

// validValue returns the index after the valid JSON value starting at
// data[i], or -1 when there is none (or it nests deeper than maxScanDepth).
func validValue(data []byte, i, depth int) int {
	if i >= len(data) {
		return -1
	}
	switch c := data[i]; {
	case c == '"':
		return validStringEnd(data, i)
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return -1
		}
		closing := byte('}')
		if c == '[' {
			closing = ']'
		}
		j := jsonscan.SkipSpace(data, i+1)
		if j < len(data) && data[j] == closing {
			return j + 1
		}
		for j < len(data) {
			if c == '{' {
				if data[j] != '"' {
					return -1
				}
				end, _ := skipString(data, j)
				if end < 0 || !validString(data[j:end]) {
					return -1
				}
				j = jsonscan.SkipSpace(data, end)
				if j >= len(data) || data[j] != ':' {
					return -1
				}
				j = jsonscan.SkipSpace(data, j+1)
			}
			j = validValue(data, j, depth+1)
			if j < 0 {
				return -1
			}
			j = jsonscan.SkipSpace(data, j)
			if j >= len(data) {
				return -1
			}
			switch data[j] {
			case ',':
				j = jsonscan.SkipSpace(data, j+1)
			case closing:
				return j + 1
			default:
				return -1
			}
		}
		return -1
	case c == 't':
		return literal(data, i, "true")
	case c == 'f':
		return literal(data, i, "false")
	case c == 'n':
		return literal(data, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return jsonscan.NumberEnd(data, i)
	}
	return -1
}

func literal(data []byte, i int, lit string) int {
	if len(data)-i >= len(lit) && string(data[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// stringSpecial marks the bytes a JSON string's scan must stop at: the
// closing quote, a backslash, a control byte.
var stringSpecial = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// validStringEnd returns the index after the valid JSON string starting at
// data[i] (a quote), or -1: skipString and validString in one pass over
// the bytes (most of a log's bytes are in strings).
func validStringEnd(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		c := data[j]
		if !stringSpecial[c] {
			continue
		}
		switch {
		case c == '"':
			return j + 1
		case c < 0x20:
			return -1
		}
		// A backslash: one of the escapes JSON has.
		j++
		if j >= len(data) {
			return -1
		}
		switch data[j] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if j+4 >= len(data) {
				return -1
			}
			for _, h := range data[j+1 : j+5] {
				if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
					return -1
				}
			}
			j += 4
		default:
			return -1
		}
	}
	return -1
}

// validString reports whether s (from quote to quote) is a valid JSON
// string: no control byte, only the escapes JSON has.
func validString(s []byte) bool {
	for j := 1; j < len(s)-1; j++ {
		switch c := s[j]; {
		case c < 0x20:
			return false
		case c == '\\':
			j++
			switch s[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(s) {
					return false
				}
				for _, h := range s[j+1 : j+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return true
}

// Indexes into knownKeys.
const (
	kID = iota
	kType
	kPattern
	kConfidence
	kObservations
	kFirstSeen
	kLastSeen
	kStatus
	kEvidence
	kDetails
	kQualityOK
	kArtifactPath
	kDeprecatedAt
	kNeedsReview
	kMayBeStale
	kStaleReason
	kSoftCapExceeded
)

// knownIndex returns k's index in knownKeys, or -1.
func knownIndex(k []byte) int {
	switch string(k) {
	case "id":
		return kID
	case "type":
		return kType
	case "pattern":
		return kPattern
	case "confidence":
		return kConfidence
	case "observations":
		return kObservations
	case "first_seen":
		return kFirstSeen
	case "last_seen":
		return kLastSeen
	case "status":
		return kStatus
	case "evidence":
		return kEvidence
	case "details":
		return kDetails
	case "quality_ok":
		return kQualityOK
	case "artifact_path":
		return kArtifactPath
	case "deprecated_at":
		return kDeprecatedAt
	case "needsReview":
		return kNeedsReview
	case "mayBeStale":
		return kMayBeStale
	case "staleReason":
		return kStaleReason
	case "softCapExceeded":
		return kSoftCapExceeded
	}
	return -1
}

// SpellsKnown reports whether key names a field an Observation types, in
// any letter case ("status", "Status"): encoding/json fills the field from
// it, as it matches names without regard to case, while Extra still
// reports a key in other cases (an unknown key, kept as written).
func SpellsKnown(key string) bool { return foldsToKnown([]byte(key)) }

// foldsToKnown reports whether encoding/json would fill a typed field from
// key although key is not its exact name (it matches names without regard
// to case).
func foldsToKnown(key []byte) bool {
	for _, k := range knownKeys {
		if len(k) == len(key) && strings.EqualFold(k, string(key)) {
			return true
		}
	}
	return false
}

// indexFields are what the scan of a line keeps: the fields a pass selects
// lines by, whether the pattern is blank (for Validate), whether the line
// is marked mayBeStale, and where the details and evidence values are
// written (offset in the scanned object and length; zero when absent —
// a value never starts an object).
type indexFields struct {
	id, artifact, staleReason string
	details, evidence         span
	// typ and status are a known type or status (kinds), or oddKind with
	// the string in odd: every line has both, and a byte each keeps a
	// line of the index small.
	typ, status              kind
	blankPattern, mayBeStale bool
	needsReview              bool
	resolved                 bool // a ResolutionKey member (HasResolution)
	odd                      *[2]string
}

// kind is a type or status as the scan read it: its place in kinds, or
// oddKind for a value that is not one of them.
type kind uint8

const oddKind kind = 255

// kinds are the values a kind names: none, the types, the statuses.
var kinds = append(append([]string{""}, Types...), Statuses...)

// kindJSON is the type or status the JSON string v (valid) holds: a
// known value's place in kinds, compared in place when it is written
// plainly (every line has both), or oddKind and the value decoded.
func kindJSON(v []byte) (kind, string) {
	if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 {
		for j, c := range kinds {
			if string(inner) == c {
				return kind(j), ""
			}
		}
	}
	s := jsonString(v)
	for j, c := range kinds {
		if s == c {
			return kind(j), ""
		}
	}
	return oddKind, s
}

// setKind sets the type (i 0) or status (i 1) to k, odd its value when k
// is oddKind (kindJSON).
func (f *indexFields) setKind(i int, k kind, odd string) {
	if k == oddKind {
		if f.odd == nil {
			f.odd = new([2]string)
		}
		f.odd[i] = odd
	}
	if i == 0 {
		f.typ = k
	} else {
		f.status = k
	}
}

// kindString returns the type (i 0) or status (i 1).
func (f *indexFields) kindString(i int) string {
	k := f.typ
	if i == 1 {
		k = f.status
	}
	if k == oddKind {
		return f.odd[i]
	}
	return kinds[k]
}

// span is a stretch of a line's bytes: offset and length.
type span struct{ off, n int32 }

// of returns the stretch of b, nil for the zero span.
func (s span) of(b []byte) []byte {
	if s.n == 0 {
		return nil
	}
	return b[s.off : s.off+s.n : s.off+s.n]
}

// scanFields reads the index fields of one line's object without decoding
// it. ok is false when the line needs the full decoder to tell what it is
// (not valid JSON (or nested deeper than maxScanDepth), a key that is escaped, non-ASCII, repeated or a case
// variant of a known one, a known field whose value encoding/json might
// refuse); when ok is true a full decode succeeds and agrees with f.
func scanFields(body []byte, sc *scanScratch) (f indexFields, ok bool) {
	if sc == nil {
		sc = &scanScratch{}
	}
	ms, ok := validMembers(sc.members[:0], body)
	sc.members = ms
	if !ok {
		return f, false
	}
	var have uint32
	f.blankPattern = true
	for i, m := range ms {
		k := knownIndex(m.key)
		if k < 0 {
			if foldsToKnown(m.key) {
				return f, false
			}
			for _, p := range ms[:i] {
				if bytes.Equal(p.key, m.key) {
					return f, false
				}
			}
			if string(m.key) == ResolutionKey {
				f.resolved = true
			}
			continue
		}
		if have&(1<<k) != 0 {
			return f, false
		}
		have |= 1 << k
		v := m.val
		null := v[0] == 'n'
		switch k {
		case kConfidence:
			if !null {
				if _, err := strconv.ParseFloat(string(v), 64); err != nil {
					return f, false
				}
			}
		case kObservations:
			if !null {
				if _, err := strconv.ParseInt(string(v), 10, strconv.IntSize); err != nil {
					return f, false
				}
			}
		case kQualityOK, kNeedsReview, kMayBeStale, kSoftCapExceeded:
			if v[0] != 't' && v[0] != 'f' && !null {
				return f, false
			}
			switch k {
			case kMayBeStale:
				f.mayBeStale = v[0] == 't'
			case kNeedsReview:
				f.needsReview = v[0] == 't'
			}
		case kEvidence:
			if !null && !stringArray(v) {
				return f, false
			}
			f.evidence = span{int32(m.at), int32(len(v))}
		case kDetails:
			// A string or null (encoding/json refuses anything else into
			// a string field: the full decoder decides).
			if !null && v[0] != '"' {
				return f, false
			}
			f.details = span{int32(m.at), int32(len(v))}
		default: // string fields
			if null {
				continue
			}
			if v[0] != '"' {
				return f, false
			}
			switch k {
			case kID:
				f.id = jsonString(v)
			case kType:
				k, odd := kindJSON(v)
				f.setKind(0, k, odd)
			case kStatus:
				k, odd := kindJSON(v)
				f.setKind(1, k, odd)
			case kArtifactPath:
				f.artifact = jsonString(v)
			case kStaleReason:
				f.staleReason = sc.reason(v)
			case kPattern:
				if inner := v[1 : len(v)-1]; bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
					f.blankPattern = len(bytes.TrimSpace(inner)) == 0
				} else {
					f.blankPattern = strings.TrimSpace(jsonString(v)) == ""
				}
			}
		}
	}
	return f, true
}

// stringArray reports whether v (valid JSON) is an array of strings only.
func stringArray(v []byte) bool {
	if v[0] != '[' {
		return false
	}
	i := jsonscan.SkipSpace(v, 1)
	if i < len(v) && v[i] == ']' {
		return true
	}
	for i < len(v) {
		if v[i] != '"' {
			return false
		}
		end, _ := skipString(v, i)
		if end < 0 {
			return false
		}
		i = jsonscan.SkipSpace(v, end)
		if i >= len(v) {
			return false
		}
		if v[i] == ']' {
			return true
		}
		if v[i] != ',' {
			return false
		}
		i = jsonscan.SkipSpace(v, i+1)
	}
	return false
}

// scanScratch is what one goroutine scanning many lines reuses: a line's
// members, and the stale reasons it read. Lines share few reasons: a
// pass marks each stale observation with its first missing path, and a
// memory's observations name the same files (at 100,000 marked lines a
// string per line was 5 MB of a pass's heap).
type scanScratch struct {
	members []member
	reasons map[string]string
}

// maxReasons bounds a scanScratch's reasons: a log whose lines all have
// their own reads them as it did without.
const maxReasons = 4096

// reason decodes v, a stale reason's JSON string (valid), as jsonString
// does, sharing the string of an earlier line with the same one.
func (sc *scanScratch) reason(v []byte) string {
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') >= 0 || !utf8.Valid(inner) {
		return jsonString(v)
	}
	if s, ok := sc.reasons[string(inner)]; ok {
		return s
	}
	s := string(inner)
	if len(sc.reasons) < maxReasons {
		if sc.reasons == nil {
			sc.reasons = map[string]string{}
		}
		sc.reasons[s] = s
	}
	return s
}

// jsonString decodes a JSON string literal (valid) the way encoding/json
// does, without it when there is nothing to unescape.
func jsonString(v []byte) string {
	inner := v[1 : len(v)-1]
	if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
		return string(inner)
	}
	var s string
	_ = json.Unmarshal(v, &s)
	return s
}

// intern returns the constant for a known type or status, so that 100k
// lines share their strings.
func intern(s string) string {
	for _, c := range Types {
		if s == c {
			return c
		}
	}
	for _, c := range Statuses {
		if s == c {
			return c
		}
	}
	return s
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string exactly as encoding/json writes
// it (HTML-safe escapes, invalid UTF-8 as \ufffd, U+2028 and U+2029
// escaped).
func appendString[S ~string | ~[]byte](b []byte, s S) []byte {
	return append(appendStringBody(append(b, '"'), s), '"')
}

// appendStringBody appends what appendString writes between the quotes.
func appendStringBody[S ~string | ~[]byte](b []byte, s S) []byte {
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		var r rune
		var n int
		switch x := any(s).(type) {
		case string:
			r, n = utf8.DecodeRuneInString(x[i:])
		case []byte:
			r, n = utf8.DecodeRune(x[i:])
		}
		if r == utf8.RuneError && n == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += n
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += n
			start = i
			continue
		}
		i += n
	}
	return append(b, s[start:]...)
}

// appendFloat appends f as encoding/json writes a float64 (f is finite).
func appendFloat(b []byte, f float64) []byte {
	abs := f
	if abs < 0 {
		abs = -abs
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendField appends the JSON value of typed field k; present is false
// when the field is omitted (an omitempty field at its zero value).
func (o *Observation) appendField(b []byte, k int) ([]byte, bool) {
	switch k {
	case kID:
		return appendString(b, o.ID), true
	case kType:
		return appendString(b, o.Type), true
	case kPattern:
		return appendString(b, o.Pattern), true
	case kConfidence:
		return appendFloat(b, o.Confidence), true
	case kObservations:
		return strconv.AppendInt(b, int64(o.Observations), 10), true
	case kFirstSeen:
		return appendString(b, o.FirstSeen), true
	case kLastSeen:
		return appendString(b, o.LastSeen), true
	case kStatus:
		return appendString(b, o.Status), true
	case kEvidence:
		if o.Evidence == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range o.Evidence {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		return append(b, ']'), true
	case kDetails:
		return appendString(b, o.Details), true
	case kQualityOK:
		return appendBool(b, o.QualityOK), true
	case kArtifactPath:
		return appendString(b, o.ArtifactPath), o.ArtifactPath != ""
	case kDeprecatedAt:
		return appendString(b, o.DeprecatedAt), o.DeprecatedAt != ""
	case kNeedsReview:
		return appendBool(b, true), o.NeedsReview
	case kMayBeStale:
		return appendBool(b, true), o.MayBeStale
	case kStaleReason:
		return appendString(b, o.StaleReason), o.StaleReason != ""
	case kSoftCapExceeded:
		return appendBool(b, true), o.SoftCapExceeded
	}
	return b, false
}

// appendJSON appends o's encoding: the members of the object it was read
// from in their order, typed fields patched with their current values,
// unknown fields with their raw bytes (or the value SetExtra gave), then
// typed fields the object did not have, then new unknown fields. ok is
// false when it cannot encode o exactly like encoding/json would (a
// non-finite confidence, an object whose keys need decoding); the caller
// then takes the reflection path.
func (o *Observation) appendJSON(b []byte) ([]byte, bool) {
	if o.Confidence != o.Confidence || o.Confidence > maxFloat || o.Confidence < -maxFloat {
		return b, false
	}
	var buf [24]member
	ms := buf[:0]
	if o.raw != nil {
		var ok bool
		if ms, ok = members(ms, o.raw); !ok {
			return b, false
		}
		for i, m := range ms {
			for _, p := range ms[:i] {
				if bytes.Equal(p.key, m.key) {
					return b, false
				}
			}
		}
	}
	start := len(b)
	b = append(b, '{')
	var seen uint32
	wrote := false
	comma := func(b []byte) []byte {
		if wrote {
			b = append(b, ',')
		}
		wrote = true
		return b
	}
	for _, m := range ms {
		if k := knownIndex(m.key); k >= 0 {
			mark := len(b)
			b = comma(b)
			b = appendString(b, m.key)
			b = append(b, ':')
			var present bool
			if b, present = o.appendField(b, k); present {
				seen |= 1 << k
				continue
			}
			b = b[:mark]
			wrote = mark > start+1
			continue
		}
		b = comma(b)
		b = appendString(b, m.key)
		b = append(b, ':')
		v, ok := o.set[string(m.key)]
		if !ok {
			v = m.val
		}
		if b, ok = appendRaw(b, v); !ok {
			return b, false
		}
	}
	for k := range knownKeys {
		if seen&(1<<k) != 0 {
			continue
		}
		mark := len(b)
		b = comma(b)
		b = appendString(b, knownKeys[k])
		b = append(b, ':')
		var present bool
		if b, present = o.appendField(b, k); !present {
			b = b[:mark]
			wrote = mark > start+1
		}
	}
next:
	for _, k := range o.setOrder {
		for _, m := range ms {
			if string(m.key) == k {
				continue next
			}
		}
		b = comma(b)
		b = appendString(b, k)
		b = append(b, ':')
		var ok bool
		if b, ok = appendRaw(b, o.set[k]); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

const maxFloat = 1.7976931348623157e308

// appendRaw appends a raw JSON value the way encoding/json passes on what a
// MarshalJSON method returns: compacted, with <, >, &, U+2028 and U+2029
// escaped. ok is false for a value that is not valid JSON (encoding/json
// refuses it).
func appendRaw(b, v []byte) ([]byte, bool) {
	if len(v) == 0 {
		return b, false
	}
	switch v[0] {
	case 't', 'f', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if len(v) <= 5 && (string(v) == "true" || string(v) == "false" || string(v) == "null") || plainNumber(v) {
			return append(b, v...), true
		}
	}
	if !json.Valid(v) {
		return b, false
	}
	if !needsCompact(v) {
		return append(b, v...), true
	}
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		return b, false
	}
	var h bytes.Buffer
	json.HTMLEscape(&h, c.Bytes())
	return append(b, h.Bytes()...), true
}

// plainNumber reports a short run of digits with an optional leading minus
// (valid JSON when it has no leading zero).
func plainNumber(v []byte) bool {
	d := v
	if d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 18 || d[0] == '0' && len(d) > 1 {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// needsCompact reports whether valid JSON v holds whitespace outside its
// strings, or a byte that encoding/json escapes (<, >, &, the lead byte of
// U+2028/U+2029).
func needsCompact(v []byte) bool {
	for _, c := range v {
		switch c {
		case ' ', '\t', '\r', '\n', '<', '>', '&', 0xE2:
			return true
		}
	}
	return false
}

// decodeScanned fills o from body, a line scanFields accepted, without
// reflection: every known key appears once with a value of its type, so
// this gives what json.Unmarshal gives. o keeps body as its raw object.
func (o *Observation) decodeScanned(body []byte) bool {
	var buf [24]member
	ms, ok := members(buf[:0], body)
	if !ok {
		return false
	}
	*o = Observation{raw: body}
	for _, m := range ms {
		k := knownIndex(m.key)
		v := m.val
		if k < 0 || v[0] == 'n' {
			continue
		}
		switch k {
		case kID:
			o.ID = jsonString(v)
		case kType:
			o.Type = intern(jsonString(v))
		case kPattern:
			o.Pattern = jsonString(v)
		case kConfidence:
			f, err := strconv.ParseFloat(string(v), 64)
			if err != nil {
				return false
			}
			o.Confidence = f
		case kObservations:
			n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
			if err != nil {
				return false
			}
			o.Observations = int(n)
		case kFirstSeen:
			o.FirstSeen = jsonString(v)
		case kLastSeen:
			o.LastSeen = jsonString(v)
		case kStatus:
			o.Status = intern(jsonString(v))
		case kEvidence:
			ev, ok := stringList(v)
			if !ok {
				return false
			}
			o.Evidence = ev
		case kDetails:
			o.Details = jsonString(v)
		case kQualityOK:
			o.QualityOK = v[0] == 't'
		case kArtifactPath:
			o.ArtifactPath = jsonString(v)
		case kDeprecatedAt:
			o.DeprecatedAt = jsonString(v)
		case kNeedsReview:
			o.NeedsReview = v[0] == 't'
		case kMayBeStale:
			o.MayBeStale = v[0] == 't'
		case kStaleReason:
			o.StaleReason = jsonString(v)
		case kSoftCapExceeded:
			o.SoftCapExceeded = v[0] == 't'
		}
	}
	return true
}

// stringList decodes an array of strings (stringArray accepted it).
func stringList(v []byte) ([]string, bool) {
	out := []string{}
	i := jsonscan.SkipSpace(v, 1)
	for i < len(v) && v[i] != ']' {
		end, _ := skipString(v, i)
		if end < 0 {
			return nil, false
		}
		out = append(out, jsonString(v[i:end]))
		i = jsonscan.SkipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i = jsonscan.SkipSpace(v, i+1)
		}
	}
	return out, true
}

// unchangedFrom reports whether o is exactly what decodeScanned gives for
// body (o.raw), without decoding body again: every known member compared
// in place, absent ones against zero values, no unknown field set since.
func (o *Observation) unchangedFrom(body []byte) bool {
	if o.set != nil || o.setOrder != nil || o.invalid != nil || !bytes.Equal(o.raw, body) {
		return false
	}
	var buf [24]member
	ms, ok := members(buf[:0], body)
	if !ok {
		return false
	}
	var have uint32
	for _, m := range ms {
		k := knownIndex(m.key)
		if k < 0 {
			continue
		}
		have |= 1 << k
		if !o.fieldIs(k, m.val) {
			return false
		}
	}
	for k := range knownKeys {
		if have&(1<<k) == 0 && !o.fieldIs(k, []byte("null")) {
			return false
		}
	}
	return true
}

// fieldIs reports whether typed field k holds what decoding v gives.
func (o *Observation) fieldIs(k int, v []byte) bool {
	null := v[0] == 'n'
	str := func(s string) bool {
		if null {
			return s == ""
		}
		inner := v[1 : len(v)-1]
		if bytes.IndexByte(inner, '\\') < 0 && utf8.Valid(inner) {
			return string(inner) == s
		}
		return jsonString(v) == s
	}
	flag := func(b bool) bool { return b == (v[0] == 't') }
	switch k {
	case kID:
		return str(o.ID)
	case kType:
		return str(o.Type)
	case kPattern:
		return str(o.Pattern)
	case kConfidence:
		if null {
			return o.Confidence == 0
		}
		f, err := strconv.ParseFloat(string(v), 64)
		return err == nil && f == o.Confidence // -0 == 0, as reflect.DeepEqual has it
	case kObservations:
		if null {
			return o.Observations == 0
		}
		n, err := strconv.ParseInt(string(v), 10, strconv.IntSize)
		return err == nil && int(n) == o.Observations
	case kFirstSeen:
		return str(o.FirstSeen)
	case kLastSeen:
		return str(o.LastSeen)
	case kStatus:
		return str(o.Status)
	case kEvidence:
		if null {
			return o.Evidence == nil
		}
		if o.Evidence == nil {
			return false
		}
		i, n := jsonscan.SkipSpace(v, 1), 0
		for i < len(v) && v[i] != ']' {
			end, _ := skipString(v, i)
			if end < 0 || n >= len(o.Evidence) || jsonString(v[i:end]) != o.Evidence[n] {
				return false
			}
			n++
			i = jsonscan.SkipSpace(v, end)
			if i < len(v) && v[i] == ',' {
				i = jsonscan.SkipSpace(v, i+1)
			}
		}
		return n == len(o.Evidence)
	case kDetails:
		return str(o.Details)
	case kQualityOK:
		return flag(o.QualityOK)
	case kArtifactPath:
		return str(o.ArtifactPath)
	case kDeprecatedAt:
		return str(o.DeprecatedAt)
	case kNeedsReview:
		return flag(o.NeedsReview)
	case kMayBeStale:
		return flag(o.MayBeStale)
	case kStaleReason:
		return str(o.StaleReason)
	case kSoftCapExceeded:
		return flag(o.SoftCapExceeded)
	}
	return false
}
