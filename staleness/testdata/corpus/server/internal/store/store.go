package x

// server/internal/store/store.go
