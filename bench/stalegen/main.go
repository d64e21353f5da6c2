// Command stalegen generates the staleness benchmark repository: a git
// repository with many tracked files (git fast-import, no per-file
// git add), a short history of renames and deletions, one staged deletion
// and one staged rename, and a knowledge base with file references, about
// one in ten stale. The same flags give the same repository.
//
//	go run ./bench/stalegen -files 50000 -refs 500 -dir /tmp/stale50k [-seed 1] [-commits 20]
//
// See bench/stalegen/ratio.sh for the timing against `git ls-files`.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/learnwatch/learnwatch/bench/stalegen/fixture"
)

func main() {
	var s fixture.Spec
	var dir string
	flag.IntVar(&s.Files, "files", 50000, "tracked files")
	flag.IntVar(&s.Refs, "refs", 500, "file references in the knowledge base")
	flag.IntVar(&s.Commits, "commits", 20, "commits after the first, each renaming and deleting files")
	flag.Uint64Var(&s.Seed, "seed", 1, "PRNG seed")
	flag.StringVar(&dir, "dir", "", "directory to create the repository in (must not exist or be empty)")
	flag.Parse()
	if dir == "" || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: stalegen -dir DIR [-files N] [-refs N] [-commits N] [-seed N]")
		os.Exit(2)
	}
	start := time.Now()
	res, err := fixture.Generate(dir, s)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s: %d tracked files, %d references (%d missing from the index, %d of them renamed) in %s\n",
		dir, res.Files, res.Refs, res.Missing, res.Renamed, time.Since(start).Round(time.Millisecond))
}
