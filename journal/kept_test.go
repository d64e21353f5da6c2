package journal

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestKeptOncePerDay(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, ".memory"), 0o755)
	morning := time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)
	if !KeptDue(root, morning) {
		t.Fatal("no stamp: kept events must be due")
	}
	if err := MarkKept(root, morning); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		at   time.Time
		want bool
	}{
		{morning.Add(time.Hour), false},
		{morning.Add(15*time.Hour + 59*time.Minute), false}, // 23:59 the same day
		{morning.Add(16 * time.Hour), true},                 // next day 00:00
		{morning.Add(-24 * time.Hour), true},                // a clock set back
	} {
		if got := KeptDue(root, tc.at); got != tc.want {
			t.Errorf("KeptDue(%s) = %v, want %v", tc.at, got, tc.want)
		}
	}
	// A corrupt stamp never suppresses the signal for good.
	os.WriteFile(filepath.Join(root, ".memory", KeptFile), []byte("{garbage"), 0o644)
	if !KeptDue(root, morning) {
		t.Error("corrupt stamp: kept events must be due")
	}
}
