package manifest

import (
	"bytes"
	"testing"
	"time"
)

// A clone's changes leave the original as it was: its encoding, its
// lookups by id, its decoded observations.
func TestCloneLeavesOriginal(t *testing.T) {
	src := []byte(`{"id":"obs_a","type":"workflow","pattern":"a","confidence":0.5,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"created","evidence":["x"],"details":"d","quality_ok":true,"artifact_path":".claude/commands/a.md"}
{"id":"obs_b","type":"procedural","pattern":"b","confidence":0.5,"observations":1,"first_seen":"2026-01-01T00:00:00Z","last_seen":"2026-01-01T00:00:00Z","status":"observing","evidence":[],"details":"","quality_ok":false}
not json
`)
	l := ParseLog(src)
	if l.Find("obs_a") == nil { // decoded and indexed before the clone
		t.Fatal("obs_a not found")
	}
	before, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	c, obs := l.Clone()
	if o := l.Find("obs_a"); obs(o) == o || obs(o) != c.Find("obs_a") {
		t.Fatal("the clone's decoded observation is not its own")
	}
	c.Find("obs_a").Status = Deprecated
	c.Find("obs_a").Evidence[0] = "changed"
	c.FindLine("obs_b").SetMarks(Marks{MayBeStale: true, StaleReason: "gone.go"})
	c.Append(&Observation{ID: "obs_c", Type: Workflow, Pattern: "c", Status: Observing})
	after, err := l.Bytes()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) || l.Changed() || l.FindLine("obs_c") != nil {
		t.Fatalf("the original changed with its clone:\n%s", after)
	}
	cb, _ := c.Bytes()
	if bytes.Equal(cb, before) || !c.Changed() {
		t.Fatal("the clone did not change")
	}

	m := &Manifest{SchemaVersion: 1, Entries: []Entry{
		{ObservationID: "obs_a", Type: Workflow, Path: ".claude/commands/a.md", ContentHash: "h"},
		{ObservationID: "obs_d", Type: Workflow, Path: ".claude/commands/d.md", ContentHash: "h", Deleted: &Deletion{At: "t", Status: Ready}},
	}}
	mb, _ := m.Encode()
	mc := m.Clone()
	mc.Entries[0].ContentHash = "other"
	mc.Entries[1].Deleted.Status = Created
	mc.Entries = append(mc.Entries, Entry{ObservationID: "obs_e"})
	if mb2, _ := m.Encode(); !bytes.Equal(mb, mb2) {
		t.Fatalf("the manifest changed with its clone:\n%s", mb2)
	}
	if cb, _ := mc.Encode(); bytes.Equal(cb, mb) {
		t.Fatal("the manifest's clone did not change")
	}

	u := NewUsage()
	u.Cite("obs_a", 1, time.Unix(0, 0))
	ub, _ := u.Encode()
	uc := u.Clone()
	uc.Cite("obs_a", 2, time.Unix(60, 0))
	uc.Register("obs_b", time.Unix(60, 0))
	if ub2, _ := u.Encode(); !bytes.Equal(ub, ub2) {
		t.Fatalf("the usage file changed with its clone:\n%s", ub2)
	}
}
