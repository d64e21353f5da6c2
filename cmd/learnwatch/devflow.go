package main

import (
	"fmt"

	"github.com/learnwatch/learnwatch/capacity"
	"github.com/learnwatch/learnwatch/manifest"
)

// capacityNotices reads the knowledge-capacity notifications to show from
// .memory/.notifications.json (none when the file is missing or does not
// parse: hud and review only report).
func capacityNotices(a *app, root string) []capacity.Notice {
	n, err := manifest.ReadNotifications(manifest.PathsFor(root).Notifications())
	if err != nil {
		a.log.Debug("capacity notifications not read", "err", err)
		return nil
	}
	return capacity.Shown(n)
}

// capacityLine says one notification: "decisions.md holds 72 of 100 active
// entries (warning: threshold 70 crossed)".
func capacityLine(n capacity.Notice) string {
	return fmt.Sprintf("%s holds %d of %d active entries (%s: threshold %d crossed)", n.File, n.Count, n.Ceiling, n.Severity, n.Threshold)
}
