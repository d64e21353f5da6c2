package heal

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/learnwatch/learnwatch/engine/statcache"
	"github.com/learnwatch/learnwatch/manifest"
)

// warmMemory is a memory with two rendered commands, reconciled once with
// a warm state: it returns the root, the state and the options that keep
// it.
func warmMemory(t *testing.T) (string, *Warm, Options) {
	t.Helper()
	root := t.TempDir()
	putFile(t, root, ".memory/learning-log.jsonl",
		readyObs("obs_a", manifest.Workflow, "Run the linter before pushing", "")+
			readyObs("obs_b", manifest.Workflow, "Regenerate the client after the schema", ""))
	runRender(t, root)
	w := &Warm{}
	opts := Options{Now: testNow, LockTimeout: 10 * time.Second, Cache: statcache.Open(statcache.Default), Warm: w}
	if _, err := Reconcile(context.Background(), root, opts); err != nil {
		t.Fatal(err)
	}
	if !w.Valid() {
		t.Fatal("no warm state after a pass")
	}
	return root, w, opts
}

// A state whose files were written within the racy window is not taken
// until Prove compared their contents, and Prove refuses one whose file
// holds other bytes under the recorded stat (a rewrite within the same
// clock tick, which no stat can tell).
func TestWarmProve(t *testing.T) {
	t.Run("racy until proved", func(t *testing.T) {
		root, w, _ := warmMemory(t)
		p := manifest.PathsFor(root)
		// The files were written just before the stats were taken: racy.
		w.at = time.Now().UnixNano()
		if w.usable(p, map[string]bool{}) {
			t.Fatal("a racily written state was taken")
		}
		if w.Prove(p) {
			t.Fatal("proved within the racy window")
		}
		time.Sleep(racyWindow + 10*time.Millisecond)
		if !w.Prove(p) || !w.usable(p, map[string]bool{}) {
			t.Fatal("an unchanged state was not proved")
		}
	})
	t.Run("same stat, other bytes", func(t *testing.T) {
		root, w, _ := warmMemory(t)
		p := manifest.PathsFor(root)
		b, err := os.ReadFile(p.Log)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte(`"confidence":0.95`), []byte(`"confidence":0.15`), 1)
		if err := os.WriteFile(p.Log, b, 0o644); err != nil {
			t.Fatal(err)
		}
		// As if the rewrite fell in the tick of the recorded stat.
		for i, f := range w.files {
			if f.path == p.Log {
				w.files[i].stat, _ = statcache.Lstat(p.Log)
			}
		}
		w.at = time.Now().UnixNano()
		time.Sleep(racyWindow + 10*time.Millisecond)
		if w.Prove(p) || w.Valid() {
			t.Fatal("a log with other bytes was proved")
		}
	})
	t.Run("only a touched pass without events on the state's files takes it", func(t *testing.T) {
		root, w, _ := warmMemory(t)
		p := manifest.PathsFor(root)
		time.Sleep(racyWindow + 10*time.Millisecond)
		if !w.Prove(p) || !w.usable(p, map[string]bool{}) {
			t.Fatal("a proved state was not taken")
		}
		if w.usable(p, nil) {
			t.Fatal("a pass that checks every file took the state")
		}
		if w.usable(p, map[string]bool{".memory/learning-log.jsonl": true}) {
			t.Fatal("an event on the log left the state in use")
		}
	})
}
