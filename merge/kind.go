package merge

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/learnwatch/learnwatch/markdown"
)

// Kinds are the KIND arguments of `learnwatch merge-driver`.
var Kinds = []string{"log", "manifest", "usage", "knowledge"}

// File merges three versions of one memory file of the given kind; path is
// the file's path in the repository (it tells decisions from pitfalls). An
// unknown kind is an error.
func File(kind, path string, base, ours, theirs []byte, labels Labels) ([]byte, Report, error) {
	switch kind {
	case "log":
		out, rep := Log(base, ours, theirs)
		return out, rep, nil
	case "manifest":
		out, rep := Manifest(base, ours, theirs)
		return out, rep, nil
	case "usage":
		out, rep := Usage(base, ours, theirs)
		return out, rep, nil
	case "knowledge":
		out, rep := Knowledge(base, ours, theirs, knowledgeKind(path), labels)
		return out, rep, nil
	}
	return nil, Report{}, fmt.Errorf("unknown KIND %q (want %s)", kind, strings.Join(Kinds, ", "))
}

// knowledgeKind is ADR or PF by the knowledge file's name ("" to infer it
// from the entries).
func knowledgeKind(path string) string {
	switch strings.ToLower(filepath.Base(path)) {
	case "decisions.md":
		return markdown.ADR
	case "pitfalls.md":
		return markdown.PF
	}
	return ""
}
