package sqlite

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Finding 13 of issue 12: the database, its WAL and its shared-memory file
// hold numbers, bodies and key hashes, so a new database is created
// readable by its owner only (0600), whatever the umask allows.
func TestNewDatabaseFilesAreOwnerOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crewcast.db")
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.GetIdempotency(ctx, "any"); err == nil {
		t.Fatal("want not found") // a read opens a reader connection too
	}
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", filepath.Base(f), m)
		}
	}
}

// An existing database readable by others is opened, with a warning that
// names the file and its mode (crewcast does not change an operator's
// choice behind their back).
func TestExistingReadableDatabaseIsWarnedAbout(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "crewcast.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s, err := Open(ctx, Config{Path: path, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "0644") {
		t.Errorf("no warning about a group/world-readable database; logs:\n%s", logs.String())
	}
}
