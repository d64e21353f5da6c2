package lifecycle

import (
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

// Bad input is explained in the user's terms, naming the line, and an
// observation with several wrong fields names every one of them.
func TestParseInputMessages(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		notWant  string
	}{
		{"prose", "hello\n", []string{"line 1: not JSON (unexpected character 'h' at byte 1)"}, "looking for beginning"},
		{"truncated", `{"id":"obs_a"`, []string{"line 1: not JSON (it ends in the middle of a value"}, "unexpected EOF"},
		{"third line", "{\"id\":\"obs_a\",\"type\":\"workflow\",\"pattern\":\"p\"}\n{\"id\":\"obs_b\",\"type\":\"workflow\",\"pattern\":\"q\"}\nnotjson\n", []string{"line 3: not JSON"}, "literal null"},
		{"array", `[{"id":"obs_a"},`, []string{"not JSON: the array of observations"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseInput([]byte(tc.in))
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if tc.notWant != "" && strings.Contains(err.Error(), tc.notWant) {
				t.Errorf("error %q uses the decoder's wording %q", err, tc.notWant)
			}
		})
	}
}

func TestParseInputEveryWrongField(t *testing.T) {
	obs, err := ParseInput([]byte(`{"id":"obs_a","type":"workflow","pattern":3,"evidence":"one","quality_ok":"yes","confidence":0.5}`))
	if err != nil {
		t.Fatal(err)
	}
	verr := obs[0].Validate()
	if verr == nil {
		t.Fatal("an observation with wrong field types validated")
	}
	for _, w := range []string{"field evidence: string where array of strings was expected", "field pattern: number where string was expected", "field quality_ok: string where boolean was expected"} {
		if !strings.Contains(verr.Error(), w) {
			t.Errorf("%q lacks %q", verr, w)
		}
	}
	if strings.Contains(verr.Error(), "confidence") {
		t.Errorf("%q names a field that is fine", verr)
	}
}

// Every problem of an observation is named, not only the first.
func TestValidateNamesEveryProblem(t *testing.T) {
	obs, err := ParseInput([]byte(`{"id":"bad id","type":"wrkflow"}`))
	if err != nil {
		t.Fatal(err)
	}
	verr := obs[0].Validate()
	if verr == nil {
		t.Fatal("validated")
	}
	for _, w := range []string{"field id: \"bad id\" does not start with obs_", "field type: unknown type \"wrkflow\"", "field pattern: missing"} {
		if !strings.Contains(verr.Error(), w) {
			t.Errorf("%q lacks %q", verr, w)
		}
	}
}

// A sighting is held to the bounds edit puts on what it changes, every
// problem named; the manifest's own checks come first.
func TestValidateSighting(t *testing.T) {
	ok := func() *manifest.Observation {
		return &manifest.Observation{ID: "obs_a", Type: manifest.Workflow, Pattern: "run the linter",
			Details: "Steps: make lint", Evidence: []string{"session 1"}}
	}
	big := strings.Repeat("x", MaxEditBytes+1)
	for _, c := range []struct {
		name string
		edit func(o *manifest.Observation)
		want []string // substrings of the error; none: valid
	}{
		{"valid", func(*manifest.Observation) {}, nil},
		{"at the bound", func(o *manifest.Observation) { o.Details = big[1:] }, nil},
		{"pattern too long", func(o *manifest.Observation) { o.Pattern = big }, []string{"field pattern: 65537 bytes"}},
		{"details NUL", func(o *manifest.Observation) { o.Details = "a\x00b" }, []string{"field details: contains a NUL byte"}},
		{"evidence", func(o *manifest.Observation) { o.Evidence = []string{"ok", big, "c\x00"} },
			[]string{"field evidence[1]: 65537 bytes", "field evidence[2]: contains a NUL byte"}},
		{"every problem", func(o *manifest.Observation) { o.ID, o.Pattern = "", "x\x00" },
			[]string{"field id: missing", "field pattern: contains a NUL byte"}},
	} {
		o := ok()
		c.edit(o)
		err := ValidateSighting(o)
		if len(c.want) == 0 {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %v, want %q", c.name, err, w)
			}
		}
	}
}

// A skipped sighting is named the same way wherever it is skipped: by its
// id, quoted when that is not a safe id, by its place when it has none.
func TestSightingProblem(t *testing.T) {
	for _, c := range []struct {
		i    int
		in   *manifest.Observation
		want string
	}{
		{0, &manifest.Observation{ID: "obs_a", Type: manifest.Workflow, Pattern: "p"}, ""},
		{0, &manifest.Observation{ID: "obs_a", Type: manifest.Workflow, Pattern: "p\x00"}, "observation obs_a: field pattern: contains a NUL byte"},
		{2, &manifest.Observation{Type: manifest.Workflow, Pattern: "p"}, "observation #3: field id: missing"},
		{0, &manifest.Observation{ID: "obs \x1b[31m", Type: manifest.Workflow, Pattern: "p"}, `observation "obs [31m"`}, // quoted, the escape dropped
	} {
		got := SightingProblem(c.i, c.in)
		if c.want == "" && got != "" || !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %q, want %q…", c.in, got, c.want)
		}
		if strings.ContainsRune(got, 0x1b) {
			t.Errorf("%+v: an escape printed raw: %q", c.in, got)
		}
	}
}
