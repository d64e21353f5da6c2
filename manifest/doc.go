// Package manifest owns learnwatch's on-disk state under .memory/: the
// learning log (learning-log.jsonl), the manifest of rendered artifacts
// (.learning-manifest.json) and the knowledge usage file
// (.knowledge-usage.json); the mkdir locks shared with other tools; atomic
// file replacement; content hashes (sha256 and the legacy djb2); and the
// check that a path stays inside the repository root.
//
// Reading never loses data: a log line that does not parse is kept verbatim,
// fields this package does not know survive every rewrite, and unchanged
// lines are written back byte for byte. The log is read lazily: a cheap scan
// indexes each line by id, type, status and artifact path, a line is
// decoded only when asked for, and a changed one is re-encoded by patching
// its fields in their original order (log.go, logscan.go). Staleness marks
// set on a line nothing decoded are patched into its bytes at the write,
// where that gives the bytes re-encoding gives (logmarks.go). A log of 16
// MiB or more can be read in chunks, its lines' bytes read back from the
// open file as they are needed, checked against each chunk's checksum
// (logchunks.go).
//
// The manifest is decoded without reflection and encoded to the bytes
// json.MarshalIndent writes, reusing the bytes of every entry that did not
// change since it was read or last encoded; anything the fast codec does
// not vouch for goes through encoding/json, kept as its reference
// (manifestcodec.go).
package manifest

import "path/filepath"

// Paths are the files of one repository's memory.
type Paths struct {
	Root          string
	Memory        string // .memory
	Log           string // .memory/learning-log.jsonl
	Manifest      string // .memory/.learning-manifest.json
	Usage         string // .memory/.knowledge-usage.json
	Decisions     string // .memory/knowledge/decisions.md
	Pitfalls      string // .memory/knowledge/pitfalls.md
	Commands      string // .claude/commands/self-learning
	Skills        string // .claude/skills
	LearningLock  string // .memory/.learning.lock
	KnowledgeLock string // .memory/.knowledge.lock
}

// PathsFor returns the memory paths under root.
func PathsFor(root string) Paths {
	mem := filepath.Join(root, ".memory")
	return Paths{
		Root:          root,
		Memory:        mem,
		Log:           filepath.Join(mem, "learning-log.jsonl"),
		Manifest:      filepath.Join(mem, ".learning-manifest.json"),
		Usage:         filepath.Join(mem, ".knowledge-usage.json"),
		Decisions:     filepath.Join(mem, "knowledge", "decisions.md"),
		Pitfalls:      filepath.Join(mem, "knowledge", "pitfalls.md"),
		Commands:      filepath.Join(root, ".claude", "commands", "self-learning"),
		Skills:        filepath.Join(root, ".claude", "skills"),
		LearningLock:  filepath.Join(mem, LearningLock),
		KnowledgeLock: filepath.Join(mem, KnowledgeLock),
	}
}
