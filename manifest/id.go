package manifest

// IDPrefix starts every observation id.
const IDPrefix = "obs_"

// MaxIDLen is the longest observation id accepted, in bytes.
const MaxIDLen = 128

// ValidID reports whether id is a safe observation id: "obs_" followed by
// one or more ASCII letters, digits, '_', '.' or '-', at most MaxIDLen bytes
// in all. Ids are used in file names, Markdown anchors, feedback events and
// terminal output, so nothing else (no shell, path, control or Unicode
// characters) is accepted; an observation with another id is invalid: its
// line is kept verbatim and counted, never rendered, healed or printed raw.
func ValidID(id string) bool {
	if len(id) <= len(IDPrefix) || len(id) > MaxIDLen || id[:len(IDPrefix)] != IDPrefix {
		return false
	}
	for i := len(IDPrefix); i < len(id); i++ {
		c := id[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '.', c == '-':
		default:
			return false
		}
	}
	return true
}
