package db

import "testing"

func TestStore(t *testing.T) {}
