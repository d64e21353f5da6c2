package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/learnwatch/learnwatch/manifest"
)

// A learning log of manifest.ChunkedFrom bytes or more is read in chunks
// and its lines read back from the file (manifest.ReadLogChunked). Two
// memories alike but for two corrupt lines of B's log, long enough to
// make it that large (A's the same lines, short), take the same person's
// changes: every pass reports the same and writes the same files, the
// long lines as they were.
func TestChunkedLogPassesAsWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 17 MiB log a few times")
	}
	tw := newTwin(t, "")
	pad := strings.Repeat("x", manifest.ChunkedFrom/2+(1<<20))
	for _, x := range []struct{ root, pad string }{{tw.a, ""}, {tw.b, pad}} {
		f, err := os.OpenFile(manifest.PathsFor(x.root).Log, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, "# a line no tool wrote %s\nnot json either %s\n", x.pad, x.pad)
		f.Close()
	}
	if fi, err := os.Stat(manifest.PathsFor(tw.b).Log); err != nil || fi.Size() < manifest.ChunkedFrom {
		t.Fatalf("B's log is not large: %v %v", fi, err)
	}
	tw.norm = func(s string) string { return strings.ReplaceAll(s, pad, "") }
	rep := tw.reconcile("the padded logs")
	if rep.Corrupt != 2 {
		t.Fatalf("%d corrupt lines, want 2", rep.Corrupt)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	arts := tw.artifacts()
	saved := map[string][]byte{}
	for i := range 8 {
		rel := arts[rng.IntN(len(arts))]
		what := tw.personOp(rng.IntN(3), rel, i, saved)
		tw.reconcile(what)
	}
	b, err := os.ReadFile(manifest.PathsFor(tw.b).Log)
	if err != nil || !strings.Contains(string(b), "# a line no tool wrote "+pad+"\nnot json either "+pad+"\n") {
		t.Fatalf("the long lines are not as they were: %v", err)
	}
}
