package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(prebuilt{m}, map[string]func(){
		"learnwatch": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
}

// prebuilt runs the tests with a normally built learnwatch first on $PATH
// when this test binary has the race detector: the scripts start thousands
// of learnwatch processes, and a race-instrumented one is several times
// slower to start and run. Races are caught by the in-process tests of the
// packages (concurrency tests included); the scripts check behaviour.
type prebuilt struct{ m *testing.M }

func (p prebuilt) Run() int {
	if !raceEnabled || os.Getenv("LEARNWATCH_SCRIPTS_RACE") != "" {
		return p.m.Run()
	}
	dir, err := os.MkdirTemp("", "learnwatch-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	build := exec.Command("go", "build", "-o", filepath.Join(dir, "learnwatch"), ".")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build for the scripts: %v\n%s", err, out)
		return 1
	}
	os.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return p.m.Run()
}

// TestScripts runs every testdata/script/*.txtar: one CLI scenario each.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			env.Setenv("GIT_AUTHOR_NAME", "t")
			env.Setenv("GIT_AUTHOR_EMAIL", "t@example.com")
			env.Setenv("GIT_COMMITTER_NAME", "t")
			env.Setenv("GIT_COMMITTER_EMAIL", "t@example.com")
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			env.Setenv("HOME", env.WorkDir)
			return nil
		},
		Cmds: scriptCmds,
	})
}

// scriptCmds are extra testscript commands; files may add to it in init.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){}
