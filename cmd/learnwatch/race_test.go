package main

// raceEnabled is set when the tests run with -race (race_on_test.go).
var raceEnabled bool
