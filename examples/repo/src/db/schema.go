// Package db is the example project's storage: the events table, the job queue
// and the schema version its memory refers to.
package db

// Schema is the current database schema version.
const Schema = 7
