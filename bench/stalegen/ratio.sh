#!/usr/bin/env bash
# Times `learnwatch stale --staged` (and the pre-commit hook, and `stale`
# against HEAD) on a generated repository and reports each as a ratio to
# `git ls-files` on the same repository, measured in the same run
# (interleaved rounds, medians), so the figure means something on a noisy
# machine.
#
#   bench/stalegen/ratio.sh [-files N] [-refs N] [-runs N] [-seed N]
#
# Run from the repository root. Needs go, git, GNU date (%N).
set -euo pipefail

files=50000 refs=500 runs=11 seed=1
while [ $# -gt 0 ]; do
	case $1 in
	-files) files=$2; shift 2 ;;
	-refs) refs=$2; shift 2 ;;
	-runs) runs=$2; shift 2 ;;
	-seed) seed=$2; shift 2 ;;
	*) echo "usage: $0 [-files N] [-refs N] [-runs N] [-seed N]" >&2; exit 2 ;;
	esac
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
CGO_ENABLED=0 go build -o "$tmp/learnwatch" ./cmd/learnwatch # as install.sh builds it
go run ./bench/stalegen -files "$files" -refs "$refs" -seed "$seed" -dir "$tmp/repo"
lw=$tmp/learnwatch
cd "$tmp/repo"
# One untimed run of each: warm the page cache, let stale mark the log once.
git ls-files >/dev/null
"$lw" stale --staged >/dev/null
"$lw" hook pre-commit 2>/dev/null

# ms CMD...: wall time of one run in milliseconds (output discarded; exit
# codes ignored: stale exits 0, the hook warns).
ms() {
	local s e
	s=$(date +%s%N)
	"$@" >/dev/null 2>&1 || true
	e=$(date +%s%N)
	echo $(((e - s) / 1000))
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

names=("git ls-files" "learnwatch stale --staged" "learnwatch hook pre-commit" "learnwatch stale")
cmds=("git ls-files" "$lw stale --staged" "$lw hook pre-commit" "$lw stale")
for i in "${!cmds[@]}"; do : >"$tmp/t$i"; done
for ((r = 0; r < runs; r++)); do
	for i in "${!cmds[@]}"; do
		# shellcheck disable=SC2086 # the commands are word lists
		ms ${cmds[$i]} >>"$tmp/t$i"
	done
done
base=$(median <"$tmp/t0")
printf '%s tracked files, %s refs, %s runs, median wall time\n' "$(git ls-files | wc -l)" "$refs" "$runs"
for i in "${!cmds[@]}"; do
	m=$(median <"$tmp/t$i")
	awk -v n="${names[$i]}" -v m="$m" -v b="$base" 'BEGIN {printf "  %-28s %8.1f ms  %6.1fx git ls-files\n", n, m / 1000, m / b}'
done
