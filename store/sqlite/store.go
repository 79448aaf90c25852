// Package sqlite is the embedded store engine: store.Store on one SQLite
// file through the pure-Go modernc.org/sqlite driver.
//
// Durability: the database runs in WAL mode with synchronous=FULL, so a
// write that returned nil survives power loss. Concurrency: every write
// goes through ONE writer connection (writes are serialized, transactions
// begin IMMEDIATE so that another process on the same file waits on the
// busy timeout instead of failing), while reads use a separate pool of
// query_only connections that see every committed write. Commit applies a
// whole batch of units in one transaction, each unit inside its own
// SAVEPOINT. Schema migrations are embedded and applied by Open and Migrate.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/pressly/goose/v3"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/crewcast/crewcast/actor"
	"github.com/crewcast/crewcast/store"
	"github.com/crewcast/crewcast/store/sqlq"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// Config configures Open.
type Config struct {
	// Path is the database file; it is created if missing. Required.
	Path string
	// Owner names this store instance in shard leases (default "local").
	Owner string
	// Leased: Open takes no shard; the node takes and renews expiring
	// leases through AcquireShards and RenewShards (several nodes, design
	// §9). Otherwise Open takes every shard nobody holds, without expiry.
	Leased bool
	// Now is the clock for route expiry, retention and default
	// timestamps (default time.Now).
	Now func() time.Time
	// ReadConns is the size of the read pool (default 4).
	ReadConns int
	// BusyTimeout is how long a connection waits for another process's
	// lock before failing (default 5s).
	BusyTimeout time.Duration
	// Logger receives migration progress (default: discard).
	Logger *slog.Logger
	// CheckpointBytes bounds the write-ahead log: once it is larger after
	// a write round, the writer runs a TRUNCATE checkpoint (default 16
	// MiB). A negative value turns every checkpoint off, automatic ones
	// included, so that the log keeps every byte written (for write
	// amplification measurements only).
	CheckpointBytes int64
}

func (c Config) withDefaults() Config {
	if c.Owner == "" {
		c.Owner = "local"
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.ReadConns <= 0 {
		c.ReadConns = 4
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.CheckpointBytes == 0 {
		c.CheckpointBytes = defaultCheckpointBytes
	}
	return c
}

func (c Config) validate() error {
	if c.Path == "" {
		return errors.New("sqlite: Config.Path is required")
	}
	if strings.ContainsAny(c.Path, "?#") || c.Path == ":memory:" {
		return fmt.Errorf("sqlite: Config.Path %q must be a plain file path", c.Path)
	}
	return nil
}

// Store is the SQLite engine. It is safe for concurrent use.
//
// Besides the methods listed with it, Store has every store.Store method
// whose SQL both engines share (the reads and lists, snapshots, retention,
// API keys, idempotency, routes, inbox reads and leases), promoted from the
// embedded sqlq.DB: see package store/sqlq.
type Store struct {
	queries // reads, retention and admin statements shared with store/postgres

	cfg Config
	w   *sql.DB // exactly one connection: every write
	r   *sql.DB // query_only pool: every read
	st  stmts
	now func() time.Time

	writes writeGroup // group commit of concurrent InsertInbox and Commit calls
	wal    walState   // explicit checkpoints (see checkpoint.go)

	epochs sqlq.Epochs // the shard epochs this instance holds

	mu     sync.Mutex
	closed bool
}

var (
	_ store.Store          = (*Store)(nil)
	_ store.ExpiringLeases = (*Store)(nil)
	_ store.JournalAudit   = (*Store)(nil)
	_ store.Membership     = (*Store)(nil)
)

// Open opens (creating if needed) the database at cfg.Path, applies pending
// migrations and takes every shard lease nobody holds.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := prepareFile(cfg.Path, cfg.Logger); err != nil {
		return nil, err
	}
	busy := fmt.Sprintf("busy_timeout(%d)", cfg.BusyTimeout.Milliseconds())
	wq := url.Values{}
	wq.Add("_pragma", busy)
	wq.Add("_pragma", "journal_mode(WAL)")
	wq.Add("_pragma", "synchronous(FULL)")
	wq.Add("_pragma", "foreign_keys(1)")
	// Savepoint sub-journals stay in memory: a file-backed statement
	// journal costs a write syscall per page touched by every unit.
	wq.Add("_pragma", "temp_store(MEMORY)")
	wq.Add("_pragma", "cache_size(-32768)") // 32 MiB of page cache for the writer
	// After a checkpoint that restarts the WAL, the file is truncated back
	// to this size, so a burst does not leave a large WAL behind for good
	// (the explicit checkpoints of checkpoint.go truncate it to zero).
	wq.Add("_pragma", "journal_size_limit(16777216)")
	if cfg.CheckpointBytes < 0 {
		wq.Add("_pragma", "wal_autocheckpoint(0)")
	}
	// Deleted and overwritten content is zeroed, so an erasure or a
	// retention pass leaves nothing readable in free space (erasure.go).
	wq.Add("_pragma", "secure_delete(1)")
	wq.Set("_txlock", "immediate")
	w, err := sql.Open("sqlite", "file:"+cfg.Path+"?"+wq.Encode())
	if err != nil {
		return nil, fmt.Errorf("sqlite: open writer: %w", err)
	}
	// One connection that never expires: all writes are serialized through
	// it and its prepared statements stay valid.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{cfg: cfg, w: w, now: cfg.Now}
	if err := s.Migrate(ctx); err != nil {
		_ = w.Close()
		return nil, err
	}
	rq := url.Values{}
	rq.Add("_pragma", busy)
	rq.Add("_pragma", "foreign_keys(1)")
	rq.Add("_pragma", "query_only(1)")
	r, err := sql.Open("sqlite", "file:"+cfg.Path+"?"+rq.Encode())
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("sqlite: open readers: %w", err)
	}
	r.SetMaxOpenConns(cfg.ReadConns)
	r.SetMaxIdleConns(cfg.ReadConns)
	s.r = r
	s.queries = sqlq.New(sqlq.Conn{Engine: "sqlite", Read: querier{r}, Write: querier{w},
		ReadTx: s.readTx, WriteTx: s.writeTx, Now: cfg.Now, Epochs: &s.epochs})
	if err := s.st.prepare(ctx, w); err != nil {
		_ = s.Close()
		return nil, err
	}
	if cfg.Leased {
		return s, nil
	}
	if err := sqlq.TakeFreeShards(ctx, s.queries, cfg.Owner); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Engine returns "sqlite".
func (s *Store) Engine() string { return "sqlite" }

func (s *Store) migrations() sqlq.Migrations {
	return sqlq.Migrations{Engine: "sqlite", Dialect: goose.DialectSQLite3, DB: s.w, FS: migrationFS, Logger: s.cfg.Logger}
}

// Migrate applies pending embedded migrations; a second call is a no-op.
func (s *Store) Migrate(ctx context.Context) error { return s.migrations().Up(ctx) }

// MigrationVersion returns the highest applied migration version.
func (s *Store) MigrationVersion(ctx context.Context) (int64, error) {
	return s.migrations().Version(ctx)
}

// Ping checks that both the writer and the read pool answer.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: ping writer: %w", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("sqlite: ping readers: %w", err)
	}
	return nil
}

// Close closes the database; calling it again is a no-op.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var errs []error
	errs = append(errs, s.st.close())
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("sqlite: close: %w", err)
	}
	return nil
}

// notFound maps sql.ErrNoRows to actor.ErrNotFound, in one place.
func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return actor.ErrNotFound
	}
	return err
}
