package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command a person can run has an Examples section, and every
// top-level command sits in a group of the top-level help.
func TestEveryCommandHasExamples(t *testing.T) {
	var out bytes.Buffer
	root := newRootCmd(&app{stdout: &out, stderr: &out})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" || c.Name() == "completion" || c.Hidden {
			return
		}
		if c != root && c.Example == "" {
			t.Errorf("%q has no Examples section (add it to commandExamples in help.go)", c.CommandPath())
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, c := range root.Commands() {
		if c.GroupID == "" && c.Name() != "help" && c.Name() != "completion" && c.Name() != "version" {
			t.Errorf("%q is in no group of the top-level help (add it to commandGroup in help.go)", c.Name())
		}
	}
	for path := range commandExamples {
		if c, _, err := root.Find(strings.Fields(path)); err != nil || c == root {
			t.Errorf("commandExamples names %q, which is not a command", path)
		}
	}
}
