// Package staleness owns code references in the knowledge base: it finds
// file references (paths with a source extension, optionally :LINE) in
// knowledge sections and in observations' details and evidence, checks them
// against a git tree — the index, HEAD, or the working tree outside git —
// read with go-git (never Worktree.Status, which hashes the whole working
// tree), follows renames through the index and through history, and marks
// stale observations in the learning log (DESIGN.md §5).
//
// Read → decide → write: ExtractText/ExtractMarkdown are pure, Open and
// Checker.Check read git, Scan reads the knowledge files, Mark changes the
// log in memory; writing the log is the caller's.
package staleness
