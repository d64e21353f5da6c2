package manifest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Hash returns the content hash learnwatch writes: "sha256:<hex>".
func Hash(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// DJB2 is the legacy hash other tools wrote: h=5381; h=((h*33) XOR unit)
// mod 2^32 over the UTF-16 code units of the text, in lowercase hex.
func DJB2(content []byte) string {
	h := uint32(5381)
	var buf [2]uint16
	for len(content) > 0 {
		r, size := utf8.DecodeRune(content)
		content = content[size:]
		if r >= 0x10000 {
			r1, r2 := utf16.EncodeRune(r)
			buf[0], buf[1] = uint16(r1), uint16(r2)
			h = (h * 33) ^ uint32(buf[0])
			h = (h * 33) ^ uint32(buf[1])
			continue
		}
		h = (h * 33) ^ uint32(r)
	}
	return strconv.FormatUint(uint64(h), 16)
}

// IsLegacyHash reports whether stored is a legacy djb2 hash (not "sha256:").
func IsLegacyHash(stored string) bool { return !strings.HasPrefix(stored, "sha256:") }

// Unchanged reports whether stored matches the content, using the algorithm
// stored was written with: sha256 over current, or djb2 over legacy (the
// bytes the legacy tool hashed, which for knowledge entries differ slightly
// from what learnwatch hashes). Content with CRLF line ends also matches
// the hash of the same content with LF ends (LF).
func Unchanged(stored string, current, legacy []byte) bool {
	if IsLegacyHash(stored) {
		return SameLegacy(stored, DJB2(legacy)) || SameButLineEnds(stored, current, legacy)
	}
	return stored == Hash(current) || SameButLineEnds(stored, current, legacy)
}

// SameButLineEnds reports whether content with CRLF line ends matches
// stored once its ends are made LF (LF), with the algorithm stored was
// written with: the half of Unchanged for content whose bytes did not
// match.
func SameButLineEnds(stored string, current, legacy []byte) bool {
	if IsLegacyHash(stored) {
		return HasCRLF(legacy) && SameLegacy(stored, DJB2(LF(legacy)))
	}
	return HasCRLF(current) && stored == Hash(LF(current))
}

// HasCRLF reports whether b holds a CRLF line end.
func HasCRLF(b []byte) bool { return bytes.Contains(b, crlf) }

// LF returns b with its CRLF line ends made LF (b itself when it has none).
//
// Line ends are not content: git writes a file rendered with LF ends with
// CRLF ends when it checks it out under core.autocrlf (Git for Windows'
// default) or an eol=crlf attribute, and cleans them back when it commits,
// so a branch switch turned every artifact it wrote into a person's "edit".
// An artifact whose only difference from what was recorded is CRLF for LF
// is unchanged; a lone CR is content.
func LF(b []byte) []byte {
	if !HasCRLF(b) {
		return b
	}
	return bytes.ReplaceAll(b, crlf, []byte("\n"))
}

var crlf = []byte("\r\n")

// SameLegacy reports whether the stored legacy hash is sum, a DJB2 result
// (devflow's hashes are compared without case or surrounding space).
func SameLegacy(stored, sum string) bool {
	return strings.EqualFold(strings.TrimSpace(stored), sum)
}
