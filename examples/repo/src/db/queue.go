package db

// Queue is a Postgres-backed job queue.
type Queue struct{}
