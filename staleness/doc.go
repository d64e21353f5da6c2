// Package staleness owns code references in the knowledge base: it finds
// file references (paths with a known extension, optionally :LINE) in
// knowledge sections, in observations' details and evidence, and in
// read-only Markdown sources (ADRs, KNOWLEDGE.md files, configured globs);
// resolves them the way a reader would — the path from the root, a bare
// file name anywhere in the tree, a partial path as a suffix or relative
// to its document — skipping gitignored paths, template placeholders and
// words that only look like files; checks them against a git tree — the
// index, HEAD, or the working tree outside git — read with go-git (never
// Worktree.Status, which hashes the whole working tree); follows renames
// through the index and through history (all parents, bounded, saying
// when the walk was cut short); and marks stale observations in the
// learning log.
//
// Read → decide → write: ExtractText/ExtractMarkdown, SelectSources and
// SplitSections are pure, Open and Checker.Check/Explain read git, Scan
// reads the knowledge and source files, Mark changes the log in memory;
// writing the log is the caller's.
package staleness
