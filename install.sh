#!/usr/bin/env bash
# install.sh — build and install learnwatch from this source tree, and
# optionally its git and agent hooks in the current repository.
#
# Run ./install.sh --help for the options. Safe to run again: it rebuilds the
# binary and leaves hooks that are already installed as they are.
set -euo pipefail

usage() {
	cat <<'EOF'
Usage: install.sh [--demo] [--hooks] [--uninstall] [--help]

Builds learnwatch (go install ./cmd/learnwatch, a static binary:
CGO_ENABLED=0) into $GOBIN, or ~/.local/bin when GOBIN is not set.

  --demo       then run `learnwatch demo` on a temp copy of the shipped
               example (examples/repo), narrated
  --hooks      also install the hooks in the git repository of the current
               directory: `learnwatch hooks install --claude` (git pre-commit,
               post-checkout and post-merge hooks, and the agent's SessionStart
               and Stop hooks in .claude/settings.json)
  --uninstall  remove the hooks from the current repository (when in one) and
               the installed binary
  -h, --help   show this help

Needs Go (to build) and git. Running it again is safe.
EOF
}

say() { printf 'install.sh: %s\n' "$*"; }
die() {
	printf 'install.sh: %s\n' "$*" >&2
	exit 1
}

hooks=0
demo=0
uninstall=0
for arg in "$@"; do
	case "$arg" in
	--hooks) hooks=1 ;;
	--demo) demo=1 ;;
	--uninstall) uninstall=1 ;;
	-h | --help)
		usage
		exit 0
		;;
	*)
		printf 'install.sh: unknown option %s\n\n' "$arg" >&2
		usage >&2
		exit 2
		;;
	esac
done

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [ -n "${GOBIN:-}" ]; then
	bindir=$GOBIN
else
	[ -n "${HOME:-}" ] || die "neither GOBIN nor HOME is set; set GOBIN to the directory to install into"
	bindir=$HOME/.local/bin
fi
bin=$bindir/learnwatch

# in_repo succeeds when the current directory is inside a git worktree.
in_repo() {
	command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1
}

if [ "$uninstall" = 1 ]; then
	if in_repo; then
		if [ -x "$bin" ]; then
			say "removing learnwatch's hooks from $(git rev-parse --show-toplevel)"
			"$bin" hooks uninstall --claude ||
				say "warning: could not remove every hook (see above); they skip themselves once learnwatch is gone"
		else
			say "$bin not found: hooks in this repository, if any, are left (they skip themselves when learnwatch is gone)"
		fi
	fi
	if [ -e "$bin" ]; then
		rm -f "$bin"
		say "removed $bin"
	else
		say "$bin is not installed; nothing to remove"
	fi
	exit 0
fi

command -v go >/dev/null 2>&1 ||
	die "Go is not installed or not on PATH; learnwatch is built from source with Go $(sed -n 's/^go //p' "$src/go.mod") or newer (https://go.dev/dl/)"
command -v git >/dev/null 2>&1 ||
	die "git is not installed or not on PATH; learnwatch reads git repositories and installs git hooks (https://git-scm.com/downloads)"
[ -f "$src/go.mod" ] && [ -d "$src/cmd/learnwatch" ] ||
	die "$src does not look like the learnwatch source tree (no go.mod or cmd/learnwatch)"

if [ "$hooks" = 1 ] && ! in_repo; then
	die "--hooks installs into the git repository of the current directory, and $(pwd) is not in one"
fi

mkdir -p "$bindir"
say "building learnwatch with $(go version | awk '{print $3}') into $bindir"
# A static binary (no cgo): no libc to load, so a hook starts about a
# millisecond sooner, and it runs in any container.
(cd "$src" && CGO_ENABLED=0 GOBIN="$bindir" go install -buildvcs=auto ./cmd/learnwatch) ||
	die "go install ./cmd/learnwatch failed (see the errors above)"
say "installed $bin ($("$bin" version 2>/dev/null || echo "version unknown"))"

case ":${PATH}:" in
*":$bindir:"*) ;;
*)
	say "note: $bindir is not on your PATH; the hooks call $bin directly, but to run learnwatch yourself add to your shell profile:"
	printf '    export PATH="%s:$PATH"\n' "$bindir"
	;;
esac

if [ "$hooks" = 1 ]; then
	say "installing hooks in $(git rev-parse --show-toplevel)"
	"$bin" hooks install --claude
fi

if [ "$demo" = 1 ]; then
	say "running $bin demo"
	"$bin" demo
fi
