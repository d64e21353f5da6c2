package main

import (
	"strings"

	"github.com/spf13/cobra"
)

// The top-level help lists commands in these groups.
var helpGroups = []*cobra.Group{
	{ID: "core", Title: "Core (observe → render → reconcile → index):"},
	{ID: "inspect", Title: "Inspection and maintenance:"},
	{ID: "hooks", Title: "Hooks (git and the agent):"},
	{ID: "learn", Title: "Learning engine:"},
}

// commandGroup puts each top-level command in its group; a command not
// listed here shows under "Additional Commands" (help, completion, version).
var commandGroup = map[string]string{
	"init": "core", "observe": "core", "render": "core", "reconcile": "core",
	"index": "core", "stale": "core", "watch": "core",
	"status": "inspect", "list": "inspect", "review": "inspect", "hud": "inspect",
	"purge": "inspect", "clear": "inspect", "demo": "inspect",
	"restore": "inspect", "resolve": "inspect", "edit": "inspect",
	"hooks": "hooks", "hook": "hooks", "cite": "hooks", "merge-driver": "hooks",
	"outcome": "learn", "verdict": "learn", "report": "learn", "promote": "learn",
	"deprecate": "learn", "approve": "learn", "policy": "learn",
	"compact": "learn",
}

// commandExamples is the Examples section of every command's --help, by
// command path without the leading "learnwatch ". A test checks that no
// command is without one.
var commandExamples = map[string]string{
	"init": `  learnwatch init                   # memory layout, commented config, .gitignore lines
  learnwatch init --hooks --claude  # and the git and agent hooks`,
	"observe": `  echo '{"id":"obs_release","type":"workflow","pattern":"release with make release","evidence":["ran make release"]}' | learnwatch observe
  extractor --jsonl | learnwatch observe --json   # {"created":1,"merged":3,"skipped":0,"ids":[…]}`,
	"render": `  learnwatch render          # write commands, skills, ADR and PF entries for ready observations
  learnwatch render --json   # {"rendered":[{"id","type","path"}],"skipped":0}`,
	"reconcile": `  learnwatch reconcile          # count deletions, edits, heals and stale references
  learnwatch reconcile --json   # {"deletions":0,"edits":1,"unchanged":12,"healed":0,…}`,
	"index": `  learnwatch index              # what the agent sees at session start
  learnwatch index --budget 400 # a tighter token budget`,
	"stale": `  learnwatch stale                  # references missing from HEAD
  learnwatch stale --staged --fail  # against what the next commit holds; exit 1 when stale`,
	"watch": `  learnwatch watch                  # foreground, until Ctrl-C or SIGTERM
  learnwatch watch --debounce 500ms --log-format json`,
	"status": `  learnwatch status
  learnwatch status --json`,
	"list": `  learnwatch list --type decision
  learnwatch list --status ready --json`,
	"review": `  learnwatch review          # what needs a human, by section
  learnwatch review --json`,
	"hud":   `  learnwatch hud   # Learning: 2 workflows, 1 skills, 3 decisions, 1 pitfalls`,
	"purge": `  learnwatch purge   # corrupt and invalid lines go to learning-log.purged-<time>.jsonl`,
	"clear": `  learnwatch clear --yes   # the log is copied to learning-log.cleared-<time>.jsonl first`,
	"demo": `  learnwatch demo          # narrated walk-through on a temp copy of the example
  learnwatch demo --keep   # keep the copy to explore afterwards`,
	"version": `  learnwatch version
  learnwatch --version`,
	"hooks": `  learnwatch hooks install --claude
  learnwatch hooks status`,
	"hooks install": `  learnwatch hooks install            # git hooks (existing hooks are chained)
  learnwatch hooks install --claude   # and the agent's SessionStart and Stop hooks`,
	"hooks uninstall": `  learnwatch hooks uninstall --claude   # the chained hooks are put back`,
	"hooks status":    `  learnwatch hooks status --json`,
	"hook": `  learnwatch hook pre-commit    # what the installed git hook runs
  echo '{"cwd":"."}' | learnwatch hook session-start`,
	"hook pre-commit":    `  learnwatch hook pre-commit   # run by git; warns, or blocks with precommit.block: true`,
	"hook post-checkout": `  learnwatch hook post-checkout   # run by git after a checkout`,
	"hook post-merge":    `  learnwatch hook post-merge   # run by git after a merge or pull`,
	"hook session-start": `  echo '{"cwd":"/path/to/repo"}' | learnwatch hook session-start`,
	"hook stop":          `  echo '{"cwd":"/path/to/repo","transcript_path":"/path/to/session.jsonl"}' | learnwatch hook stop`,
	"cite": `  learnwatch cite --transcript ~/.claude/projects/x/session.jsonl
  cat notes.txt | learnwatch cite`,
	"outcome":         `  echo '{"run_id":"r1","success":true,"duration_ms":60000,"retry_count":0}' | learnwatch outcome record`,
	"outcome record":  `  echo '{"run_id":"r1","success":false,"duration_ms":900000,"retry_count":2,"failure_type":"timeout","cited":["ADR-002"]}' | learnwatch outcome record`,
	"outcome error":   `  learnwatch outcome error --run r1 --type timeout --message "tests hung after 10 min"`,
	"outcome resolve": `  learnwatch outcome resolve err_1a2b3c`,
	"outcome errors":  `  learnwatch outcome errors --run r1`,
	"verdict":         `  echo '{"run_id":"r1","verdict":"FAIL","role":"sentinel","evidence_level":2,"false_positives":["ADR-004"]}' | learnwatch verdict record`,
	"verdict record":  `  echo '{"run_id":"r1","verdict":"PASS","role":"sentinel","evidence_level":1}' | learnwatch verdict record`,
	"report": `  learnwatch report
  learnwatch report --format json`,
	"promote": `  learnwatch promote ADR-003 --reason "the team relies on it"
  learnwatch promote --reset ADR-003`,
	"deprecate": `  learnwatch deprecate PF-002 --reason "fixed upstream"`,
	"approve":   `  learnwatch approve obs_release   # render it although its type's policy requires approval`,
	"policy": `  learnwatch policy show
  learnwatch policy reset workflow`,
	"policy show":    `  learnwatch policy show --json`,
	"policy refresh": `  learnwatch policy refresh`,
	"policy reset":   `  learnwatch policy reset workflow   # the only way to relax an overlay`,
}

// applyHelp puts the top-level commands in their groups and gives every
// command its Examples section.
func applyHelp(root *cobra.Command) {
	root.AddGroup(helpGroups...)
	for _, c := range root.Commands() {
		if g, ok := commandGroup[c.Name()]; ok {
			c.GroupID = g
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(c.CommandPath(), root.Name()+" ")
		if ex, ok := commandExamples[path]; ok && c.Example == "" {
			c.Example = ex
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
