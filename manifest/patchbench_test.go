package manifest

import (
	"bytes"
	"testing"
)

// BenchmarkPatchMarks: marking a line shaped as devflow writes it, by the
// patch and by decoding, marking and re-encoding it (go test -bench
// PatchMarks ./manifest).
func BenchmarkPatchMarks(b *testing.B) {
	body := []byte(`{"id":"obs_000001","type":"procedural","pattern":"shard release test env 1","confidence":0.95,"observations":4,"first_seen":"2026-04-16T11:00:00Z","last_seen":"2026-04-17T09:00:00Z","status":"created","evidence":["session 0","src/pkg0/file0.go"],"details":"Steps: regenerate staging changelog staging queue lint 0; then shard flag config slog openapi docker 1","quality_ok":true,"artifact_path":".claude/commands/self-learning/changelog-worker-changelog-review-deploy-worker-sh.md"}`)
	m := Marks{MayBeStale: true, NeedsReview: true, StaleReason: "code-ref-missing:src/pkg0/file0.go"}
	b.Run("patch", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, _, ok := patchMarks(make([]byte, 0, len(body)+128), body, m); !ok {
				b.Fatal("declined")
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			var o Observation
			o.decodeScanned(bytes.Clone(body))
			o.MayBeStale, o.NeedsReview, o.StaleReason = m.MayBeStale, m.NeedsReview, m.StaleReason
			o.unchangedFrom(body)
			o.appendJSON(make([]byte, 0, len(body)+128))
		}
	})
}
