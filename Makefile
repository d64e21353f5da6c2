# learnwatch maintenance targets. CI runs .ci/run (vet, the tests, a short
# fuzz pass); these are the long versions for a developer's machine.

SHELL := /bin/bash
FUZZTIME ?= 10s

.PHONY: check-reliability fuzz figures

# The reliability harness at full size (README.md, "Reliability and
# performance"): one kill per failpoint hit, 300+ randomised kill runs (until
# 200 had a kill), 8 writers × 500 operations, the hostile-input table.
# Prints the seeds and counts; 10-15 minutes on 2 cores.
check-reliability:
	set -o pipefail; LEARNWATCH_RELIABILITY=full go test ./reliability -run Reliability -count=1 -timeout 60m -v 2>&1 \
		| grep -v -e '^=== ' -e '^ *--- PASS'

# Every Fuzz* target of the repository for FUZZTIME each (make fuzz FUZZTIME=60s).
fuzz:
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz

# The README figures (README.md, "Reliability and performance"), ratios measured in one run.
figures:
	go run ./bench/figures -scale
