package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"learnwatch": func() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
	})
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
