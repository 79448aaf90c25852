package sqlq

import (
	"testing"
	"testing/fstest"
)

// LatestMigration takes the highest numbered .sql file, numerically, and
// ignores anything else in the directory.
func TestLatestMigration(t *testing.T) {
	fsys := fstest.MapFS{
		"migrations/00002_two.sql":   {},
		"migrations/00010_ten.sql":   {},
		"migrations/00009_nine.sql":  {},
		"migrations/00011_notes.txt": {},
		"migrations/readme.sql":      {},
	}
	if got, err := LatestMigration("test", fsys); err != nil || got != 10 {
		t.Fatalf("LatestMigration = %d, %v; want 10", got, err)
	}
	if _, err := LatestMigration("test", fstest.MapFS{}); err == nil {
		t.Fatal("no migrations directory: want an error")
	}
}
