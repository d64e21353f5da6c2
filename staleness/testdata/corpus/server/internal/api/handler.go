package x

// server/internal/api/handler.go
