package server

import "log/slog"

var log = slog.Default()
