// Command gen writes a deterministic fixture repository memory for
// benchmarks: go run ./bench/gen -obs 10000 -artifacts 2000 -entries 200 -dir /tmp/fx
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/learnwatch/learnwatch/fixture"
)

func main() {
	var s fixture.Spec
	var dir string
	flag.IntVar(&s.Observations, "obs", 10000, "observations in the learning log")
	flag.IntVar(&s.Artifacts, "artifacts", 2000, "rendered commands and skills")
	flag.IntVar(&s.Entries, "entries", 200, "knowledge entries (ADR and PF)")
	flag.IntVar(&s.Ready, "ready", 0, "observations left ready to render")
	flag.Uint64Var(&s.Seed, "seed", 1, "random seed")
	flag.BoolVar(&s.Legacy, "legacy", false, "devflow's manifest: absolute paths and djb2 hashes (devflow's reconcile reads the same fixture)")
	flag.StringVar(&dir, "dir", "", "target directory (must not exist or be empty)")
	flag.Parse()
	if dir == "" {
		fmt.Fprintln(os.Stderr, "gen: -dir is required")
		os.Exit(2)
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		fmt.Fprintf(os.Stderr, "gen: %s is not empty\n", dir)
		os.Exit(2)
	}
	if err := fixture.Generate(dir, s); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(3)
	}
	fmt.Printf("wrote %d observations, %d artifacts, %d knowledge entries to %s\n", s.Observations, s.Artifacts, s.Entries, dir)
}
