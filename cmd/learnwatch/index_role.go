package main

import (
	"github.com/learnwatch/learnwatch/exitcode"
	"github.com/learnwatch/learnwatch/learn"
)

// checkRole refuses an `index --role` that is not one plain word (it is
// printed in the index header the agent reads).
func checkRole(role string) error {
	if role != "" && !learn.ValidRole(role) {
		return exitcode.Bad("--role must be one word of letters, digits, '-', '_' or '.' (at most 64), got %q", role)
	}
	return nil
}
