package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestNumberEnd(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"0", 1}, {"-0", 2}, {"12.5e-3,", 7}, {"1E9}", 3}, {"7 ", 1},
		{"01", 1}, // a number ends at the leading zero; the caller sees the 1
		{"-", -1}, {".5", -1}, {"1.", -1}, {"1e", -1}, {"1e+", -1}, {"", -1}, {"x", -1},
	} {
		if got := NumberEnd([]byte(tc.in), 0); got != tc.want {
			t.Errorf("NumberEnd(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

func TestSkipSpace(t *testing.T) {
	if got := SkipSpace([]byte(" \t\r\nx"), 0); got != 4 {
		t.Errorf("SkipSpace = %d, want 4", got)
	}
	if got := SkipSpace([]byte("  "), 1); got != 2 {
		t.Errorf("SkipSpace at the end = %d, want 2", got)
	}
}

// A whole input NumberEnd takes as one number is exactly what
// encoding/json accepts as a number.
func FuzzNumberEnd(f *testing.F) {
	for _, s := range []string{"0", "-1.5e+10", "01", "1.", "-", "1e5x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		end := NumberEnd([]byte(s), 0)
		whole := end == len(s) && len(s) > 0
		var n json.Number
		d := json.NewDecoder(strings.NewReader(s))
		d.UseNumber()
		valid := len(s) > 0 && (s[0] == '-' || s[0] >= '0' && s[0] <= '9') && d.Decode(&n) == nil && !d.More() && d.InputOffset() == int64(len(s))
		if whole != valid {
			t.Fatalf("NumberEnd(%q) = %d; encoding/json valid number: %v", s, end, valid)
		}
	})
}
