package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/crewcast/crewcast/store/sqlq"
)

// Backup writes a consistent copy of the database at src to dst while a
// server may be using it. It runs VACUUM INTO over a connection of its
// own: one read transaction, so the copy is the database as of one commit
// (WAL readers never block the writer, and the writer never blocks them).
// The copy is written next to dst, synced, then renamed into place, so dst
// is either absent or complete. An existing dst is an error.
func Backup(ctx context.Context, src, dst string) error {
	if err := checkPath(src); err != nil {
		return err
	}
	if err := checkPath(dst); err != nil {
		return err
	}
	if _, err := os.Stat(src); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if _, err := os.Stat(dst); err == nil {
		return fmt.Errorf("sqlite: backup: %s already exists; choose a new file", dst)
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	db, err := openPlain(src, false)
	if err != nil {
		return err
	}
	defer db.Close()
	tmp := dst + ".partial-" + strconv.Itoa(os.Getpid())
	_ = os.Remove(tmp)
	// A backup holds what the database holds (key and password hashes,
	// numbers, bodies, webhook secrets): it is created owner-only, like
	// the database (dbFileMode). VACUUM INTO writes into an existing
	// empty file and keeps its mode; SQLite would create it 0644.
	if err := createOwnerOnly(tmp); err != nil {
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sqlite: backup: vacuum into: %w", err)
	}
	// VACUUM INTO does not sync what it wrote.
	if err := syncFile(tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("sqlite: backup: %w", err)
	}
	return syncDir(filepath.Dir(dst))
}

// Info describes a database file without changing it.
type Info struct {
	// Integrity is "ok" or what PRAGMA integrity_check found.
	Integrity string
	// Version is the highest applied migration (0: not migrated).
	Version int64
	// Latest is the highest migration this build embeds.
	Latest int64
	// Groups, Recipients, Events, Inbox and InboxPending count rows.
	Groups, Recipients, Events, Inbox, InboxPending int64
	// Bytes is the size of the database file (without its WAL).
	Bytes int64
}

// Inspect opens the database at path read-only (it never creates or
// migrates it) and reports its integrity, schema version and contents.
func Inspect(ctx context.Context, path string) (Info, error) {
	var info Info
	if err := checkPath(path); err != nil {
		return info, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return info, fmt.Errorf("sqlite: %w", err)
	}
	info.Bytes = st.Size()
	if info.Latest, err = LatestMigration(); err != nil {
		return info, err
	}
	db, err := openPlain(path, true)
	if err != nil {
		return info, err
	}
	defer db.Close()
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return info, fmt.Errorf("sqlite: integrity check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return info, fmt.Errorf("sqlite: integrity check: %w", err)
		}
		problems = append(problems, s)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return info, fmt.Errorf("sqlite: integrity check: %w", err)
	}
	info.Integrity = strings.Join(problems, "; ")
	var hasGoose int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'goose_db_version'`).Scan(&hasGoose); err != nil {
		return info, fmt.Errorf("sqlite: read schema: %w", err)
	}
	if hasGoose == 0 {
		return info, nil // not a crewcast database, or never migrated
	}
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&info.Version); err != nil {
		return info, fmt.Errorf("sqlite: read schema version: %w", err)
	}
	if info.Version == 0 {
		return info, nil
	}
	for _, c := range []struct {
		dst *int64
		sql string
	}{
		{&info.Groups, `SELECT count(*) FROM groups`},
		{&info.Recipients, `SELECT count(*) FROM deliveries`},
		{&info.Events, `SELECT count(*) FROM journal`},
		{&info.Inbox, `SELECT count(*) FROM inbox`},
		{&info.InboxPending, `SELECT count(*) FROM inbox WHERE processed_at = 0`},
	} {
		if err := db.QueryRowContext(ctx, c.sql).Scan(c.dst); err != nil {
			return info, fmt.Errorf("sqlite: count: %w", err)
		}
	}
	return info, nil
}

// LatestMigration returns the highest migration version this build embeds.
func LatestMigration() (int64, error) { return sqlq.LatestMigration("sqlite", migrationFS) }

// Restore replaces the database at dst by the backup at src. It refuses
// while any process has dst open (InUse), checks that src is a sound
// crewcast database no newer than this build, and keeps what it replaces:
// dst and its WAL are renamed to dst + ".replaced-<time>" (and "-wal"), so
// nothing is lost by a restore to the wrong place. It returns that name
// ("" when dst did not exist).
func Restore(ctx context.Context, src, dst string, now time.Time) (replaced string, err error) {
	if err := checkPath(dst); err != nil {
		return "", err
	}
	info, err := Inspect(ctx, src)
	if err != nil {
		return "", err
	}
	if info.Integrity != "ok" {
		return "", fmt.Errorf("sqlite: restore: %s fails its integrity check: %s", src, info.Integrity)
	}
	if info.Version == 0 {
		return "", fmt.Errorf("sqlite: restore: %s is not a crewcast database (no schema version)", src)
	}
	if info.Version > info.Latest {
		return "", fmt.Errorf("sqlite: restore: %s has schema version %d, newer than this build knows (%d); use a newer crewcast", src, info.Version, info.Latest)
	}
	busy, err := InUse(dst)
	if err != nil {
		return "", err
	}
	if busy {
		return "", fmt.Errorf("sqlite: restore: %s is open in another process (a running crewcast server?); stop it first", dst)
	}
	tmp := dst + ".restoring-" + strconv.Itoa(os.Getpid())
	if err := copyFile(src, tmp); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("sqlite: restore: %w", err)
	}
	if _, err := os.Stat(dst); err == nil {
		replaced = dst + ".replaced-" + now.UTC().Format("20060102T150405Z")
		if err := os.Rename(dst, replaced); err != nil {
			_ = os.Remove(tmp)
			return "", fmt.Errorf("sqlite: restore: keep old database: %w", err)
		}
		// The WAL belongs to the old file: it travels with it, or SQLite
		// would replay it onto the restored one.
		if err := os.Rename(dst+"-wal", replaced+"-wal"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("sqlite: restore: keep old WAL: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("sqlite: restore: %w", err)
	}
	if err := os.Remove(dst + "-shm"); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return replaced, fmt.Errorf("sqlite: restore: %w", err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return replaced, fmt.Errorf("sqlite: restore: %w", err)
	}
	return replaced, syncDir(filepath.Dir(dst))
}

// openPlain opens one connection to an existing database without the
// store's migrations and leases; readOnly also refuses writes.
func openPlain(path string, readOnly bool) (*sql.DB, error) {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
	}
	db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	return db, nil
}

func checkPath(p string) error {
	return Config{Path: p}.validate()
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, dbFileMode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, in); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// createOwnerOnly creates an empty file with dbFileMode, exactly (the
// umask can only remove bits, and Chmod makes the mode exact).
func createOwnerOnly(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, dbFileMode)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, dbFileMode)
}

func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sqlite: sync %s: %w", dir, err)
	}
	return nil
}

// StoredServerKey reads the server key stored under name in the database
// at path without changing it (crewcast doctor); nil when there is none,
// or the database predates the server_keys table.
func StoredServerKey(ctx context.Context, path, name string) ([]byte, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	db, err := openPlain(path, true)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'server_keys'`).Scan(&n); err != nil || n == 0 {
		return nil, err
	}
	var key []byte
	err = db.QueryRowContext(ctx, `SELECT value FROM server_keys WHERE name = ?`, name).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("sqlite: read server key: %w", err)
	}
	return key, nil
}
