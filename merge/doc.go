// Package merge owns learnwatch's side of git merges: the three-way merge
// functions git's merge drivers call for the memory files — the learning log
// (by observation id), the manifest and the knowledge usage file (union by
// key), and the knowledge files (union of ADR/PF sections by anchor, with an
// entry both branches numbered alike renumbered for the incoming side) — and
// the small renumbering record a driver leaves for the post-merge hook.
//
// The merge functions are pure: bytes in (base, ours, theirs), bytes and a
// report out. They never put conflict markers in a JSON or JSONL file, and
// never drop a line they cannot parse.
package merge
