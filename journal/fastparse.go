package journal

import (
	"strconv"
	"unicode/utf8"

	"github.com/learnwatch/learnwatch/jsonscan"
)

// interner returns one shared string per distinct byte sequence, so that
// reading 100,000 events allocates once per distinct target, kind, source.
type interner map[string]string

func (in interner) get(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := string(b)
	in[s] = s
	return s
}

// parseEventFast decodes the lines learnwatch itself writes — one flat
// object, keys among ts/target/kind/value/source/type/reason/retries/role/pass/of each at
// most once, strings without escapes, a plain number — without reflection. For
// anything else it reports ok=false and the caller uses encoding/json,
// whose result is the reference (the fuzz test checks they agree).
func parseEventFast(line []byte, in interner) (l eventLine, ok bool) {
	i := jsonscan.SkipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return l, false
	}
	i = jsonscan.SkipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return l, jsonscan.SkipSpace(line, i+1) == len(line)
	}
	var seen uint16
	for {
		key, j, ok := rawString(line, i)
		if !ok {
			return l, false
		}
		i = jsonscan.SkipSpace(line, j)
		if i >= len(line) || line[i] != ':' {
			return l, false
		}
		i = jsonscan.SkipSpace(line, i+1)
		var bit uint16
		var dst *string
		switch string(key) {
		case "ts":
			bit, dst = 1, &l.TS
		case "target":
			bit, dst = 2, &l.Target
		case "kind":
			bit, dst = 4, &l.Kind
		case "source":
			bit, dst = 8, &l.Source
		case "type":
			bit, dst = 16, &l.Type
		case "reason":
			bit, dst = 32, &l.Reason
		case "value":
			bit = 64
		case "retries":
			bit = 128
		case "role":
			bit, dst = 256, &l.Role
		case "pass":
			bit, dst = 512, &l.Pass
		case "of":
			bit, dst = 1024, &l.Of
		default:
			return l, false
		}
		if seen&bit != 0 {
			return l, false
		}
		seen |= bit
		if dst != nil {
			v, j, ok := rawString(line, i)
			if !ok {
				return l, false
			}
			if bit == 1 {
				*dst = string(v) // timestamps are all distinct
			} else {
				*dst = in.get(v)
			}
			i = j
		} else {
			j := jsonscan.NumberEnd(line, i)
			if j < 0 {
				return l, false
			}
			f, err := strconv.ParseFloat(string(line[i:j]), 64)
			if err != nil {
				return l, false
			}
			if bit == 128 {
				l.Retries = &f
			} else {
				l.Value = &f
			}
			i = j
		}
		i = jsonscan.SkipSpace(line, i)
		if i < len(line) && line[i] == ',' {
			i = jsonscan.SkipSpace(line, i+1)
			continue
		}
		if i < len(line) && line[i] == '}' {
			return l, jsonscan.SkipSpace(line, i+1) == len(line)
		}
		return l, false
	}
}

// rawString returns the contents of the JSON string starting at b[i] when it
// needs no unescaping: no backslash, no control character, valid UTF-8.
func rawString(b []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, false
	}
	for j := i + 1; j < len(b); j++ {
		switch c := b[j]; {
		case c == '"':
			s = b[i+1 : j]
			return s, j + 1, utf8.Valid(s)
		case c == '\\' || c < 0x20:
			return nil, 0, false
		}
	}
	return nil, 0, false
}
