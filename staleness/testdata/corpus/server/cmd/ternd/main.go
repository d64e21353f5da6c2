package x

// server/cmd/ternd/main.go
