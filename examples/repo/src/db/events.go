package db

// Event is a row of the events table (timestamps in UTC).
type Event struct{}
