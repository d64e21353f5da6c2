package journal

import (
	"encoding/json"
	"time"

	"github.com/learnwatch/learnwatch/manifest"
	"github.com/learnwatch/learnwatch/safefs"
)

// KeptFile records when "kept" events were last appended. DESIGN.md §6
// counts an artifact kept unchanged across sessions as helpful; agents start
// many sessions a day (startup, resume, clear, compact), and one kept event
// per artifact per session start would grow feedback.jsonl by the number of
// artifacts every time and make every entry "proven" within a day. So kept
// events are recorded at most once per UTC day.
const KeptFile = ".kept-stamp.json"

type keptStamp struct {
	LastKept string `json:"last_kept"`
}

// KeptDue reports whether the kept events of a session starting at now are
// to be recorded: no kept events were recorded on now's UTC day yet. A
// missing or unreadable stamp means due (the worst case is one extra batch).
func KeptDue(root string, now time.Time) bool {
	b, err := safefs.ReadFile(Path(root, KeptFile), safefs.MaxConfig)
	if err != nil {
		return true
	}
	var s keptStamp
	if json.Unmarshal(b, &s) != nil {
		return true
	}
	last, err := time.Parse(time.RFC3339, s.LastKept)
	if err != nil {
		return true
	}
	return !sameDay(last, now)
}

// MarkKept records that kept events were appended at now.
func MarkKept(root string, now time.Time) error {
	b, err := json.Marshal(keptStamp{LastKept: now.UTC().Format(time.RFC3339)})
	if err != nil {
		return err
	}
	return manifest.WriteFile(Path(root, KeptFile), append(b, '\n'), 0o644)
}

func sameDay(a, b time.Time) bool {
	ay, am, ad := a.UTC().Date()
	by, bm, bd := b.UTC().Date()
	return ay == by && am == bm && ad == bd
}
