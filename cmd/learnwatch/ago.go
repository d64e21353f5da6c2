package main

import (
	"fmt"
	"time"
)

// ago says when an RFC 3339 time was, the way a person reads it in text
// output ("2 min ago", "3 h ago", "5 days ago"; "never" for none). JSON
// output keeps the RFC 3339 time itself.
func ago(ts string, now time.Time) string {
	if ts == "" {
		return "never"
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return ts
	}
	d := now.Sub(t)
	switch {
	case d < -time.Minute:
		return t.UTC().Format("2006-01-02 15:04 UTC")
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	case d < 60*24*time.Hour:
		return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
	}
	return t.UTC().Format("2006-01-02")
}
