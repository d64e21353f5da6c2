package db

// Schema is the current database schema version.
const Schema = 7
