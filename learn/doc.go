// Package learn owns the scoring of learnwatch's learning engine (DESIGN.md
// §6): feedback classification and decay, per-entry weight and maturity,
// implicit outcome scores, anti-pattern inversion, failure patterns,
// per-type reliability and policy overlays, validator verdict matching, and
// the ranking and token budget of the session-start index.
//
// Everything here is a pure function over plain data: no I/O, no clock (the
// current time is always a parameter), and no function modifies its inputs
// (TallyInto and Folder.Add add to the tally or folder they are given: that
// is what they are for). Folder is the fold in steps, its raw state kept
// in a compact binary form (the feedback journal's snapshot and a
// compaction's base line, KindCompacted, hold it).
// Storage of the events, outcomes and policy lives in package journal; the
// command line in cmd/learnwatch.
//
// Integration points for the rest of learnwatch:
//
//   - reconcile appends Event{Kind: KindDeleted|KindEdited|KindKept, Type: <artifact type>}
//     (journal.AppendFeedback), then refreshes the policy (journal.RefreshPolicy).
//   - render asks Held(policy, type, obsID) before rendering a ready observation and
//     compares confidence with EffectiveThreshold(policy, type, base).
//   - index / session-start: FoldWith the events (journal.FoldFeedback folds only
//     what was appended since its snapshot), RankWith the candidates (Params from
//     learnwatch.yaml via ParamsFrom), AntiPatterns over knowledge entries and
//     observations for the AVOID block, EvidenceTags for each line.
//   - outcome record: ImplicitScore, OutcomeEvents, then PolicyDiff and RunRetryBudgets
//     around the policy refresh; policy relax: Relax.
//   - hud / review: CountByLevel, Regressions, StaleOverlays.
package learn
