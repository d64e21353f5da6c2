package main

import (
	"os"
	"time"

	"github.com/learnwatch/learnwatch/config"
	"github.com/learnwatch/learnwatch/heal"
	"github.com/learnwatch/learnwatch/index"
	"github.com/learnwatch/learnwatch/manifest"
)

// This file wires the optional passes (staleness, learning engine) into the
// core commands.

var getenv = os.Getenv

// minIndexScore drops entries scoring below it from the index (DESIGN.md §6).
const minIndexScore = 0.1

// staleHook returns the staleness pass reconcile runs under its lock.
func staleHook(a *app, cfg config.Config) func(root string, log *manifest.Log) (int, error) {
	return nil
}

// recordFeedback appends the learning signals of a reconcile.
func recordFeedback(a *app, root string, res heal.Result, now time.Time) {}

// policyMultiplier returns the promote-threshold multiplier per type.
func policyMultiplier(a *app, root string) func(string) float64 { return nil }

// policyHold reports whether render must hold an observation for approval.
func policyHold(a *app, root string) func(*manifest.Observation) bool { return nil }

// rankEntries scores index entries.
func rankEntries(a *app, root string, entries []index.Entry) []index.Entry { return entries }

// watcherStatus describes the running watcher, nil when none ever ran.
func watcherStatus(root string) map[string]any { return nil }

type reviewExtra struct {
	json  map[string]any
	lines []string
}

// reviewExtras adds what other passes flag for review (stale knowledge
// entries, regressions, old policy overlays).
func reviewExtras(a *app, root string) reviewExtra { return reviewExtra{} }
