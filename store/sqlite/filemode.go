package sqlite

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
)

// dbFileMode is the mode of a new database file. SQLite gives the WAL and
// shared-memory files it creates the database file's mode, so creating the
// database ourselves, before SQLite does, makes all three owner-only: they
// hold phone numbers, message bodies and API key hashes.
const dbFileMode = 0o600

// prepareFile creates the database file with dbFileMode when it does not
// exist yet, and warns when an existing database, WAL or shared-memory
// file is readable or writable by group or others. It does not change an
// existing file's mode: that is the operator's decision.
func prepareFile(path string, log *slog.Logger) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, dbFileMode)
	switch {
	case err == nil:
		if err := f.Close(); err != nil {
			return fmt.Errorf("sqlite: create %s: %w", path, err)
		}
		// The umask can only remove bits; this makes the mode exact.
		if err := os.Chmod(path, dbFileMode); err != nil {
			return fmt.Errorf("sqlite: chmod %s: %w", path, err)
		}
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			continue // the WAL and shared-memory files come and go
		}
		if m := fi.Mode().Perm(); m&0o077 != 0 {
			log.Warn("database file is accessible to other users; it holds phone numbers, message bodies and key hashes: chmod 600 it",
				"file", p, "mode", fmt.Sprintf("%#o", m))
		}
	}
	return nil
}
