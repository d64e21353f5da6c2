// Package reliability holds learnwatch's reliability harness (issue 5). It
// has no code of its own: the tests build cmd/learnwatch once per run and
// drive the binary as a user's tools would, as separate processes.
//
//   - crash_test.go: every failpoint a command reaches (discovered with
//     LEARNWATCH_FAILPOINT=*=trace) is hit with SIGKILL, then the memory is
//     reconciled, the command runs again, and the invariants are checked;
//     then seeded, randomised kill runs (command sequences with a random
//     failpoint and skip count).
//   - concurrent_test.go: 8 writer processes, a running watcher and another
//     tool taking the mkdir lock, on one repository.
//   - hostile_test.go: corrupt, huge and malicious inputs and a full disk,
//     each with its exit code and no data loss.
//   - fuzz_test.go: fuzz targets for the parsers the other packages do not
//     fuzz (manifest, usage file, config, policy).
//
// The invariants (invariants_test.go) are the promise of DESIGN.md: every
// file parses, no ADR/PF entry exists twice, no observation is lost or
// duplicated, and the manifest matches the files.
//
//	go test ./reliability/                                  # CI size (~2 min)
//	LEARNWATCH_RELIABILITY=full go test ./reliability/ -timeout 30m
//	make check-reliability                                  # the same, full
//
// See the README, section "Reliability and performance".
package reliability
