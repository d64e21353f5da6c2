package main

import (
	"testing"
	"time"
)

func TestAgo(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ ts, want string }{
		{"", "never"},
		{"2026-11-23T11:59:30Z", "just now"},
		{"2026-11-23T11:58:00Z", "2 min ago"},
		{"2026-11-23T09:00:00Z", "3 h ago"},
		{"2026-11-21T12:00:00Z", "2 days ago"},
		{"2026-01-02T00:00:00Z", "2026-01-02"},
		{"2026-11-23T13:00:00Z", "2026-11-23 13:00 UTC"}, // the future: the time itself
		{"not a time", "not a time"},
	} {
		if got := ago(tc.ts, now); got != tc.want {
			t.Errorf("ago(%q) = %q, want %q", tc.ts, got, tc.want)
		}
	}
}
