package main

import (
	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/staleness"
)

// markStaleEntries sets index.Entry.Stale on the knowledge entries with a
// stale file reference, so the session-start index warns the agent before
// it follows one. A failed check marks nothing (the index is still built).
func markStaleEntries(a *app, root string, cfg config.Config, entries []index.Entry) []index.Entry {
	ids := make([]string, 0, len(entries))
	texts := make(map[string]string, len(entries))
	for _, e := range entries {
		ids = append(ids, e.ID)
		texts[e.ID] = e.Text
	}
	marks, err := staleness.EntryMarks(root, cfg.Staleness, ids, texts)
	if err != nil {
		a.log.Debug("index: staleness not checked", "err", err)
	}
	for i := range entries {
		entries[i].Stale = marks[entries[i].ID]
	}
	return entries
}
