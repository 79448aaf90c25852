package sqlq

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"log/slog"
	"regexp"
	"strconv"

	"github.com/pressly/goose/v3"
)

// Migrations runs one engine's embedded, numbered goose migrations.
type Migrations struct {
	// Engine starts every error message.
	Engine string
	// Dialect is the engine's goose dialect.
	Dialect goose.Dialect
	// DB is where the migrations run.
	DB *sql.DB
	// FS holds the .sql files in its migrations directory.
	FS fs.FS
	// Logger receives goose's progress.
	Logger *slog.Logger
	// Options, when set, returns extra provider options (PostgreSQL's
	// session locker); it is called for every provider built.
	Options func() ([]goose.ProviderOption, error)
}

func (m Migrations) errorf(format string, args ...any) error {
	return fmt.Errorf(m.Engine+": "+format, args...)
}

func (m Migrations) provider() (*goose.Provider, error) {
	sub, err := fs.Sub(m.FS, "migrations")
	if err != nil {
		return nil, m.errorf("migrations: %w", err)
	}
	// Migrations apply strictly in order: one written against a later
	// schema must never run under an earlier one. (A database that has a
	// higher version than a migration it lacks is refused, not patched.)
	opts := []goose.ProviderOption{goose.WithDisableGlobalRegistry(true), goose.WithSlog(m.Logger)}
	if m.Options != nil {
		more, err := m.Options()
		if err != nil {
			return nil, m.errorf("migrations: %w", err)
		}
		opts = append(opts, more...)
	}
	p, err := goose.NewProvider(m.Dialect, m.DB, sub, opts...)
	if err != nil {
		return nil, m.errorf("migrations: %w", err)
	}
	return p, nil
}

// Up applies pending migrations; a second call is a no-op.
func (m Migrations) Up(ctx context.Context) error {
	p, err := m.provider()
	if err != nil {
		return err
	}
	if _, err := p.Up(ctx); err != nil {
		return m.errorf("migrate: %w", err)
	}
	return nil
}

// Version returns the highest applied migration version.
func (m Migrations) Version(ctx context.Context) (int64, error) {
	p, err := m.provider()
	if err != nil {
		return 0, err
	}
	v, err := p.GetDBVersion(ctx)
	if err != nil {
		return 0, m.errorf("migration version: %w", err)
	}
	return v, nil
}

var migrationName = regexp.MustCompile(`^(\d+)_.*\.sql$`)

// LatestMigration returns the highest migration version in fsys's
// migrations directory, so a check (crewcast doctor) can tell a database
// that needs `crewcast migrate` without migrating it.
func LatestMigration(engine string, fsys fs.FS) (int64, error) {
	entries, err := fs.ReadDir(fsys, "migrations")
	if err != nil {
		return 0, fmt.Errorf("%s: migrations: %w", engine, err)
	}
	var latest int64
	for _, e := range entries {
		if m := migrationName.FindStringSubmatch(e.Name()); m != nil {
			v, _ := strconv.ParseInt(m[1], 10, 64)
			latest = max(latest, v)
		}
	}
	return latest, nil
}
