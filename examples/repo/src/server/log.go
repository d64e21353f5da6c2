// Package server is the example project's HTTP server; its logger is the
// log/slog default, as a decision in the example's memory says.
package server

import "log/slog"

var log = slog.Default()
